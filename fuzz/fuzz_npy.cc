// libFuzzer target: the .npy reader must refuse or accept, never crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "qlstm/compiler/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const qlstm::compiler::NpyArray a =
        qlstm::compiler::parse_npy(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    if (a.dtype == qlstm::compiler::DType::kFloat32 || a.dtype == qlstm::compiler::DType::kFloat64) {
      (void)a.as_float("fuzz");
    }
  } catch (const qlstm::compiler::NpyError&) {
  }
  return 0;
}
