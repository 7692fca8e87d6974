// Adaptive weight rounding: the objective never rises over nearest rounding, each weight stays at
// its floor or ceil, the operand moment's time order, and its wiring through derive_params.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "qlstm/compiler/lower/derive.h"
#include "qlstm/compiler/lower/compile_program.h"
#include "qlstm/compiler/lower/weight_rounding.h"

namespace {

using namespace qlstm::compiler;

// A random symmetric positive definite [n][n]: A A^T / m over m correlated samples, plus a ridge.
std::vector<double> random_spd(int32_t n, std::mt19937_64& rng) {
  std::normal_distribution<double> d(0.0, 1.0);
  const int32_t m = 2 * n;
  std::vector<double> a(static_cast<size_t>(n) * m), c(static_cast<size_t>(n) * n, 0.0);
  for (int32_t k = 0; k < m; ++k) {
    const double common = d(rng);  // a shared component: the operands correlate
    for (int32_t i = 0; i < n; ++i) a[static_cast<size_t>(i) * m + k] = common + d(rng);
  }
  for (int32_t i = 0; i < n; ++i) {
    for (int32_t j = 0; j < n; ++j) {
      double s = 0;
      for (int32_t k = 0; k < m; ++k) s += a[static_cast<size_t>(i) * m + k] * a[static_cast<size_t>(j) * m + k];
      c[static_cast<size_t>(i) * n + j] = s / m + (i == j ? 1e-3 : 0.0);
    }
  }
  return c;
}

std::vector<int8_t> nearest(const std::vector<double>& w, const std::vector<double>& s) {
  std::vector<int8_t> q(w.size());
  for (size_t j = 0; j < w.size(); ++j) q[j] = static_cast<int8_t>(std::clamp(std::nearbyint(w[j] / s[j]), -128.0, 127.0));
  return q;
}

// A row of n weights at two scales (the first `split` at s_x, the rest at s_h), max|w| / 127 each.
void random_row(int32_t n, int32_t split, std::mt19937_64& rng, std::vector<double>* w, std::vector<double>* s) {
  std::normal_distribution<double> d(0.0, 1.0);
  w->resize(static_cast<size_t>(n));
  for (double& v : *w) v = d(rng);
  w->at(0) *= 4;  // one large weight sets the first scale
  double mx = 0, mh = 0;
  for (int32_t j = 0; j < n; ++j) (j < split ? mx : mh) = std::max(j < split ? mx : mh, std::fabs((*w)[j]));
  s->assign(static_cast<size_t>(n), mh / 127);
  std::fill(s->begin(), s->begin() + split, mx / 127);
}

TEST(AdaptiveRounding, NeverWorseThanNearestAndStaysAtFloorOrCeil) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    const int32_t n = 2 + trial * 3, split = n / 3;
    std::vector<double> w, s;
    random_row(n, split, rng, &w, &s);
    const std::vector<double> c = random_spd(n, rng);
    const std::vector<int8_t> q0 = nearest(w, s);
    std::vector<int8_t> q = q0;
    round_adaptive(w.data(), s.data(), c.data(), n, q.data());
    const double before = rounding_error(w.data(), s.data(), q0.data(), c.data(), n);
    const double after = rounding_error(w.data(), s.data(), q.data(), c.data(), n);
    EXPECT_LE(after, before * (1 + 1e-12)) << trial;
    for (int32_t j = 0; j < n; ++j) {
      const double v = w[j] / s[j];
      EXPECT_TRUE(q[j] == std::floor(v) || q[j] == std::ceil(v)) << trial << " " << j << " " << v << " " << int(q[j]);
      EXPECT_GE(q[j], -127);
      EXPECT_LE(q[j], 127);
    }
  }
}

TEST(AdaptiveRounding, GainsOnCorrelatedOperands) {
  std::mt19937_64 rng(11);
  double before = 0, after = 0;
  int64_t flips = 0;
  for (int trial = 0; trial < 10; ++trial) {
    const int32_t n = 64;
    std::vector<double> w, s;
    random_row(n, 16, rng, &w, &s);
    const std::vector<double> c = random_spd(n, rng);
    std::vector<int8_t> q = nearest(w, s);
    before += rounding_error(w.data(), s.data(), q.data(), c.data(), n);
    flips += round_adaptive(w.data(), s.data(), c.data(), n, q.data());
    after += rounding_error(w.data(), s.data(), q.data(), c.data(), n);
  }
  EXPECT_GT(flips, 0);
  EXPECT_LT(after, 0.5 * before);  // the shared component's error is mostly cancelled
}

