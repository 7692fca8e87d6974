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

bool passes_checker(const onnx::ModelProto& model) {
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

bool with_inferred_shapes(onnx::ModelProto* model, bool checked,
                          const std::function<void(const onnx::GraphProto&)>& read) {
  if (!checked) return false;
  // What the inference writes to: the graph's value_info, and the types of its inputs and outputs.
  onnx::GraphProto* g = model->mutable_graph();
  const auto value_info = g->value_info();
  const auto inputs = g->input();
  const auto outputs = g->output();
  bool inferred = true;
  try {
    onnx::shape_inference::InferShapes(*model);
    read(*g);
  } catch (const std::exception&) {
    inferred = false;
  }
  *g->mutable_value_info() = value_info;
  *g->mutable_input() = inputs;
  *g->mutable_output() = outputs;
  return inferred;
}

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
