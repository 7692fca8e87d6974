// QuantizeMultiplier against exact math, affine parameters, observers, weight quantization.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "qlstm/compiler/lower/derive.h"
#include "qlstm/compiler/float/float_lstm.h"
#include "qlstm/compiler/calibrate/quantize.h"

namespace {

using namespace qlstm::compiler;

TEST(QuantizeMultiplier, MatchesExactMathOverManyReals) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> log2_real(-31.0, 30.0);
  for (int k = 0; k < 200000; ++k) {
    const double real = std::exp2(log2_real(rng));
    const qlstm_requant q = quantize_multiplier(real, "test");
    ASSERT_GE(q.multiplier, 1 << 30) << real;
    ASSERT_LE(q.multiplier, INT32_MAX) << real;
    // Independent: s = floor(log2(real)) + 1, m = round(real * 2^(31 - s)) (ties never occur
    // for random reals), with 2^31 folded.
    int s = static_cast<int>(std::floor(std::log2(real))) + 1;
    long double m = std::roundl(static_cast<long double>(real) * std::ldexp(1.0L, 31 - s));
    if (m >= std::ldexp(1.0L, 31)) {
      m /= 2;
      s += 1;
    }
    if (m < std::ldexp(1.0L, 30)) {  // log2 rounding put us one exponent too high
      s -= 1;
      m = std::roundl(static_cast<long double>(real) * std::ldexp(1.0L, 31 - s));
    }
    ASSERT_EQ(q.shift, s) << real;
    ASSERT_EQ(q.multiplier, static_cast<int64_t>(m)) << real;
    // The represented value is within half a unit of the multiplier's last place.
    ASSERT_LE(std::fabs(multiplier_value(q) - real), std::ldexp(1.0, q.shift - 32) * 1.0000001) << real;
  }
}

TEST(QuantizeMultiplier, EdgeCases) {
  EXPECT_EQ(quantize_multiplier(0.0, "x").multiplier, 0);
  const qlstm_requant one = quantize_multiplier(1.0, "x");
  EXPECT_EQ(one.multiplier, 1 << 30);
  EXPECT_EQ(one.shift, 1);
  const qlstm_requant q15 = quantize_multiplier(std::ldexp(1.0, -15), "x");
  EXPECT_EQ(q15.multiplier, 1 << 30);
  EXPECT_EQ(q15.shift, -14);
  // Just below a power of two rounds up to 2^31 and folds.
  const qlstm_requant fold = quantize_multiplier(std::nextafter(1.0, 0.0), "x");
  EXPECT_EQ(fold.multiplier, 1 << 30);
  EXPECT_EQ(fold.shift, 1);
  // Below 2^-32: TFLite's (0, 0).
  const qlstm_requant tiny = quantize_multiplier(std::ldexp(1.0, -40), "x");
  EXPECT_EQ(tiny.multiplier, 0);
  EXPECT_EQ(tiny.shift, 0);
  EXPECT_THROW(quantize_multiplier(-1.0, "gate 'forget': input multiplier"), CompileError);
  EXPECT_THROW(quantize_multiplier(NAN, "x"), CompileError);
  EXPECT_THROW(quantize_multiplier(std::ldexp(1.0, 40), "x"), CompileError);
  try {
    quantize_multiplier(std::ldexp(1.0, 40), "gate 'cell': input-to-Q3.12 multiplier");
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("gate 'cell': input-to-Q3.12 multiplier"), std::string::npos);
  }
}

TEST(AffineQuant, RangeIncludesZeroAndRoundTrips) {
  const AffineQuant q = affine_from_range(-1.0, 3.0);
  EXPECT_DOUBLE_EQ(q.scale, 4.0 / 255);
  EXPECT_EQ(q.zero_point, static_cast<int32_t>(std::round(-128 + 1.0 / q.scale)));
  EXPECT_EQ(q.quantize(0.0), q.zero_point);  // zero is exact
  EXPECT_EQ(q.quantize(100.0), 127);
  EXPECT_EQ(q.quantize(-100.0), -128);
  const AffineQuant pos = affine_from_range(2.0, 5.0);  // widened to [0, 5]
  EXPECT_EQ(pos.zero_point, -128);
  EXPECT_DOUBLE_EQ(pos.scale, 5.0 / 255);
  const AffineQuant degenerate = affine_from_range(0.0, 0.0);
  EXPECT_GT(degenerate.scale, 0.0);
}

TEST(Observers, MinMaxAndPercentile) {
  std::mt19937_64 rng(5);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> v(20000);
  for (auto& x : v) x = n(rng);
  v[17] = 40.0f;  // one far outlier
  const Range mm = choose_range(v, parse_observer("minmax"));
  EXPECT_FLOAT_EQ(static_cast<float>(mm.hi), 40.0f);
  const Range p = choose_range(v, parse_observer("percentile:99.9"));
  EXPECT_LT(p.hi, 4.0);
  EXPECT_GT(p.hi, 2.5);
  EXPECT_LT(p.lo, -2.5);
  // One outlier in 20,000 costs more clipped (36.5^2) than the rounding noise its range adds:
  // the MSE search keeps it, as it should.
  EXPECT_GT(choose_range(v, parse_observer("mse")).hi, 35.0);
  EXPECT_THROW(parse_observer("median"), CompileError);
  EXPECT_THROW(parse_observer("percentile:20"), CompileError);
  EXPECT_THROW(choose_range({}, parse_observer("minmax")), CompileError);
}

