// Fixed-point primitives of the int8 LSTM and softmax, each named by its exact rounding.
// Every function is defined for every input: wrap-around and shifts of negative values are done
// on unsigned types or with floor identities, so nothing here is undefined behaviour.
// The arithmetic is described in docs/arithmetic.md §2 (and §11 for the softmax's exp and 1/(1+x)).
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

// Two's-complement conversion of a uint64 bit pattern to int64.
constexpr int64_t bits_to_s64(uint64_t bits) {
  return bits <= static_cast<uint64_t>(INT64_MAX) ? static_cast<int64_t>(bits)
                                                   : -static_cast<int64_t>(~bits) - 1;
}

// x modulo 2^32 as int32 (C's conversion of an int64 to int32 on every compiler the project uses).
constexpr int32_t truncate_to_s32(int64_t x) {
  return bits_to_s32(static_cast<uint32_t>(static_cast<uint64_t>(x)));
}

// a + b and a * b modulo 2^64.
constexpr int64_t wrapping_add_s64(int64_t a, int64_t b) {
  return bits_to_s64(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
constexpr int64_t wrapping_mul_s64(int64_t a, int64_t b) {
  return bits_to_s64(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
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

// round_half_up(a * b / 2^31), saturated: gemmlowp's SaturatingRoundingDoublingHighMul (its nudge
// and truncating division round exact halves upward for both signs too, so the two agree on every
// input; TFLite's kernels use it), CMSIS-NN's arm_nn_doubling_high_mult_no_sat and Arm's VQRDMULH.
// The only saturating input is a = b = INT32_MIN, which the kernel never produces (multipliers
// are >= 0).
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

// x / 2^exponent rounded to nearest, ties away from zero, 0 <= exponent <= 62, |x| < 2^62: the
// int64 form of rounding_divide_by_pot, as floor((x + 2^(exponent-1) - [x < 0]) / 2^exponent)
// (for x < 0 that is -floor((-x + 2^(exponent-1)) / 2^exponent)).
constexpr int64_t rounding_divide_by_pot_s64(int64_t x, int32_t exponent) {
  if (exponent == 0) return x;
  const int64_t half = int64_t{1} << (exponent - 1);
  return shift_right_floor(x + half - (x < 0 ? 1 : 0), exponent);
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

// ---- The 16x8 kernels' requantization (docs/arithmetic.md §14).

// A Q31 multiplier rounded half up to Q15, saturated to 0x7FFF from 0x7FFF0000 on (where the
// rounding would reach 2^15): CMSIS-NN's REDUCE_MULTIPLIER. Multipliers are >= 0 (validated), but
// every input is defined: below 0x7FFF0000 the sum cannot overflow.
constexpr int32_t reduce_multiplier_q31_to_q15(int32_t multiplier_q31) {
  constexpr int32_t kSaturatesFrom = 0x7FFF0000;
  constexpr int32_t kQ15Max = 0x7FFF;
  constexpr int32_t kHalf = int32_t{1} << 15;
  constexpr int32_t kShift = 16;
  return multiplier_q31 < kSaturatesFrom ? shift_right_floor(multiplier_q31 + kHalf, kShift) : kQ15Max;
}

// The 64-bit requantization with a Q15 multiplier (CMSIS-NN's arm_nn_requantize_s64):
//   high = floor(x * multiplier_q15 / 2^(14 - shift)) mod 2^32   (the product exact modulo 2^64)
//   result = floor((high + 1) / 2)                                (the +1 modulo 2^32)
// that is round_half_up(x * multiplier_q15 / 2^(15 - shift)) while the product fits int64 and high
// fits int32; outside that the wrap-arounds are those of upstream's C on Arm. shift in [-49, 14].
constexpr int32_t requantize_s64_round_half_up(int64_t x, int32_t multiplier_q15, int32_t shift) {
  constexpr int32_t kFirstShift = 14;
  const int64_t product = wrapping_mul_s64(x, multiplier_q15);
  const int32_t high = truncate_to_s32(shift_right_floor(product, kFirstShift - shift));
  return shift_right_floor(wrapping_add(high, 1), 1);
}

// ---- The softmax's primitives (docs/arithmetic.md §11): gemmlowp's fixed-point exp and
// reciprocal as CMSIS-NN's arm_softmax_s8 computes them, every rounding that of SRDHM or RDBPOT.

// Leading zero bits of x (32 for 0), as the Arm CLZ instruction counts them.
constexpr int32_t count_leading_zeros(uint32_t x) {
  int32_t n = 0;
  for (uint32_t bit = uint32_t{1} << 31; bit != 0 && (x & bit) == 0; bit >>= 1) ++n;
  return n;
}

// x * 2^exponent, 0 <= exponent <= 31, saturated to int32 (no rounding: the product is exact or
// saturates). CMSIS-NN's arm_nn_mult_by_power_of_two; gemmlowp's SaturatingRoundingMultiplyByPOT
// for a positive exponent.
constexpr int32_t saturating_shift_left(int32_t x, int32_t exponent) {
  const int32_t threshold = static_cast<int32_t>((uint32_t{1} << (31 - exponent)) - 1u);
  return x > threshold ? kInt32Max : (x < -threshold ? kInt32Min : wrapping_shift_left(x, exponent));
}

// exp(x) for x <= 0 given in Q5.26, as Q0.31 (exp(0) = INT32_MAX). gemmlowp's
// exp_on_negative_values with 5 integer bits (CMSIS-NN's arm_nn_exp_on_negative_values): a
// polynomial on [-1/4, 0) times exp(-2^k) for each set bit k of the rest. Every product is an
// SRDHM, every halving an RDBPOT.
constexpr int32_t exp_on_negative_q5_26_to_q0_31(int32_t x_q5_26) {
  constexpr int32_t kQuarterLog2 = 24;  // 1/4 in Q5.26
  constexpr int32_t kQuarter = int32_t{1} << kQuarterLog2;
  constexpr int32_t kToQ0_31 = 5;       // Q5.26 -> Q0.31
  constexpr int32_t kOneEighth_q0_31 = int32_t{1} << 28;
  constexpr int32_t kExpMinusOneEighth_q0_31 = 1895147668;  // exp(-1/8)
  constexpr int32_t kOneThird_q0_31 = 715827883;
  // exp(-2^k) for k = -2 ... 4 (a remainder bit of 2^(k + 26)), Q0.31.
  constexpr int32_t kExpMinusPowerOfTwo_q0_31[] = {1672461947, 1302514674, 790015084, 290630308,
                                                   39332535,   720401,     242};
  // x = r + rest with r in [-1/4, 0): Taylor series of exp around -1/8 on r + 1/8.
  const int32_t r_q5_26 = static_cast<int32_t>(static_cast<uint32_t>(x_q5_26) & static_cast<uint32_t>(kQuarter - 1)) -
                          kQuarter;
  const int32_t rest_q5_26 = r_q5_26 - x_q5_26;  // >= 0, a multiple of 1/4
  const int32_t a = wrapping_add(wrapping_shift_left(r_q5_26, kToQ0_31), kOneEighth_q0_31);
  const int32_t a2 = saturating_rounding_doubling_high_mul(a, a);
  const int32_t a3 = saturating_rounding_doubling_high_mul(a2, a);
  const int32_t a4_over_4 = rounding_divide_by_pot(saturating_rounding_doubling_high_mul(a2, a2), 2);
  const int32_t a4_over_12_plus_a3_over_3 = saturating_rounding_doubling_high_mul(a4_over_4 + a3, kOneThird_q0_31);
  // a + a^2/2 + a^3/6 + a^4/24
  const int32_t series = a + rounding_divide_by_pot(a4_over_12_plus_a3_over_3 + a2, 1);
  int32_t result = kExpMinusOneEighth_q0_31 + saturating_rounding_doubling_high_mul(kExpMinusOneEighth_q0_31, series);
  for (int32_t k = 0; k < 7; ++k) {
    if ((rest_q5_26 & (int32_t{1} << (kQuarterLog2 + k))) != 0) {
      result = saturating_rounding_doubling_high_mul(result, kExpMinusPowerOfTwo_q0_31[k]);
    }
  }
  return x_q5_26 == 0 ? kInt32Max : result;
}

// 1 / (1 + x) for x in [0, 1) given in Q0.31, as Q0.31. gemmlowp's one_over_one_plus_x_for_x_in_0_1
// (CMSIS-NN's arm_nn_one_over_one_plus_x_for_x_in_0_1): the half denominator (1 + x) / 2 rounded
// half away from zero, then three Newton-Raphson steps from 48/17 - 32/17 d in Q2.29.
constexpr int32_t one_over_one_plus_x_q0_31(int32_t x_q0_31) {
  constexpr int32_t kFortyEightSeventeenths_q2_29 = 1515870810;
  constexpr int32_t kMinusThirtyTwoSeventeenths_q2_29 = -1010580540;
  constexpr int32_t kOne_q2_29 = int32_t{1} << 29;
  constexpr int32_t kQ2_29ToQ0_31 = 2;
  const int64_t sum = int64_t{x_q0_31} + kInt32Max;
  // (sum +- 1) / 2 truncated: sum / 2 rounded half away from zero.
  const int32_t half_denominator_q0_31 = static_cast<int32_t>((sum + (sum >= 0 ? 1 : -1)) / 2);
  int32_t x_q2_29 = kFortyEightSeventeenths_q2_29 +
                    saturating_rounding_doubling_high_mul(half_denominator_q0_31, kMinusThirtyTwoSeventeenths_q2_29);
  for (int32_t step = 0; step < 3; ++step) {
    const int32_t error_q2_29 = kOne_q2_29 - saturating_rounding_doubling_high_mul(half_denominator_q0_31, x_q2_29);
    x_q2_29 += saturating_shift_left(saturating_rounding_doubling_high_mul(x_q2_29, error_q2_29), kQ2_29ToQ0_31);
  }
  // x = 1/d in Q2.29 with d = (1 + x)/2; its double read as Q0.31 is 1/(2d).
  return saturating_shift_left(x_q2_29, 1);
}

// ---- The log-softmax's primitives (docs/arithmetic.md §18): gemmlowp's fixed-point natural
// log as TFLite's int8 LOG_SOFTMAX computes it.

// (a + b) / 2 rounded half away from zero (gemmlowp's RoundingHalfSum).
constexpr int32_t rounding_half_sum(int32_t a, int32_t b) {
  const int64_t sum = int64_t{a} + b;
  return static_cast<int32_t>((sum + (sum >= 0 ? 1 : -1)) / 2);
}

// a + b and a - b saturated to int32.
constexpr int32_t saturating_add(int32_t a, int32_t b) {
  const int64_t sum = int64_t{a} + b;
  return static_cast<int32_t>(sum > kInt32Max ? kInt32Max : (sum < kInt32Min ? kInt32Min : sum));
}
constexpr int32_t saturating_sub(int32_t a, int32_t b) {
  const int64_t difference = int64_t{a} - b;
  return static_cast<int32_t>(difference > kInt32Max ? kInt32Max : (difference < kInt32Min ? kInt32Min : difference));
}

// A fixed-point value with `from_integer_bits` integer bits held with `to_integer_bits` (gemmlowp's
// Rescale): a saturating left shift when it gains fraction bits, an RDBPOT when it loses them.
constexpr int32_t rescale(int32_t x, int32_t from_integer_bits, int32_t to_integer_bits) {
  return from_integer_bits >= to_integer_bits ? saturating_shift_left(x, from_integer_bits - to_integer_bits)
                                              : rounding_divide_by_pot(x, to_integer_bits - from_integer_bits);
}

// ln(x) for x >= 1 given with `input_integer_bits` integer bits, returned with
// `output_integer_bits` (TFLite's log_x_for_x_greater_than_or_equal_to_1, gemmlowp's arithmetic):
// x = 2^k r with r in [sqrt(1/2), sqrt(2)) (the power k adjusted by a quarter either way), then
// ln x = (k +- 1/4) ln 2 + ln of r's remainder around 2^(+-1/4) by a rational approximation. Every
// product is an SRDHM, every sum wraps as upstream's (its range keeps them exact).
constexpr int32_t log_of_at_least_one(int32_t x, int32_t input_integer_bits, int32_t output_integer_bits) {
  constexpr int32_t kLn2_q0_31 = 1488522236;
  constexpr int32_t kSqrtSqrtHalf_q0_31 = 1805811301;  // 2^(-1/4)
  constexpr int32_t kSqrtHalf_q0_31 = 1518500250;      // 2^(-1/2)
  constexpr int32_t kOneQuarter_q0_31 = 536870912;
  // The approximation's coefficients, Q0.31: 11/240 2^(1/4), 1/20 2^(1/4), 2 2^(-1/4) - 2^(1/4),
  // 1/4 2^(1/4).
  constexpr int32_t kAlphaN_q0_31 = 117049297, kAlphaD_q0_31 = 127690142;
  constexpr int32_t kAlphaI_q0_31 = 1057819769, kAlphaF_q0_31 = 638450708;
  // One more integer bit than the output while summing (the power's term may saturate).
  const int32_t accum_bits = output_integer_bits + 1;
  constexpr int32_t kFractionBits = 31;
  const int32_t quarter = rescale(kOneQuarter_q0_31, 0, accum_bits);
  // Two normalizations of x as Q0.31: a, and b from x / sqrt(2); the smaller mantissa wins.
  const int32_t a_headroom_plus_1 = count_leading_zeros(static_cast<uint32_t>(x));
  const int32_t a_tmp = saturating_shift_left(x, a_headroom_plus_1 - 1);
  const int32_t r_a = saturating_shift_left(saturating_rounding_doubling_high_mul(a_tmp, kSqrtHalf_q0_31), 1);
  const int32_t a_power = saturating_add(
      saturating_shift_left(input_integer_bits - a_headroom_plus_1, kFractionBits - accum_bits), quarter);
  const int32_t b_headroom = count_leading_zeros(static_cast<uint32_t>(saturating_rounding_doubling_high_mul(x, kSqrtHalf_q0_31))) - 1;
  const int32_t r_b = saturating_shift_left(x, b_headroom);
  const int32_t b_power =
      saturating_sub(saturating_shift_left(input_integer_bits - b_headroom, kFractionBits - accum_bits), quarter);
  const int32_t r = r_a < r_b ? r_a : r_b;
  const int32_t power = a_power > b_power ? a_power : b_power;
  // ln(r 2^(1/4)) ~ num / (1 + denom_minus_one) in q = 2 (r - 2^(-1/4)).
  const int32_t p = rounding_half_sum(r, kSqrtSqrtHalf_q0_31);
  const int32_t q = wrapping_shift_left(wrapping_add(r, -kSqrtSqrtHalf_q0_31), 1);
  const int32_t q2 = saturating_rounding_doubling_high_mul(q, q);
  const int32_t num = wrapping_add(saturating_rounding_doubling_high_mul(q, r),
                                   saturating_rounding_doubling_high_mul(saturating_rounding_doubling_high_mul(q, q2), kAlphaN_q0_31));
  const int32_t denom_minus_one = wrapping_add(
      saturating_rounding_doubling_high_mul(
          p, wrapping_add(wrapping_add(kAlphaI_q0_31, q), saturating_rounding_doubling_high_mul(kAlphaD_q0_31, q2))),
      saturating_rounding_doubling_high_mul(kAlphaF_q0_31, q));
  const int32_t reciprocal = one_over_one_plus_x_q0_31(denom_minus_one);
  const int32_t sum = wrapping_add(saturating_rounding_doubling_high_mul(power, kLn2_q0_31),
                                   saturating_rounding_doubling_high_mul(rescale(num, 0, accum_bits), reciprocal));
  return rescale(sum, accum_bits, output_integer_bits);
}

}  // namespace fxp
}  // namespace qlstm

#endif  // QLSTM_FIXED_POINT_H_
