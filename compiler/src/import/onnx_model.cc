#include "onnx_model.h"

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <utility>

namespace qlstm {
namespace compiler {
namespace import {

std::set<std::string> value_names(const onnx::GraphProto& g) {
  std::set<std::string> names;
  for (const auto& i : g.input()) names.insert(i.name());
  for (const auto& t : g.initializer()) names.insert(t.name());
  for (const auto& n : g.node()) names.insert(n.output().begin(), n.output().end());
  return names;
}

std::string fresh_name(const std::set<std::string>& taken, const std::string& base) {
  std::string name = base;
  for (int k = 1; taken.count(name); ++k) name = base + "_" + std::to_string(k);
  return name;
}

namespace {

bool has_shape(const onnx::ValueInfoProto& v) { return v.type().has_tensor_type() && v.type().tensor_type().has_shape(); }

// Takes the graph outputs declared without a shape (or without a type) out of the graph's output
// list while it lives: ONNX's checker refuses them, though the nodes that write them are sound, and
// the inference then writes their types as value_info. The list is restored as it was.
class ShapelessOutputsSetAside {
 public:
  explicit ShapelessOutputsSetAside(onnx::GraphProto* g) : g_(g), outputs_(g->output()) {
    auto* out = g_->mutable_output();
    for (int k = out->size(); k-- > 0;) {
      if (!has_shape(out->Get(k))) out->DeleteSubrange(k, 1);
    }
  }
  ~ShapelessOutputsSetAside() { *g_->mutable_output() = outputs_; }
  ShapelessOutputsSetAside(const ShapelessOutputsSetAside&) = delete;
  ShapelessOutputsSetAside& operator=(const ShapelessOutputsSetAside&) = delete;

 private:
  onnx::GraphProto* g_;
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> outputs_;
};

}  // namespace

bool passes_checker(onnx::ModelProto* model) {
  const ShapelessOutputsSetAside aside(model->mutable_graph());
  try {
    onnx::checker::check_model(*model);
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

namespace {

bool known_element_type(int32_t t) { return t >= 0 && t <= onnx::TensorProto_DataType_DataType_MAX; }

bool known_value_types(const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& values) {
  for (const auto& v : values) {
    if (v.type().has_tensor_type() && !known_element_type(v.type().tensor_type().elem_type())) return false;
  }
  return true;
}

// Every element type in the graph (its tensors, values and Constant nodes) is one the library knows.
bool known_element_types(const onnx::GraphProto& g) {
  for (const auto& t : g.initializer()) {
    if (!known_element_type(t.data_type())) return false;
  }
  if (!known_value_types(g.input()) || !known_value_types(g.output()) || !known_value_types(g.value_info())) {
    return false;
  }
  for (const auto& n : g.node()) {
    for (const auto& a : n.attribute()) {
      if (a.has_t() && !known_element_type(a.t().data_type())) return false;
      if (a.has_g() && !known_element_types(a.g())) return false;
    }
  }
  return true;
}

}  // namespace

int64_t read_as_known_ir(onnx::ModelProto* model) {
  const int64_t declared = model->ir_version();
  if (declared <= onnx::IR_VERSION || !known_element_types(model->graph())) return 0;
  model->set_ir_version(onnx::IR_VERSION);
  return declared;
}

bool with_inferred_shapes(onnx::ModelProto* model, bool checked,
                          const std::function<void(const onnx::GraphProto&)>& read) {
  if (!checked) return false;
  // What the inference writes to: the graph's value_info, and the types of its inputs and outputs.
  onnx::GraphProto* g = model->mutable_graph();
  const auto value_info = g->value_info();
  const auto inputs = g->input();
  bool inferred = true;
  {
    const ShapelessOutputsSetAside aside(g);  // restores the outputs, inferred types and all
    try {
      onnx::shape_inference::InferShapes(*model);
      read(*g);
    } catch (const std::exception&) {
      inferred = false;
    }
  }
  *g->mutable_value_info() = value_info;
  *g->mutable_input() = inputs;
  return inferred;
}

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
