// The whole program's compile: a float program and its calibration to the program of ops, layer
// by layer (each recurrent op searched and derived, the layers around the stack lowered to their
// ops). Host only.
#ifndef QLSTM_COMPILER_LOWER_COMPILE_PROGRAM_H_
#define QLSTM_COMPILER_LOWER_COMPILE_PROGRAM_H_

#include <vector>

#include "qlstm/compiler/float/float_layers.h"
#include "qlstm/compiler/program/program.h"
#include "qlstm/compiler/search/quantized_layer.h"

namespace qlstm {
namespace compiler {

// A compiled program: each op calibrated on the float activations of the layer below (from the
// program's initial state; with a state the caller feeds, also from the state the previous
// calibration sequence left, which is what a caller carrying h_n / c_n over feeds), in order.
// A stacked layer's input quantization is the layer below's output quantization; the two
// directions of a bidirectional layer share their input and output quantization (the output's
// from the observer over both directions' outputs).
// The layers around the stack are calibrated on the same float pass (in double): each op's
// output quantization comes from the output observer over its float output (after a folded
// Relu/Clip), a softmax's is 1/256, -128; the front's last buffer fixes the first LSTM's input.
// When the head reads only the final hidden state (h_n[-1], or y[:, -1] of a unidirectional last
// layer) the last LSTM op writes only it (QLSTM_OUTPUT_FINAL, a one-step buffer); y[:, k] becomes
// a step selection op. The last layer's search scores the steps the head reads.
struct QuantizedProgram {
  FloatProgram source;
  CompiledModel model;  // name, batch_first and report_json are the caller's
  std::vector<CalibrationStats> stats;  // per LSTM op
  // Per calibration sequence, the float program's output ([T][O], or [1][O] when the model's
  // output is one step) from the program's own initial state, kept for measuring the int8 model.
  std::vector<std::vector<float>> float_outputs;
};
// validate_options (search/options.h) for this program's recurrent ops, layers and cell kind: the
// check compile_model and compile_program make before any work.
void validate_options(const CompileOptions& options, const FloatProgram& program);

// Throws what validate_options throws first. `validation`: sequences the search scores its
// candidates on instead of k-fold over the calibration set; run through the float program but
// never observed.
QuantizedProgram compile_program(const FloatProgram& program, const CalibrationSet& calibration,
                                 const CompileOptions& options, const CalibrationSet* validation = nullptr);
// Whether the last layer's ops write one step only (QLSTM_OUTPUT_FINAL, and QLSTM_OUTPUT_FIRST for
// a reverse op that runs one step): the head reads h_n[-1], or y[:, -1] of the last layer.
bool writes_final_state_only(const FloatProgram& program);
// y[:, -1] of a last layer with a reverse direction, in a model without a state interface: the
// reverse op runs its first step alone (QLSTM_OUTPUT_FIRST), which is its value at the last step.
bool runs_reverse_one_step(const FloatProgram& program);
// The head as compiled: the program's, except that a Linear reading h_n[-1] of a bidirectional
// stack gets zero weights for the forward half of the [B][2H] row both ops write. Throws
// CompileError when something else reads that h_n[-1].
std::vector<FloatLayer> compiled_head_layers(const FloatProgram& program);
// Whether the compiled program keeps a sequence between two of its ops (a stacked layer, a
// front, a per-step head, a selection of a step), so that its buffers need a maximum length.
bool keeps_inner_sequence(const FloatProgram& program);

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_LOWER_COMPILE_PROGRAM_H_
