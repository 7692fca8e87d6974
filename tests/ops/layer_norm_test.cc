// The int8 layer normalization (docs/arithmetic.md §21): its reciprocal square root against
// 1/sqrt, its outputs against the float LayerNorm of the same int8 inputs, what it does at the
// edges, and its validation. Bit-exactness with the independent model is the vectors' test
// (cli_vectors_layer_norm, tests/vectors/layer_norm_s8.json).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "qlstm/kernels.h"
#include "qlstm/layer_norm_s8.h"

namespace {

constexpr int32_t kQ = QLSTM_LAYER_NORM_S8_NORMALIZED_FRACTION_BITS;

// gamma, beta, epsilon and the scales of a float LayerNorm, and the int8 block for them (the
// compiler's derivation, written here from docs/arithmetic.md §21).
struct FloatLayerNorm {
  std::vector<double> gamma, beta;
  double epsilon = 1e-5, input_scale = 0.02, output_scale = 0.04;
  int32_t output_zero_point = 0;
  std::vector<int32_t> weights, biases;

  qlstm_layer_norm_s8_params block(int32_t rows) {
    const int32_t F = static_cast<int32_t>(gamma.size());
    const double eps_units = epsilon / (input_scale * input_scale) * F * F;
    int32_t eps_shift = 0;
    while (std::nearbyint(std::ldexp(eps_units, -eps_shift)) > 2147483647.0) ++eps_shift;
    double gmax = 0, bmax = 0;
    for (int32_t i = 0; i < F; ++i) {
      gmax = std::max(gmax, std::fabs(gamma[i]) / output_scale);
      bmax = std::max(bmax, std::fabs(beta[i]) / output_scale);
    }
    int32_t S = QLSTM_LAYER_NORM_S8_OUTPUT_SHIFT_MAX;
    while (std::nearbyint(std::ldexp(gmax, S - kQ)) > 2147483647.0 || std::nearbyint(std::ldexp(bmax, S)) > 2147483647.0) --S;
    weights.resize(F);
    biases.resize(F);
    for (int32_t i = 0; i < F; ++i) {
      weights[i] = static_cast<int32_t>(std::nearbyint(std::ldexp(gamma[i] / output_scale, S - kQ)));
      biases[i] = static_cast<int32_t>(std::nearbyint(std::ldexp(beta[i] / output_scale, S)));
    }
    return {rows, F, static_cast<int32_t>(std::nearbyint(std::ldexp(eps_units, -eps_shift))), eps_shift,
            weights.data(), biases.data(), S, output_zero_point};
  }
};

// 1 / sqrt(w) as reciprocal / 2^(shift + 12) is within 2^-29 (relative) of the true value, for
// w from 1 to 2^56.
TEST(LayerNormS8, InverseRootIsWithinItsBound) {
  constexpr double kBound = 1.0 / (1 << 29);
  std::mt19937_64 rng(21);
  double worst = 0;
  for (int n = 0; n < 200000; ++n) {
    const int bits = 1 + static_cast<int>(rng() % 56);
    uint64_t w = rng() >> (64 - bits);
    if (w == 0) w = 1;
    const qlstm::LayerNormScale s = qlstm::layer_norm_inverse_root(w);
    ASSERT_GT(s.reciprocal, int64_t{1} << 31);
    ASSERT_LE(s.reciprocal, int64_t{1} << 32);
    const double got = std::ldexp(static_cast<double>(s.reciprocal), -(s.shift + kQ));
    const double err = std::fabs(got * std::sqrt(static_cast<double>(w)) - 1.0);
    worst = std::max(worst, err);
    ASSERT_LE(err, kBound) << "w = " << w;
  }
  std::printf("reciprocal square root over [1, 2^56]: largest relative error %.3g (bound %.3g)\n", worst, kBound);
}

// Every output is the float LayerNorm of the same int8 inputs quantized at the output's scale:
// exactly, unless the float value lies within 1/100 of a step of a rounding boundary (then within
// one step); saturation where the float value is outside int8.
TEST(LayerNormS8, WithinOneStepOfTheFloatLayerNorm) {
  std::mt19937_64 rng(2026);
  std::uniform_int_distribution<int> s8(-128, 127), size(1, 300), rows(1, 3);
  std::uniform_real_distribution<double> unit(-1.0, 1.0), log_scale(std::log(1e-3), std::log(0.5));
  size_t values = 0, exact = 0;
  for (int n = 0; n < 400; ++n) {
    FloatLayerNorm ln;
    const int32_t F = size(rng);
    for (int32_t i = 0; i < F; ++i) {
      ln.gamma.push_back(n % 10 == 0 ? 0.0 : 1.0 + 0.5 * unit(rng));
      ln.beta.push_back(0.3 * unit(rng));
    }
    ln.epsilon = n % 5 == 0 ? 0.0 : 1e-5;
    ln.input_scale = std::exp(log_scale(rng));
    ln.output_scale = 4.0 / 127 * (1.0 + 0.5 * unit(rng));
    ln.output_zero_point = s8(rng) / 4;
    const qlstm_layer_norm_s8_params p = ln.block(rows(rng));
    std::vector<int8_t> x(static_cast<size_t>(p.rows) * F);
    const int spread = n % 4 == 0 ? 3 : 255;
    const int base = s8(rng);
    for (auto& v : x) v = static_cast<int8_t>(std::clamp(base + s8(rng) % (spread + 1), -128, 127));
    std::vector<int8_t> y(x.size());
    ASSERT_EQ(qlstm_layer_norm_s8(&p, x.data(), y.data()), QLSTM_OK);
    for (int32_t r = 0; r < p.rows; ++r) {
      const int8_t* in = x.data() + r * F;
      double mean = 0, var = 0;
      for (int32_t i = 0; i < F; ++i) mean += ln.input_scale * in[i];
      mean /= F;
      for (int32_t i = 0; i < F; ++i) var += (ln.input_scale * in[i] - mean) * (ln.input_scale * in[i] - mean);
      var /= F;
      for (int32_t i = 0; i < F; ++i) {
        const double c = ln.input_scale * in[i] - mean;
        const double v = (var + ln.epsilon > 0 ? c / std::sqrt(var + ln.epsilon) : 0.0) * ln.gamma[i] + ln.beta[i];
        const double steps = v / ln.output_scale + ln.output_zero_point;
        const long want = std::clamp(std::lround(steps), -128L, 127L);
        const int got = y[static_cast<size_t>(r * F + i)];
        const double frac = steps - std::floor(steps);
        const bool near_boundary = std::fabs(frac - 0.5) < 0.01;
        ++values;
        if (got == want) {
          ++exact;
        } else {
          ASSERT_TRUE(near_boundary && std::labs(got - want) == 1)
              << "case " << n << " F " << F << " row " << r << " i " << i << ": got " << got << ", float " << steps;
        }
      }
    }
  }
  std::printf("%zu values: %zu exact, the rest within one step at a rounding boundary\n", values, exact);
  EXPECT_GT(exact, values * 99 / 100);
}

// A row of one value, or of equal values, normalizes to 0: the output is beta alone, with or
// without epsilon; the outputs never depend on the input's zero point (a shift of every value).
TEST(LayerNormS8, ConstantRowsGiveBetaAndShiftsDoNotMatter) {
  FloatLayerNorm ln;
  ln.gamma = {1.0, -2.0, 0.5, 1.0};
  ln.beta = {0.1, -0.2, 0.0, 0.3};
  for (const double eps : {0.0, 1e-5}) {
    ln.epsilon = eps;
    qlstm_layer_norm_s8_params p = ln.block(2);
    const int8_t x[8] = {-128, -128, -128, -128, 127, 127, 127, 127};
    int8_t y[8];
    ASSERT_EQ(qlstm_layer_norm_s8(&p, x, y), QLSTM_OK);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(y[i], std::lround(ln.beta[i % 4] / ln.output_scale)) << i;
  }
  qlstm_layer_norm_s8_params p = ln.block(1);
  const int8_t a[4] = {-100, 3, 20, 50}, b[4] = {-50, 53, 70, 100};
  int8_t ya[4], yb[4];
  ASSERT_EQ(qlstm_layer_norm_s8(&p, a, ya), QLSTM_OK);
  ASSERT_EQ(qlstm_layer_norm_s8(&p, b, yb), QLSTM_OK);
  EXPECT_EQ(0, std::memcmp(ya, yb, 4));
}

// The widest input and the largest factors stay exact: no int64 overflow on the longest row of
// extremes with int32 weights and biases at their ends (the output saturates, never wraps).
TEST(LayerNormS8, ExtremesSaturateWithoutWrapping) {
  const int32_t F = QLSTM_LAYER_NORM_S8_ROW_SIZE_MAX;
  std::vector<int32_t> w(F, INT32_MAX), b(F, INT32_MAX);
  std::vector<int8_t> x(F, -128), y(F);
  x[0] = 127;  // one value far from the rest: |normalized| reaches sqrt(F - 1)
  qlstm_layer_norm_s8_params p = {1, F, INT32_MAX, QLSTM_LAYER_NORM_S8_EPSILON_SHIFT_MAX, w.data(), b.data(), 0, 127};
  ASSERT_EQ(qlstm_layer_norm_s8(&p, x.data(), y.data()), QLSTM_OK);
  p.epsilon_term = 0;
  p.output_shift = QLSTM_LAYER_NORM_S8_OUTPUT_SHIFT_MAX;
  p.output_zero_point = 0;
  std::fill(b.begin(), b.end(), 0);
  ASSERT_EQ(qlstm_layer_norm_s8(&p, x.data(), y.data()), QLSTM_OK);
  // 63.99 x 2^12 x (2^31 - 1) / 2^62 is below half a step: 0; the rest are -1/63.99 of that: 0.
  EXPECT_EQ(y[0], 0);
  p.output_shift = 30;  // now 63.99 x 2^43 / 2^30 saturates, the others (about -2^13) too
  ASSERT_EQ(qlstm_layer_norm_s8(&p, x.data(), y.data()), QLSTM_OK);
  EXPECT_EQ(y[0], 127);
  EXPECT_EQ(y[1], -128);
}

TEST(LayerNormS8, ValidationNamesTheField) {
  std::vector<int32_t> w(4, 1 << 20), b(4, 0);
  const qlstm_layer_norm_s8_params good = {1, 4, 100, 0, w.data(), b.data(), 24, 0};
  const char* field = nullptr;
  ASSERT_EQ(qlstm_layer_norm_s8_validate(&good, &field), QLSTM_OK);
  EXPECT_EQ(field, nullptr);
  struct Bad {
    void (*edit)(qlstm_layer_norm_s8_params&);
    qlstm_status status;
    const char* field;
  };
  const Bad bad[] = {
      {[](qlstm_layer_norm_s8_params& p) { p.rows = -1; }, QLSTM_ERROR_BAD_DIMS, "rows"},
      {[](qlstm_layer_norm_s8_params& p) { p.row_size = 0; }, QLSTM_ERROR_BAD_DIMS, "row_size"},
      {[](qlstm_layer_norm_s8_params& p) { p.row_size = QLSTM_LAYER_NORM_S8_ROW_SIZE_MAX + 1; }, QLSTM_ERROR_BAD_DIMS, "row_size"},
      {[](qlstm_layer_norm_s8_params& p) { p.rows = INT32_MAX; }, QLSTM_ERROR_BAD_DIMS, "rows"},
      {[](qlstm_layer_norm_s8_params& p) { p.epsilon_term = -1; }, QLSTM_ERROR_BAD_MULTIPLIER, "epsilon_term"},
      {[](qlstm_layer_norm_s8_params& p) { p.epsilon_shift = -1; }, QLSTM_ERROR_BAD_SHIFT, "epsilon_shift"},
      {[](qlstm_layer_norm_s8_params& p) { p.epsilon_shift = QLSTM_LAYER_NORM_S8_EPSILON_SHIFT_MAX + 1; }, QLSTM_ERROR_BAD_SHIFT, "epsilon_shift"},
      {[](qlstm_layer_norm_s8_params& p) { p.weights = nullptr; }, QLSTM_ERROR_NULL_POINTER, "weights"},
      {[](qlstm_layer_norm_s8_params& p) { p.biases = nullptr; }, QLSTM_ERROR_NULL_POINTER, "biases"},
      {[](qlstm_layer_norm_s8_params& p) { p.output_shift = -1; }, QLSTM_ERROR_BAD_SHIFT, "output_shift"},
      {[](qlstm_layer_norm_s8_params& p) { p.output_shift = QLSTM_LAYER_NORM_S8_OUTPUT_SHIFT_MAX + 1; }, QLSTM_ERROR_BAD_SHIFT, "output_shift"},
      {[](qlstm_layer_norm_s8_params& p) { p.output_zero_point = 128; }, QLSTM_ERROR_BAD_ZERO_POINT, "output_zero_point"},
  };
  for (const Bad& c : bad) {
    qlstm_layer_norm_s8_params p = good;
    c.edit(p);
    field = nullptr;
    EXPECT_EQ(qlstm_layer_norm_s8_validate(&p, &field), c.status) << c.field;
    EXPECT_STREQ(field, c.field);
    int8_t x[4] = {0, 1, 2, 3}, y[4] = {9, 9, 9, 9};
    if (p.rows >= 0 && p.rows <= 1) {
      EXPECT_EQ(qlstm_layer_norm_s8(&p, x, y), c.status) << c.field;
      EXPECT_EQ(y[0], 9) << c.field << ": nothing written";
    }
  }
  EXPECT_EQ(qlstm_layer_norm_s8_validate(nullptr, &field), QLSTM_ERROR_NULL_POINTER);
  EXPECT_STREQ(field, "params");
  int8_t x[4] = {};
  EXPECT_EQ(qlstm_layer_norm_s8(&good, nullptr, x), QLSTM_ERROR_NULL_POINTER);
  const qlstm_layer_norm_s8_params none = {0, 4, 0, 0, w.data(), b.data(), 0, 0};
  EXPECT_EQ(qlstm_layer_norm_s8(&none, nullptr, nullptr), QLSTM_OK);
}

}  // namespace
