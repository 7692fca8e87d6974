// An int8 LSTM gate's activation of its Q3.12 pre-activation (docs/arithmetic.md §3, §3.1): the
// sigmoid or tanh table, or HardSigmoid's line. Every variant's scalar path calls this one.
#ifndef QLSTM_RUNTIME_GATE_ACTIVATION_H_
#define QLSTM_RUNTIME_GATE_ACTIVATION_H_

#include <stdint.h>

#include "qlstm/activation_s16.h"
#include "qlstm/fixed_point.h"
#include "qlstm/lstm_s8.h"

namespace qlstm {

// clamp(RQ(pre, slope) + offset, 0, 2^15 - 1). The sum is taken in 64 bits: no slope or offset the
// validation accepts overflows it.
inline int16_t hard_sigmoid_q0_15(int16_t pre_q3_12, const qlstm_hard_sigmoid_params& p) {
  const int64_t line = static_cast<int64_t>(fxp::requantize_double_rounding(pre_q3_12, p.slope.multiplier,
                                                                             p.slope.shift)) +
                       p.offset_q0_15;
  constexpr int64_t kOne = fxp::kInt16Max;  // 1.0 saturates to 32767, as the sigmoid's top does
  return static_cast<int16_t>(line < 0 ? 0 : line > kOne ? kOne : line);
}

inline int16_t gate_activation_q0_15(const qlstm_gate_s8_params& g, int16_t pre_q3_12) {
  constexpr int32_t kGateLeftShift = 0;  // the pre-activation is already Q3.12
  if (g.activation == QLSTM_ACTIVATION_HARD_SIGMOID) return hard_sigmoid_q0_15(pre_q3_12, g.hard_sigmoid);
  return activation_q0_15(pre_q3_12, kGateLeftShift, g.activation == QLSTM_ACTIVATION_TANH ? 1 : 0);
}

// A row of Q3.12 pre-activations activated in place.
inline void activate_gate_row(const qlstm_gate_s8_params& g, int16_t* v, int32_t n) {
  for (int32_t k = 0; k < n; ++k) v[k] = gate_activation_q0_15(g, v[k]);
}

}  // namespace qlstm

#endif  // QLSTM_RUNTIME_GATE_ACTIVATION_H_
