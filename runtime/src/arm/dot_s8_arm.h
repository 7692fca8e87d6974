// The Arm M-profile dot products (dot4_s8_arm.S) as the blocked kernels take them (rows4, dot1,
// the operand: blocked/gate_rows.h), shared by the LSTM gate (lstm_s8_arm.cc) and the fully
// connected op (fc_s8_arm.cc):
//   Thumb2Dot: byte loads and MLA, any Thumb-2 core (Cortex-M3 and up)
//   DspDot:    SXTB16 + SMLAD, two multiply-accumulates per instruction (Cortex-M4, M33, M55)
#ifndef QLSTM_SRC_ARM_DOT_S8_ARM_H_
#define QLSTM_SRC_ARM_DOT_S8_ARM_H_

#include <stddef.h>
#include <stdint.h>

#include "blocked/gate_rows.h"
#include "qlstm/activation_s16.h"
#include "qlstm/fixed_point.h"

// The requantization parameters the assembly loads (fxp::RequantDoubleRounding's, in REQUANT_SCALAR's
// register order).
struct qlstm_arm_requant_params {
  int32_t left, multiplier, right, mask, half;
};

// The requantization and table parameters of the assembly gate finish, in its load order.
struct qlstm_arm_gate_finish_t2_params {
  qlstm_arm_requant_params x, h;
  const uint16_t* table;
  const uint16_t* table_from_1;
};
static_assert(offsetof(qlstm_arm_gate_finish_t2_params, h) == 20 &&
                  offsetof(qlstm_arm_gate_finish_t2_params, table) == 40,
              "dot4_s8_arm.S loads these offsets");
static_assert(qlstm::blocked::kChunkRows == 64, "dot4_s8_arm.S finds ah at ax + 64");

// The folded gate finish's (both right shifts at least 1): per requantization the left shift,
// the multiplier, 2^(right-1) and right - 1; then the table.
struct qlstm_arm_gate_finish_fast_params {
  int32_t x_left, x_multiplier, x_round, x_right_minus_1;
  int32_t h_left, h_multiplier, h_round, h_right_minus_1;
  const uint16_t* table;
};
static_assert(offsetof(qlstm_arm_gate_finish_fast_params, table) == 32, "dot4_s8_arm.S loads this offset");

// The GRU's new-gate finish: the gate finish's parameters, then the reset product's requantization.
struct qlstm_arm_gru_new_gate_finish_params {
  qlstm_arm_gate_finish_t2_params gate;
  qlstm_arm_requant_params reset;
};
static_assert(offsetof(qlstm_arm_gru_new_gate_finish_params, reset) == 48, "dot4_s8_arm.S loads this offset");

// A folded requantization (right shift at least 1): left shift, multiplier, 2^(right-1), right - 1.
struct qlstm_arm_folded_requant_params {
  int32_t left, multiplier, round, right_minus_1;
};
// The GRU's folded new-gate finish: x's, h's and the reset product's, then the table.
struct qlstm_arm_gru_new_gate_finish_fast_params {
  qlstm_arm_folded_requant_params x, h, reset;
  const uint16_t* table;
};
static_assert(offsetof(qlstm_arm_gru_new_gate_finish_fast_params, table) == 48, "dot4_s8_arm.S loads this offset");

