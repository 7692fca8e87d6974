// "arm_mve" elementwise add and multiply: Helium (Cortex-M55), the plan of
// blocked/elementwise_blocks.h in four int32 lanes, the last vector predicated (VCTP). A byte
// load widens each operand (VLDRB.S32); VQRDMULH is the SRDHM itself, so the values stay undoubled
// here (the shift operand's term x << (k - 1), its constant halved, both exact); the rounding
// shift is a VSHR #31, two adds and a shift; the clamp VMAX/VMIN; a narrowing byte store.
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)

#include <arm_mve.h>

#include "blocked/elementwise_blocks.h"
#include "qlstm/kernels.h"

namespace qlstm {
namespace arm_mve {
namespace {

constexpr int32_t kLanes = 4;

// RDBPOT(w, e) + c (c in the bias) for e >= 1, or w + bias for e = 0 (minus_e 0, no sign fix).
inline int32x4_t round_shift(int32x4_t w, int32_t bias, int32_t minus_e, bool round) {
  const int32x4_t fixed = round ? vaddq_s32(w, vshrq_n_s32(w, 31)) : w;
  return vshlq_r_s32(vaddq_n_s32(fixed, bias), minus_e);
}

inline void store(const blocked::OutputStage& o, int32x4_t sum, int8_t* out, mve_pred16_t pred) {
  const int32x4_t w = vqrdmulhq_n_s32(sum, o.multiplier);
  int32x4_t y = round_shift(w, o.bias, -o.exponent, o.exponent > 0);
  y = vminq_s32(vmaxq_s32(y, vdupq_n_s32(o.lo)), vdupq_n_s32(o.hi));
  vstrbq_p_s32(out, y, pred);
}

void add_s8(const qlstm_add_s8_params& p, const int8_t* input1, const int8_t* input2, int8_t* output) {
  blocked::AddPlan a;
  (void)blocked::make_add_plan(p, &a);
  const int8_t* x1 = a.swapped ? input2 : input1;
  const int8_t* x2 = a.swapped ? input1 : input2;
  const int32_t n = p.shape.rows * p.shape.row_size;
  const int32_t k1 = a.shift_k1 - 1, k2 = a.shift_k2 - 1, constant = a.constant / 2, L = a.widen - 1;
  for (int32_t i = 0; i < n; i += kLanes) {
    const mve_pred16_t pred = vctp32q(static_cast<uint32_t>(n - i));
    int32x4_t sum = vaddq_n_s32(vshlq_r_s32(vldrbq_z_s32(x1 + i, pred), k1), constant);
    const int32x4_t v2 = vldrbq_z_s32(x2 + i, pred);
    if (a.both_shifts) {
      sum = vaddq_s32(sum, vshlq_r_s32(v2, k2));
    } else {
      const int32x4_t t = vqrdmulhq_n_s32(vshlq_r_s32(vsubq_n_s32(v2, a.zp2), L), a.multiplier2);
      sum = vaddq_s32(sum, round_shift(t, a.round2, -a.exponent2, true));
    }
    store(a.out, sum, output + i, pred);
  }
}

void mul_s8(const qlstm_mul_s8_params& p, const int8_t* input1, const int8_t* input2, int8_t* output) {
  blocked::MulPlan m;
  (void)blocked::make_mul_plan(p, &m);
  const int32_t n = p.shape.rows * p.shape.row_size, left = m.widen - 1;
  for (int32_t i = 0; i < n; i += kLanes) {
    const mve_pred16_t pred = vctp32q(static_cast<uint32_t>(n - i));
    const int32x4_t product = vmulq_s32(vsubq_n_s32(vldrbq_z_s32(input1 + i, pred), m.zp1),
                                        vsubq_n_s32(vldrbq_z_s32(input2 + i, pred), m.zp2));
    store(m.out, vshlq_r_s32(product, left), output + i, pred);
  }
}

bool is_supported() { return true; }  // chosen at compile time on the MCU

}  // namespace
}  // namespace arm_mve

extern const AddS8Variant kAddS8ArmMveVariant = {"arm_mve", arm_mve::is_supported, blocked::add_can_run,
                                                 arm_mve::add_s8};
extern const MulS8Variant kMulS8ArmMveVariant = {"arm_mve", arm_mve::is_supported, blocked::mul_can_run,
                                                 arm_mve::mul_s8};

}  // namespace qlstm

#endif  // MVE
