// What the int8 softmax and log-softmax share (docs/arithmetic.md §11, §18): a row's maximum, the
// exponential of a difference from it, and the row's sum of exponentials.
#ifndef QLSTM_RUNTIME_SOFTMAX_EXP_SUM_S8_H_
#define QLSTM_RUNTIME_SOFTMAX_EXP_SUM_S8_H_

#include <stdint.h>

#include "qlstm/fixed_point.h"

namespace qlstm {

// The scaling of a difference d <= 0 from the row's maximum: d * 2^left_shift, an SRDHM by
// multiplier, Q5.26 (TFLite's MultiplyByQuantizedMultiplier with a left shift: exact for d >=
// diff_min, which the ops validate).
struct ScaledDifference {
  int32_t multiplier;
  int32_t left_shift;
  int32_t q5_26(int32_t d) const {
    return fxp::saturating_rounding_doubling_high_mul(fxp::wrapping_shift_left(d, left_shift), multiplier);
  }
  // exp(beta * input_scale * d), Q0.31.
  int32_t exp_q0_31(int32_t d) const { return fxp::exp_on_negative_q5_26_to_q0_31(q5_26(d)); }
};

// The sum of a row's exponentials has 12 integer bits (Q12.19), as in TFLite Micro.
constexpr int32_t kExpSumIntegerBits = 12;

inline int32_t row_max_s8(const int8_t* x, int32_t n) {
  int32_t max = x[0];
  for (int32_t i = 1; i < n; ++i) max = x[i] > max ? x[i] : max;
  return max;
}

// Q12.19 sum of exp over the row's differences at or above diff_min: at most n * 2^19 < 2^31 for
// the ops' longest rows.
inline int32_t exp_sum_q12_19(const ScaledDifference& s, const int8_t* x, int32_t n, int32_t max, int32_t diff_min) {
  int32_t sum_q12_19 = 0;
  for (int32_t i = 0; i < n; ++i) {
    const int32_t d = x[i] - max;
    if (d >= diff_min) sum_q12_19 += fxp::rounding_divide_by_pot(s.exp_q0_31(d), kExpSumIntegerBits);
  }
  return sum_q12_19;
}

}  // namespace qlstm

#endif  // QLSTM_RUNTIME_SOFTMAX_EXP_SUM_S8_H_
