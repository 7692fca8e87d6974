// libFuzzer target: the .npy and .npz readers must refuse or accept, never crash (a zip signature
// takes the .npz path, as read_npy does).
#include <cstddef>
#include <cstdint>
#include <string>

#include "qlstm/compiler/io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    const qlstm::compiler::NpyArray a = qlstm::compiler::is_zip(bytes) ? qlstm::compiler::parse_npz(bytes, "fuzz")
                                                                       : qlstm::compiler::parse_npy(bytes, "fuzz");
    if (a.dtype == qlstm::compiler::DType::kFloat32 || a.dtype == qlstm::compiler::DType::kFloat64) {
      (void)a.as_float("fuzz");
    }
  } catch (const qlstm::compiler::NpyError&) {
  }
  return 0;
}
