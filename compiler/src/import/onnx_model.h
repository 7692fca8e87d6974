// What the import pre-passes (upgrade_opset, fold_constants, shapes) share about the ONNX model
// they rewrite: names for the values they add, and ONNX's shape inference.
#ifndef QLSTM_COMPILER_SRC_IMPORT_ONNX_MODEL_H_
#define QLSTM_COMPILER_SRC_IMPORT_ONNX_MODEL_H_

#include <onnx/onnx_pb.h>

#include <functional>
#include <set>
#include <string>

namespace qlstm {
namespace compiler {
namespace import {

// The names of every value of `g`: its inputs, initializers and node outputs.
std::set<std::string> value_names(const onnx::GraphProto& g);
// A name not in `taken`, built from `base` ("base", then "base_1", "base_2", ...).
std::string fresh_name(const std::set<std::string>& taken, const std::string& base);

// The node list of `g` rebuilt in its order, a pass's one rewrite: at each node,
// `replace(node, &kept)` may append what takes its place to `kept` and return true; otherwise the
// node is kept unless it is in `removed`. (The nodes' addresses stay valid until the list is
// swapped in at the end.)
template <class Replace>
void rewrite_nodes(onnx::GraphProto& g, const std::set<const onnx::NodeProto*>& removed, Replace replace) {
  onnx::GraphProto kept;
  for (const auto& n : g.node()) {
    if (replace(n, &kept)) continue;
    if (!removed.count(&n)) *kept.add_node() = n;
  }
  g.mutable_node()->Swap(kept.mutable_node());
}

// Whether ONNX's checker passes the model, but for graph outputs declared without a shape (which
// it refuses; exporters and hand-built graphs write them): those are set aside while it runs, and
// the model is left as it was. ONNX's inference functions assume a checked model (damaged
// attributes crash them), so the import checks the file as read, before its pre-passes rewrite
// it: the opset-9 Slices they put in input form would no longer pass.
bool passes_checker(onnx::ModelProto* model);

// A model of an IR version newer than this ONNX library's (IR 9 added the float8 element types,
// IR 10 the 4-bit ones; torch 2.x writes IR 9) is read as the library's IR when none of its tensors
// has an element type the library lacks: its operators are its opset's, whatever the IR, and the
// library's checker and inference refuse a newer IR outright. Returns the IR version the file
// declared when it lowered it, else 0.
int64_t read_as_known_ir(onnx::ModelProto* model);

// Runs ONNX's shape inference and calls `read` with the graph whose value_info and inputs then
// carry the inferred types (a graph output declared without a shape among the value_info, not
// the outputs); then restores the value_info, inputs and outputs, so the model is not copied,
// weights and all. `checked`: the model as read passed the checker (passes_checker); when false,
// nothing runs. Without ONNX's data propagation, which crashes libonnx 1.12 on models the checker
// passes (a Concat of shapes along axis 2). Returns false, without calling `read`, when the model
// was not checked or the inference refuses it.
bool with_inferred_shapes(onnx::ModelProto* model, bool checked,
                          const std::function<void(const onnx::GraphProto&)>& read);

}  // namespace import
}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_SRC_IMPORT_ONNX_MODEL_H_
