// An independent, deliberately plain model of docs/arithmetic.md, for tests only.
// It shares no code with the runtime: wide integers, floor divisions written out, one unit at a
// time with no buffers, layouts by explicit index formulas. If the runtime and this model ever
// disagree, one of them misreads the spec.
#ifndef QLSTM_TESTS_NAIVE_LSTM_H_
#define QLSTM_TESTS_NAIVE_LSTM_H_

#include <cstdint>
#include <vector>

#include "qlstm/lstm_s8.h"

namespace naive {

using i64 = long long;
using i128 = __int128;

inline i64 floor_div(i128 n, i128 d) {  // d > 0
  i128 q = n / d;
  if (n % d != 0 && n < 0) q -= 1;
  return static_cast<i64>(q);
}

inline i64 to_s32(i64 v) {  // two's-complement wrap to 32 bits
  i64 m = v % 4294967296LL;
  if (m < 0) m += 4294967296LL;
  return m >= 2147483648LL ? m - 4294967296LL : m;
}

inline i64 clamp(i64 v, i64 lo, i64 hi) { return v < lo ? lo : (v > hi ? hi : v); }

// round_half_up(a*b / 2^31), saturating the single overflow.
inline i64 srdhm(i64 a, i64 b) {
  const i64 r = floor_div(static_cast<i128>(a) * b + (i128{1} << 30), i128{1} << 31);
  return r > 2147483647LL ? 2147483647LL : r;
}

// x / 2^e rounded half away from zero.
inline i64 rdbpot(i64 x, int e) {
  if (e == 0) return x;
  const i128 d = i128{1} << e;
  const i128 mag = x < 0 ? -static_cast<i128>(x) : static_cast<i128>(x);
  const i64 q = static_cast<i64>((mag + d / 2) / d);
  return x < 0 ? -q : q;
}

inline i64 requantize(i64 x, i64 m, int s) {
  const int left = s > 0 ? s : 0;
  const int right = s > 0 ? 0 : -s;
  return rdbpot(srdhm(to_s32(x * (i64{1} << left)), m), right);
}

// Table lookup and interpolation written from the formulas of docs/arithmetic.md §4.
inline i64 activation(i64 x, int left_shift, bool is_tanh, const uint16_t* table) {
  i64 v;
  if (left_shift >= 0) {
    v = x * 3 * (i64{1} << left_shift);
  } else {
    const int k = -left_shift;
    v = floor_div(x * 3 + (i64{1} << (k - 1)), i64{1} << k);
  }
  const i64 a = v < 0 ? -v : v;
  const int frac_bits = is_tanh ? 8 : 9;
  const i64 i = a / (i64{1} << frac_bits);
  const i64 f = a % (i64{1} << frac_bits);
  i64 r;
  if (i >= 255) {
    r = is_tanh ? 65535LL * 256 : 32767LL * 1024;
  } else {
    r = table[i] * (i64{1} << frac_bits) + f * (static_cast<i64>(table[i + 1]) - table[i]);
  }
  if (!is_tanh) {
    return v >= 0 ? floor_div(r + 512, 1024) : floor_div((i64{1} << 25) - r + 511, 1024);
  }
  return v >= 0 ? floor_div(r - (i64{1} << 23) + 128, 256)
                : floor_div((i64{1} << 23) - r + 127, 256);
}

// HardSigmoid's line (docs/arithmetic.md §3.1) in wide integers: the requantized slope plus the
// offset, clamped to [0, 32767].
inline i64 hard_sigmoid(i64 pre, const qlstm_hard_sigmoid_params& line) {
  return clamp(requantize(pre, line.slope.multiplier, line.slope.shift) + line.offset_q0_15, 0, 32767);
}

// A gate's activation of its Q3.12 pre-activation: HardSigmoid's line, or the sigmoid or tanh table.
inline i64 gate_activation(i64 pre, const qlstm_gate_s8_params& gp, const uint16_t* table) {
  if (gp.activation == QLSTM_ACTIVATION_HARD_SIGMOID) return hard_sigmoid(pre, gp.hard_sigmoid);
  return activation(pre, 0, gp.activation == QLSTM_ACTIVATION_TANH, table);
}

struct State {
  std::vector<int8_t> hidden;   // [B][H]
  std::vector<int16_t> cell;    // [B][H]
};

// Runs the LSTM of `p`. With `state == nullptr` the call is stateless; otherwise it starts from
// *state and writes the final state back.
inline std::vector<int8_t> run(const qlstm_lstm_s8_params& p, const int8_t* input, State* state,
                               const uint16_t* table) {
  const int B = p.dims.batch, T = p.dims.time_steps, I = p.dims.input_size, H = p.dims.hidden_size;
  const bool tm = p.layout == QLSTM_LAYOUT_TIME_MAJOR;
  auto x_at = [&](int b, int t, int j) -> i64 {
    return input[tm ? (static_cast<i64>(t) * B + b) * I + j : (static_cast<i64>(b) * T + t) * I + j];
  };
  std::vector<int8_t> out(static_cast<size_t>(B) * T * H);
  auto y_index = [&](int b, int t, int r) -> size_t {
    return static_cast<size_t>(tm ? (static_cast<i64>(t) * B + b) * H + r
                                  : (static_cast<i64>(b) * T + t) * H + r);
  };
  const i64 lo = p.cell_clip > 0 ? -p.cell_clip : -32768;
  const i64 hi = p.cell_clip > 0 ? p.cell_clip : 32767;
  for (int b = 0; b < B; ++b) {
    std::vector<i64> c(H, 0);
    std::vector<i64> h(H, 0);
    bool has_h = false;
    if (state != nullptr) {
      for (int r = 0; r < H; ++r) {
        c[r] = state->cell[static_cast<size_t>(b) * H + r];
        h[r] = state->hidden[static_cast<size_t>(b) * H + r];
      }
      has_h = true;
    }
    for (int t = 0; t < T; ++t) {
      std::vector<i64> gate_out[QLSTM_GATE_COUNT];
      for (int g = 0; g < QLSTM_GATE_COUNT; ++g) {
        const qlstm_gate_s8_params& gp = p.gates[g];
        gate_out[g].resize(H);
        for (int r = 0; r < H; ++r) {
          i64 ax = gp.input_effective_bias[r];
          for (int j = 0; j < I; ++j) ax += x_at(b, t, j) * gp.input_weights[static_cast<i64>(r) * I + j];
          i64 pre = clamp(requantize(to_s32(ax), gp.input_to_q3_12.multiplier,
                                     gp.input_to_q3_12.shift), -32768, 32767);
          if (has_h) {
            i64 ah = gp.hidden_effective_bias[r];
            for (int j = 0; j < H; ++j) ah += h[j] * gp.hidden_weights[static_cast<i64>(r) * H + j];
            pre = clamp(to_s32(pre + requantize(to_s32(ah), gp.hidden_to_q3_12.multiplier,
                                                gp.hidden_to_q3_12.shift)),
                        -32768, 32767);
          }
          gate_out[g][r] = gate_activation(pre, gp, table);
        }
      }
      for (int r = 0; r < H; ++r) {
        const i64 f = gate_out[QLSTM_GATE_FORGET][r], i = gate_out[QLSTM_GATE_INPUT][r];
        const i64 g = gate_out[QLSTM_GATE_CELL][r];
        const i64 c1 = clamp(requantize(f * c[r], p.forget_times_cell_to_cell.multiplier,
                                        p.forget_times_cell_to_cell.shift),
                             -32768, 32767);
        const i64 c2 = requantize(i * g, p.input_times_cell_gate_to_cell.multiplier,
                                  p.input_times_cell_gate_to_cell.shift);
        c[r] = clamp(to_s32(c1 + c2), lo, hi);
      }
      for (int r = 0; r < H; ++r) {
        const i64 th = activation(c[r], p.cell_scale_power + 12, true, table);
        const i64 o = gate_out[QLSTM_GATE_OUTPUT][r];
        const i64 y = clamp(to_s32(requantize(o * th, p.output_times_tanh_cell_to_hidden.multiplier,
                                              p.output_times_tanh_cell_to_hidden.shift) +
                                   p.output_zero_point),
                            -128, 127);
        out[y_index(b, t, r)] = static_cast<int8_t>(y);
        h[r] = y;
      }
      has_h = true;
    }
    if (state != nullptr) {
      for (int r = 0; r < H; ++r) {
        state->cell[static_cast<size_t>(b) * H + r] = static_cast<int16_t>(c[r]);
        state->hidden[static_cast<size_t>(b) * H + r] = static_cast<int8_t>(h[r]);
      }
    }
  }
  return out;
}

}  // namespace naive

#endif  // QLSTM_TESTS_NAIVE_LSTM_H_
