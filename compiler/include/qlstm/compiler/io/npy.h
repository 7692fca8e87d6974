// NumPy .npy files (format versions 1.0-3.0): C-order, little-endian arrays of float32, float64,
// int8, int16, int32 or int64. Reading checks every header field; errors name the file and the field.
// A .npz archive (np.savez, stored, or np.savez_compressed, deflated) holding exactly one array is
// read as that array (Debian's libzip reads the archive).
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
  // The elements converted to float (float32/float64 only; otherwise throws NpyError). A float64
  // value that is not finite or beyond float32's range is refused, naming `what` and its index.
  std::vector<float> as_float(const std::string& what) const;
  std::vector<int8_t> as_int8(const std::string& what) const;
  // The elements of an integer array (int8 ... int64; otherwise throws NpyError).
  std::vector<int64_t> as_integers(const std::string& what) const;
};

// A .npy file, or a .npz archive of one .npy member (told by the zip signature, whatever the name).
NpyArray read_npy(const std::string& path);
// The same from the file's bytes; `path` names it in messages.
NpyArray parse_npy(const std::string& bytes, const std::string& path);
// A .npz archive's bytes: its one member, parsed; refused, naming `path`, when the archive is
// damaged or holds other than exactly one member (the message gives the count).
NpyArray parse_npz(const std::string& bytes, const std::string& path);
// Whether `bytes` start with a zip signature (a .npz archive rather than a .npy file).
bool is_zip(const std::string& bytes);

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
