// Firmware source for a compiled model: NAME_model.h / NAME_model.cc, which compile with the
// runtime alone (docs/model-format.md). Host only.
#ifndef QLSTM_COMPILER_EMIT_CPP_H_
#define QLSTM_COMPILER_EMIT_CPP_H_

#include <cstdint>
#include <string>

#include "qlstm/compiler/artifacts/model_file.h"

namespace qlstm {
namespace compiler {

struct EmittedSource {
  std::string header;  // NAME_model.h
  std::string source;  // NAME_model.cc
};

// `name` must be a C identifier (see c_identifier). `batch` fixes the scratch and state sizes;
// `max_time_steps` the activation buffers between stacked layers (a model of one layer has none
// and ignores it; a stacked one needs it >= 1).
EmittedSource emit_cpp(const CompiledModel& m, const std::string& name, int32_t batch,
                       int32_t max_time_steps, const std::string& origin);

// One line for op `o` of a runtime program (compiled from `op`): what it computes, on which sizes
// ("LSTM 1 -> 16, forward", "fully connected 16 -> 4, ..."). The emitted comments and qlstm bench.
std::string describe_op(const qlstm_op& o, const ProgramOp& op);

// A C identifier made from `text` (non-alphanumerics become '_', a leading digit gets '_').
std::string c_identifier(const std::string& text);

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_EMIT_CPP_H_
