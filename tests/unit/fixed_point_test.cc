// The fixed-point primitives against exact wide-integer formulas, at the edges and at random.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "naive_lstm.h"
#include "qlstm/fixed_point.h"

namespace {

using namespace qlstm::fxp;

const std::vector<int32_t>& edge_values() {
  static const std::vector<int32_t> v = [] {
    std::vector<int32_t> out = {INT32_MIN, INT32_MIN + 1, INT32_MIN + 2, -1073741825, -1073741824,
                                -1073741823, -65536, -32769, -32768, -32767, -3, -2, -1, 0, 1,
                                2, 3, 32767, 32768, 65535, 1073741823, 1073741824, 1073741825,
                                INT32_MAX - 1, INT32_MAX};
    for (int s = 0; s < 31; ++s) {
      const int32_t p = static_cast<int32_t>(1u << s);
      out.push_back(p);
      out.push_back(-p);
      out.push_back(p + 1);
      out.push_back(-p - 1);
    }
    return out;
  }();
  return v;
}

TEST(SaturatingRoundingDoublingHighMul, MatchesExactFormulaOnEdges) {
  for (int32_t a : edge_values()) {
    for (int32_t b : edge_values()) {
      ASSERT_EQ(saturating_rounding_doubling_high_mul(a, b), naive::srdhm(a, b)) << a << " * " << b;
    }
  }
}

TEST(SaturatingRoundingDoublingHighMul, KnownValues) {
  EXPECT_EQ(saturating_rounding_doubling_high_mul(INT32_MIN, INT32_MIN), INT32_MAX);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(INT32_MAX, INT32_MAX), INT32_MAX - 1);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(INT32_MIN, INT32_MAX), INT32_MIN + 1);
  // Exact halves round towards +inf for both signs: 1 * 2^30 / 2^31 = 0.5 -> 1; -0.5 -> 0.
  EXPECT_EQ(saturating_rounding_doubling_high_mul(1, 1 << 30), 1);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(-1, 1 << 30), 0);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(-3, 1 << 30), -1);  // -1.5 -> -1
  EXPECT_EQ(saturating_rounding_doubling_high_mul(3, 1 << 30), 2);    // 1.5 -> 2
}

TEST(RoundingDivideByPot, MatchesExactFormulaForAllExponents) {
  for (int e = 0; e <= 31; ++e) {
    for (int32_t x : edge_values()) {
      ASSERT_EQ(rounding_divide_by_pot(x, e), naive::rdbpot(x, e)) << x << " / 2^" << e;
    }
  }
}

TEST(RoundingDivideByPot, TiesGoAwayFromZero) {
  EXPECT_EQ(rounding_divide_by_pot(1, 1), 1);
  EXPECT_EQ(rounding_divide_by_pot(-1, 1), -1);
  EXPECT_EQ(rounding_divide_by_pot(3, 1), 2);
  EXPECT_EQ(rounding_divide_by_pot(-3, 1), -2);
  EXPECT_EQ(rounding_divide_by_pot(5, 2), 1);    // 1.25
  EXPECT_EQ(rounding_divide_by_pot(-5, 2), -1);  // -1.25
  EXPECT_EQ(rounding_divide_by_pot(6, 2), 2);    // 1.5
  EXPECT_EQ(rounding_divide_by_pot(-6, 2), -2);  // -1.5
  EXPECT_EQ(rounding_divide_by_pot(INT32_MIN, 31), -1);
  EXPECT_EQ(rounding_divide_by_pot(INT32_MAX, 31), 1);
  EXPECT_EQ(rounding_divide_by_pot(-(1 << 30), 31), -1);  // -0.5 -> -1
  EXPECT_EQ(rounding_divide_by_pot(1 << 30, 31), 1);      // 0.5 -> 1
  EXPECT_EQ(rounding_divide_by_pot((1 << 30) - 1, 31), 0);
  EXPECT_EQ(rounding_divide_by_pot(INT32_MIN, 0), INT32_MIN);
}

TEST(RequantizeDoubleRounding, MatchesExactFormulaOnEdgesAndAllShifts) {
  const std::vector<int32_t> multipliers = {0, 1, 1 << 30, (1 << 30) + 1, 1518500250, INT32_MAX - 1,
                                            INT32_MAX};
  for (int s = -31; s <= 31; ++s) {
    for (int32_t m : multipliers) {
      for (int32_t x : edge_values()) {
        ASSERT_EQ(requantize_double_rounding(x, m, s), naive::requantize(x, m, s))
            << "x=" << x << " m=" << m << " s=" << s;
      }
    }
  }
}

TEST(RequantizeDoubleRounding, LeftShiftWrapsIn32Bits) {
  // 2^30 << 1 wraps to INT32_MIN before the multiply, exactly as on Arm.
  EXPECT_EQ(requantize_double_rounding(1 << 30, INT32_MAX, 1),
            saturating_rounding_doubling_high_mul(INT32_MIN, INT32_MAX));
  EXPECT_EQ(requantize_double_rounding(-1, 1 << 30, 31), saturating_rounding_doubling_high_mul(INT32_MIN, 1 << 30));
}

TEST(RequantizeDoubleRounding, RandomAgainstExactFormula) {
  std::mt19937_64 rng(12345);
  std::uniform_int_distribution<int32_t> any(INT32_MIN, INT32_MAX);
  std::uniform_int_distribution<int32_t> mult(0, INT32_MAX);
  std::uniform_int_distribution<int32_t> shift(-31, 31);
  for (int k = 0; k < 200000; ++k) {
    const int32_t x = any(rng), m = mult(rng), s = shift(rng);
    ASSERT_EQ(requantize_double_rounding(x, m, s), naive::requantize(x, m, s))
        << "x=" << x << " m=" << m << " s=" << s;
  }
}

TEST(Wrapping, AddMulShiftAndFloorShift) {
  EXPECT_EQ(wrapping_add(INT32_MAX, 1), INT32_MIN);
  EXPECT_EQ(wrapping_add(INT32_MIN, -1), INT32_MAX);
  EXPECT_EQ(wrapping_mul(65536, 65536), 0);
  EXPECT_EQ(wrapping_mul(-1, INT32_MIN), INT32_MIN);
  EXPECT_EQ(wrapping_shift_left(-1, 31), INT32_MIN);
  EXPECT_EQ(wrapping_shift_left(3, 31), INT32_MIN);
  EXPECT_EQ(wrapping_shift_left(-3, 0), -3);
  for (int s = 0; s <= 31; ++s) {
    for (int32_t x : edge_values()) {
      ASSERT_EQ(shift_right_floor(x, s), naive::floor_div(x, naive::i128{1} << s)) << x << " " << s;
      ASSERT_EQ(wrapping_shift_left(x, s), naive::to_s32(static_cast<naive::i64>(x) * (naive::i64{1} << s)));
    }
  }
}

TEST(Saturate, ToS16AndS8) {
  EXPECT_EQ(saturate_to_s16(40000), 32767);
  EXPECT_EQ(saturate_to_s16(-40000), -32768);
  EXPECT_EQ(saturate_to_s16(-5), -5);
  EXPECT_EQ(saturate_to_s8(128), 127);
  EXPECT_EQ(saturate_to_s8(-129), -128);
  EXPECT_EQ(saturate_to_s8(INT32_MIN), -128);
}

}  // namespace
