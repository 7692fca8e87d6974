// libFuzzer target: the input is the model bytes INSIDE a .qlstm file (the FlatBuffers Model), sealed
// with the current format_version and their CRC-32, so the mutations reach what is behind the
// checksum. Loading must refuse (CompileError) or accept, never crash; an accepted model must run
// (B = 1 or the batch its state fixes, T = 2, zero input of its type, from its initial state) through the runtime's program runner without
// any error: an exception escaping here (a refusal of a model the loader accepted) is a finding.
// The seed corpus is the model bytes of compiled models (scripts/fuzz.sh).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "qlstm/compiler/artifacts/model_file.h"
#include "qlstm/compiler/lower/compile_program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace qlstm::compiler;
  const std::string file = seal_model(std::string(reinterpret_cast<const char*>(data), size));
  CompiledModel m;
  try {
    m = parse_model(file, "fuzz");
  } catch (const CompileError&) {
    return 0;  // refused: the expected outcome for most inputs
  }
  // B = 1, or the batch a per-row constant initial state fixes (the model runs at no other).
  const int32_t batch = m.constant_state_batch() > 0 ? m.constant_state_batch() : 1;
  const SequenceShape shape{batch, 2, m.batch_first ? Layout::kBatchMajor : Layout::kTimeMajor};
  // Zeros of the input buffer's type (a version-7 model may take int16).
  const std::vector<uint8_t> x(static_cast<size_t>(2 * batch) * static_cast<size_t>(m.input_size()) *
                                   qlstm_element_bytes(m.buffers.front().type),
                               0);
  (void)run_program_raw(m, x.data(), x.size(), shape);
  return 0;
}
