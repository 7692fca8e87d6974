// Parameter derivation: the zero-point folding identity, the gate order, the error cases, and the
// host simulation's bit-exactness with the runtime kernel and the independent model.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "naive_lstm.h"
#include "zero_point_folding.h"
#include "qlstm/activation_s16.h"
#include "qlstm/compiler/lower/derive.h"
#include "qlstm/compiler/lower/compile_program.h"

namespace {

using namespace qlstm::compiler;

// A torch-layout LSTM with random weights; gate g of the stack gets scale (g + 1) * base so that
// every gate block differs.
FloatLstm random_lstm(int32_t I, int32_t H, uint64_t seed, float base = 0.3f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> wih(4 * H * I), whh(4 * H * H), bih(4 * H), bhh(4 * H);
  for (size_t k = 0; k < wih.size(); ++k) wih[k] = base * n(rng) * static_cast<float>(1 + k / (H * I));
  for (size_t k = 0; k < whh.size(); ++k) whh[k] = base * n(rng) * static_cast<float>(1 + k / (H * H));
  for (auto& b : bih) b = 0.2f * n(rng);
  for (auto& b : bhh) b = 0.2f * n(rng);
  return FloatLstm::from_torch(I, H, wih, whh, bih, bhh);
}

CalibrationSet random_calibration(int32_t I, int32_t n, int32_t T, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.2f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n) * T * I);
  for (auto& v : x) v = d(rng);
  CalibrationSet set;
  set.add_batch(x, {n, T, Layout::kBatchMajor}, I);
  return set;
}

TEST(GateOrder, TorchBlocksLandInTheirKernelGates) {
  const int32_t I = 3, H = 2;
  std::vector<float> wih(4 * H * I), whh(4 * H * H), bih(4 * H), bhh(4 * H, 0.0f);
  // Torch stacks i, f, g, o: mark each block with its index.
  for (int blk = 0; blk < 4; ++blk) {
    for (int k = 0; k < H * I; ++k) wih[blk * H * I + k] = static_cast<float>(blk + 1);
    for (int k = 0; k < H * H; ++k) whh[blk * H * H + k] = static_cast<float>(10 * (blk + 1));
    for (int k = 0; k < H; ++k) bih[blk * H + k] = static_cast<float>(100 * (blk + 1));
  }
  const FloatLstm l = FloatLstm::from_torch(I, H, wih, whh, bih, bhh);
  EXPECT_EQ(l.gates[QLSTM_GATE_INPUT].w_x[0], 1.0f);
  EXPECT_EQ(l.gates[QLSTM_GATE_FORGET].w_x[0], 2.0f);
  EXPECT_EQ(l.gates[QLSTM_GATE_CELL].w_h[0], 30.0f);
  EXPECT_EQ(l.gates[QLSTM_GATE_OUTPUT].bias_x[1], 400.0f);
  EXPECT_EQ(torch_stack_index(QLSTM_GATE_FORGET), 1);
}

// A model whose gates have very different roles: a gate-order mistake anywhere (float import,
// derivation, kernel) would ruin the match with the float model.
TEST(GateOrder, DistinctGatesSurviveQuantization) {
  const int32_t I = 4, H = 6;
  FloatLstm l = random_lstm(I, H, 3);
  for (int32_t u = 0; u < H; ++u) {
    l.gates[QLSTM_GATE_FORGET].bias_x[u] = 3.0f;   // remember
    l.gates[QLSTM_GATE_INPUT].bias_x[u] = -2.0f;   // mostly closed
    l.gates[QLSTM_GATE_OUTPUT].bias_x[u] = 1.0f;
  }
  const CalibrationSet calib = random_calibration(I, 16, 20, 4);
  const QuantizedLayer q = QuantizedLayer::compile(l, calib, CompileOptions{});
  const CalibrationSet test = random_calibration(I, 8, 20, 5);
  std::vector<float> x;
  for (const auto& s : test.sequences) x.insert(x.end(), s.values.begin(), s.values.end());
  const SequenceShape shape{8, 20, Layout::kBatchMajor};
  const double sqnr = sqnr_db(run_float(l, x.data(), shape).output, q.run_float(x, shape));
  EXPECT_GT(sqnr, 30.0);
  // The same model with forget and input gates swapped in the float source is far away.
  FloatLstm swapped = l;
  std::swap(swapped.gates[QLSTM_GATE_FORGET], swapped.gates[QLSTM_GATE_INPUT]);
  EXPECT_LT(sqnr_db(run_float(l, x.data(), shape).output, run_float(swapped, x.data(), shape).output), 15.0);
}

