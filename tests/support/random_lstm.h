// Random kernel parameters for tests: owning storage plus a qlstm_lstm_s8_params view.
#ifndef QLSTM_TESTS_RANDOM_LSTM_H_
#define QLSTM_TESTS_RANDOM_LSTM_H_

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "qlstm/lstm_s8.h"

namespace testing_support {

enum class Regime {
  kTypical,  // converter-like scales: moderate FC multipliers, standard cell-side multipliers
  kWide,     // random cell-side multipliers, random clip and P
  kExtreme,  // huge FC/output scales and biases: saturation and 32-bit wrap everywhere
};

struct OwnedGate {
  std::vector<int8_t> wx, wh;
  std::vector<int32_t> bx, bh;
};

struct RandomLstm {
  qlstm_lstm_s8_params params{};
  std::array<OwnedGate, QLSTM_GATE_COUNT> gates;
  std::vector<int8_t> input;

  RandomLstm() = default;
  RandomLstm(const RandomLstm&) = delete;
  RandomLstm& operator=(const RandomLstm&) = delete;
};

inline qlstm_requant random_requant(std::mt19937_64& rng, int shift_lo, int shift_hi) {
  std::uniform_int_distribution<int32_t> m(1 << 30, INT32_MAX);
  std::uniform_int_distribution<int32_t> s(shift_lo, shift_hi);
  return {m(rng), s(rng)};
}

// One gate's random weights, biases and requantizations (qlstm_gate_s8_params or
// qlstm_gru_gate_s8_params), stored in `og` and pointed to by `gp`. Not extreme: the recurrent
// bias is -zp_h * rowsum(W_h), as a converter folds it.
template <class GateParams>
void fill_random_gate(OwnedGate& og, GateParams& gp, std::mt19937_64& rng, size_t I, size_t H,
                      int32_t output_zero_point, bool extreme) {
  std::uniform_int_distribution<int> s8(-128, 127);
  og.wx.resize(H * I);
  og.wh.resize(H * H);
  for (auto& w : og.wx) w = static_cast<int8_t>(s8(rng));
  for (auto& w : og.wh) w = static_cast<int8_t>(s8(rng));
  og.bx.resize(H);
  og.bh.resize(H);
  std::uniform_int_distribution<int32_t> small_bias(-20000, 20000);
  std::uniform_int_distribution<int32_t> any_bias(INT32_MIN, INT32_MAX);
  for (auto& b : og.bx) b = extreme ? any_bias(rng) : small_bias(rng);
  if (extreme) {
    for (auto& b : og.bh) b = any_bias(rng);
  } else {
    // Only then is a hidden state of all zp_h the same as "no recurrent term".
    for (size_t r = 0; r < H; ++r) {
      int64_t rowsum = 0;
      for (size_t j = 0; j < H; ++j) rowsum += og.wh[r * H + j];
      og.bh[r] = static_cast<int32_t>(-output_zero_point * rowsum);
    }
  }
  gp.input_to_q3_12 = extreme ? random_requant(rng, -31, 31) : random_requant(rng, -12, -5);
  gp.hidden_to_q3_12 = extreme ? random_requant(rng, -31, 31) : random_requant(rng, -12, -5);
  gp.input_weights = og.wx.data();
  gp.hidden_weights = og.wh.data();
  gp.input_effective_bias = og.bx.data();
  gp.hidden_effective_bias = og.bh.data();
}

// Fills `out` (default-constructed) for the given dims/layout.
inline void make_random_lstm(RandomLstm& out, std::mt19937_64& rng, qlstm_lstm_dims dims,
                             bool time_major, Regime regime) {
  qlstm_lstm_s8_params& p = out.params;
  p.dims = dims;
  p.layout = time_major ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR;
  const size_t I = static_cast<size_t>(dims.input_size), H = static_cast<size_t>(dims.hidden_size);
  std::uniform_int_distribution<int> s8(-128, 127);
  std::uniform_int_distribution<int> coin(0, 9);
  const bool extreme = regime == Regime::kExtreme;
  p.output_zero_point = s8(rng);
  for (int g = 0; g < QLSTM_GATE_COUNT; ++g) {
    qlstm_gate_s8_params& gp = p.gates[g];
    fill_random_gate(out.gates[static_cast<size_t>(g)], gp, rng, I, H, p.output_zero_point, extreme);
    gp.activation = g == QLSTM_GATE_CELL ? (coin(rng) == 0 ? QLSTM_ACTIVATION_SIGMOID
                                                           : QLSTM_ACTIVATION_TANH)
                                         : QLSTM_ACTIVATION_SIGMOID;
  }
  std::uniform_int_distribution<int> power(-16, -8);
  p.cell_scale_power = power(rng);
  if (regime == Regime::kTypical) {
    p.forget_times_cell_to_cell = {1 << 30, -14};
    p.input_times_cell_gate_to_cell = {1 << 30, -29 - p.cell_scale_power};
    p.cell_clip = coin(rng) < 5 ? 0 : 32767;
  } else {
    p.forget_times_cell_to_cell = random_requant(rng, -20, extreme ? 10 : -10);
    p.input_times_cell_gate_to_cell = random_requant(rng, -20, extreme ? 10 : -10);
    std::uniform_int_distribution<int32_t> clip(-5, 32767);
    p.cell_clip = clip(rng);
    if (extreme) {
      std::uniform_int_distribution<int32_t> any_power(QLSTM_CELL_SCALE_POWER_MIN,
                                                       QLSTM_CELL_SCALE_POWER_MAX);
      p.cell_scale_power = coin(rng) < 3 ? any_power(rng) : p.cell_scale_power;
    }
  }
  p.output_times_tanh_cell_to_hidden =
      extreme ? random_requant(rng, -31, 31) : random_requant(rng, -24, -14);
  const size_t n_in = static_cast<size_t>(dims.batch) * static_cast<size_t>(dims.time_steps) * I;
  out.input.resize(n_in);
  for (auto& x : out.input) x = static_cast<int8_t>(s8(rng));
}

// Makes every sigmoid gate of `out` a HardSigmoid gate with a random line (docs/arithmetic.md
// §3.1): typical, Keras' alpha 0.2 / beta 0.5 (slope 1.6 in Q3.12 -> Q0.15) and lines near it;
// wide, slopes 2^-12 ... 2^12 and offsets around [-2, 2] in Q0.15; extreme, any shift and any
// int32 offset (the 64-bit sum). A tenth of the gates get slope 0 (alpha 0: the constant beta).
inline void make_hard_sigmoid_gates(RandomLstm& out, std::mt19937_64& rng, Regime regime) {
  std::uniform_int_distribution<int> coin(0, 9);
  for (int g = 0; g < QLSTM_GATE_COUNT; ++g) {
    qlstm_gate_s8_params& gp = out.params.gates[g];
    if (gp.activation != QLSTM_ACTIVATION_SIGMOID) continue;
    gp.activation = QLSTM_ACTIVATION_HARD_SIGMOID;
    qlstm_hard_sigmoid_params& line = gp.hard_sigmoid;
    if (regime == Regime::kTypical) {
      constexpr qlstm_requant kKerasSlope = {1717986918, 1};  // 1.6 = 0.8 * 2^1
      constexpr int32_t kKerasOffset = 16384;                  // 0.5 in Q0.15
      line.slope = coin(rng) < 5 ? kKerasSlope : random_requant(rng, -1, 3);
      std::uniform_int_distribution<int32_t> near(-2048, 2048);
      line.offset_q0_15 = kKerasOffset + (coin(rng) < 5 ? 0 : near(rng));
    } else if (regime == Regime::kWide) {
      line.slope = random_requant(rng, -12, 12);
      std::uniform_int_distribution<int32_t> offset(-65536, 65536);
      line.offset_q0_15 = offset(rng);
    } else {
      line.slope = random_requant(rng, QLSTM_SHIFT_MIN, QLSTM_SHIFT_MAX);
      std::uniform_int_distribution<int32_t> any(INT32_MIN, INT32_MAX);
      line.offset_q0_15 = any(rng);
    }
    if (coin(rng) == 0) line.slope = {0, 0};
  }
}

}  // namespace testing_support

#endif  // QLSTM_TESTS_RANDOM_LSTM_H_