TEST(Observers, HistogramSearchesClipAHeavyTail) {
  std::mt19937_64 rng(5);
  std::exponential_distribution<float> e(1.0f);
  std::vector<float> v(100000);
  for (auto& x : v) x = e(rng) * ((rng() & 1) ? 1.0f : -1.0f);  // Laplace(0, 1)
  const Range mm = choose_range(v, parse_observer("minmax"));
  const double mse_minmax = quantization_mse(v, affine_from_range(mm.lo, mm.hi));
  const Range r = choose_range(v, parse_observer("mse"));
  EXPECT_LT(r.hi - r.lo, mm.hi - mm.lo);
  EXPECT_LT(quantization_mse(v, affine_from_range(r.lo, r.hi)), mse_minmax);
  const Range k = choose_range(v, parse_observer("kl"));
  EXPECT_LT(k.hi - k.lo, mm.hi - mm.lo);
  EXPECT_GE(k.lo, mm.lo);
  EXPECT_LE(k.hi, mm.hi);
}

TEST(WeightQuantization, MaxAbsAndMseClip) {
  std::vector<float> w = {0.5f, -0.25f, 0.125f, -1.0f, 0.01f};
  std::vector<int8_t> q;
  const double s = quantize_weights(w, WeightScaleMethod::kMaxAbs, 0.0, &q);
  EXPECT_DOUBLE_EQ(s, 1.0 / 127);
  EXPECT_EQ(q[3], -127);
  EXPECT_EQ(q[0], 64);
  const double clipped = quantize_weights(w, WeightScaleMethod::kMaxAbs, 0.5, &q);
  EXPECT_DOUBLE_EQ(clipped, 0.5 / 127);
  EXPECT_EQ(q[3], -128);  // clipped at the int8 limit
  std::mt19937_64 rng(2);
  std::normal_distribution<float> n(0.0f, 0.1f);
  std::vector<float> heavy(4000);
  for (auto& x : heavy) x = n(rng);
  heavy[0] = 3.0f;
  std::vector<int8_t> qa, qb;
  const double sa = quantize_weights(heavy, WeightScaleMethod::kMaxAbs, 0.0, &qa);
  const double sb = quantize_weights(heavy, WeightScaleMethod::kMseClip, 0.0, &qb);
  EXPECT_LT(sb, sa);
  auto err = [&](const std::vector<int8_t>& qq, double sc) {
    double e = 0;
    for (size_t k = 0; k < heavy.size(); ++k) e += std::pow(heavy[k] - sc * qq[k], 2);
    return e;
  };
  EXPECT_LT(err(qb, sb), err(qa, sa));
}

TEST(CellScale, Policies) {
  // calibrated: smallest P with 32767 * 2^P >= max|c| * headroom.
  CellScaleRequest r = parse_cell_policy("calibrated:1");
  EXPECT_EQ(choose_cell_scale(r, 7.9).power, -12);   // 32767 * 2^-12 = 8.0
  EXPECT_EQ(choose_cell_scale(r, 8.1).power, -11);
  r = parse_cell_policy("calibrated:2");
  EXPECT_EQ(choose_cell_scale(r, 7.9).power, -11);
  const CellScaleChoice tiny = choose_cell_scale(parse_cell_policy("calibrated"), 0.01);
  EXPECT_EQ(tiny.power, -15);
  EXPECT_TRUE(tiny.clamped_to_min);
  // sequence-bound: |c_t| <= t.
  EXPECT_EQ(choose_cell_scale(parse_cell_policy("sequence-bound:1"), 0).power, -14);
  EXPECT_EQ(choose_cell_scale(parse_cell_policy("sequence-bound:32"), 0).power, -9);
  EXPECT_EQ(choose_cell_scale(parse_cell_policy("sequence-bound:100"), 0).power, -8);
  EXPECT_EQ(choose_cell_scale(parse_cell_policy("sequence-bound:1000"), 0).power, -5);
  EXPECT_EQ(choose_cell_scale(parse_cell_policy("fixed:-12"), 0).power, -12);
  EXPECT_THROW(choose_cell_scale(parse_cell_policy("fixed:-16"), 0), CompileError);
  EXPECT_THROW(choose_cell_scale(parse_cell_policy("fixed:3"), 0), CompileError);
  EXPECT_THROW(choose_cell_scale(parse_cell_policy("calibrated"), 1e6), CompileError);
  EXPECT_THROW(parse_cell_policy("fixed"), CompileError);
  EXPECT_THROW(parse_cell_policy("sequence-bound:0"), CompileError);
  EXPECT_THROW(parse_cell_policy("calibrated:0.5"), CompileError);
  EXPECT_THROW(parse_cell_policy("whatever"), CompileError);
}

}  // namespace
