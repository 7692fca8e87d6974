// The int8 log-softmax (docs/arithmetic.md §18): its fixed-point log against ln, its outputs
// against the float log-softmax at the output's step, and its validation. Bit-exactness with
// TFLite's reference is the vectors' test (cli_vectors_log_softmax, tests/vectors).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "qlstm/fixed_point.h"
#include "qlstm/log_softmax_s8.h"

namespace {

constexpr double kOutputScale = 1.0 / 16;

// TFLite's int8 LOG_SOFTMAX preparation (beta 1, 5 integer bits for the scaled difference),
// written here from its definition.
qlstm_log_softmax_s8_params tflite_params(double input_scale, int32_t rows, int32_t row_size) {
  const double real = std::min(input_scale * (1 << 26), 2147483647.0);
  int exponent = 0;
  int64_t m = std::llround(std::frexp(real, &exponent) * 2147483648.0);
  if (m == (int64_t{1} << 31)) {
    m /= 2;
    ++exponent;
  }
  int reverse_exponent = 0;
  const double reverse = std::ldexp(1.0, 31 - exponent) / static_cast<double>(m);
  int64_t rm = std::llround(std::frexp(reverse, &reverse_exponent) * 2147483648.0);
  if (rm == (int64_t{1} << 31)) {
    rm /= 2;
    ++reverse_exponent;
  }
  const double radius = 31.0 * std::ldexp(1.0, 26) / std::ldexp(1.0, exponent);
  return {rows, row_size, static_cast<int32_t>(m), exponent, static_cast<int32_t>(rm), reverse_exponent,
          -static_cast<int32_t>(std::floor(radius))};
}

// ln x for x >= 1 (Q12.19 in, Q5.26 out, the op's formats) within 2^-24 (4 steps of Q5.26) of
// std::log over the whole range a row's sum of exponentials takes (1 to 4095).
TEST(LogSoftmaxS8, FixedPointLogIsWithinItsBound) {
  constexpr double kBound = 1.0 / (1 << 24);
  double worst = 0;
  for (int64_t raw = int64_t{1} << 19; raw < (int64_t{4095} << 19); raw += 997) {
    const int32_t q5_26 = qlstm::fxp::log_of_at_least_one(static_cast<int32_t>(raw), 12, 5);
    const double err = std::fabs(std::ldexp(q5_26, -26) - std::log(std::ldexp(static_cast<double>(raw), -19)));
    worst = std::max(worst, err);
    ASSERT_LE(err, kBound) << "x = " << std::ldexp(static_cast<double>(raw), -19);
  }
  EXPECT_EQ(qlstm::fxp::log_of_at_least_one(1 << 19, 12, 5), 0);  // ln 1
  std::printf("fixed-point ln over [1, 4095): largest error %.3g (bound %.3g)\n", worst, kBound);
}

// Every output is the float log-softmax of the same int8 inputs quantized at 1/16 and 127: exactly,
// unless the float value lies within 1/1000 of a step of a rounding boundary (then within one step).
TEST(LogSoftmaxS8, WithinOneStepOfTheFloatLogSoftmax) {
  std::mt19937_64 rng(2026);
  std::uniform_int_distribution<int> s8(-128, 127), size(1, 300), rows(1, 3);
  std::uniform_real_distribution<double> log_scale(std::log(1e-3), std::log(2.0));
  size_t values = 0, exact = 0;
  for (int n = 0; n < 300; ++n) {
    const double scale = std::exp(log_scale(rng));
    const qlstm_log_softmax_s8_params p = tflite_params(scale, rows(rng), size(rng));
    std::vector<int8_t> x(static_cast<size_t>(p.rows) * static_cast<size_t>(p.row_size));
    const int spread = n % 4 == 0 ? 3 : 255;
    const int base = s8(rng);
    for (auto& v : x) v = static_cast<int8_t>(std::clamp(base + s8(rng) % (spread + 1), -128, 127));
    std::vector<int8_t> y(x.size());
    ASSERT_EQ(qlstm_log_softmax_s8(&p, x.data(), y.data()), QLSTM_OK);
    const size_t N = static_cast<size_t>(p.row_size);
    for (size_t r = 0; r < static_cast<size_t>(p.rows); ++r) {
      const int8_t* in = x.data() + r * N;
      const int max = *std::max_element(in, in + N);
      double sum = 0;
      for (size_t i = 0; i < N; ++i) sum += std::exp(scale * (in[i] - max));
      for (size_t i = 0; i < N; ++i) {
        const double v = scale * (in[i] - max) - std::log(sum);
        const long want = std::clamp(std::lround(v / kOutputScale) + QLSTM_LOG_SOFTMAX_S8_OUTPUT_ZERO_POINT, -128L, 127L);
        const int8_t got = y[r * N + i];
        const double steps = v / kOutputScale;
        const bool near_boundary = std::fabs(std::fabs(steps - std::floor(steps)) - 0.5) < 1e-3;
        ASSERT_LE(std::labs(got - want), near_boundary ? 1 : 0)
            << "case " << n << " row " << r << " i " << i << " scale " << scale << " float " << v;
        exact += got == want ? 1 : 0;
        ++values;
      }
    }
  }
  std::printf("log-softmax: %zu values, %zu equal to the rounded float value, the rest one step off\n", values, exact);
}

TEST(LogSoftmaxS8, ValidationNamesTheField) {
  const qlstm_log_softmax_s8_params good = tflite_params(0.1, 2, 5);
  ASSERT_EQ(good.input_left_shift, 23);
  struct Case {
    qlstm_log_softmax_s8_params p;
    qlstm_status status;
    const char* field;
  };
  auto with = [&](auto mutate) {
    qlstm_log_softmax_s8_params p = good;
    mutate(p);
    return p;
  };
  const Case cases[] = {
      {with([](auto& p) { p.rows = -1; }), QLSTM_ERROR_BAD_DIMS, "rows"},
      {with([](auto& p) { p.row_size = 0; }), QLSTM_ERROR_BAD_DIMS, "row_size"},
      {with([](auto& p) { p.row_size = QLSTM_LOG_SOFTMAX_S8_ROW_SIZE_MAX + 1; }), QLSTM_ERROR_BAD_DIMS, "row_size"},
      {with([](auto& p) { p.rows = INT32_MAX / 4; }), QLSTM_ERROR_BAD_DIMS, "rows"},
      {with([](auto& p) { p.input_multiplier = -1; }), QLSTM_ERROR_BAD_MULTIPLIER, "input_multiplier"},
      {with([](auto& p) { p.input_left_shift = -1; }), QLSTM_ERROR_BAD_SHIFT, "input_left_shift"},
      {with([](auto& p) { p.input_left_shift = 32; }), QLSTM_ERROR_BAD_SHIFT, "input_left_shift"},
      {with([](auto& p) { p.reverse_multiplier = -1; }), QLSTM_ERROR_BAD_MULTIPLIER, "reverse_multiplier"},
      {with([](auto& p) { p.reverse_shift = 1; }), QLSTM_ERROR_BAD_SHIFT, "reverse_shift"},
      {with([](auto& p) { p.reverse_shift = -32; }), QLSTM_ERROR_BAD_SHIFT, "reverse_shift"},
      {with([](auto& p) { p.diff_min = 1; }), QLSTM_ERROR_BAD_DIFF_MIN, "diff_min"},
      {with([](auto& p) { p.diff_min = -257; }), QLSTM_ERROR_BAD_DIFF_MIN, "diff_min"},  // x 2^23 < -2^31
      {with([](auto& p) {
         p.input_left_shift = 0;
         p.diff_min = INT32_MIN;  // diff_min - 1 is a bound the op compares with
       }), QLSTM_ERROR_BAD_DIFF_MIN, "diff_min"},
  };
  const char* field = nullptr;
  EXPECT_EQ(qlstm_log_softmax_s8_validate(&good, &field), QLSTM_OK);
  EXPECT_EQ(field, nullptr);
  qlstm_log_softmax_s8_params edge = good;
  edge.diff_min = -256;  // x 2^23 = -2^31 exactly
  EXPECT_EQ(qlstm_log_softmax_s8_validate(&edge, &field), QLSTM_OK);
  for (const Case& c : cases) {
    EXPECT_EQ(qlstm_log_softmax_s8_validate(&c.p, &field), c.status) << c.field;
    EXPECT_STREQ(field, c.field);
    int8_t y[10] = {};
    const int8_t x[10] = {};
    EXPECT_EQ(qlstm_log_softmax_s8(&c.p, x, y), c.status) << c.field;
  }
  EXPECT_EQ(qlstm_log_softmax_s8_validate(nullptr, &field), QLSTM_ERROR_NULL_POINTER);
  EXPECT_STREQ(field, "params");
  EXPECT_EQ(qlstm_log_softmax_s8(&good, nullptr, nullptr), QLSTM_ERROR_NULL_POINTER);
  qlstm_log_softmax_s8_params empty = good;
  empty.rows = 0;
  EXPECT_EQ(qlstm_log_softmax_s8(&empty, nullptr, nullptr), QLSTM_OK);
}

// The row's largest value is the log of its own share: 0 (127) when it dominates, -log N for N
// equal values.
TEST(LogSoftmaxS8, KnownRows) {
  const qlstm_log_softmax_s8_params p = tflite_params(0.5, 1, 4);
  const int8_t dominant[4] = {127, -128, -128, -128};
  int8_t y[4];
  ASSERT_EQ(qlstm_log_softmax_s8(&p, dominant, y), QLSTM_OK);
  EXPECT_EQ(y[0], 127);
  for (int i = 1; i < 4; ++i) EXPECT_EQ(y[i], -128);  // far below -255/16
  const int8_t flat[4] = {5, 5, 5, 5};
  ASSERT_EQ(qlstm_log_softmax_s8(&p, flat, y), QLSTM_OK);
  const int want = static_cast<int>(std::lround(-std::log(4.0) / kOutputScale)) + QLSTM_LOG_SOFTMAX_S8_OUTPUT_ZERO_POINT;
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y[i], want);
}

}  // namespace