TEST(AdaptiveRounding, IdentityMomentKeepsNearest) {
  std::mt19937_64 rng(3);
  const int32_t n = 50;
  std::vector<double> w, s;
  random_row(n, 20, rng, &w, &s);
  std::vector<double> c(static_cast<size_t>(n) * n, 0.0);
  for (int32_t j = 0; j < n; ++j) c[static_cast<size_t>(j) * n + j] = 1.0;
  const std::vector<int8_t> q0 = nearest(w, s);
  std::vector<int8_t> q = q0;
  EXPECT_EQ(round_adaptive(w.data(), s.data(), c.data(), n, q.data()), 0);
  EXPECT_EQ(q, q0);
}

// Two weights of 0.4 at scale 1 on operands with correlation 0.9: nearest gives e = (0.4, 0.4)
// and e^T C e = 0.608; rounding the first up gives e = (-0.6, 0.4), 0.52 - 0.432 = 0.088; rounding
// both up gives 1.368. The descent takes the first flip and then no other improves.
TEST(AdaptiveRounding, CorrelatedPairFlipsOne) {
  const double w[] = {0.4, 0.4}, s[] = {1.0, 1.0}, c[] = {1.0, 0.9, 0.9, 1.0};
  int8_t q[] = {0, 0};
  EXPECT_NEAR(rounding_error(w, s, q, c, 2), 0.608, 1e-12);
  EXPECT_EQ(round_adaptive(w, s, c, 2, q), 1);
  EXPECT_EQ(q[0], 1);
  EXPECT_EQ(q[1], 0);
  EXPECT_NEAR(rounding_error(w, s, q, c, 2), 0.088, 1e-12);
}

// The input and recurrent parts keep their own scales: on correlated operands, flipping the coarse
// weight (s = 2) would overshoot, flipping the fine one (s = 0.1) cancels part of the coarse one's error.
TEST(AdaptiveRounding, TwoScalesEachInItsOwnUnits) {
  const double w[] = {0.8, 0.04}, s[] = {2.0, 0.1}, c[] = {1.0, 0.9, 0.9, 1.0};
  int8_t q[] = {0, 0};  // e = (0.8, 0.04): both below half a step
  EXPECT_EQ(round_adaptive(w, s, c, 2, q), 1);
  // Flipping the first costs (-1.2)^2 - 0.8^2 + 2 * 0.9 * 0.04 * (-2) > 0; the second: e_2 = -0.06,
  // 0.0036 - 0.0016 + 2 * 0.9 * 0.8 * (-0.1) < 0.
  EXPECT_EQ(q[0], 0);
  EXPECT_EQ(q[1], 1);
}

TEST(AdaptiveRounding, ClippedWeightStaysAtItsClip) {
  const double w[] = {300.0, -300.0, 0.4}, s[] = {1.0, 1.0, 1.0};
  const double c[] = {1.0, 0.99, 0.99, 0.99, 1.0, 0.99, 0.99, 0.99, 1.0};
  int8_t q[] = {127, -128, 0};
  round_adaptive(w, s, c, 3, q);
  EXPECT_EQ(q[0], 127);
  EXPECT_EQ(q[1], -128);
}

TEST(OperandMoment, ForwardAndReverseTakeTheirPreviousHidden) {
  const float x[] = {1, 2, 3}, h_out[] = {10, 20, 30}, h0[] = {5};
  std::vector<double> sum;
  int64_t steps = 0;
  // Forward: z = (1, 5), (2, 10), (3, 20).
  accumulate_operand_moment(sum, steps, x, h_out, h0, 3, 1, 1, false);
  EXPECT_EQ(steps, 3);
  EXPECT_EQ(sum, (std::vector<double>{14, 85, 85, 525}));
  // Reverse: step t's previous hidden is h_out[t + 1], h0 at the last step: (1, 20), (2, 30), (3, 5).
  std::vector<double> rev;
  int64_t rsteps = 0;
  accumulate_operand_moment(rev, rsteps, x, h_out, h0, 3, 1, 1, true);
  EXPECT_EQ(rev, (std::vector<double>{14, 95, 95, 1325}));
  // A zero initial state when h0 is null; sums accumulate over calls.
  accumulate_operand_moment(rev, rsteps, x, h_out, nullptr, 3, 1, 1, true);
  EXPECT_EQ(rsteps, 6);
  EXPECT_EQ(rev, (std::vector<double>{28, 95 + 80, 95 + 80, 1325 + 1300}));
  std::vector<double> wrong(3);
  EXPECT_THROW(accumulate_operand_moment(wrong, rsteps, x, h_out, h0, 3, 1, 1, false), CompileError);
}