TEST(Derive, ZeroPointFoldingIdentity) {
  const int32_t I = 7, H = 5;
  const FloatLstm l = random_lstm(I, H, 8);
  const AffineQuant in{0.02, -37}, out{2.0 / 255, 3};
  const DerivedLstm d = derive_params(l, in, out, choose_cell_scale(parse_cell_policy("fixed:-11"), 0), {});
  std::mt19937_64 rng(9);
  for (int g = 0; g < QLSTM_GATE_COUNT; ++g) {
    const DerivedGate& dg = d.gates[static_cast<size_t>(g)];
    const std::vector<int64_t> bias_x(dg.bias_q.begin(), dg.bias_q.end()), bias_h(H, 0);
    testing_support::expect_zero_point_folding(dg, I, H, in, out, bias_x, bias_h, rng);
  }
  EXPECT_EQ(d.forget_times_cell_to_cell.multiplier, 1 << 30);
  EXPECT_EQ(d.forget_times_cell_to_cell.shift, -14);
  EXPECT_EQ(d.input_times_cell_gate_to_cell.multiplier, 1 << 30);
  EXPECT_EQ(d.input_times_cell_gate_to_cell.shift, -29 + 11);
  EXPECT_EQ(d.gates[QLSTM_GATE_CELL].activation, QLSTM_ACTIVATION_TANH);
  EXPECT_EQ(d.gates[QLSTM_GATE_FORGET].activation, QLSTM_ACTIVATION_SIGMOID);
}

TEST(Derive, HostRunIsTheKernelAndMatchesTheIndependentModel) {
  const int32_t I = 5, H = 9;
  const FloatLstm l = random_lstm(I, H, 12);
  const QuantizedLayer q = QuantizedLayer::compile(l, random_calibration(I, 8, 12, 13), CompileOptions{});
  for (Layout layout : {Layout::kBatchMajor, Layout::kTimeMajor}) {
    const SequenceShape shape{3, 11, layout};
    std::mt19937_64 rng(14);
    std::vector<int8_t> x(3 * 11 * I);
    for (auto& v : x) v = static_cast<int8_t>(rng());
    const std::vector<int8_t> y = q.run_s8(x, shape);
    const qlstm_lstm_s8_params p = q.kernel_params(shape);
    EXPECT_EQ(y, naive::run(p, x.data(), nullptr, qlstm::kSigmoidTableU16));
    // Stateful from the initial state equals stateless; the state ends at the last step.
    QuantizedLayer::State st = q.initial_state(3);
    EXPECT_EQ(q.run_s8(x, shape, &st), y);
  }
}

