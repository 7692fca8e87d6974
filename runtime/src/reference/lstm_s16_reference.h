// The 16x8 kernels' arithmetic (docs/arithmetic.md §14) in one place: the reference stages of the
// 16x8 LSTM and the per-row finishes every 16x8 variant shares, so that only the dot products
// differ between variants.
#ifndef QLSTM_SRC_REFERENCE_LSTM_S16_REFERENCE_H_
#define QLSTM_SRC_REFERENCE_LSTM_S16_REFERENCE_H_

#include <stddef.h>
#include <stdint.h>

#include "qlstm/activation_s16.h"
#include "qlstm/fixed_point.h"
#include "qlstm/fully_connected_s16.h"
#include "qlstm/kernels.h"
#include "qlstm/lstm_s16.h"
#include "reference/lstm_s8_reference.h"

namespace qlstm {
namespace s16 {

// bias + sum_j v[j] * w_row[j], modulo 2^64.
inline int64_t dot_plus_bias(const int16_t* v, const int8_t* w_row, int32_t n, int64_t bias) {
  int64_t acc = bias;
  for (int32_t j = 0; j < n; ++j) acc = fxp::wrapping_add_s64(acc, int64_t{int32_t{v[j]} * int32_t{w_row[j]}});
  return acc;
}

// One gate's requantizations (the multipliers reduced to Q15 once): its Q3.12 pre-activation from
// the two int64 accumulators, each matmul requantized by RQ64 and added onto the Q3.12 value,
// saturated to int16 after each add (the input part onto 0). Without h, no recurrent term.
struct GateRequant {
  int32_t input_q15, input_shift, hidden_q15, hidden_shift;
  explicit GateRequant(const qlstm_gate_s16_params& g)
      : input_q15(fxp::reduce_multiplier_q31_to_q15(g.input_to_q3_12.multiplier)),
        input_shift(g.input_to_q3_12.shift),
        hidden_q15(fxp::reduce_multiplier_q31_to_q15(g.hidden_to_q3_12.multiplier)),
        hidden_shift(g.hidden_to_q3_12.shift) {}
  int16_t pre_activation_q3_12(int64_t acc_x, int64_t acc_h, bool has_h) const {
    int32_t pre = fxp::saturate_to_s16(fxp::requantize_s64_round_half_up(acc_x, input_q15, input_shift));
    if (has_h) {
      // |pre| <= 2^15, so the int64 sum is exact.
      const int64_t sum = int64_t{pre} + fxp::requantize_s64_round_half_up(acc_h, hidden_q15, hidden_shift);
      pre = sum < fxp::kInt16Min ? fxp::kInt16Min : (sum > fxp::kInt16Max ? fxp::kInt16Max : static_cast<int32_t>(sum));
    }
    return static_cast<int16_t>(pre);
  }
};

// The gate's activation of a Q3.12 pre-activation (the int8 LSTM's, §4).
inline int16_t activate(int16_t pre_q3_12, bool is_tanh) {
  constexpr int32_t kGateLeftShift = 0;  // the pre-activation is already Q3.12
  return activation_q0_15(pre_q3_12, kGateLeftShift, is_tanh ? 1 : 0);
}

// The reference gate stage: one row at a time, in the order of the formula.
inline void gate_reference(const qlstm_gate_s16_params& g, const GateArgsOf<int16_t>& a, int16_t* out_q0_15) {
  const bool is_tanh = g.activation == QLSTM_ACTIVATION_TANH;
  const GateRequant rq(g);
  for (int32_t b = 0; b < a.rows; ++b) {
    const int16_t* x = a.x + b * a.x_row_stride;
    const int16_t* h = a.h != nullptr ? a.h + b * a.h_row_stride : nullptr;
    int16_t* out = out_q0_15 + static_cast<ptrdiff_t>(b) * a.hidden_size;
    for (int32_t r = 0; r < a.hidden_size; ++r) {
      const int64_t acc_x = dot_plus_bias(x, g.input_weights + static_cast<ptrdiff_t>(r) * a.input_size, a.input_size,
                                          g.input_effective_bias[r]);
      const int64_t acc_h = h != nullptr ? dot_plus_bias(h, g.hidden_weights + static_cast<ptrdiff_t>(r) * a.hidden_size,
                                                         a.hidden_size, g.hidden_effective_bias[r])
                                         : 0;
      out[r] = activate(rq.pre_activation_q3_12(acc_x, acc_h, h != nullptr), is_tanh);
    }
  }
}

// The reference hidden update: h = sat16(RQ(o * tanh(c))), the int8 LSTM's product, an int16 result
// without zero point (row b of h at h_out + b * h_row_stride).
inline void hidden_update_reference(const HiddenUpdateParams& p, int32_t rows, int32_t hidden_size,
                                    const int16_t* o_q0_15, const int16_t* cell, int16_t* h_out,
                                    ptrdiff_t h_row_stride) {
  for (int32_t b = 0; b < rows; ++b) {
    const ptrdiff_t base = static_cast<ptrdiff_t>(b) * hidden_size;
    int16_t* h = h_out + b * h_row_stride;
    for (int32_t r = 0; r < hidden_size; ++r) {
      h[r] = fxp::saturate_to_s16(reference::output_times_tanh_cell(p, o_q0_15[base + r], cell[base + r]));
    }
  }
}

// The fully connected op's output from its accumulator: clamp(RQ64(acc)).
struct FcFinish {
  int32_t multiplier_q15, shift, activation_min, activation_max;
  explicit FcFinish(const qlstm_fc_s16_params& p)
      : multiplier_q15(fxp::reduce_multiplier_q31_to_q15(p.multiplier)),
        shift(p.shift),
        activation_min(p.activation_min),
        activation_max(p.activation_max) {}
  int16_t operator()(int64_t acc) const {
    const int32_t v = fxp::requantize_s64_round_half_up(acc, multiplier_q15, shift);
    return static_cast<int16_t>(fxp::clamp(v, activation_min, activation_max));
  }
};

}  // namespace s16
}  // namespace qlstm

#endif  // QLSTM_SRC_REFERENCE_LSTM_S16_REFERENCE_H_
