// NumPy .npy files (format versions 1.0-3.0): C-order, little-endian arrays of float32, float64,
// int8, int16, int32 or int64. Reading checks every header field; errors name the file and the field.
#ifndef QLSTM_COMPILER_NPY_H_
#define QLSTM_COMPILER_NPY_H_

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace qlstm {
namespace compiler {

class NpyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class DType { kFloat32, kFloat64, kInt8, kInt16, kInt32, kInt64 };
const char* dtype_name(DType t);  // numpy descr, e.g. "<f4"

struct NpyArray {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;  // little-endian elements, C order

  int64_t element_count() const;
  // The elements converted to float (float32/float64 only; otherwise throws NpyError).
  std::vector<float> as_float(const std::string& what) const;
  std::vector<int8_t> as_int8(const std::string& what) const;
  // The elements of an integer array (int8 ... int64; otherwise throws NpyError).
  std::vector<int64_t> as_integers(const std::string& what) const;
};

NpyArray read_npy(const std::string& path);
// The same from the file's bytes; `path` names it in messages.
NpyArray parse_npy(const std::string& bytes, const std::string& path);

// Writes atomically (a temporary file in the same folder, then rename).
void write_npy(const std::string& path, DType dtype, const std::vector<int64_t>& shape,
               const void* data);
void write_npy_float32(const std::string& path, const std::vector<int64_t>& shape,
                       const std::vector<float>& values);
void write_npy_int8(const std::string& path, const std::vector<int64_t>& shape,
                    const std::vector<int8_t>& values);

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_NPY_H_
