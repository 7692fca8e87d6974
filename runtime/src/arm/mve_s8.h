// Helium (MVE) building blocks shared by the LSTM (lstm_s8_arm_mve.cc) and the fully connected
// op (fc_s8_arm_mve.cc): the requantization in four int32 lanes and the dot products of whole
// four-row blocks (qlstm_arm_rows4_s8_mve in dot4_s8_arm.S: VMLADAVA in a tail-predicated loop).
#ifndef QLSTM_SRC_ARM_MVE_S8_H_
#define QLSTM_SRC_ARM_MVE_S8_H_

#include <arm_mve.h>
#include <stddef.h>
#include <stdint.h>

#include "blocked/gate_rows.h"
#include "qlstm/fixed_point.h"

extern "C" void qlstm_arm_rows4_s8_mve(const int8_t* v, const int8_t* w, int32_t n, int32_t blocks,
                                       const int32_t* bias, int32_t* acc);

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

struct MveDot {
  using Operand = blocked::PlainOperand;
  // A remainder of this many rows after the last whole block costs less by dot1 than by a block
  // of four (blocked/fc_rows.h): about 5 instructions per sixteen columns against 9.
  static constexpr int32_t kDot1TailRows = 1;
  static void rows4(const Operand& v, const int8_t* w, int32_t n, int32_t blocks, const int32_t* bias,
                    int32_t* acc) {
    qlstm_arm_rows4_s8_mve(v.v, w, n, blocks, bias, acc);
  }
  static int32_t dot1(const int8_t* v, const int8_t* w, int32_t n, int32_t acc) { return arm_mve::dot1(v, w, n, acc); }
};

}  // namespace arm_mve
}  // namespace qlstm

#endif  // QLSTM_SRC_ARM_MVE_S8_H_