// A torch-layout LSTM with random weights.
FloatLstm random_lstm(int32_t I, int32_t H, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, 0.4f);
  std::vector<float> wih(4 * H * I), whh(4 * H * H), bih(4 * H), bhh(4 * H);
  for (auto* v : {&wih, &whh, &bih, &bhh}) {
    for (float& e : *v) e = n(rng);
  }
  return FloatLstm::from_torch(I, H, wih, whh, bih, bhh);
}

CalibrationSet correlated_calibration(int32_t I, int32_t n, int32_t T, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n) * T * I);
  for (size_t k = 0; k < x.size(); k += static_cast<size_t>(I)) {
    const float common = d(rng);
    for (int32_t j = 0; j < I; ++j) x[k + static_cast<size_t>(j)] = 0.3f + common + 0.5f * d(rng);
  }
  CalibrationSet set;
  set.add_batch(x, {n, T, Layout::kBatchMajor}, I);
  return set;
}

TEST(OperandMoment, FromTheFloatModel) {
  const int32_t I = 3, H = 4;
  const FloatLstm lstm = random_lstm(I, H, 1);
  const CalibrationSet cal = correlated_calibration(I, 2, 5, 2);
  const std::vector<double> c = operand_second_moment(lstm, cal);
  ASSERT_EQ(c.size(), 49u);
  std::vector<double> sum;
  int64_t steps = 0;
  for (const auto& s : cal.sequences) {
    const FloatResult r = run_float(lstm, s.values.data(), {1, s.time_steps, Layout::kBatchMajor});
    accumulate_operand_moment(sum, steps, s.values.data(), r.output.data(), nullptr, s.time_steps, I, H, false);
  }
  for (size_t k = 0; k < c.size(); ++k) EXPECT_NEAR(c[k], sum[k] / 10, 1e-12) << k;
}

struct Derived {
  DerivedLstm nearest, adaptive;
};

Derived derive_both(bool bias_correction) {
  const int32_t I = 6, H = 8;
  const FloatLstm lstm = random_lstm(I, H, 5);
  const CalibrationSet cal = correlated_calibration(I, 4, 12, 6);
  WeightDecision o;
  o.bias_correction = bias_correction;
  OperandStats data;
  data.mean_x.assign(I, 0.3);
  data.mean_h.assign(H, 0.1);
  data.operand_second_moment = operand_second_moment(lstm, cal);
  const AffineQuant in = affine_from_range(-4, 4), out = affine_from_range(-1, 1);
  const CellScaleChoice cell = choose_cell_scale({}, 4.0);
  Derived d{derive_params(lstm, in, out, cell, o, data), {}};
  o.weight_rounding = WeightRounding::kAdaptive;
  d.adaptive = derive_params(lstm, in, out, cell, o, data);
  return d;
}

TEST(AdaptiveRounding, DeriveParamsRoundsAndRecordsIt) {
  const Derived d = derive_both(false);
  EXPECT_EQ(d.adaptive.weights.weight_rounding, WeightRounding::kAdaptive);
  int32_t changed = 0;
  for (int32_t g = 0; g < QLSTM_GATE_COUNT; ++g) {
    const DerivedGate &a = d.adaptive.gates[g], &n = d.nearest.gates[g];
    EXPECT_EQ(a.w_x_scale, n.w_x_scale);
    EXPECT_EQ(a.w_h_scale, n.w_h_scale);
    for (size_t k = 0; k < a.w_x.size(); ++k) {
      EXPECT_LE(std::abs(a.w_x[k] - n.w_x[k]), 1);
      changed += a.w_x[k] != n.w_x[k];
    }
    for (size_t k = 0; k < a.w_h.size(); ++k) {
      EXPECT_LE(std::abs(a.w_h[k] - n.w_h[k]), 1);
      changed += a.w_h[k] != n.w_h[k];
    }
    EXPECT_EQ(a.bias_q, n.bias_q);  // no bias correction: the bias does not see the rounding
  }
  EXPECT_GT(changed, 0);
}

TEST(AdaptiveRounding, BiasCorrectionUsesTheRoundedWeights) {
  const Derived d = derive_both(true);
  const int32_t I = 6, H = 8;
  const FloatLstm lstm = random_lstm(I, H, 5);
  bool differs = false;
  for (int32_t g = 0; g < QLSTM_GATE_COUNT; ++g) {
    const DerivedGate& a = d.adaptive.gates[g];
    const FloatGate& fg = lstm.gates[g];
    for (int32_t r = 0; r < H; ++r) {
      double b = static_cast<double>(fg.bias_x[r]) + fg.bias_h[r];
      for (int32_t j = 0; j < I; ++j) b += (fg.w_x[r * I + j] - a.w_x_scale * a.w_x[r * I + j]) * 0.3;
      for (int32_t j = 0; j < H; ++j) b += (fg.w_h[r * H + j] - a.w_h_scale * a.w_h[r * H + j]) * 0.1;
      EXPECT_EQ(a.bias_q[r], std::nearbyint(b / (d.adaptive.input.scale * a.w_x_scale))) << g << " " << r;
      differs |= a.bias_q[r] != d.nearest.gates[g].bias_q[r];
    }
  }
  EXPECT_TRUE(differs);
}

