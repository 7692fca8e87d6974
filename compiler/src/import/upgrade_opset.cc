#include "qlstm/compiler/import/upgrade_opset.h"

#include <set>
#include <string>
#include <vector>

#include "onnx_model.h"

namespace qlstm {
namespace compiler {
namespace import {
namespace {

// Slice-1's attributes starts, ends (required) and axes (optional) as inputs 1-3; false (the
// node unchanged) when it is not that form.
bool slice_inputs_from_attributes(onnx::NodeProto* n, onnx::GraphProto* g, std::set<std::string>* names) {
  if (n->input_size() != 1 || n->output_size() < 1) return false;
  const onnx::AttributeProto *starts = nullptr, *ends = nullptr, *axes = nullptr;
  for (const auto& a : n->attribute()) {
    if (a.name() == "starts") starts = &a;
    if (a.name() == "ends") ends = &a;
    if (a.name() == "axes") axes = &a;
  }
  if (starts == nullptr || ends == nullptr) return false;
  std::vector<std::pair<const char*, const onnx::AttributeProto*>> parts = {{"starts", starts}, {"ends", ends}};
  if (axes != nullptr) parts.emplace_back("axes", axes);
  std::vector<std::string> inputs;
  for (const auto& p : parts) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(fresh_name(*names, n->output(0) + "_" + p.first));
    names->insert(t->name());
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(p.second->ints_size());
    for (int64_t v : p.second->ints()) t->add_int64_data(v);
    inputs.push_back(t->name());
  }
  for (const auto& name : inputs) n->add_input(name);
  auto* attrs = n->mutable_attribute();
  for (int k = attrs->size(); k-- > 0;) {
    const std::string& an = attrs->Get(k).name();
    if (an == "starts" || an == "ends" || an == "axes") attrs->DeleteSubrange(k, 1);
  }
  return true;
}

}  // namespace

void upgrade_attribute_forms(onnx::ModelProto* model, int64_t opset) {
  if (opset >= 10) return;
  onnx::GraphProto* g = model->mutable_graph();
  std::set<std::string> names = value_names(*g);
  for (auto& n : *g->mutable_node()) {
    if (n.op_type() == "Slice" && (n.domain().empty() || n.domain() == "ai.onnx")) {
      slice_inputs_from_attributes(&n, g, &names);
    }
  }
}

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
