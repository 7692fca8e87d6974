// The import pre-pass that evaluates constant subgraphs (compiler/src/import/fold_constants.cc).
#ifndef QLSTM_COMPILER_IMPORT_FOLD_CONSTANTS_H_
#define QLSTM_COMPILER_IMPORT_FOLD_CONSTANTS_H_

#include <onnx/onnx_pb.h>

#include <cstdint>

namespace qlstm {
namespace compiler {
namespace import {

// Replaces each default-domain node whose inputs are all constants (initializers, Constant nodes
// or nodes folded before it) and whose op is a shape or elementwise op the importer meets around
// weights and states (Identity, Cast, Slice, Concat, Unsqueeze, Squeeze, Transpose, Reshape,
// Gather, Split, Add, Sub, Mul, Div, Expand, ConstantOfShape; Shape of a value whose shape is
// static) by initializers of its outputs. torch.onnx.export(do_constant_folding=False) writes an
// LSTM's W, R and B so. A node it cannot evaluate exactly (bad axes, mismatched dims, a result
// above 2^26 elements, an element type other than float, double, int32, int64, bool) is left as
// it is for the importer's checks to name. Shapes that depend on the input's dynamic dims stay
// nodes (the importer reads them as structure). `model` must be in topological order.
// `checked`: the model as read passed ONNX's checker, so ONNX's shape inference may run on it
// for the shapes of Shape nodes' inputs; without it only the declared shapes serve.
void fold_constants(onnx::ModelProto* model, int64_t opset, bool checked);

}  // namespace import
}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_IMPORT_FOLD_CONSTANTS_H_