extern "C" {
// out[r] = act(sat16(sat16(rq_x(ax[r])) + rq_h(ah[r]))), ah = ax + kChunkRows (the LSTM gate's
// finish, dot4_s8_arm.S; the GRU's new gate reuses the tanh one).
void qlstm_arm_gate_finish_sigmoid_thumb2(const int32_t* ax, int32_t n, int16_t* out,
                                          const qlstm_arm_gate_finish_t2_params* p);
void qlstm_arm_gate_finish_tanh_thumb2(const int32_t* ax, int32_t n, int16_t* out,
                                       const qlstm_arm_gate_finish_t2_params* p);
// The same when both right shifts are at least 1 (ax is overwritten, and for an odd n ax[n] too:
// a chunk of fewer than kChunkRows rows has it).
void qlstm_arm_gate_finish_sigmoid_fast_thumb2(int32_t* ax, int32_t n, int16_t* out,
                                               const qlstm_arm_gate_finish_fast_params* p);
void qlstm_arm_gate_finish_tanh_fast_thumb2(int32_t* ax, int32_t n, int16_t* out,
                                            const qlstm_arm_gate_finish_fast_params* p);
// out[r] = tanh(sat16(sat16(rq_x(ax[r])) + rq_r(reset[r] * sat16(rq_h(ah[r]))))), ah = ax + kChunkRows
// (the GRU's new gate, docs/arithmetic.md §13).
void qlstm_arm_gru_new_gate_finish_thumb2(const int32_t* ax, int32_t n, int16_t* out,
                                          const qlstm_arm_gru_new_gate_finish_params* p, const int16_t* reset);
// The same when all three right shifts are at least 1 (ax and ah are overwritten).
void qlstm_arm_gru_new_gate_finish_fast_thumb2(int32_t* ax, int32_t n, int16_t* out,
                                               const qlstm_arm_gru_new_gate_finish_fast_params* p,
                                               const int16_t* reset);
void qlstm_arm_rows4_s8_thumb2(const int8_t* v, const int8_t* w, int32_t n, int32_t blocks, const int32_t* bias,
                               int32_t* acc);
#if defined(__ARM_FEATURE_DSP)
void qlstm_arm_rows4_s8_dsp(const int8_t* v, const int8_t* w, int32_t n, int32_t blocks, const int32_t* bias,
                            int32_t* acc);
int32_t qlstm_arm_dot1_s8_dsp(const int8_t* v, const int8_t* w, int32_t n, int32_t acc);
void qlstm_arm_expand_s8_dsp(const int8_t* v, int32_t quads, int32_t* pairs);
void qlstm_arm_rows4_s8_dspx(const int32_t* v_pairs, const int8_t* w, int32_t n, int32_t blocks,
                             const int32_t* bias, int32_t* acc, const int8_t* v_tail);
#endif
}

