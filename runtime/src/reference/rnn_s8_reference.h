// The vanilla RNN's reference (docs/arithmetic.md §23): its step is an LSTM gate (§3) whose
// activation is the RNN's, then the GRU's output stage (§13). The gate block a call's step runs
// is built here, once per call, for every variant.
#ifndef QLSTM_SRC_REFERENCE_RNN_S8_REFERENCE_H_
#define QLSTM_SRC_REFERENCE_RNN_S8_REFERENCE_H_

#include "qlstm/fixed_point.h"
#include "qlstm/kernels.h"
#include "qlstm/lstm_s8.h"
#include "qlstm/rnn_s8.h"

namespace qlstm {
namespace rnn_reference {

// ReLU on the int16 pre-activation is HardSigmoid's clamp to [0, 32767] on the unit line:
// RQ(pre, (2^30, 1)) = SRDHM(2 pre, 2^30) = pre exactly for every int16 pre, and offset 0.
constexpr qlstm_hard_sigmoid_params kReluLine = {{int32_t{1} << 30, 1}, 0};

// The call's step as an LSTM gate: its matmuls, tanh or the ReLU line.
inline qlstm_gate_s8_params gate_block(const qlstm_rnn_s8_params& p) {
  const qlstm_gru_gate_s8_params& g = p.gate;
  const bool relu = p.activation == QLSTM_RNN_RELU;
  return {g.input_to_q3_12,
          g.input_weights,
          g.input_effective_bias,
          g.hidden_to_q3_12,
          g.hidden_weights,
          g.hidden_effective_bias,
          relu ? QLSTM_ACTIVATION_HARD_SIGMOID : QLSTM_ACTIVATION_TANH,
          relu ? kReluLine : qlstm_hard_sigmoid_params{{0, 0}, 0}};
}

// A variant's gate stage: the gate of the LSTM variant kLstm of its ISA.
template <const LstmS8Variant& kLstm>
void lstm_gate_of(const qlstm_gate_s8_params& g, const GateArgs& args, int16_t* out) {
  kLstm.gate(g, args, out);
}

}  // namespace rnn_reference
}  // namespace qlstm

#endif  // QLSTM_SRC_REFERENCE_RNN_S8_REFERENCE_H_
