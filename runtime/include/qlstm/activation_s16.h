// int16 sigmoid and tanh by a 256-entry table with linear interpolation (docs/arithmetic.md §4).
// Input: int16 in Q3.12 after a power-of-two pre-scale by `left_shift`; output: Q0.15.
#ifndef QLSTM_ACTIVATION_S16_H_
#define QLSTM_ACTIVATION_S16_H_

#include <stdint.h>

#include "qlstm/fixed_point.h"

namespace qlstm {

constexpr int32_t kSigmoidTableSize = 256;
// T[i] ~= 2^16 * sigmoid(i / 24), unsigned 0.16. Generated data: runtime/src/sigmoid_table_u16.cc.
extern const uint16_t kSigmoidTableU16[kSigmoidTableSize];

// Formats named once.
constexpr int32_t kQ3_12FractionalBits = 12;  // gate pre-activations, tanh input
constexpr int32_t kQ0_15FractionalBits = 15;  // gate outputs, tanh(c)
constexpr int32_t kActivationLeftShiftMin = -31;
constexpr int32_t kActivationLeftShiftMax = 14;

namespace detail {

// The table has one entry per 1/24 of sigmoid's argument. A Q3.12 value times 3 has
// 3 * 2^12 / 24 = 2^9 units per table step for sigmoid(x), and 2^8 for sigmoid(2x) (tanh).
constexpr int32_t kPrescaleFactor = 3;
constexpr int32_t kSigmoidStepBits = 9;  // sigmoid: 9 fractional bits per table step
constexpr int32_t kTanhStepBits = 8;     // tanh(z) = 2 sigmoid(2z) - 1: 8 fractional bits
constexpr int32_t kTableLastIndex = kSigmoidTableSize - 1;
// Interpolated sigmoid has scale 2^-(16 + step bits); the Q0.15 result drops 16 + step - 15 bits.
constexpr int32_t kSigmoidDropBits = 16 + kSigmoidStepBits - kQ0_15FractionalBits;  // 10
constexpr int32_t kTanhDropBits = kTanhStepBits;  // (2 sigma - 1) in Q0.15: 16 + 8 - 15 - 1

// v = x * 3 * 2^left_shift, with a rounding (half up) right shift when left_shift < 0.
constexpr int32_t prescale(int16_t x, int32_t left_shift) {
  if (left_shift >= 0) {
    return static_cast<int32_t>(x) * (kPrescaleFactor << left_shift);
  }
  const int32_t right = -left_shift;
  return fxp::shift_right_floor(static_cast<int32_t>(x) * kPrescaleFactor + (1 << (right - 1)),
                                right);
}

// sigma(|v| / 2^step_bits / 24) scaled by 2^(16 + step_bits), or the saturated value.
constexpr int32_t interpolate(int32_t abs_v, int32_t step_bits, int32_t saturated) {
  const int32_t index = abs_v >> step_bits;
  if (index >= kTableLastIndex) return saturated;
  const int32_t frac = abs_v & ((1 << step_bits) - 1);
  const int32_t lo = kSigmoidTableU16[index];
  const int32_t hi = kSigmoidTableU16[index + 1];
  return (lo << step_bits) + frac * (hi - lo);
}

}  // namespace detail

// sigmoid in Q0.15 of x (Q3.12 after the pre-scale). Gates use left_shift = 0.
inline int16_t sigmoid_q0_15(int16_t x, int32_t left_shift) {
  using namespace detail;
  constexpr int32_t kSaturated = INT16_MAX << kSigmoidDropBits;
  constexpr int32_t kOne = 1 << (16 + kSigmoidStepBits);  // 1.0 at the interpolation scale
  constexpr int32_t kRound = 1 << (kSigmoidDropBits - 1);
  const int32_t v = prescale(x, left_shift);
  const int32_t r = interpolate(v >= 0 ? v : -v, kSigmoidStepBits, kSaturated);
  // For v < 0, sigma(v) = 1 - sigma(|v|); the "- 1" makes the two halves sum to exactly 1.
  const int32_t y = v >= 0 ? (r + kRound) >> kSigmoidDropBits
                           : (kOne - r + kRound - 1) >> kSigmoidDropBits;
  return static_cast<int16_t>(y);
}

// tanh in Q0.15 of x (Q3.12 after the pre-scale). tanh of the cell uses left_shift = P + 12.
inline int16_t tanh_q0_15(int16_t x, int32_t left_shift) {
  using namespace detail;
  constexpr int32_t kSaturated = UINT16_MAX << kTanhStepBits;
  constexpr int32_t kHalf = 1 << (16 + kTanhStepBits - 1);  // 0.5 at the interpolation scale
  constexpr int32_t kRound = 1 << (kTanhDropBits - 1);
  const int32_t v = prescale(x, left_shift);
  const int32_t r = interpolate(v >= 0 ? v : -v, kTanhStepBits, kSaturated);
  const int32_t y = v >= 0 ? fxp::shift_right_floor(r - kHalf + kRound, kTanhDropBits)
                           : fxp::shift_right_floor(kHalf - r + kRound - 1, kTanhDropBits);
  return static_cast<int16_t>(y);
}

inline int16_t activation_q0_15(int16_t x, int32_t left_shift, int32_t activation_is_tanh) {
  return activation_is_tanh ? tanh_q0_15(x, left_shift) : sigmoid_q0_15(x, left_shift);
}

}  // namespace qlstm

#endif  // QLSTM_ACTIVATION_S16_H_
