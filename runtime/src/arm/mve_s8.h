// Helium (MVE) building blocks shared by the LSTM (lstm_s8_arm_mve.cc), the fully connected op
// (fc_s8_arm_mve.cc) and the GRU (gru_s8_arm_mve.cc): the requantization and the table tanh in
// four int32 lanes and the dot products of whole four-row blocks (qlstm_arm_rows4_s8_mve in
// dot4_s8_arm.S: VMLADAVA, v held in registers up to 16 and over 32 columns).
#ifndef QLSTM_SRC_ARM_MVE_S8_H_
#define QLSTM_SRC_ARM_MVE_S8_H_

#include <arm_mve.h>
#include <stddef.h>
#include <stdint.h>

#include "blocked/gate_rows.h"
#include "qlstm/activation_s16.h"
#include "qlstm/fixed_point.h"
#include "qlstm/kernels.h"

extern "C" void qlstm_arm_rows4_s8_mve(const int8_t* v, const int8_t* w, int32_t n, int32_t blocks,
                                       const int32_t* bias, int32_t* acc);

// The parameters of the assembly gate finish, in the order it loads them.
struct qlstm_arm_gate_finish_params {
  int32_t x_left, x_multiplier, x_minus_right;
  int32_t h_left, h_multiplier, h_minus_right;
  int32_t x_negative_fix, h_negative_fix;
  const uint16_t* table;
};
static_assert(offsetof(qlstm_arm_gate_finish_params, x_negative_fix) == 24 &&
                  offsetof(qlstm_arm_gate_finish_params, table) == 32,
              "dot4_s8_arm.S loads these offsets");
// out[r] = act(sat16(sat16(rq_x(ax[r])) + rq_h(ah[r]))), four lanes per pass (the LSTM gate's
// finish, dot4_s8_arm.S; the GRU's new gate reuses the tanh one).
extern "C" void qlstm_arm_gate_finish_sigmoid_mve(const int32_t* ax, const int32_t* ah, int32_t n, int16_t* out,
                                                  const qlstm_arm_gate_finish_params* p);
extern "C" void qlstm_arm_gate_finish_tanh_mve(const int32_t* ax, const int32_t* ah, int32_t n, int16_t* out,
                                               const qlstm_arm_gate_finish_params* p);

