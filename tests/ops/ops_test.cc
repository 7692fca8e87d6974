// The softmax and table ops against an independent model written here, and their validation.
// The softmax model follows docs/arithmetic.md §11 with the wide integers of naive_lstm.h and
// constants derived in double precision from their definitions (exp(-2^k), 48/17, ...), and its
// parameters come from TFLite Micro's int8 preparation, also written here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "naive_lstm.h"
#include "qlstm/softmax_s8.h"
#include "qlstm/table_s8.h"

namespace {

using naive::i64;
using naive::rdbpot;
using naive::srdhm;

constexpr i64 kQ31Max = 2147483647LL;

i64 to_q0_31(double v) { return std::llround(v * 2147483648.0); }
i64 saturating_times_pot(i64 x, int e) { return naive::clamp(x * (i64{1} << e), -kQ31Max - 1, kQ31Max); }

// exp(a) for a <= 0 in Q5.26, as Q0.31: a = r + rest, r in [-1/4, 0); exp(r) by the Taylor series
// around -1/8, times exp(-2^k) for each set bit 2^k of the rest.
i64 model_exp_q0_31(i64 a_q5_26) {
  if (a_q5_26 == 0) return kQ31Max;
  const i64 quarter = i64{1} << 24;
  const i64 r = ((a_q5_26 % quarter) + quarter) % quarter - quarter;
  const i64 rest = r - a_q5_26;
  const i64 x = r * 32 + to_q0_31(1.0 / 8);
  const i64 x2 = srdhm(x, x), x3 = srdhm(x2, x), x4 = srdhm(x2, x2);
  const i64 poly = x + rdbpot(srdhm(rdbpot(x4, 2) + x3, to_q0_31(1.0 / 3)) + x2, 1);
  const i64 c = to_q0_31(std::exp(-1.0 / 8));
  i64 result = c + srdhm(c, poly);
  for (int k = 0; k < 7; ++k) {
    if ((rest >> (24 + k)) & 1) result = srdhm(result, to_q0_31(std::exp(-std::ldexp(1.0, k - 2))));
  }
  return result;
}

// 1 / (1 + f) for f in [0, 1) in Q0.31: Newton-Raphson on d = (1 + f) / 2 in Q2.29.
i64 model_reciprocal_q0_31(i64 f_q0_31) {
  const i64 sum = f_q0_31 + kQ31Max;
  const i64 d = sum >= 0 ? (sum + 1) / 2 : -((-sum + 1) / 2);
  const i64 q2_29 = i64{1} << 29;
  i64 y = std::llround(48.0 / 17 * q2_29) + srdhm(d, std::llround(-32.0 / 17 * q2_29));
  for (int i = 0; i < 3; ++i) y += saturating_times_pot(srdhm(y, q2_29 - srdhm(d, y)), 2);
  return saturating_times_pot(y, 1);
}

std::vector<int8_t> model_softmax(const qlstm_softmax_s8_params& p, const std::vector<int8_t>& x) {
  std::vector<int8_t> y(x.size());
  const size_t N = static_cast<size_t>(p.row_size);
  for (size_t row = 0; row < static_cast<size_t>(p.rows); ++row) {
    i64 max = -128;
    for (size_t i = 0; i < N; ++i) max = std::max<i64>(max, x[row * N + i]);
    auto exp_of = [&](i64 d) { return model_exp_q0_31(srdhm(d * (i64{1} << p.input_left_shift), p.input_multiplier)); };
    i64 sum = 0;  // Q12.19
    for (size_t i = 0; i < N; ++i) {
      const i64 d = x[row * N + i] - max;
      if (d >= p.diff_min) sum += rdbpot(exp_of(d), 12);
    }
    int headroom = 0;  // sum = 2^(12 - headroom) (1 + f) in Q12.19
    while ((sum << headroom) < (i64{1} << 31)) ++headroom;
    const i64 f = (sum << headroom) - (i64{1} << 31);
    const i64 reciprocal = model_reciprocal_q0_31(f);
    for (size_t i = 0; i < N; ++i) {
      const i64 d = x[row * N + i] - max;
      const i64 v = d >= p.diff_min ? rdbpot(srdhm(reciprocal, exp_of(d)), 12 - headroom + 23) - 128 : -128;
      y[row * N + i] = static_cast<int8_t>(naive::clamp(v, -128, 127));
    }
  }
  return y;
}

// TFLite Micro's int8 softmax preparation (5 integer bits for the scaled difference).
qlstm_softmax_s8_params tflm_params(double input_scale, double beta, int32_t rows, int32_t row_size) {
  const double real = std::min(beta * input_scale * (1 << 26), 2147483647.0);
  int exponent = 0;
  const double q = std::frexp(real, &exponent);
  i64 m = std::llround(q * 2147483648.0);
  if (m == (i64{1} << 31)) {
    m /= 2;
    ++exponent;
  }
  const double radius = 31.0 * std::ldexp(1.0, 26) / std::ldexp(1.0, exponent);
  return {rows, row_size, static_cast<int32_t>(m), exponent, -static_cast<int32_t>(std::floor(radius))};
}

TEST(SoftmaxS8, MatchesTheModelOnRandomRowsAndScales) {
  std::mt19937_64 rng(2026);
  std::uniform_int_distribution<int> s8(-128, 127), size(1, 80), rows(1, 4);
  std::uniform_real_distribution<double> log_scale(std::log(1e-3), std::log(2.0));
  int cases = 0;
  for (int n = 0; n < 400; ++n) {
    const double scale = std::exp(log_scale(rng)), beta = n % 3 == 0 ? 1.0 : 0.5 + 0.5 * (n % 5);
    qlstm_softmax_s8_params p = tflm_params(scale, beta, rows(rng), size(rng));
    std::vector<int8_t> x(static_cast<size_t>(p.rows * p.row_size));
    const int spread = n % 4 == 0 ? 3 : 255;  // nearly flat rows too
    const int base = s8(rng);
    for (auto& v : x) v = static_cast<int8_t>(naive::clamp(base + s8(rng) % (spread + 1), -128, 127));
    std::vector<int8_t> y(x.size(), 0x11);
    ASSERT_EQ(qlstm_softmax_s8(&p, x.data(), y.data()), QLSTM_OK) << "scale " << scale;
    ASSERT_EQ(y, model_softmax(p, x)) << "case " << n << " scale " << scale << " beta " << beta;
    ++cases;
  }
  std::printf("softmax: %d random cases equal to the model\n", cases);
}

// Long rows: the sum of 512 or more maximal terms takes the output shift past 31 (upstream's
// shift is undefined there; the exact rounding is 0, and the model's wide integers agree).
TEST(SoftmaxS8, LongRowsUpToTheLimit) {
  std::mt19937_64 rng(9);
  std::uniform_int_distribution<int> s8(-128, 127);
  for (const int32_t n : {255, 256, 511, 512, 600, 2048, QLSTM_SOFTMAX_S8_ROW_SIZE_MAX}) {
    for (const bool flat : {true, false}) {
      qlstm_softmax_s8_params p = tflm_params(0.05, 1.0, 2, n);
      std::vector<int8_t> x(static_cast<size_t>(2 * n), 7);
      if (!flat) {
        for (auto& v : x) v = static_cast<int8_t>(100 + s8(rng) % 28);
      }
      std::vector<int8_t> y(x.size());
      ASSERT_EQ(qlstm_softmax_s8(&p, x.data(), y.data()), QLSTM_OK);
      EXPECT_EQ(y, model_softmax(p, x)) << n << (flat ? " flat" : " near the maximum");
    }
  }
}

// Every accepted extreme: shifts 0 and 31, multipliers 0 and INT32_MAX, diff_min at its bound.
TEST(SoftmaxS8, AcceptedExtremes) {
  std::mt19937_64 rng(31);
  std::uniform_int_distribution<int> s8(-128, 127);
  for (const int32_t shift : {0, 1, 17, 26, 30, 31}) {
    for (const int32_t m : {0, 1, 1 << 30, INT32_MAX}) {
      const i64 bound = (i64{1} << 31) >> shift;  // |diff_min| * 2^shift <= 2^31
      for (const i64 dm : {i64{0}, -std::min<i64>(bound, 255), -std::min<i64>(bound, 100000)}) {
        qlstm_softmax_s8_params p = {3, 11, m, shift, static_cast<int32_t>(dm)};
        std::vector<int8_t> x(33);
        for (auto& v : x) v = static_cast<int8_t>(s8(rng));
        std::vector<int8_t> y(x.size());
        ASSERT_EQ(qlstm_softmax_s8(&p, x.data(), y.data()), QLSTM_OK) << shift << " " << m << " " << dm;
        EXPECT_EQ(y, model_softmax(p, x)) << shift << " " << m << " " << dm;
      }
    }
  }
}

TEST(SoftmaxS8, ValidationNamesTheField) {
  const qlstm_softmax_s8_params good = {2, 5, 1 << 30, 20, -1984};
  struct Case {
    qlstm_softmax_s8_params p;
    qlstm_status status;
    const char* field;
  };
  auto with = [&](auto mutate) {
    qlstm_softmax_s8_params p = good;
    mutate(p);
    return p;
  };
  const Case cases[] = {
      {with([](auto& p) { p.rows = -1; }), QLSTM_ERROR_BAD_DIMS, "rows"},
      {with([](auto& p) { p.row_size = 0; }), QLSTM_ERROR_BAD_DIMS, "row_size"},
      {with([](auto& p) { p.row_size = QLSTM_SOFTMAX_S8_ROW_SIZE_MAX + 1; }), QLSTM_ERROR_BAD_DIMS, "row_size"},
      {with([](auto& p) { p.rows = INT32_MAX / 4; }), QLSTM_ERROR_BAD_DIMS, "rows"},
      {with([](auto& p) { p.input_multiplier = -1; }), QLSTM_ERROR_BAD_MULTIPLIER, "input_multiplier"},
      {with([](auto& p) { p.input_left_shift = -1; }), QLSTM_ERROR_BAD_SHIFT, "input_left_shift"},
      {with([](auto& p) { p.input_left_shift = 32; }), QLSTM_ERROR_BAD_SHIFT, "input_left_shift"},
      {with([](auto& p) { p.diff_min = 1; }), QLSTM_ERROR_BAD_DIFF_MIN, "diff_min"},
      {with([](auto& p) { p.diff_min = -2049; }), QLSTM_ERROR_BAD_DIFF_MIN, "diff_min"},  // x 2^20 < -2^31
  };
  const char* field = nullptr;
  EXPECT_EQ(qlstm_softmax_s8_validate(&good, &field), QLSTM_OK);
  EXPECT_EQ(field, nullptr);
  qlstm_softmax_s8_params edge = good;
  edge.diff_min = -2048;  // x 2^20 = -2^31 exactly
  EXPECT_EQ(qlstm_softmax_s8_validate(&edge, &field), QLSTM_OK);
  for (const Case& c : cases) {
    EXPECT_EQ(qlstm_softmax_s8_validate(&c.p, &field), c.status) << c.field;
    EXPECT_STREQ(field, c.field);
    int8_t y[10] = {};
    const int8_t x[10] = {};
    EXPECT_EQ(qlstm_softmax_s8(&c.p, x, y), c.status) << c.field;
  }
  EXPECT_EQ(qlstm_softmax_s8_validate(nullptr, &field), QLSTM_ERROR_NULL_POINTER);
  EXPECT_STREQ(field, "params");
  EXPECT_EQ(qlstm_softmax_s8(&good, nullptr, nullptr), QLSTM_ERROR_NULL_POINTER);
  qlstm_softmax_s8_params empty = good;
  empty.rows = 0;
  EXPECT_EQ(qlstm_softmax_s8(&empty, nullptr, nullptr), QLSTM_OK);
}

TEST(TableS8, LooksUpEveryInputAndRunsInPlace) {
  std::mt19937_64 rng(12);
  std::uniform_int_distribution<int> s8(-128, 127);
  int8_t table[QLSTM_TABLE_S8_ENTRIES];
  for (auto& v : table) v = static_cast<int8_t>(s8(rng));
  // Every input value, in rows of 7 and a tail.
  std::vector<int8_t> x;
  for (int v = -128; v <= 127; ++v) x.push_back(static_cast<int8_t>(v));
  for (int k = 0; k < 10; ++k) x.push_back(static_cast<int8_t>(s8(rng)));
  const qlstm_table_s8_params p = {static_cast<int32_t>(x.size() / 7), 7, table};
  const size_t n = x.size() / 7 * 7;
  std::vector<int8_t> expected(n);
  for (size_t k = 0; k < n; ++k) expected[k] = table[static_cast<int>(x[k]) + 128];
  std::vector<int8_t> y(x.size(), 0x33);
  ASSERT_EQ(qlstm_table_s8(&p, x.data(), y.data()), QLSTM_OK);
  EXPECT_EQ(std::vector<int8_t>(y.begin(), y.begin() + static_cast<std::ptrdiff_t>(n)), expected);
  EXPECT_EQ(std::vector<int8_t>(y.begin() + static_cast<std::ptrdiff_t>(n), y.end()),
            std::vector<int8_t>(x.size() - n, 0x33));  // nothing past rows x row_size
  std::vector<int8_t> in_place = x;
  ASSERT_EQ(qlstm_table_s8(&p, in_place.data(), in_place.data()), QLSTM_OK);
  EXPECT_EQ(std::vector<int8_t>(in_place.begin(), in_place.begin() + static_cast<std::ptrdiff_t>(n)), expected);
}

TEST(TableS8, ValidationNamesTheField) {
  int8_t table[QLSTM_TABLE_S8_ENTRIES] = {};
  const char* field = nullptr;
  const qlstm_table_s8_params good = {2, 3, table};
  EXPECT_EQ(qlstm_table_s8_validate(&good, &field), QLSTM_OK);
  const qlstm_table_s8_params bad[] = {{-1, 3, table}, {2, 0, table}, {INT32_MAX / 2, 3, table}, {2, 3, nullptr}};
  const qlstm_status status[] = {QLSTM_ERROR_BAD_DIMS, QLSTM_ERROR_BAD_DIMS, QLSTM_ERROR_BAD_DIMS,
                                 QLSTM_ERROR_NULL_POINTER};
  const char* fields[] = {"rows", "row_size", "rows", "table"};
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(qlstm_table_s8_validate(&bad[k], &field), status[k]) << fields[k];
    EXPECT_STREQ(field, fields[k]);
  }
  EXPECT_EQ(qlstm_table_s8(&good, nullptr, nullptr), QLSTM_ERROR_NULL_POINTER);
}

}  // namespace
