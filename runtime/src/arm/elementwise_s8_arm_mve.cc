// "arm_mve" elementwise add and multiply: Helium (Cortex-M55), the plan of
// blocked/elementwise_blocks.h on eight values per pass. A byte load widens them to 16-bit lanes
// (VLDRB.S16), where the zero points are subtracted exactly (|x - zp| <= 255); the even and the
// odd lanes then go on in two int32 vectors (VMOVLB/VMOVLT, or the multiply's VMULLB/VMULLT), and
// a saturating narrow into the bottom and top halves (VQMOVNB/VQMOVNT) puts them back in order for
// the clamp in 16-bit lanes and a narrowing byte store. VQRDMLAH is the SRDHM plus the rounding
// constant, so the values stay undoubled here (the shift operand's term (x - zp) << (k - 1)); the
// rounding shift is then a VSHR #31, an add and a shift. The last pass is predicated (VCTP).
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)

#include <arm_mve.h>

#include "blocked/elementwise_blocks.h"
#include "qlstm/kernels.h"

namespace qlstm {
namespace arm_mve {
namespace {

constexpr int32_t kLanes = 8;  // int16 lanes per pass

// RDBPOT(SRDHM(a, m), e) + c (c in the bias) for e >= 1: VQRDMLAH adds the bias to the SRDHM
// (exact: no sum here comes near saturation), then the floor after the sign fix, the sign taken
// from a (blocked/elementwise_blocks.h: round_shift_of_product).
inline int32x4_t rounded_product(int32x4_t a, int32_t m, int32x4_t bias, int32_t minus_e) {
  return vshlq_r_s32(vaddq_s32(vqrdmlahq_n_s32(bias, a, m), vshrq_n_s32(a, 31)), minus_e);
}

// The output stage held in registers for the loop (the plan's fields copied out once: the byte
// stores could alias them).
struct Output {
  int32_t multiplier, minus_e;
  int32x4_t bias;
  int16x8_t lo, hi;
  explicit Output(const blocked::OutputStage& o)
      : multiplier(o.multiplier), minus_e(-o.exponent), bias(vdupq_n_s32(o.bias)),
        lo(vdupq_n_s16(static_cast<int16_t>(o.lo))), hi(vdupq_n_s16(static_cast<int16_t>(o.hi))) {}

  template <bool kRound>
  int32x4_t finish(int32x4_t sum) const {
    return kRound ? rounded_product(sum, multiplier, bias, minus_e) : vqrdmlahq_n_s32(bias, sum, multiplier);
  }
  // The even and the odd lanes' sums, back in order, clamped.
  template <bool kRound>
  int16x8_t eight(int32x4_t even, int32x4_t odd) const {
    int16x8_t y = vqmovnbq_s32(vdupq_n_s16(0), finish<kRound>(even));
    y = vqmovntq_s32(y, finish<kRound>(odd));
    return vminq_s16(vmaxq_s16(y, lo), hi);
  }
};

// The add's two terms of one half (even or odd lanes) of centred operands, summed.
struct AddTerms {
  int32_t k1, k2, L, m2, minus_e2;
  int32x4_t round2;
  template <bool kBothShifts>
  int32x4_t sum(int32x4_t v1, int32x4_t v2) const {
    const int32x4_t u1 = vshlq_r_s32(v1, k1);
    if (kBothShifts) return vaddq_s32(u1, vshlq_r_s32(v2, k2));
    return vaddq_s32(u1, rounded_product(vshlq_r_s32(v2, L), m2, round2, minus_e2));
  }
};

// pass(a, b) on eight values of each operand at a time, the last ones predicated, into y; inlined
// into each loop, whose values the lambda holds in registers only then.
template <class Pass>
__attribute__((always_inline)) inline void passes(const int8_t* x1, const int8_t* x2, int8_t* y, int32_t n, const Pass& pass) {
  int32_t i = 0;
  for (; i + kLanes <= n; i += kLanes) vstrbq_s16(y + i, pass(vldrbq_s16(x1 + i), vldrbq_s16(x2 + i)));
  if (i < n) {
    const mve_pred16_t p = vctp16q(static_cast<uint32_t>(n - i));
    vstrbq_p_s16(y + i, pass(vldrbq_z_s16(x1 + i, p), vldrbq_z_s16(x2 + i, p)), p);
  }
}

template <bool kRound, bool kBothShifts>
void add_loop(const blocked::AddPlan& a, const int8_t* x1, const int8_t* x2, int8_t* y, int32_t n) {
  const Output o(a.out);
  const AddTerms t{a.shift_k1 - 1, a.shift_k2 - 1, a.widen - 1, a.multiplier2, -a.exponent2, vdupq_n_s32(a.round2)};
  const int16_t z1 = static_cast<int16_t>(a.zp1), z2 = static_cast<int16_t>(a.zp2);
  const auto pass = [&](int16x8_t a16, int16x8_t b16) {
    const int16x8_t v1 = vsubq_n_s16(a16, z1), v2 = vsubq_n_s16(b16, z2);
    return o.eight<kRound>(t.sum<kBothShifts>(vmovlbq_s16(v1), vmovlbq_s16(v2)),
                           t.sum<kBothShifts>(vmovltq_s16(v1), vmovltq_s16(v2)));
  };
  passes(x1, x2, y, n, pass);
}

void add_s8(const qlstm_add_s8_params& p, const int8_t* input1, const int8_t* input2, int8_t* output) {
  blocked::AddPlan a;
  (void)blocked::make_add_plan(p, &a);
  const int8_t* x1 = a.swapped ? input2 : input1;
  const int8_t* x2 = a.swapped ? input1 : input2;
  const int32_t n = p.shape.rows * p.shape.row_size;
  using Loop = void (*)(const blocked::AddPlan&, const int8_t*, const int8_t*, int8_t*, int32_t);
  static constexpr Loop kLoops[2][2] = {{add_loop<false, false>, add_loop<false, true>},
                                        {add_loop<true, false>, add_loop<true, true>}};
  kLoops[a.out.exponent > 0][a.both_shifts](a, x1, x2, output, n);
}

template <bool kRound>
void mul_loop(const blocked::MulPlan& m, const int8_t* x1, const int8_t* x2, int8_t* y, int32_t n) {
  const Output o(m.out);
  const int16_t zp1 = static_cast<int16_t>(m.zp1), zp2 = static_cast<int16_t>(m.zp2);
  const int32_t left = m.widen - 1;
  const auto pass = [&](int16x8_t a16, int16x8_t b16) {
    const int16x8_t v1 = vsubq_n_s16(a16, zp1), v2 = vsubq_n_s16(b16, zp2);
    return o.eight<kRound>(vshlq_r_s32(vmullbq_int_s16(v1, v2), left), vshlq_r_s32(vmulltq_int_s16(v1, v2), left));
  };
  passes(x1, x2, y, n, pass);
}

void mul_s8(const qlstm_mul_s8_params& p, const int8_t* input1, const int8_t* input2, int8_t* output) {
  blocked::MulPlan m;
  (void)blocked::make_mul_plan(p, &m);
  const int32_t n = p.shape.rows * p.shape.row_size;
  (m.out.exponent > 0 ? mul_loop<true> : mul_loop<false>)(m, input1, input2, output, n);
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
