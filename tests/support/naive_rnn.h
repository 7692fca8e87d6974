// An independent, deliberately plain model of the int8 vanilla RNN (include/qlstm/rnn_s8.h), for
// tests only. It shares no code with the runtime's RNN: wide integers, one unit at a time, layouts
// by explicit index formulas, ReLU as max(pre, 0) (not the runtime's HardSigmoid line), and the
// recurrent operand recomputed from the int16 state instead of read back from the output. The
// primitives (RQ, the tanh table interpolation) are naive_lstm.h's, written out from
// docs/arithmetic.md §2 and §4 in wide integers; tanh reads the shipped table, which tests/unit
// checks exhaustively against its recipe.
#ifndef QLSTM_TESTS_NAIVE_RNN_H_
#define QLSTM_TESTS_NAIVE_RNN_H_

#include <cstdint>
#include <vector>

#include "naive_lstm.h"
#include "qlstm/rnn_s8.h"

namespace naive_rnn {

using naive::clamp;
using naive::i64;
using naive::to_s32;

inline i64 rq(i64 x, const qlstm_requant& q) { return naive::requantize(x, q.multiplier, q.shift); }
inline i64 sat16(i64 v) { return clamp(v, -32768, 32767); }

// h8 = sat8(RQ(h) + zp), the add modulo 2^32: the output row and the next step's operand.
inline i64 output(i64 h, const qlstm_requant& q, i64 zp) { return clamp(to_s32(rq(h, q) + zp), -128, 127); }

// The activation of the int16 pre-activation: tanh Q3.12 -> Q0.15 (the LSTM's cell gate), or ReLU.
inline i64 activate(i64 pre, int32_t activation, const uint16_t* table) {
  if (activation == QLSTM_RNN_RELU) return pre > 0 ? pre : 0;
  return naive::activation(pre, 0, true, table);
}

// One unit's new hidden value. h8 == nullptr: a stateless first step, no recurrent term at all.
inline i64 unit(const qlstm_rnn_s8_params& p, const std::vector<i64>& x, const std::vector<i64>* h8, i64 r,
                const uint16_t* table) {
  const qlstm_gru_gate_s8_params& g = p.gate;
  const i64 I = p.dims.input_size, H = p.dims.hidden_size;
  i64 ax = g.input_effective_bias[r];
  for (i64 j = 0; j < I; ++j) ax += x[static_cast<size_t>(j)] * g.input_weights[r * I + j];
  i64 pre = sat16(rq(to_s32(ax), g.input_to_q3_12));
  if (h8 != nullptr) {
    i64 ah = g.hidden_effective_bias[r];
    for (i64 j = 0; j < H; ++j) ah += (*h8)[static_cast<size_t>(j)] * g.hidden_weights[r * H + j];
    pre = sat16(to_s32(pre + rq(to_s32(ah), g.hidden_to_q3_12)));
  }
  return activate(pre, p.activation, table);
}

// Runs the RNN of `p` over `input`. state == nullptr: stateless (h = 0, the first step without a
// recurrent term); otherwise it starts from *state ([B][H] int16; the first operand its int8
// form) and writes the final state back. The result is the output buffer as the kernel leaves it
// (p.output_steps, p.output_width, p.layout; QLSTM_OUTPUT_FIRST runs the first step alone; with
// T == 0 a final/first output is the initial state's int8 form), positions it does not write
// holding `fill`.
inline std::vector<int8_t> run(const qlstm_rnn_s8_params& p, const int8_t* input, std::vector<int16_t>* state,
                               const uint16_t* table, int8_t fill) {
  const i64 B = p.dims.batch, T = p.dims.time_steps, I = p.dims.input_size, H = p.dims.hidden_size;
  const bool tm = p.layout == QLSTM_LAYOUT_TIME_MAJOR;
  const bool one_row = p.output_steps != QLSTM_OUTPUT_ALL_STEPS;  // one [B][W] output
  const i64 steps = p.output_steps == QLSTM_OUTPUT_FIRST && T > 1 ? 1 : T;
  const bool reverse = p.time_direction == QLSTM_TIME_REVERSE;
  const i64 W = p.output_width > 0 ? p.output_width : H;
  std::vector<int8_t> out(static_cast<size_t>(B * (one_row ? 1 : T) * W), fill);
  auto y_at = [&](i64 b, i64 t, i64 r) -> int8_t& {
    return out[static_cast<size_t>(one_row ? b * W + r : (tm ? (t * B + b) * W + r : (b * T + t) * W + r))];
  };
  for (i64 b = 0; b < B; ++b) {
    std::vector<i64> h(static_cast<size_t>(H), 0), h8(static_cast<size_t>(H));
    if (state != nullptr) {
      for (i64 r = 0; r < H; ++r) h[static_cast<size_t>(r)] = (*state)[static_cast<size_t>(b * H + r)];
    }
    auto to_int8 = [&] {
      for (i64 r = 0; r < H; ++r) {
        h8[static_cast<size_t>(r)] = output(h[static_cast<size_t>(r)], p.hidden_to_output, p.output_zero_point);
      }
    };
    to_int8();
    for (i64 s = 0; s < steps; ++s) {
      const i64 t = reverse ? T - 1 - s : s;
      std::vector<i64> x(static_cast<size_t>(I));
      for (i64 j = 0; j < I; ++j) x[static_cast<size_t>(j)] = input[tm ? (t * B + b) * I + j : (b * T + t) * I + j];
      const bool recurrent = state != nullptr || s > 0;
      for (i64 r = 0; r < H; ++r) h[static_cast<size_t>(r)] = unit(p, x, recurrent ? &h8 : nullptr, r, table);
      to_int8();
      for (i64 r = 0; r < H; ++r) y_at(b, t, r) = static_cast<int8_t>(h8[static_cast<size_t>(r)]);
    }
    if (one_row && T == 0) {
      for (i64 r = 0; r < H; ++r) y_at(b, 0, r) = static_cast<int8_t>(h8[static_cast<size_t>(r)]);
    }
    if (state != nullptr) {
      for (i64 r = 0; r < H; ++r) {
        (*state)[static_cast<size_t>(b * H + r)] = static_cast<int16_t>(h[static_cast<size_t>(r)]);
      }
    }
  }
  return out;
}

}  // namespace naive_rnn

#endif  // QLSTM_TESTS_NAIVE_RNN_H_