namespace qlstm {
namespace arm_mve {

constexpr int32_t kLanes = 4;  // int32 lanes

// requantize_double_rounding in every lane (multiplier >= 0, as validated). VQRDMULH is the
// SRDHM; VRSHL's rounding right shift rounds halves up, and the reference's rounding divide rounds
// them away from zero: subtracting 1 from negative values first turns one into the other (the
// SRDHM never returns INT32_MIN for a multiplier below 2^31, so the subtraction cannot wrap).
struct Requant {
  int32_t left, multiplier, minus_right, negative_fix;
  explicit Requant(const fxp::RequantDoubleRounding& q)
      : left(q.left), multiplier(q.multiplier), minus_right(-q.right), negative_fix(q.right > 0 ? -1 : 0) {}
  int32x4_t operator()(int32x4_t x) const {
    x = vqrdmulhq_n_s32(vshlq_r_s32(x, left), multiplier);  // the shift wraps, as the reference's
    x = vaddq_s32(x, vandq_s32(vshrq_n_s32(x, 31), vdupq_n_s32(negative_fix)));
    return vrshlq_n_s32(x, minus_right);
  }
};

inline int32x4_t saturate(int32x4_t x, int32_t lo, int32_t hi) {
  return vminq_s32(vmaxq_s32(x, vdupq_n_s32(lo)), vdupq_n_s32(hi));
}

// Table interpolation of |v| (activation_s16.h, detail::interpolate) in every lane. The gathers
// are predicated on the index being inside the table; the other lanes take `saturated`.
template <int32_t kStepBits>
inline int32x4_t interpolate(int32x4_t abs_v, int32_t saturated) {
  using namespace detail;
  const uint32x4_t u = vreinterpretq_u32_s32(abs_v);
  const uint32x4_t index = vshrq_n_u32(u, kStepBits);
  const mve_pred16_t in_table = vcmpltq_n_s32(vreinterpretq_s32_u32(index), kTableLastIndex);
  const uint32x4_t lo = vldrhq_gather_shifted_offset_z_u32(kSigmoidTableU16, index, in_table);
  const uint32x4_t hi = vldrhq_gather_shifted_offset_z_u32(kSigmoidTableU16 + 1, index, in_table);
  const uint32x4_t frac = vshrq_n_u32(vshlq_n_u32(u, 32 - kStepBits), 32 - kStepBits);
  const uint32x4_t r = vaddq_u32(vshlq_n_u32(lo, kStepBits), vmulq_u32(vsubq_u32(hi, lo), frac));
  return vpselq_s32(vreinterpretq_s32_u32(r), vdupq_n_s32(saturated), in_table);
}

inline int32x4_t prescale(int32x4_t x, int32_t left_shift) {
  using namespace detail;
  if (left_shift >= 0) return vmulq_n_s32(x, kPrescaleFactor << left_shift);
  const int32_t right = -left_shift;
  return vshlq_r_s32(vaddq_n_s32(vmulq_n_s32(x, kPrescaleFactor), 1 << (right - 1)), -right);
}

// The negative half from the positive one (docs/arithmetic.md §4): with the same r, the
// reference's tanh of a negative input is exactly -y.
inline int32x4_t tanh_of_prescaled(int32x4_t v) {
  using namespace detail;
  constexpr int32_t kSaturated = UINT16_MAX << kTanhStepBits;
  constexpr int32_t kHalf = 1 << (16 + kTanhStepBits - 1);
  constexpr int32_t kRound = 1 << (kTanhDropBits - 1);
  const int32x4_t r = interpolate<kTanhStepBits>(vabsq_s32(v), kSaturated);
  const int32x4_t y = vshrq_n_s32(vaddq_n_s32(r, kRound - kHalf), kTanhDropBits);
  return vnegq_m_s32(y, y, vcmpltq_n_s32(v, 0));
}

inline int32x4_t tanh(int32x4_t x, int32_t left_shift) { return tanh_of_prescaled(prescale(x, left_shift)); }

// acc + sum_{j<n} v[j] * w[j], sixteen products per VMLADAVA, the last pass predicated. Out of
// line: inlined, its loop costs the LSTM gate's chunk loop about 20 instructions per call.
__attribute__((noinline)) inline int32_t dot1(const int8_t* v, const int8_t* w, int32_t n, int32_t acc) {
  constexpr int32_t kBytes = 16;
  for (int32_t j = 0; j < n; j += kBytes) {
    const mve_pred16_t p = vctp8q(static_cast<uint32_t>(n - j));
    acc = vmladavaq_p_s8(acc, vldrbq_z_s8(v + j, p), vldrbq_z_s8(w + j, p), p);
  }
  return acc;
}

struct MveDot : blocked::KernelDefaults {
  using Operand = blocked::PlainOperand;
  // A remainder of this many rows after the last whole block costs less by dot1 than by a block
  // of four (blocked/fc_rows.h): about 5 instructions per sixteen columns against 9.
  static constexpr int32_t kDot1TailRows = 1;
  // 128-row chunks (blocked::KernelDefaults): rows4 holding v pays about 120 cycles a call and 50
  // a 64-column block, so a gate of 128 units or more takes half the calls, for 512 bytes more
  // stack (the chunk's accumulators, 2 x 128 int32).
  static constexpr int32_t kChunkRows = 128;
  static void rows4(const Operand& v, const int8_t* w, int32_t n, int32_t blocks, const int32_t* bias,
                    int32_t* acc) {
    qlstm_arm_rows4_s8_mve(v.v, w, n, blocks, bias, acc);
  }
  static int32_t dot1(const int8_t* v, const int8_t* w, int32_t n, int32_t acc) { return arm_mve::dot1(v, w, n, acc); }
};

// The hidden update in four int32 lanes, h[b][r] = sat(RQ(o * tanh(c)) + zero_point) stored as
// Out (int16_t: the 16x8 LSTM, zero point 0; int8_t: the int8 arithmetic, which the int8 arm_mve
// variant runs in assembly instead, qlstm_arm_hidden_update_mve): the reference's arithmetic lane
// by lane.
template <class Out>
void hidden_update_lanes(const HiddenUpdateParams& p, int32_t rows, int32_t hidden_size, const int16_t* o_q0_15,
                         const int16_t* cell, Out* h_out, ptrdiff_t h_row_stride) {
  constexpr bool kS8 = sizeof(Out) == 1;
  const Requant ot(
      fxp::RequantDoubleRounding::make(p.output_times_tanh_cell.multiplier, p.output_times_tanh_cell.shift));
  for (int32_t b = 0; b < rows; ++b) {
    const ptrdiff_t base = static_cast<ptrdiff_t>(b) * hidden_size;
    Out* h = h_out + b * h_row_stride;
    for (int32_t k = 0; k < hidden_size; k += kLanes) {
      const mve_pred16_t pr = vctp32q(static_cast<uint32_t>(hidden_size - k));
      const int32x4_t t = tanh(vldrhq_z_s32(cell + base + k, pr), p.tanh_left_shift);
      const int32x4_t scaled = ot(vmulq_s32(vldrhq_z_s32(o_q0_15 + base + k, pr), t));
      if constexpr (kS8) {
        vstrbq_p_s32(h + k, saturate(vaddq_n_s32(scaled, p.output_zero_point), fxp::kInt8Min, fxp::kInt8Max), pr);
      } else {
        vstrhq_p_s32(h + k, saturate(scaled, fxp::kInt16Min, fxp::kInt16Max), pr);
      }
    }
  }
}

// The assembly gate finish's parameters for x's and h's requantizations.
inline qlstm_arm_gate_finish_params gate_finish_params(const Requant& qx, const Requant& qh) {
  return {qx.left,         qx.multiplier,   qx.minus_right,
          qh.left,         qh.multiplier,   qh.minus_right,
          qx.negative_fix, qh.negative_fix, kSigmoidTableU16};
}

// A HardSigmoid gate's finish of a chunk (docs/arithmetic.md §3.1) in four lanes
// (lstm_s8_arm_mve.cc). Out of line, its constants made per chunk: a sigmoid or tanh gate's
// finish only keeps a pointer.
void finish_hard_sigmoid(const qlstm_gate_s8_params& g, const int32_t* ax, const int32_t* ah, int32_t n, int16_t* out);

// The gate finish (blocked::gate_chunked's Finish; the LSTM's gates, the GRU's r and z): the
// sigmoid and tanh in assembly (dot4_s8_arm.S): with every constant in a register, the loop is 39
// instructions per four rows (sigmoid), where GCC 12 spills to about 70; or finish_hard_sigmoid.
struct GateFinish {
  qlstm_arm_gate_finish_params p;
  void (*activate)(const int32_t*, const int32_t*, int32_t, int16_t*, const qlstm_arm_gate_finish_params*);
  const qlstm_gate_s8_params* hard_sigmoid;
  GateFinish(const blocked::GateRequant& rq, const qlstm_gate_s8_params& g)
      : p(gate_finish_params(Requant(rq.input), Requant(rq.hidden))),
        activate(g.activation == QLSTM_ACTIVATION_TANH ? qlstm_arm_gate_finish_tanh_mve : qlstm_arm_gate_finish_sigmoid_mve),
        hard_sigmoid(g.activation == QLSTM_ACTIVATION_HARD_SIGMOID ? &g : nullptr) {}
  void operator()(const int32_t* ax, const int32_t* ah, int32_t n, int16_t* out) const {
    if (hard_sigmoid != nullptr) {
      finish_hard_sigmoid(*hard_sigmoid, ax, ah, n, out);
    } else {
      activate(ax, ah, n, out, &p);
    }
  }
};

}  // namespace arm_mve
}  // namespace qlstm

#endif  // QLSTM_SRC_ARM_MVE_S8_H_
