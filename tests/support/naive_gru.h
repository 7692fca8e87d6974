// An independent, deliberately plain model of the GRU of docs/arithmetic.md §13, for tests only.
// It shares no code with the runtime's GRU: wide integers, one unit at a time, layouts by
// explicit index formulas, and the recurrent operand recomputed from the Q0.15 state instead of
// read back from the output. The primitives (SRDHM, RDBPOT, RQ, the table interpolation of §4)
// are naive_lstm.h's, themselves written out from §2 and §4 in wide integers; the activation
// reads the shipped table, which tests/unit checks exhaustively against its recipe.
#ifndef QLSTM_TESTS_NAIVE_GRU_H_
#define QLSTM_TESTS_NAIVE_GRU_H_

#include <cstdint>
#include <vector>

#include "naive_lstm.h"
#include "qlstm/gru_s8.h"

namespace naive_gru {

using naive::clamp;
using naive::i64;
using naive::requantize;
using naive::to_s32;

constexpr i64 kS16Min = -32768, kS16Max = 32767, kS8Min = -128, kS8Max = 127;

inline i64 rq(i64 x, const qlstm_requant& q) { return requantize(x, q.multiplier, q.shift); }
inline i64 sat16(i64 v) { return clamp(v, kS16Min, kS16Max); }

// gated = RQ(r * h_part)
inline i64 reset_product(i64 r, i64 h_part, const qlstm_requant& q) { return rq(r * h_part, q); }
// n = tanh(sat16(x_part + gated)), the add modulo 2^32
inline i64 new_gate(i64 x_part, i64 gated, const uint16_t* table) {
  return naive::activation(sat16(to_s32(x_part + gated)), 0, true, table);
}
// h' = sat16(n + RQ(z * (h - n))), the add modulo 2^32
inline i64 update(i64 z, i64 n, i64 h, const qlstm_requant& q) { return sat16(to_s32(n + rq(z * (h - n), q))); }
// h8 = sat8(RQ(h) + zp), the add modulo 2^32
inline i64 output(i64 h, const qlstm_requant& q, i64 zp) { return clamp(to_s32(rq(h, q) + zp), kS8Min, kS8Max); }

// Runs the GRU of `p` over `input`. state == nullptr: stateless (h = 0, and the first step's
// recurrent accumulators a zero state's: 0 for r and z, new_gate_zero_state_bias for n, with no
// matmul); otherwise it starts from
// *state ([B][H], Q0.15) and writes the final state back. The result is the output buffer as the
// kernel leaves it (p.output_steps, p.output_width, p.layout; QLSTM_OUTPUT_FIRST runs the first
// step alone), positions it does not write
// holding `fill`.
inline std::vector<int8_t> run(const qlstm_gru_s8_params& p, const int8_t* input, std::vector<int16_t>* state,
                               const uint16_t* table, int8_t fill) {
  const int B = p.dims.batch, T = p.dims.time_steps, I = p.dims.input_size, H = p.dims.hidden_size;
  const bool tm = p.layout == QLSTM_LAYOUT_TIME_MAJOR;
  const bool final_only = p.output_steps != QLSTM_OUTPUT_ALL_STEPS;  // one [B][W] output
  const i64 steps = p.output_steps == QLSTM_OUTPUT_FIRST && T > 1 ? 1 : T;  // FIRST: the first step alone
  const bool reverse = p.time_direction == QLSTM_TIME_REVERSE;
  const i64 W = p.output_width > 0 ? p.output_width : H;
  std::vector<int8_t> out(static_cast<size_t>(B * (final_only ? 1 : T) * W), fill);
  auto x_at = [&](i64 b, i64 t, i64 j) -> i64 { return input[tm ? (t * B + b) * I + j : (b * T + t) * I + j]; };
  auto y_at = [&](i64 b, i64 t, i64 r) -> int8_t& {
    return out[static_cast<size_t>(final_only ? b * W + r : (tm ? (t * B + b) * W + r : (b * T + t) * W + r))];
  };
  const qlstm_gru_gate_s8_params& gr = p.gates[QLSTM_GRU_GATE_RESET];
  const qlstm_gru_gate_s8_params& gz = p.gates[QLSTM_GRU_GATE_UPDATE];
  const qlstm_gru_gate_s8_params& gn = p.gates[QLSTM_GRU_GATE_NEW];
  auto acc_x = [&](const qlstm_gru_gate_s8_params& g, i64 b, i64 t, i64 r) {
    i64 a = g.input_effective_bias[r];
    for (i64 j = 0; j < I; ++j) a += x_at(b, t, j) * g.input_weights[r * I + j];
    return to_s32(a);
  };
  bool zero_state_step = false;  // the first step of a stateless call
  auto acc_h = [&](const qlstm_gru_gate_s8_params& g, const std::vector<i64>& h8, i64 r) -> i64 {
    if (zero_state_step) return &g == &gn ? p.new_gate_zero_state_bias[r] : 0;
    i64 a = g.hidden_effective_bias[r];
    for (i64 j = 0; j < H; ++j) a += h8[static_cast<size_t>(j)] * g.hidden_weights[r * H + j];
    return to_s32(a);
  };
  auto sigmoid_gate = [&](const qlstm_gru_gate_s8_params& g, const std::vector<i64>& h8, i64 b, i64 t, i64 r) {
    const i64 x_part = sat16(rq(acc_x(g, b, t, r), g.input_to_q3_12));
    const i64 pre = sat16(to_s32(x_part + rq(acc_h(g, h8, r), g.hidden_to_q3_12)));
    return naive::activation(pre, 0, false, table);
  };
  for (i64 b = 0; b < B; ++b) {
    std::vector<i64> h(static_cast<size_t>(H), 0);
    if (state != nullptr) {
      for (i64 r = 0; r < H; ++r) h[static_cast<size_t>(r)] = (*state)[static_cast<size_t>(b * H + r)];
    }
    for (i64 s = 0; s < steps; ++s) {
      const i64 t = reverse ? T - 1 - s : s;
      zero_state_step = state == nullptr && s == 0;
      std::vector<i64> h8(static_cast<size_t>(H));
      for (i64 j = 0; j < H; ++j) {
        h8[static_cast<size_t>(j)] = output(h[static_cast<size_t>(j)], p.hidden_q0_15_to_output, p.output_zero_point);
      }
      std::vector<i64> next(static_cast<size_t>(H));
      for (i64 r = 0; r < H; ++r) {
        const i64 reset = sigmoid_gate(gr, h8, b, t, r);
        const i64 z = sigmoid_gate(gz, h8, b, t, r);
        const i64 x_part = sat16(rq(acc_x(gn, b, t, r), gn.input_to_q3_12));
        const i64 h_part = sat16(rq(acc_h(gn, h8, r), gn.hidden_to_q3_12));
        const i64 n = new_gate(x_part, reset_product(reset, h_part, p.reset_times_hidden_to_q3_12), table);
        next[static_cast<size_t>(r)] = update(z, n, h[static_cast<size_t>(r)], p.update_times_difference_to_q0_15);
      }
      h = next;
      for (i64 r = 0; r < H; ++r) {
        y_at(b, t, r) = static_cast<int8_t>(
            output(h[static_cast<size_t>(r)], p.hidden_q0_15_to_output, p.output_zero_point));
      }
    }
    if (final_only && T == 0) {
      for (i64 r = 0; r < H; ++r) {
        y_at(b, 0, r) = static_cast<int8_t>(
            output(h[static_cast<size_t>(r)], p.hidden_q0_15_to_output, p.output_zero_point));
      }
    }
    if (state != nullptr) {
      for (i64 r = 0; r < H; ++r) (*state)[static_cast<size_t>(b * H + r)] = static_cast<int16_t>(h[static_cast<size_t>(r)]);
    }
  }
  return out;
}

}  // namespace naive_gru

#endif  // QLSTM_TESTS_NAIVE_GRU_H_
