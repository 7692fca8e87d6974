// The 16x8 LSTM's parameter derivation (derive_s16.h, docs/arithmetic.md §14): exact biases and
// multipliers of a hand LSTM, the 16x8 kernel against the float LSTM and against the int8 one on
// held-out sequences (the same float model, boundary ranges from the same calibration sequences),
// and the refusals naming the gate, the row and the quantity.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "qlstm/compiler/lower/derive.h"
#include "qlstm/compiler/lower/derive_s16.h"
#include "qlstm/compiler/lower/compile_program.h"
#include "qlstm/lstm_s16.h"
#include "qlstm/lstm_s8.h"
#include "compile_error.h"
#include "scratch_buffer.h"

namespace {

using namespace qlstm::compiler;
using testing_support::ScratchBuffer;
const auto& expect_error = testing_support::expect_compile_error;

// A torch-layout LSTM with PyTorch's init, uniform(-k, k), k = gain / sqrt(H).
FloatLstm random_lstm(int32_t I, int32_t H, uint64_t seed, float gain = 1.0f) {
  std::mt19937_64 rng(seed);
  const float k = gain / std::sqrt(static_cast<float>(H));
  std::uniform_real_distribution<float> u(-k, k);
  const size_t G = QLSTM_GATE_COUNT;
  std::vector<float> wih(G * H * I), whh(G * H * H), bih(G * H), bhh(G * H);
  for (auto* v : {&wih, &whh, &bih, &bhh}) {
    for (auto& w : *v) w = u(rng);
  }
  return FloatLstm::from_torch(I, H, wih, whh, bih, bhh);
}

std::vector<float> random_inputs(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.1f, 1.0f);
  std::vector<float> x(n);
  for (auto& v : x) v = d(rng);
  return x;
}

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, std::fabs(static_cast<double>(x)));
  return m;
}

// The hand LSTM: weights k / 64 with one entry of +-127 per block (block scale exactly 2^-6),
// biases exact multiples of the bias scale. I = 2, H = 1.
FloatLstm hand_lstm() {
  // torch order i, f, g, o; one row each.
  const std::vector<int> wi = {127, 3, -127, 64, 5, -127, 127, 1};
  const std::vector<int> wh = {127, -127, 127, -127};
  std::vector<float> wih, whh;
  for (int k : wi) wih.push_back(static_cast<float>(k) / 64.0f);
  for (int k : wh) whh.push_back(static_cast<float>(k) / 64.0f);
  const std::vector<float> bih = {0.5f, -0.25f, 1.0f, 0.125f}, bhh = {0.25f, 0.25f, -0.5f, 0.0f};
  return FloatLstm::from_torch(2, 1, wih, whh, bih, bhh);
}

// s_x = 2^-10, s_h = 2^-15, weight scales 2^-6: the bias scale is 2^-16, the multipliers
// 2^-16 / 2^-12 = 2^-4 (input) and 2^-21 / 2^-12 = 2^-9 (recurrent).
TEST(DeriveS16, HandLstmBiasesAndMultipliersExact) {
  CellScaleChoice cell;
  cell.power = -11;
  const DerivedLstmS16 d = derive_lstm_s16_params(hand_lstm(), std::ldexp(1.0, -10), std::ldexp(1.0, -15), cell, {});
  // Kernel gate order forget, input, cell, output; torch i, f, g, o: (b_i + b_h) * 2^16.
  const int64_t want_bias[QLSTM_GATE_COUNT] = {0, 49152, 32768, 8192};
  for (int g = 0; g < QLSTM_GATE_COUNT; ++g) {
    const DerivedGateS16& dg = d.gates[static_cast<size_t>(g)];
    EXPECT_EQ(dg.w_x_scale, 1.0 / 64) << g;
    EXPECT_EQ(dg.w_h_scale, 1.0 / 64) << g;
    EXPECT_EQ(dg.input_effective_bias[0], want_bias[g]) << g;
    EXPECT_EQ(dg.hidden_effective_bias[0], 0) << g;
    EXPECT_EQ(dg.input_to_q3_12.multiplier, 1 << 30) << g;
    EXPECT_EQ(dg.input_to_q3_12.shift, -3) << g;
    EXPECT_EQ(dg.hidden_to_q3_12.multiplier, 1 << 30) << g;
    EXPECT_EQ(dg.hidden_to_q3_12.shift, -8) << g;
    EXPECT_EQ(dg.activation, g == QLSTM_GATE_CELL ? QLSTM_ACTIVATION_TANH : QLSTM_ACTIVATION_SIGMOID) << g;
  }
  // o * tanh(c) is Q0.30: 2^-30 / 2^-15 = 2^-15.
  EXPECT_EQ(d.output_times_tanh_cell_to_hidden.multiplier, 1 << 30);
  EXPECT_EQ(d.output_times_tanh_cell_to_hidden.shift, -14);
  const qlstm_lstm_s16_params p = d.kernel_params(2, 5, Layout::kTimeMajor);
  const char* field = nullptr;
  EXPECT_EQ(qlstm_lstm_s16_validate(&p, &field), QLSTM_OK) << (field ? field : "");
  EXPECT_EQ(p.layout, QLSTM_LAYOUT_TIME_MAJOR);
  EXPECT_EQ(p.cell_scale_power, -11);
}

