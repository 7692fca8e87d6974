// The ops the import pre-pass evaluates on constants (internal to compiler/src/import/).
#ifndef QLSTM_COMPILER_SRC_IMPORT_FOLD_OPS_H_
#define QLSTM_COMPILER_SRC_IMPORT_FOLD_OPS_H_

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "const_tensor.h"

namespace qlstm {
namespace compiler {
namespace import {

// Whether `op` (default domain) is one the pre-pass can evaluate; Shape is evaluated by the pass
// itself from a static shape.
bool foldable_op(const std::string& op);

// Evaluates `n` on its constant inputs (null for an absent optional input) into one tensor per
// output. False, with nothing folded, for anything it cannot compute exactly: unsupported
// attribute values, out-of-range axes or indices, mismatched dims, a result above the bound.
bool evaluate(const onnx::NodeProto& n, int64_t opset, const std::vector<const ConstTensor*>& in,
              std::vector<ConstTensor>* out);

// Shape (with opset 15's start and end) of a value of static `dims`.
bool evaluate_shape(const onnx::NodeProto& n, const std::vector<int64_t>& dims, ConstTensor* out);

}  // namespace import
}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_SRC_IMPORT_FOLD_OPS_H_
