// The float vanilla RNN the compiler starts from (PyTorch nn.RNN, ONNX RNN): one gate,
// h' = act(W_ih x + b_ih + W_hh h + b_hh) with act tanh or ReLU, as a program layer (FloatLstm
// with cell kRnn, its gate in gates[0]).
#ifndef QLSTM_COMPILER_FLOAT_RNN_H_
#define QLSTM_COMPILER_FLOAT_RNN_H_

#include <cstdint>
#include <vector>

#include "qlstm/compiler/float/float_lstm.h"

namespace qlstm {
namespace compiler {

// weight_ih [H][I], weight_hh [H][H], bias_ih / bias_hh [H] (either may be empty for none).
FloatLstm rnn_layer_from_torch(int32_t input_size, int32_t hidden_size, const std::vector<float>& weight_ih,
                               const std::vector<float>& weight_hh, const std::vector<float>& bias_ih,
                               const std::vector<float>& bias_hh, bool relu);

// Throws CompileError for a gate of the wrong shape or a non-finite value, naming it.
void validate_rnn(const FloatLstm& rnn);

// Evaluates the RNN layer in double precision; h0 ([B][H]) may be null for a zero state. c_n is
// zeros (no cell); `visit` gets each step's hidden (cell null).
FloatResult run_float_rnn(const FloatLstm& rnn, const float* x, const SequenceShape& shape, const float* h0,
                          const StepVisitor& visit);

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_FLOAT_RNN_H_