struct Accuracy {
  double s8_db, s16_db;
};

// One float LSTM, ranges and cell scale from calibration sequences, both kernels scored against
// the float LSTM (double) on other, held-out sequences.
Accuracy held_out_accuracy(int32_t I, int32_t H, uint64_t seed) {
  const FloatLstm lstm = random_lstm(I, H, seed);
  const SequenceShape shape{4, 24, Layout::kBatchMajor};
  const size_t n = static_cast<size_t>(shape.batch) * shape.time_steps * I;
  const std::vector<float> calib = random_inputs(n, seed + 100), test = random_inputs(n, seed + 200);
  double max_cell = 0;
  const FloatResult fc = run_float(lstm, calib.data(), shape, nullptr, nullptr,
                                   [&](const double* c, const double*, int32_t h) {
                                     for (int32_t k = 0; k < h; ++k) max_cell = std::max(max_cell, std::fabs(c[k]));
                                   });
  const CellScaleChoice cell = choose_cell_scale(CellScaleRequest{}, max_cell);
  const FloatResult ft = run_float(lstm, test.data(), shape);
  const size_t outputs = ft.output.size();

  // int8: affine boundaries from the calibration min/max.
  const auto [xlo, xhi] = std::minmax_element(calib.begin(), calib.end());
  const auto [ylo, yhi] = std::minmax_element(fc.output.begin(), fc.output.end());
  const DerivedLstm d8 = derive_params(lstm, affine_from_range(*xlo, *xhi), affine_from_range(*ylo, *yhi), cell, {});
  const qlstm_lstm_s8_params p8 = d8.kernel_params(shape.batch, shape.time_steps, shape.layout);
  std::vector<int8_t> x8(test.size()), y8(outputs);
  for (size_t k = 0; k < test.size(); ++k) x8[k] = d8.input.quantize(test[k]);
  ScratchBuffer s8(qlstm_lstm_s8_scratch_bytes(&p8.dims));
  std::vector<int16_t> cell8(static_cast<size_t>(shape.batch * H));
  qlstm_lstm_s8_context c8 = {s8.data(), s8.bytes(), cell8.data(), nullptr};
  EXPECT_EQ(qlstm_lstm_s8(&p8, &c8, x8.data(), y8.data()), QLSTM_OK);
  std::vector<float> out8(outputs);
  for (size_t k = 0; k < outputs; ++k) out8[k] = static_cast<float>(d8.output.dequantize(y8[k]));

  // 16x8: symmetric int16 boundaries from the same calibration ranges.
  const DerivedLstmS16 d16 = derive_lstm_s16_params(lstm, symmetric_s16_scale(max_abs(calib), "input"),
                                                    symmetric_s16_scale(max_abs(fc.output), "output"), cell, {});
  const qlstm_lstm_s16_params p16 = d16.kernel_params(shape.batch, shape.time_steps, shape.layout);
  const char* field = nullptr;
  EXPECT_EQ(qlstm_lstm_s16_validate(&p16, &field), QLSTM_OK) << (field ? field : "");
  std::vector<int16_t> x16(test.size()), y16(outputs);
  for (size_t k = 0; k < test.size(); ++k) {
    x16[k] = static_cast<int16_t>(std::clamp(std::nearbyint(test[k] / d16.input_scale), -32768.0, 32767.0));
  }
  ScratchBuffer s16(qlstm_lstm_s16_scratch_bytes(&p16.dims));
  std::vector<int16_t> cell16(static_cast<size_t>(shape.batch * H));
  qlstm_lstm_s16_context c16 = {s16.data(), s16.bytes(), cell16.data(), nullptr};
  EXPECT_EQ(qlstm_lstm_s16(&p16, &c16, x16.data(), y16.data()), QLSTM_OK);
  std::vector<float> out16(outputs);
  for (size_t k = 0; k < outputs; ++k) out16[k] = static_cast<float>(y16[k] * d16.output_scale);

  const Accuracy a{sqnr_db(ft.output, out8), sqnr_db(ft.output, out16)};
  std::printf("I=%d H=%d seed %llu: held-out SQNR int8 %.2f dB, 16x8 %.2f dB (P=%d)\n", I, H,
              static_cast<unsigned long long>(seed), a.s8_db, a.s16_db, cell.power);
  return a;
}

