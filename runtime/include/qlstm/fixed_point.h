// Fixed-point primitives of the int8 LSTM, each named by its exact rounding.
// Every function is defined for every input: wrap-around and shifts of negative values are done
// on unsigned types or with floor identities, so nothing here is undefined behaviour.
// The arithmetic is described in docs/arithmetic.md §2.
#ifndef QLSTM_FIXED_POINT_H_
#define QLSTM_FIXED_POINT_H_

#include <stdint.h>

namespace qlstm {
namespace fxp {

constexpr int32_t kInt32Min = INT32_MIN;
constexpr int32_t kInt32Max = INT32_MAX;
constexpr int32_t kInt16Min = INT16_MIN;
constexpr int32_t kInt16Max = INT16_MAX;
constexpr int32_t kInt8Min = INT8_MIN;
constexpr int32_t kInt8Max = INT8_MAX;

// Two's-complement conversion of a uint32 bit pattern to int32 (well defined before C++20).
constexpr int32_t bits_to_s32(uint32_t bits) {
  return bits <= static_cast<uint32_t>(kInt32Max)
             ? static_cast<int32_t>(bits)
             : -static_cast<int32_t>(~bits) - 1;
}

// a + b modulo 2^32, as the Arm ADD instruction and the upstream C code on Arm compute it.
constexpr int32_t wrapping_add(int32_t a, int32_t b) {
  return bits_to_s32(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}

// a * b modulo 2^32.
constexpr int32_t wrapping_mul(int32_t a, int32_t b) {
  return bits_to_s32(static_cast<uint32_t>(a) * static_cast<uint32_t>(b));
}

// x * 2^shift modulo 2^32, 0 <= shift <= 31.
constexpr int32_t wrapping_shift_left(int32_t x, int32_t shift) {
  return bits_to_s32(static_cast<uint32_t>(x) << shift);
}

// floor(x / 2^shift), 0 <= shift <= 31 (an arithmetic shift right, written without shifting a
// negative value: for x < 0, ~x >= 0 and floor(x / 2^s) = ~(~x >> s)).
constexpr int32_t shift_right_floor(int32_t x, int32_t shift) {
  return x >= 0 ? (x >> shift) : ~((~x) >> shift);
}
constexpr int64_t shift_right_floor(int64_t x, int32_t shift) {
  return x >= 0 ? (x >> shift) : ~((~x) >> shift);
}

constexpr int32_t clamp(int32_t v, int32_t lo, int32_t hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}
constexpr int16_t saturate_to_s16(int32_t v) {
  return static_cast<int16_t>(clamp(v, kInt16Min, kInt16Max));
}
constexpr int8_t saturate_to_s8(int32_t v) {
  return static_cast<int8_t>(clamp(v, kInt8Min, kInt8Max));
}

// round_half_up(a * b / 2^31), saturated: gemmlowp's SaturatingRoundingDoublingHighMul for every
// input except that exact halves round towards +inf for both signs (CMSIS-NN's
// arm_nn_doubling_high_mult_no_sat; Arm's VQRDMULH). The only saturating input is
// a = b = INT32_MIN, which the kernel never produces (multipliers are >= 0).
constexpr int32_t saturating_rounding_doubling_high_mul(int32_t a, int32_t b) {
  constexpr int64_t kHalf = int64_t{1} << 30;
  constexpr int32_t kShift = 31;
  if (a == kInt32Min && b == kInt32Min) return kInt32Max;
  return static_cast<int32_t>(
      shift_right_floor(static_cast<int64_t>(a) * static_cast<int64_t>(b) + kHalf, kShift));
}

// x / 2^exponent rounded to nearest, ties away from zero, 0 <= exponent <= 31 (gemmlowp's
// RoundingDivideByPOT; CMSIS-NN's arm_nn_divide_by_power_of_two).
constexpr int32_t rounding_divide_by_pot(int32_t x, int32_t exponent) {
  const int32_t mask = static_cast<int32_t>((uint32_t{1} << exponent) - 1u);
  const int32_t remainder = static_cast<int32_t>(static_cast<uint32_t>(x) & static_cast<uint32_t>(mask));
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return shift_right_floor(x, exponent) + (remainder > threshold ? 1 : 0);
}

// Double-rounding requantization (TFLite's MultiplyByQuantizedMultiplier, CMSIS-NN's
// arm_nn_requantize without CMSIS_NN_USE_SINGLE_ROUNDING):
//   RDBPOT(SRDHM(x * 2^max(shift, 0) mod 2^32, multiplier), max(-shift, 0))
// shift in [-31, 31].
constexpr int32_t requantize_double_rounding(int32_t x, int32_t multiplier, int32_t shift) {
  const int32_t left = shift > 0 ? shift : 0;
  const int32_t right = shift > 0 ? 0 : -shift;
  return rounding_divide_by_pot(
      saturating_rounding_doubling_high_mul(wrapping_shift_left(x, left), multiplier), right);
}

// requantize_double_rounding for one (multiplier, shift) applied many times, with the shift's
// masks computed once. Only for multiplier >= 0 (what the kernel validates): then the SRDHM
// cannot saturate and its check is left out. Equal to requantize_double_rounding for every x.
struct RequantDoubleRounding {
  int32_t multiplier;
  int32_t left;       // max(shift, 0)
  int32_t right;      // max(-shift, 0)
  int32_t mask;       // 2^right - 1
  int32_t threshold;  // mask / 2

  static constexpr RequantDoubleRounding make(int32_t multiplier, int32_t shift) {
    const int32_t right = shift > 0 ? 0 : -shift;
    const int32_t mask = static_cast<int32_t>((uint32_t{1} << right) - 1u);
    return {multiplier, shift > 0 ? shift : 0, right, mask, mask >> 1};
  }
  constexpr int32_t operator()(int32_t x) const {
    constexpr int64_t kHalf = int64_t{1} << 30;
    constexpr int32_t kShift = 31;
    const int32_t high = static_cast<int32_t>(shift_right_floor(
        static_cast<int64_t>(wrapping_shift_left(x, left)) * multiplier + kHalf, kShift));
    const int32_t remainder = static_cast<int32_t>(static_cast<uint32_t>(high) & static_cast<uint32_t>(mask));
    return shift_right_floor(high, right) + (remainder > threshold + (high < 0 ? 1 : 0) ? 1 : 0);
  }
};

}  // namespace fxp
}  // namespace qlstm

#endif  // QLSTM_FIXED_POINT_H_