namespace qlstm {
namespace arm {

inline qlstm_arm_requant_params requant_params(const fxp::RequantDoubleRounding& q) {
  return {q.left, q.multiplier, q.right, q.mask, q.threshold};
}
// The folded form (q.right >= 1).
inline qlstm_arm_folded_requant_params folded_requant_params(const fxp::RequantDoubleRounding& q) {
  return {q.left, q.multiplier, q.threshold + 1, q.right - 1};
}

inline int32_t dot1(const int8_t* v, const int8_t* w, int32_t n, int32_t acc) {
  uint32_t a = static_cast<uint32_t>(acc);
  for (int32_t j = 0; j < n; ++j) a += static_cast<uint32_t>(v[j] * w[j]);
  return fxp::bits_to_s32(a);
}

struct Thumb2Dot : blocked::KernelDefaults {
  using Operand = blocked::PlainOperand;
  // A remainder of this many rows after the last whole block costs less by dot1 than by a block
  // of four (blocked/fc_rows.h): about 5 instructions per column against 9.
  static constexpr int32_t kDot1TailRows = 1;
  static void rows4(const Operand& v, const int8_t* w, int32_t n, int32_t blocks, const int32_t* bias,
                    int32_t* acc) {
    qlstm_arm_rows4_s8_thumb2(v.v, w, n, blocks, bias, acc);
  }
  static int32_t dot1(const int8_t* v, const int8_t* w, int32_t n, int32_t acc) { return arm::dot1(v, w, n, acc); }
};

#if defined(__ARM_FEATURE_DSP)
// The vector sign-extended once per batch row into the int16 pairs SMLAD takes, (v0, v2) and
// (v1, v3) per four columns, matching SXTB16 of the weights: each block of four rows then loads
// them with one LDRD instead of LDR and two SXTB16. Up to kMaxColumns (512 bytes of stack per
// operand); longer vectors are read as bytes.
struct ExpandedOperand {
  static constexpr int32_t kMaxColumns = 256;
  int32_t pairs[kMaxColumns / 2];
  const int8_t* bytes = nullptr;
  int32_t quads = 0;
  bool expanded = false;
  void prepare(const int8_t* p, int32_t n) {
    bytes = p;
    quads = n / 4;
    expanded = n <= kMaxColumns;
    if (!expanded) return;
    qlstm_arm_expand_s8_dsp(p, quads, pairs);
  }
};

struct DspDot : Thumb2Dot {
  using Operand = ExpandedOperand;
  // About 9 instructions per four columns and row, against 21 for a block of four.
  static constexpr int32_t kDot1TailRows = 2;
  static void rows4(const Operand& v, const int8_t* w, int32_t n, int32_t blocks, const int32_t* bias,
                    int32_t* acc) {
    if (v.expanded) {
      qlstm_arm_rows4_s8_dspx(v.pairs, w, n, blocks, bias, acc, v.bytes + 4 * v.quads);
    } else {
      qlstm_arm_rows4_s8_dsp(v.bytes, w, n, blocks, bias, acc);
    }
  }
  static int32_t dot1(const int8_t* v, const int8_t* w, int32_t n, int32_t acc) {
    return qlstm_arm_dot1_s8_dsp(v, w, n, acc);
  }
};
#endif

// The gate finish (blocked::gate_chunked's Finish; the LSTM's gates, the GRU's r and z):
// requantization and activation of a chunk in assembly (one row per pass, every constant in a
// register): about 47 instructions per row, where GCC 12's code took about 90. When both right
// shifts are at least 1, the folded finish: two passes, the rounding divide folded into the
// SRDHM's 64-bit sum (dot4_s8_arm.S), about 40 instructions per row and no reloads.
struct GateFinish {
  union {  // the parameters of the finish it calls
    qlstm_arm_gate_finish_t2_params p;
    qlstm_arm_gate_finish_fast_params fast;
  };
  void (*activate)(const int32_t*, int32_t, int16_t*, const qlstm_arm_gate_finish_t2_params*) = nullptr;
  void (*activate_fast)(int32_t*, int32_t, int16_t*, const qlstm_arm_gate_finish_fast_params*) = nullptr;
  // A HardSigmoid gate: the C++ finish (blocked::finish_hard_sigmoid) of it.
  const qlstm_gate_s8_params* hard_sigmoid = nullptr;
  GateFinish(const blocked::GateRequant& rq, const qlstm_gate_s8_params& g) {
    if (g.activation == QLSTM_ACTIVATION_HARD_SIGMOID) {
      hard_sigmoid = &g;
      return;
    }
    const bool is_tanh = g.activation == QLSTM_ACTIVATION_TANH;
    const fxp::RequantDoubleRounding &x = rq.input, &h = rq.hidden;
    if (x.right >= 1 && h.right >= 1) {
      fast = {x.left, x.multiplier, x.threshold + 1, x.right - 1, h.left, h.multiplier, h.threshold + 1, h.right - 1,
              kSigmoidTableU16};
      activate_fast = is_tanh ? qlstm_arm_gate_finish_tanh_fast_thumb2 : qlstm_arm_gate_finish_sigmoid_fast_thumb2;
    } else {
      p = {requant_params(x), requant_params(h), kSigmoidTableU16, kSigmoidTableU16 + 1};
      activate = is_tanh ? qlstm_arm_gate_finish_tanh_thumb2 : qlstm_arm_gate_finish_sigmoid_thumb2;
    }
  }
  // The assembly reads ah at ax + kChunkRows (and the folded one overwrites ax).
  void operator()(const int32_t* ax, const int32_t* ah, int32_t n, int16_t* out) const {
    if (hard_sigmoid != nullptr) {
      blocked::finish_hard_sigmoid(*hard_sigmoid, ax, ah, n, out);
    } else if (activate_fast != nullptr) {
      activate_fast(const_cast<int32_t*>(ax), n, out, &fast);
    } else {
      activate(ax, n, out, &p);
    }
  }
};

}  // namespace arm
}  // namespace qlstm

#endif  // QLSTM_SRC_ARM_DOT_S8_ARM_H_