// Every case gains, and the median gain is at least 6 dB (issue 17's bar for whole models,
// here for the layer alone). The figures are printed; the int8 weights bound both.
TEST(DeriveS16, MoreAccurateThanInt8OnHeldOutSequences) {
  const struct {
    int32_t I, H;
    uint64_t seed;
  } cases[] = {{1, 4, 11}, {4, 8, 12}, {8, 16, 13}, {16, 32, 14}, {10, 64, 15}, {40, 64, 16}, {32, 128, 17}};
  std::vector<double> gains;
  for (const auto& c : cases) {
    const Accuracy a = held_out_accuracy(c.I, c.H, c.seed);
    EXPECT_GT(a.s16_db, a.s8_db) << "I=" << c.I << " H=" << c.H;
    gains.push_back(a.s16_db - a.s8_db);
  }
  std::sort(gains.begin(), gains.end());
  const double median = gains[gains.size() / 2];
  std::printf("median gain of 16x8 over int8: %.2f dB\n", median);
  EXPECT_GE(median, 6.0);
}

TEST(DeriveS16, RefusalsNameTheGateRowAndQuantity) {
  CellScaleChoice cell;
  cell.power = -11;
  // A row of 600 weights at full scale: 32768 * 600 * 127 passes 2^31.
  const FloatLstm wide = random_lstm(600, 2, 5);
  FloatLstm saturated = wide;
  for (auto& g : saturated.gates) std::fill(g.w_x.begin(), g.w_x.end(), 1.0f);
  expect_error([&] { derive_lstm_s16_params(saturated, 1e-3, 1e-4, cell, {}); },
               {"gate 'forget'", "input accumulator of row 0", "beyond int32"});
  // A bias that leaves int32 at a fine input scale.
  FloatLstm big_bias = random_lstm(2, 2, 6);
  big_bias.gates[QLSTM_GATE_OUTPUT].bias_x[1] = 1e6f;
  expect_error([&] { derive_lstm_s16_params(big_bias, 1e-4, 1e-4, cell, {}); },
               {"gate 'output'", "bias[1]", "leaves int32"});
  WeightDecision adaptive;
  adaptive.weight_rounding = WeightRounding::kAdaptive;
  expect_error([&] { derive_lstm_s16_params(random_lstm(2, 2, 7), 1e-3, 1e-4, cell, adaptive); },
               {"weight_rounding adaptive", "16x8"});
  expect_error([&] { symmetric_s16_scale(0.0, "input"); }, {"input", "not positive"});
  // A gate multiplier needing a left shift above 14: an input scale 2^20 times too coarse.
  expect_error([&] { derive_lstm_s16_params(random_lstm(2, 2, 8), 1e5, 1e-4, cell, {}); },
               {"input-to-Q3.12 multiplier", "16x8 limit"});
}

// TFLite Micro's int16 softmax preparation: QuantizeMultiplier(beta * s_in / (10 / 65535)); the
// figures are frexp's of 65535 / 10240 and of 0.1 * 6553.5, rounded by hand.
TEST(DeriveS16, SoftmaxMultiplierAsTfliteMicroAndItsRefusals) {
  const DerivedSoftmaxS16 a = derive_softmax_s16(10, 1.0 / 1024, 1.0);
  EXPECT_EQ(a.input_multiplier, 1717960704);
  EXPECT_EQ(a.input_left_shift, 3);
  const DerivedSoftmaxS16 b = derive_softmax_s16(4, 0.05, 2.0);
  EXPECT_EQ(b.input_multiplier, 1374368563);
  EXPECT_EQ(b.input_left_shift, 10);
  // Back from its block: the beta the multiplier stands for.
  EXPECT_NEAR(DerivedSoftmaxS16::from_kernel_params(b.kernel_params(0), 0.05).beta, 2.0, 1e-8);
  EXPECT_EQ(softmax_s16_output_quant().scale, 1.0 / 32768);
  EXPECT_EQ(softmax_s16_output_quant().zero_point, 0);
  expect_error([] { derive_softmax_s16(1, 0.01, 1.0); }, {"over 1 values", "takes 2 to"});
  expect_error([] { derive_softmax_s16(QLSTM_SOFTMAX_S16_ROW_SIZE_MAX + 1, 0.01, 1.0); }, {"takes 2 to"});
  expect_error([] { derive_softmax_s16(5, 0.01, 0.0); }, {"beta"});
  // beta x s_in = 8: a left shift of 16, past the kernel's 15.
  expect_error([] { derive_softmax_s16(5, 8.0, 1.0); }, {"input_left_shift"});
}

}  // namespace