TEST(Derive, ErrorsNameTheGateAndTheQuantity) {
  const int32_t I = 3, H = 2;
  auto expect_error = [](const std::function<void()>& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error, expected one containing: " << needle;
    } catch (const CompileError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  std::vector<float> wih(4 * H * I, 0.1f), whh(4 * H * H, 0.1f), b(4 * H, 0.0f);
  expect_error([&] { FloatLstm::from_torch(I, H, std::vector<float>(5), whh, b, b); },
               "weight_ih [4H][I] has 5 values, expected 24");
  expect_error([&] { FloatLstm::from_torch(I, H, wih, whh, std::vector<float>(3), b); },
               "bias_ih [4H] has 3 values");
  std::vector<float> nan_w = whh;
  nan_w[1 * H * H + 3] = NAN;  // torch block 1 = forget, row 1, column 1
  expect_error([&] { FloatLstm::from_torch(I, H, wih, nan_w, b, b); },
               "gate 'forget': recurrent weight is not finite (nan) at [1][1]");
  const FloatLstm l = FloatLstm::from_torch(I, H, wih, whh, b, b);
  expect_error([&] { QuantizedLayer::compile(l, CalibrationSet{}, CompileOptions{}); },
               "calibration set is empty");
  CalibrationSet bad = random_calibration(I, 2, 4, 1);
  bad.sequences[1].values[5] = INFINITY;
  expect_error([&] { QuantizedLayer::compile(l, bad, CompileOptions{}); },
               "sequence 1 has a non-finite value (inf) at step 1, feature 2");
  // A bias that overflows int32 at its scale: input scale x weight scale = 1e-6 x (0.1 / 127).
  std::vector<float> big_bias = b;
  big_bias[3 * H + 1] = 5000.0f;  // torch block 3 = output gate
  const FloatLstm lb = FloatLstm::from_torch(I, H, wih, whh, big_bias, b);
  expect_error([&] {
    derive_params(lb, AffineQuant{1e-6, 0}, AffineQuant{1.0 / 128, 0},
                  choose_cell_scale(parse_cell_policy("fixed:-12"), 0), {});
  }, "gate 'output': bias[1] = 5000 overflows int32");
  // A multiplier out of range: the input scale is so coarse that the Q3.12 multiplier would need a
  // left shift beyond 31.
  expect_error([&] {
    derive_params(l, AffineQuant{1e10, 0}, AffineQuant{1.0 / 128, 0},
                  choose_cell_scale(parse_cell_policy("fixed:-12"), 0), {});
  }, "gate 'forget': input-to-Q3.12 multiplier");
  // An accumulator that the kernel's 32-bit pre-shift would wrap.
  expect_error([&] {
    derive_params(l, AffineQuant{1e5, 0}, AffineQuant{1.0 / 128, 0},
                  choose_cell_scale(parse_cell_policy("fixed:-12"), 0), {});
  }, "accumulator of row 0 can reach");
  expect_error([&] {
    derive_params(l, AffineQuant{0.01, 0}, AffineQuant{1.0 / 128, 0},
                  choose_cell_scale(parse_cell_policy("fixed:-12"), 0), WeightDecision{});
    WeightDecision o;
    o.bias_correction = true;
    derive_params(l, AffineQuant{0.01, 0}, AffineQuant{1.0 / 128, 0},
                  choose_cell_scale(parse_cell_policy("fixed:-12"), 0), o);
  }, "bias correction: needs the calibration means");
}


// A feature that never varies over the calibration set is named in a warning; a set in which no
// feature varies is an error.
TEST(Calibration, ConstantFeaturesAreNamedAndAllConstantIsAnError) {
  CalibrationSet set;
  // Two sequences of 3 steps, 3 features: feature 1 is 0.25 everywhere, the others vary.
  set.add_batch({0.1f, 0.25f, -1.0f, 0.2f, 0.25f, -2.0f, 0.3f, 0.25f, -3.0f,
                 0.4f, 0.25f, 1.0f, 0.5f, 0.25f, 2.0f, 0.6f, 0.25f, 3.0f},
                {2, 3, Layout::kBatchMajor}, 3);
  const std::vector<std::string> w = calibration_warnings(set, 3);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0], "calibration: input feature 1 is constant (0.25) over all 6 steps");

  // Feature 0 varies only across sequences: still varies.
  CalibrationSet across;
  across.add_batch({1, 5, 1, 5, 2, 5, 2, 5}, {2, 2, Layout::kBatchMajor}, 2);
  const std::vector<std::string> w2 = calibration_warnings(across, 2);
  ASSERT_EQ(w2.size(), 1u);
  EXPECT_NE(w2[0].find("input feature 1 is constant (5)"), std::string::npos) << w2[0];

  CalibrationSet flat;
  flat.add_batch(std::vector<float>(12, 0.5f), {2, 3, Layout::kBatchMajor}, 2);
  try {
    calibration_warnings(flat, 2);
    ADD_FAILURE() << "no error for a calibration set in which nothing varies";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("no input feature varies"), std::string::npos) << e.what();
  }
  // Random data: no warning; an empty set: none either (compile reports that).
  EXPECT_TRUE(calibration_warnings(random_calibration(3, 4, 5, 7), 3).empty());
  EXPECT_TRUE(calibration_warnings(CalibrationSet{}, 3).empty());
}

}  // namespace
