// Random GRU parameters for tests: owning storage plus a qlstm_gru_s8_params view.
#ifndef QLSTM_TESTS_RANDOM_GRU_H_
#define QLSTM_TESTS_RANDOM_GRU_H_

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "qlstm/gru_s8.h"
#include "random_lstm.h"

namespace testing_support {

struct RandomGru {
  qlstm_gru_s8_params params{};
  std::array<OwnedGate, QLSTM_GRU_GATE_COUNT> gates;
  std::vector<int32_t> new_gate_zero_state_bias;
  std::vector<int8_t> input;

  RandomGru() = default;
  RandomGru(const RandomGru&) = delete;
  RandomGru& operator=(const RandomGru&) = delete;
};

// The standard multiplier of a Q0.15 product back to its other factor's format: QM(2^-15).
constexpr qlstm_requant kQ0_15ProductRequant = {1 << 30, -14};

// Fills `out` (default-constructed). kTypical: converter-like scales and the standard elementwise
// multipliers; kWide: random elementwise multipliers; kExtreme: any requantization and bias
// (saturation and 32-bit wrap everywhere).
inline void make_random_gru(RandomGru& out, std::mt19937_64& rng, qlstm_gru_dims dims, bool time_major,
                            Regime regime) {
  qlstm_gru_s8_params& p = out.params;
  p.dims = dims;
  p.layout = time_major ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR;
  const size_t I = static_cast<size_t>(dims.input_size), H = static_cast<size_t>(dims.hidden_size);
  std::uniform_int_distribution<int> s8(-128, 127);
  const bool extreme = regime == Regime::kExtreme;
  p.output_zero_point = s8(rng);
  for (int g = 0; g < QLSTM_GRU_GATE_COUNT; ++g) {
    fill_random_gate(out.gates[static_cast<size_t>(g)], p.gates[g], rng, I, H, p.output_zero_point, extreme);
  }
  if (!extreme) {  // b_hn stays on the recurrent side of n (it is multiplied by r)
    std::uniform_int_distribution<int32_t> b_hn(-20000, 20000);
    for (auto& b : out.gates[QLSTM_GRU_GATE_NEW].bh) b += b_hn(rng);
  }
  if (regime == Regime::kTypical) {
    p.reset_times_hidden_to_q3_12 = kQ0_15ProductRequant;
    p.update_times_difference_to_q0_15 = kQ0_15ProductRequant;
    p.hidden_q0_15_to_output = random_requant(rng, -9, -6);  // QM(2^-15 / s_h), s_h ~ 1/256 ... 1/32
  } else {
    p.reset_times_hidden_to_q3_12 = random_requant(rng, extreme ? -31 : -16, extreme ? 31 : -12);
    p.update_times_difference_to_q0_15 = random_requant(rng, extreme ? -31 : -16, extreme ? 31 : -12);
    p.hidden_q0_15_to_output = extreme ? random_requant(rng, -31, 31) : random_requant(rng, -12, -4);
  }
  const size_t n_in = static_cast<size_t>(dims.batch) * static_cast<size_t>(dims.time_steps) * I;
  out.input.resize(n_in);
  for (auto& x : out.input) x = static_cast<int8_t>(s8(rng));
  // A zero state's new-gate accumulator: kExtreme any int32; otherwise consistent with the
  // recurrent side as derived (b_hn = hidden_effective_bias + zp_h * rowsum(W_hn), modulo 2^32).
  const OwnedGate& n = out.gates[QLSTM_GRU_GATE_NEW];
  std::uniform_int_distribution<int32_t> any_bias(INT32_MIN, INT32_MAX);
  out.new_gate_zero_state_bias.resize(H);
  for (size_t r = 0; r < H; ++r) {
    uint32_t acc = static_cast<uint32_t>(n.bh[r]);
    for (size_t j = 0; j < H; ++j) acc += static_cast<uint32_t>(p.output_zero_point * n.wh[r * H + j]);
    out.new_gate_zero_state_bias[r] = extreme ? any_bias(rng) : static_cast<int32_t>(acc);
  }
  p.new_gate_zero_state_bias = out.new_gate_zero_state_bias.data();
}

// The bytes a call with `p` writes into its output (p.output_steps, p.output_width).
inline size_t gru_output_size(const qlstm_gru_s8_params& p) {
  const size_t W = static_cast<size_t>(p.output_width > 0 ? p.output_width : p.dims.hidden_size);
  const size_t steps = p.output_steps != QLSTM_OUTPUT_ALL_STEPS ? 1 : static_cast<size_t>(p.dims.time_steps);
  return static_cast<size_t>(p.dims.batch) * steps * W;
}

// A random Q0.15 state [B][H] over all of int16.
inline std::vector<int16_t> random_gru_state(std::mt19937_64& rng, const qlstm_gru_dims& d) {
  std::uniform_int_distribution<int32_t> any(INT16_MIN, INT16_MAX);
  std::vector<int16_t> s(static_cast<size_t>(d.batch * d.hidden_size));
  for (auto& v : s) v = static_cast<int16_t>(any(rng));
  return s;
}

}  // namespace testing_support

#endif  // QLSTM_TESTS_RANDOM_GRU_H_
