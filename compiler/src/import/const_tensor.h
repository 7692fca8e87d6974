// The constant tensors the import pre-pass evaluates: decoded from and encoded to ONNX
// TensorProtos, with the element counts bounded. Internal to compiler/src/import/.
#ifndef QLSTM_COMPILER_SRC_IMPORT_CONST_TENSOR_H_
#define QLSTM_COMPILER_SRC_IMPORT_CONST_TENSOR_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace qlstm {
namespace compiler {
namespace import {

// The largest tensor the pre-pass computes: a bigger one is left to the model as it is. 2^24
// holds the weights of a bidirectional LSTM(1024, 1024) ([2, 4096, 1024]) an export without
// constant folding computes; a fuzzed graph's Expand of a [7627085, 2, 4] state, 2^26 allowed,
// took 28 s to fold in the sanitized build.
constexpr int64_t kMaxFoldElements = int64_t{1} << 24;
// The most elements the pre-pass creates in all: the folds past it are left to the model.
constexpr int64_t kMaxFoldTotal = int64_t{1} << 25;

// A constant of one of the element types the pre-pass folds (float, double, int32, int64, bool).
// Integers are held exactly (torch writes INT64_MAX as "to the end"), floats as double.
struct ConstTensor {
  int32_t type = onnx::TensorProto::FLOAT;
  std::vector<int64_t> dims;
  std::vector<double> f;   // floating types
  std::vector<int64_t> i;  // integer types and bool
  bool is_float() const;
  int64_t size() const { return static_cast<int64_t>(is_float() ? f.size() : i.size()); }
  double value(int64_t k) const { return is_float() ? f[static_cast<size_t>(k)] : static_cast<double>(i[static_cast<size_t>(k)]); }
};

bool foldable_type(int32_t type);
// The product of `dims` when every dim is >= 0 and it stays within kMaxFoldElements.
bool bounded_count(const std::vector<int64_t>& dims, int64_t* count);
// False for another element type, external or inconsistent data, or a tensor above the bound.
bool decode(const onnx::TensorProto& t, ConstTensor* out);
void encode(const ConstTensor& c, const std::string& name, onnx::TensorProto* t);
// A tensor of `type` and `dims` with every element `v` (v converted as Cast would).
bool filled(int32_t type, const std::vector<int64_t>& dims, double v, ConstTensor* out);
// Values as integers (a shape, axes or indices); false for a fractional or huge value.
bool as_ints(const ConstTensor& c, std::vector<int64_t>* out);

}  // namespace import
}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_SRC_IMPORT_CONST_TENSOR_H_
