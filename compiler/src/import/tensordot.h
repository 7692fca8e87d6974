// The import pass that reads tf2onnx's Tensordot as the per-step MatMul it is (internal to
// compiler/src/import/). A Keras Dense on a sequence [B, T, F] exported by tf2onnx (before it
// learnt to write a 3-D MatMul) merges the positions into rows, multiplies and splits them again:
// Reshape to [-1, F], MatMul by a constant [F, C], Reshape to [B, T, C]. That is MatMul on the
// sequence itself (ONNX's MatMul broadcasts over the leading axes), which the head recognizes.
#ifndef QLSTM_COMPILER_SRC_IMPORT_TENSORDOT_H_
#define QLSTM_COMPILER_SRC_IMPORT_TENSORDOT_H_

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "import/shapes.h"

namespace qlstm {
namespace compiler {
namespace import {

// Rewrites each Reshape(x [d0, d1, F], [-1, F]) -> MatMul(., W [F, C]) -> Reshape(., target) whose
// target gives back [d0, d1, C] (after fold_shapes wrote computed targets as constants: [-1, d1, C]
// with d1 a number, or [d0, -1, C] with d0 a number) into MatMul(x, W) under the last Reshape's
// output name. Each intermediate value must have that one reader. Anything else is left as it is.
// Returns the number rewritten; `notes` gets one line each for the report.
int fold_tensordots(onnx::ModelProto* model, ShapeFacts* facts, std::vector<std::string>* notes);

}  // namespace import
}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_SRC_IMPORT_TENSORDOT_H_