// With bias correction the bias absorbs the mean error, so the rounding minimizes the error about
// the mean: the same weights as without bias correction on C - m m^T.
TEST(AdaptiveRounding, BiasCorrectionRoundsForTheCenteredMoment) {
  const int32_t I = 6, H = 8, n = I + H;
  const FloatLstm lstm = random_lstm(I, H, 5);
  WeightDecision o;
  o.weight_rounding = WeightRounding::kAdaptive;
  o.bias_correction = true;
  OperandStats data;
  data.mean_x.assign(I, 0.3);
  data.mean_h.assign(H, 0.1);
  data.operand_second_moment = operand_second_moment(lstm, correlated_calibration(I, 4, 12, 6));
  const AffineQuant in = affine_from_range(-4, 4), out = affine_from_range(-1, 1);
  const CellScaleChoice cell = choose_cell_scale({}, 4.0);
  const DerivedLstm corrected = derive_params(lstm, in, out, cell, o, data);
  o.bias_correction = false;
  const DerivedLstm uncentered = derive_params(lstm, in, out, cell, o, data);
  for (int32_t a = 0; a < n; ++a) {
    for (int32_t b = 0; b < n; ++b) data.operand_second_moment[a * n + b] -= (a < I ? 0.3 : 0.1) * (b < I ? 0.3 : 0.1);
  }
  const DerivedLstm centered = derive_params(lstm, in, out, cell, o, data);
  bool differs = false;
  for (int32_t g = 0; g < QLSTM_GATE_COUNT; ++g) {
    EXPECT_EQ(corrected.gates[g].w_x, centered.gates[g].w_x) << g;
    EXPECT_EQ(corrected.gates[g].w_h, centered.gates[g].w_h) << g;
    differs |= corrected.gates[g].w_x != uncentered.gates[g].w_x || corrected.gates[g].w_h != uncentered.gates[g].w_h;
  }
  EXPECT_TRUE(differs);
}

TEST(AdaptiveRounding, MissingOrMisshapenMomentIsNamed) {
  const FloatLstm lstm = random_lstm(3, 4, 1);
  WeightDecision o;
  o.weight_rounding = WeightRounding::kAdaptive;
  OperandStats data;
  for (size_t size : {0, 48, 50}) {
    data.operand_second_moment.assign(size, 0.0);
    try {
      derive_params(lstm, affine_from_range(-1, 1), affine_from_range(-1, 1), choose_cell_scale({}, 1.0), o, data);
      ADD_FAILURE() << size;
    } catch (const CompileError& e) {
      EXPECT_NE(std::string(e.what()).find("operand_second_moment"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("49"), std::string::npos) << e.what();
    }
  }
}

TEST(AdaptiveRounding, NamesParse) {
  for (WeightRounding r : {WeightRounding::kNearest, WeightRounding::kAdaptive}) {
    EXPECT_EQ(parse_weight_rounding(weight_rounding_name(r)), r);
  }
  EXPECT_STREQ(weight_rounding_name(WeightRounding::kAdaptive), "adaptive");
  EXPECT_THROW(parse_weight_rounding("ada"), CompileError);
}

// QuantizedLayer::compile computes the moment from its own float pass (the options hold decisions,
// not data) and rounds with it: the decision is recorded and the weights differ from nearest's.
TEST(AdaptiveRounding, ThroughCompile) {
  const int32_t I = 6, H = 8;
  const FloatLstm lstm = random_lstm(I, H, 5);
  const CalibrationSet cal = correlated_calibration(I, 4, 12, 6);
  CompileOptions o;
  o.tuning = Tuning::kNone;
  const QuantizedLayer nearest = QuantizedLayer::compile(lstm, cal, o);
  o.weights.weight_rounding = WeightRounding::kAdaptive;
  const QuantizedLayer own = QuantizedLayer::compile(lstm, cal, o);
  EXPECT_EQ(own.derived().weights.weight_rounding, WeightRounding::kAdaptive);
  bool differs = false;
  for (int32_t g = 0; g < QLSTM_GATE_COUNT; ++g) {
    differs |= own.derived().gates[static_cast<size_t>(g)].w_x != nearest.derived().gates[static_cast<size_t>(g)].w_x;
    differs |= own.derived().gates[static_cast<size_t>(g)].w_h != nearest.derived().gates[static_cast<size_t>(g)].w_h;
  }
  EXPECT_TRUE(differs);
}

}  // namespace
