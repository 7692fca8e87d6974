// libFuzzer target: the ONNX importer must refuse or accept, never crash or hang.
#include <cstddef>
#include <cstdint>
#include <string>

#include "qlstm/compiler/import/onnx_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    qlstm::compiler::import_onnx_bytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const qlstm::compiler::CompileError&) {
  }
  return 0;
}
