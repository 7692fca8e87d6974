// Random vanilla RNN parameters for tests: owning storage plus a qlstm_rnn_s8_params view.
#ifndef QLSTM_TESTS_RANDOM_RNN_H_
#define QLSTM_TESTS_RANDOM_RNN_H_

#include <cstdint>
#include <random>
#include <vector>

#include "qlstm/rnn_s8.h"
#include "random_lstm.h"

namespace testing_support {

struct RandomRnn {
  qlstm_rnn_s8_params params{};
  OwnedGate gate;
  std::vector<int8_t> input;

  RandomRnn() = default;
  RandomRnn(const RandomRnn&) = delete;
  RandomRnn& operator=(const RandomRnn&) = delete;
};

// Fills `out` (default-constructed). kTypical: converter-like scales, the recurrent bias
// -zp * rowsum(W_h) (a zero state's int8 operand then adds nothing); kWide: the same biases,
// requantizations a few octaves around the typical ones (the int16 saturation is frequent);
// kExtreme: any requantization (a tenth of the multipliers 0) and any int32 bias.
inline void make_random_rnn(RandomRnn& out, std::mt19937_64& rng, qlstm_rnn_dims dims, bool time_major,
                            Regime regime, int32_t activation) {
  qlstm_rnn_s8_params& p = out.params;
  p.dims = dims;
  p.layout = time_major ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR;
  p.activation = activation;
  const size_t I = static_cast<size_t>(dims.input_size), H = static_cast<size_t>(dims.hidden_size);
  std::uniform_int_distribution<int> s8(-128, 127);
  const bool extreme = regime == Regime::kExtreme, relu = activation == QLSTM_RNN_RELU;
  p.output_zero_point = relu && regime == Regime::kTypical ? -128 : s8(rng);  // ReLU's [0, max] on int8
  fill_random_gate(out.gate, p.gate, rng, I, H, p.output_zero_point, extreme);
  if (regime == Regime::kTypical) {
    // tanh: QM(2^-15 / s_y), s_y ~ 1/256 ... 1/32; ReLU: its own int16 format to the output's.
    p.hidden_to_output = relu ? random_requant(rng, -9, -2) : random_requant(rng, -9, -6);
  } else if (regime == Regime::kWide) {
    p.gate.input_to_q3_12 = random_requant(rng, -16, 1);
    p.gate.hidden_to_q3_12 = random_requant(rng, -16, 1);
    p.hidden_to_output = random_requant(rng, -12, -1);
  } else {
    p.hidden_to_output = random_requant(rng, -31, 31);
    for (qlstm_requant* q : {&p.gate.input_to_q3_12, &p.gate.hidden_to_q3_12, &p.hidden_to_output}) {
      if (rng() % 10 == 0) q->multiplier = 0;
    }
  }
  out.input.resize(static_cast<size_t>(dims.batch) * static_cast<size_t>(dims.time_steps) * I);
  for (auto& x : out.input) x = static_cast<int8_t>(s8(rng));
}

// Half of the weights and inputs at -128 or 127: the largest products, so that the sums wrap
// with the extreme regime's biases over all of int32.
inline void push_rnn_to_int8_ends(RandomRnn& rnn, std::mt19937_64& rng) {
  const auto push = [&rng](std::vector<int8_t>& v) {
    for (auto& e : v) {
      if (rng() % 2 == 0) e = rng() % 2 == 0 ? int8_t{127} : int8_t{-128};
    }
  };
  push(rnn.gate.wx);
  push(rnn.gate.wh);
  push(rnn.input);
}

// The bytes a call with `p` writes into its output (p.output_steps, p.output_width).
inline size_t rnn_output_size(const qlstm_rnn_s8_params& p) {
  const size_t W = static_cast<size_t>(p.output_width > 0 ? p.output_width : p.dims.hidden_size);
  const size_t steps = p.output_steps != QLSTM_OUTPUT_ALL_STEPS ? 1 : static_cast<size_t>(p.dims.time_steps);
  return static_cast<size_t>(p.dims.batch) * steps * W;
}

// A random int16 state [B][H]: over all of int16, or [0, 32767] (what ReLU leaves) when
// `non_negative`.
inline std::vector<int16_t> random_rnn_state(std::mt19937_64& rng, const qlstm_rnn_dims& d, bool non_negative) {
  std::uniform_int_distribution<int32_t> any(non_negative ? 0 : INT16_MIN, INT16_MAX);
  std::vector<int16_t> s(static_cast<size_t>(d.batch) * static_cast<size_t>(d.hidden_size));
  for (auto& v : s) v = static_cast<int16_t>(any(rng));
  return s;
}

}  // namespace testing_support

#endif  // QLSTM_TESTS_RANDOM_RNN_H_
