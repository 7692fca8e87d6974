// The 16x8 requantization primitives (docs/arithmetic.md §14) against exact 128-bit formulas, and
// the 16x8 fully connected op's validation and arithmetic.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "qlstm/fixed_point.h"
#include "qlstm/fully_connected_s16.h"
#include "qlstm/lstm_s8.h"

namespace {

using namespace qlstm::fxp;
using Wide = __int128;

Wide floor_div_pot(Wide x, int e) {  // floor(x / 2^e) without shifting a negative value
  const Wide d = Wide{1} << e;
  return x >= 0 ? x / d : -((-x + d - 1) / d);
}

// round_half_up(x * m / 2^(15 - shift)), exact.
int64_t round_half_up_model(int64_t x, int32_t m, int32_t shift) {
  return static_cast<int64_t>(floor_div_pot(Wide{x} * m + (Wide{1} << (14 - shift)), 15 - shift));
}

TEST(ReduceMultiplier, RoundsHalfUpToQ15) {
  EXPECT_EQ(reduce_multiplier_q31_to_q15(0), 0);
  EXPECT_EQ(reduce_multiplier_q31_to_q15(0x7FFF), 0);       // below half of 2^16
  EXPECT_EQ(reduce_multiplier_q31_to_q15(0x8000), 1);       // exactly half: up
  EXPECT_EQ(reduce_multiplier_q31_to_q15(1 << 30), 1 << 14);
  EXPECT_EQ(reduce_multiplier_q31_to_q15(0x40007FFF), 0x4000);
  EXPECT_EQ(reduce_multiplier_q31_to_q15(0x40008000), 0x4001);
  EXPECT_EQ(reduce_multiplier_q31_to_q15(0x7FFE7FFF), 0x7FFE);
  EXPECT_EQ(reduce_multiplier_q31_to_q15(0x7FFE8000), 0x7FFF);
  EXPECT_EQ(reduce_multiplier_q31_to_q15(0x7FFEFFFF), 0x7FFF);
}

TEST(ReduceMultiplier, SaturatesFrom0x7FFF0000) {
  // (m + 2^15) >> 16 would give 0x8000 here; the reduction stops at 0x7FFF.
  EXPECT_EQ(reduce_multiplier_q31_to_q15(0x7FFF0000), 0x7FFF);
  EXPECT_EQ(reduce_multiplier_q31_to_q15(0x7FFF7FFF), 0x7FFF);
  EXPECT_EQ(reduce_multiplier_q31_to_q15(0x7FFF8000), 0x7FFF);
  EXPECT_EQ(reduce_multiplier_q31_to_q15(INT32_MAX), 0x7FFF);
  for (int32_t m = 0; m < 0x7FFF0000; m += 0x10001) {
    EXPECT_EQ(reduce_multiplier_q31_to_q15(m), (int64_t{m} + 0x8000) / 0x10000) << m;
  }
}

TEST(RequantizeS64, NegativeProductsRoundHalfUp) {
  // m16 = 2^14, shift 0: x * 2^14 / 2^15 = x / 2, ties towards +inf for both signs.
  EXPECT_EQ(requantize_s64_round_half_up(-1, 1 << 14, 0), 0);   // -0.5 -> 0
  EXPECT_EQ(requantize_s64_round_half_up(-2, 1 << 14, 0), -1);
  EXPECT_EQ(requantize_s64_round_half_up(-3, 1 << 14, 0), -1);  // -1.5 -> -1
  EXPECT_EQ(requantize_s64_round_half_up(1, 1 << 14, 0), 1);    // 0.5 -> 1
  EXPECT_EQ(requantize_s64_round_half_up(3, 1 << 14, 0), 2);
  EXPECT_EQ(requantize_s64_round_half_up(-5, 0x7FFF, -1), round_half_up_model(-5, 0x7FFF, -1));
}

TEST(RequantizeS64, ShiftsAtTheRangeEnds) {
  // shift = 14: the first shift is 0, one rounding bit.
  EXPECT_EQ(requantize_s64_round_half_up(3, 1, QLSTM_S16_SHIFT_MAX), 2);
  EXPECT_EQ(requantize_s64_round_half_up(-3, 1, QLSTM_S16_SHIFT_MAX), -1);
  // shift = QLSTM_SHIFT_MIN: x * m / 2^46.
  const int64_t big = int64_t{1} << 45;
  EXPECT_EQ(requantize_s64_round_half_up(big, 0x7FFF, QLSTM_SHIFT_MIN), round_half_up_model(big, 0x7FFF, QLSTM_SHIFT_MIN));
  EXPECT_EQ(requantize_s64_round_half_up(-big, 0x7FFF, QLSTM_SHIFT_MIN),
            round_half_up_model(-big, 0x7FFF, QLSTM_SHIFT_MIN));
  EXPECT_EQ(requantize_s64_round_half_up(INT64_MIN / 0x8000, 0x7FFF, -49),
            round_half_up_model(INT64_MIN / 0x8000, 0x7FFF, -49));
}

TEST(RequantizeS64, EqualsTheExactRoundingWhileInRange) {
  std::mt19937_64 rng(17);
  int in_range = 0;
  for (int k = 0; k < 200000; ++k) {
    const int32_t shift = static_cast<int32_t>(rng() % 46) - 31;  // [-31, 14]
    const int32_t m = reduce_multiplier_q31_to_q15(static_cast<int32_t>(rng() >> 33));
    const int64_t x = static_cast<int64_t>(rng()) >> (rng() % 64);
    const Wide product = Wide{x} * m;
    const Wide high = floor_div_pot(product, 14 - shift);
    // Outside the exact range (the product or the first shift's result wraps): see the wrap test.
    if (product > INT64_MAX || product < INT64_MIN || high >= INT32_MAX || high < INT32_MIN) continue;
    ++in_range;
    ASSERT_EQ(requantize_s64_round_half_up(x, m, shift), round_half_up_model(x, m, shift))
        << x << " " << m << " " << shift;
  }
  EXPECT_GT(in_range, 50000);
}

TEST(RequantizeS64, WrapsAsUpstreamOutsideTheRange) {
  // The first shift's result is taken modulo 2^32, and INT32_MAX + 1 wraps before the last shift.
  EXPECT_EQ(requantize_s64_round_half_up(INT32_MAX, 1, QLSTM_S16_SHIFT_MAX), INT32_MIN / 2);
  EXPECT_EQ(requantize_s64_round_half_up(int64_t{1} << 32, 1, QLSTM_S16_SHIFT_MAX), 0);
  // The product wraps modulo 2^64.
  EXPECT_EQ(requantize_s64_round_half_up(INT64_MAX, 2, QLSTM_S16_SHIFT_MAX), -1);  // 2^64 - 2 -> -2; (-2 + 1) >> 1
}

// ---- The op.

struct Fc {
  int8_t weights[6] = {1, -2, 3, 127, -128, 0};  // O = 2, I = 3
  int64_t bias[2] = {100, -(int64_t{1} << 31)};
  qlstm_fc_s16_params p{};
  Fc() {
    p.rows = 2;
    p.input_size = 3;
    p.output_size = 2;
    p.multiplier = 1 << 30;
    p.shift = -1;
    p.weights = weights;
    p.bias = bias;
    p.activation_min = INT16_MIN;
    p.activation_max = INT16_MAX;
  }
};

const char* refused_field(const qlstm_fc_s16_params& p) {
  const char* field = nullptr;
  EXPECT_NE(qlstm_fc_s16_validate(&p, &field), QLSTM_OK);
  return field != nullptr ? field : "(none)";
}

TEST(FcS16Validate, NamesEachField) {
  Fc f;
  const char* field = "unset";
  EXPECT_EQ(qlstm_fc_s16_validate(&f.p, &field), QLSTM_OK);
  EXPECT_EQ(field, nullptr);
  EXPECT_EQ(qlstm_fc_s16_validate(nullptr, &field), QLSTM_ERROR_NULL_POINTER);
  EXPECT_STREQ(field, "params");
  struct Edit {
    const char* field;
    void (*edit)(qlstm_fc_s16_params&);
  };
  const Edit edits[] = {
      {"rows", [](qlstm_fc_s16_params& p) { p.rows = -1; }},
      {"rows", [](qlstm_fc_s16_params& p) { p.rows = INT32_MAX; }},
      {"input_size", [](qlstm_fc_s16_params& p) { p.input_size = 0; }},
      {"output_size", [](qlstm_fc_s16_params& p) { p.output_size = 0; }},
      {"output_size", [](qlstm_fc_s16_params& p) { p.output_size = INT32_MAX; }},
      {"multiplier", [](qlstm_fc_s16_params& p) { p.multiplier = -1; }},
      {"shift", [](qlstm_fc_s16_params& p) { p.shift = QLSTM_S16_SHIFT_MAX + 1; }},
      {"shift", [](qlstm_fc_s16_params& p) { p.shift = QLSTM_SHIFT_MIN - 1; }},
      {"weights", [](qlstm_fc_s16_params& p) { p.weights = nullptr; }},
      {"activation_min", [](qlstm_fc_s16_params& p) { p.activation_min = INT16_MIN - 1; }},
      {"activation_max", [](qlstm_fc_s16_params& p) { p.activation_max = INT16_MAX + 1; }},
      {"activation_max", [](qlstm_fc_s16_params& p) { p.activation_max = p.activation_min - 1; }},
  };
  for (const Edit& e : edits) {
    Fc g;
    e.edit(g.p);
    EXPECT_STREQ(refused_field(g.p), e.field);
  }
}

TEST(FcS16Validate, AcceptsTheRangeEnds) {
  Fc f;
  f.p.bias = nullptr;  // no bias
  f.p.multiplier = INT32_MAX;
  f.p.shift = QLSTM_S16_SHIFT_MAX;
  EXPECT_EQ(qlstm_fc_s16_validate(&f.p, nullptr), QLSTM_OK);
  f.p.multiplier = 0;
  f.p.shift = QLSTM_SHIFT_MIN;
  f.p.rows = 0;
  EXPECT_EQ(qlstm_fc_s16(&f.p, nullptr, nullptr), QLSTM_OK);
}

TEST(FcS16, ComputesTheFormula) {
  Fc f;
  f.p.activation_min = -30000;
  f.p.activation_max = 30000;
  const std::vector<int16_t> input = {INT16_MIN, INT16_MAX, 7, -1, 2, 3};
  std::vector<int16_t> out(4, 0);
  ASSERT_EQ(qlstm_fc_s16(&f.p, input.data(), out.data()), QLSTM_OK);
  const int32_t m16 = reduce_multiplier_q31_to_q15(f.p.multiplier);
  for (int r = 0; r < 2; ++r) {
    for (int o = 0; o < 2; ++o) {
      int64_t acc = f.bias[o];
      for (int i = 0; i < 3; ++i) acc += int64_t{input[r * 3 + i]} * f.weights[o * 3 + i];
      const int64_t y = round_half_up_model(acc, m16, f.p.shift);
      const int64_t clamped = y < -30000 ? -30000 : (y > 30000 ? 30000 : y);
      EXPECT_EQ(out[r * 2 + o], clamped) << r << " " << o;
    }
  }
  EXPECT_EQ(out[1], -30000);  // the -2^31 bias reaches the clamp
  int16_t dummy = 0;
  EXPECT_EQ(qlstm_fc_s16(&f.p, nullptr, &dummy), QLSTM_ERROR_NULL_POINTER);
}

}  // namespace
