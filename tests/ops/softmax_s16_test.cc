// The 16x8 softmax (docs/arithmetic.md §16): properties that CMSIS-NN's arm_softmax_s16 arithmetic
// has, exact outputs measured against it, and validation naming the field.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "qlstm/softmax_s16.h"

namespace {

// TFLite's QuantizeMultiplier of beta * input_scale / (10 / 65535).
qlstm_softmax_s16_params tflm_params(double input_scale, double beta, int32_t rows, int32_t row_size) {
  int exponent = 0;
  const double fraction = std::frexp(beta * input_scale / (10.0 / 65535.0), &exponent);
  int64_t q = std::llround(fraction * 2147483648.0);
  if (q == (int64_t{1} << 31)) {
    q /= 2;
    ++exponent;
  }
  return {rows, row_size, static_cast<int32_t>(q), exponent};
}

std::vector<int16_t> run(const qlstm_softmax_s16_params& p, const std::vector<int16_t>& x) {
  std::vector<int16_t> y(x.size(), 12345);
  EXPECT_EQ(qlstm_softmax_s16(&p, x.data(), y.data()), QLSTM_OK);
  return y;
}

// Measured with CMSIS-NN's arm_softmax_s16 outside this repository: /tmp/cmsis/CMSIS-NN (not a git
// checkout, so no commit; the file's header says V.2.1.0, 5 January 2023), built for the host with
// gcc -fwrapv and its unit tests' exp and 1/(1+x) tables, which equal ours entry for entry.
TEST(SoftmaxS16, ExactOutputsMeasuredAgainstCmsisNn) {
  struct Case {
    int32_t multiplier, shift;
    std::vector<int16_t> x, y;
  };
  const Case cases[] = {
      {1718013132, -2, {0, 0}, {16384, 16384}},
      {1718013132, -2, {0, 0, 0}, {10922, 10922, 10922}},
      {1718013132, -2, {0, 0, 0, 0}, {8192, 8192, 8192, 8192}},
      {1718013132, -2, {1000, 0, -1000}, {11257, 10920, 10591}},
      {1718013132, -2, {30000, 0, -30000}, {20998, 8406, 3365}},
      {1 << 30, 1, {30000, 0, -30000}, {32431, 334, 3}},
      {1 << 30, 2, {-32768, 32767}, {2, 32766}},
      {1718013132, 3, {100, -200, 300, -400, 500}, {6484, 4838, 7883, 3979, 9583}},
      // A probability of 1 is 32768, which upstream's int16 store wraps to -32768.
      {1718013132, -2, {0}, {-32768}},
      // The exp sum lies just below 2^19: its Q1.16 normalisation rounds up to 2^17, the 1/(1+x)
      // table's input wraps to its left end and every output doubles (upstream's behaviour).
      {1 << 30, 2, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -19183},
       {4095, 4095, 4095, 4095, 4095, 4095, 4095, 4095, 4095, 4095, 4095, 4095, 4095, 4095, 4095, 4095, 12}},
  };
  for (const Case& c : cases) {
    const qlstm_softmax_s16_params p = {1, static_cast<int32_t>(c.x.size()), c.multiplier, c.shift};
    EXPECT_EQ(run(p, c.x), c.y) << "row of " << c.x.size() << ", shift " << c.shift;
  }
}

TEST(SoftmaxS16, PropertiesOnRandomRows) {
  std::mt19937_64 rng(16);
  std::uniform_int_distribution<int> size(2, 40), s16(-32768, 32767), log2_scale(-16, 2);
  int rows_checked = 0;
  for (int n = 0; n < 3000; ++n) {
    const qlstm_softmax_s16_params p = tflm_params(std::ldexp(1.0, log2_scale(rng)), 1.0, 1, size(rng));
    const int spread = 1 << std::uniform_int_distribution<int>(0, 14)(rng);
    std::uniform_int_distribution<int> near(-spread, spread);
    std::vector<int16_t> x(p.row_size);
    for (int16_t& v : x) v = static_cast<int16_t>(near(rng));
    const std::vector<int16_t> y = run(p, x);
    size_t argmax = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      argmax = x[i] > x[argmax] ? i : argmax;
      ASSERT_GE(y[i], 0) << n;
    }
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_LE(y[i], y[argmax]) << n;
      if (x[i] == x[argmax]) {
        ASSERT_EQ(y[i], y[argmax]) << n;
      }
    }
    // Only differences from the row maximum count: a constant that keeps the row in range.
    const int shift = std::uniform_int_distribution<int>(-32768 + spread, 32767 - spread)(rng);
    std::vector<int16_t> shifted(x);
    for (int16_t& v : shifted) v = static_cast<int16_t>(v + shift);
    ASSERT_EQ(run(p, shifted), y) << n;
    ++rows_checked;
  }
  std::printf("softmax_s16: %d random rows, outputs in [0, 32767], the maximum largest, shift-invariant\n",
              rows_checked);
}

