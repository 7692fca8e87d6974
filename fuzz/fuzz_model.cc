// libFuzzer target: loading a .qlstm file must refuse or accept, never crash; an accepted model
// runs through the kernel without error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "qlstm/compiler/model_file.h"
#include "qlstm/compiler/quantized_lstm.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const qlstm::compiler::CompiledModel m = qlstm::compiler::parse_model(
        std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    const qlstm::compiler::SequenceShape shape{1, 2, qlstm::compiler::Layout::kBatchMajor};
    std::vector<int8_t> x(static_cast<size_t>(2 * m.input_size()), 1);
    (void)qlstm::compiler::run_program_s8(m, x, shape);
  } catch (const qlstm::compiler::CompileError&) {
  }
  return 0;
}