TEST(SoftmaxS16, EqualInputsGiveEqualOutputsAndRowsAreIndependent) {
  const qlstm_softmax_s16_params p = tflm_params(1.0 / 1024, 1.0, 3, 7);
  std::vector<int16_t> x(21, -5);
  for (int i = 7; i < 14; ++i) x[i] = static_cast<int16_t>(i * 1000);
  for (int i = 14; i < 21; ++i) x[i] = 32767;
  const std::vector<int16_t> y = run(p, x);
  for (int i = 1; i < 7; ++i) {
    EXPECT_EQ(y[i], y[0]);
    EXPECT_EQ(y[14 + i], y[14]);
  }
  EXPECT_EQ(y[0], y[14]);
  EXPECT_NEAR(y[0], 32768 / 7, 2);
  // The middle row alone gives what it gave among the others.
  qlstm_softmax_s16_params one = p;
  one.rows = 1;
  EXPECT_EQ(run(one, std::vector<int16_t>(x.begin() + 7, x.begin() + 14)), std::vector<int16_t>(y.begin() + 7, y.begin() + 14));
}

TEST(SoftmaxS16, RowLengthOneAndLongRows) {
  // A row of one is always a probability of 1, stored as upstream stores it (-32768, see above).
  for (int16_t v : {-32768, -1, 0, 32767}) {
    EXPECT_EQ(run(tflm_params(0.01, 1.0, 1, 1), {v}), std::vector<int16_t>{-32768}) << v;
  }
  // The longest row of equal values: each 32768 / 65535 rounds to 0 or 1.
  const qlstm_softmax_s16_params p = tflm_params(0.001, 1.0, 1, QLSTM_SOFTMAX_S16_ROW_SIZE_MAX);
  const std::vector<int16_t> y = run(p, std::vector<int16_t>(QLSTM_SOFTMAX_S16_ROW_SIZE_MAX, 7));
  for (int16_t v : y) ASSERT_EQ(v, y[0]);
  EXPECT_LE(y[0], 1);
}

TEST(SoftmaxS16, ValidationNamesTheField) {
  const qlstm_softmax_s16_params good = {2, 5, 1 << 30, 3};
  struct Case {
    qlstm_softmax_s16_params p;
    qlstm_status status;
    const char* field;
  };
  auto with = [&](auto mutate) {
    qlstm_softmax_s16_params p = good;
    mutate(p);
    return p;
  };
  const Case cases[] = {
      {with([](auto& p) { p.rows = -1; }), QLSTM_ERROR_BAD_DIMS, "rows"},
      {with([](auto& p) { p.row_size = 0; }), QLSTM_ERROR_BAD_DIMS, "row_size"},
      {with([](auto& p) { p.row_size = QLSTM_SOFTMAX_S16_ROW_SIZE_MAX + 1; }), QLSTM_ERROR_BAD_DIMS, "row_size"},
      {with([](auto& p) { p.rows = INT32_MAX / 4; }), QLSTM_ERROR_BAD_DIMS, "rows"},
      {with([](auto& p) { p.input_multiplier = -1; }), QLSTM_ERROR_BAD_MULTIPLIER, "input_multiplier"},
      {with([](auto& p) { p.input_left_shift = -32; }), QLSTM_ERROR_BAD_SHIFT, "input_left_shift"},
      {with([](auto& p) { p.input_left_shift = QLSTM_SOFTMAX_S16_SHIFT_MAX + 1; }), QLSTM_ERROR_BAD_SHIFT,
       "input_left_shift"},
  };
  const char* field = nullptr;
  EXPECT_EQ(qlstm_softmax_s16_validate(&good, &field), QLSTM_OK);
  EXPECT_EQ(field, nullptr);
  qlstm_softmax_s16_params edge = good;
  edge.input_left_shift = QLSTM_SOFTMAX_S16_SHIFT_MAX;
  edge.row_size = QLSTM_SOFTMAX_S16_ROW_SIZE_MAX;
  EXPECT_EQ(qlstm_softmax_s16_validate(&edge, &field), QLSTM_OK);
  for (const Case& c : cases) {
    EXPECT_EQ(qlstm_softmax_s16_validate(&c.p, &field), c.status) << c.field;
    EXPECT_STREQ(field, c.field);
    int16_t y[10] = {};
    const int16_t x[10] = {};
    EXPECT_EQ(qlstm_softmax_s16(&c.p, x, y), c.status) << c.field;
  }
  EXPECT_EQ(qlstm_softmax_s16_validate(nullptr, &field), QLSTM_ERROR_NULL_POINTER);
  EXPECT_STREQ(field, "params");
  EXPECT_EQ(qlstm_softmax_s16(&good, nullptr, nullptr), QLSTM_ERROR_NULL_POINTER);
  qlstm_softmax_s16_params empty = good;
  empty.rows = 0;
  EXPECT_EQ(qlstm_softmax_s16(&empty, nullptr, nullptr), QLSTM_OK);
}

}  // namespace
