// "arm_mve": Helium (Cortex-M55). The gate rows four at a time with the dot products in
// assembly (qlstm_arm_dot4_s8_mve: VMLADAVA in a tail-predicated loop), and every elementwise
// step in vectors of four int32 lanes: the requantizations (VQRDMULH is exactly the SRDHM, the
// rounding divide is done with shifts and masks), saturation, the table sigmoid and tanh (two
// gathers and a multiply-add per lane), the cell update and the hidden update. Each is the
// reference's arithmetic lane by lane (docs/arithmetic.md); tests/variants and the device's
// variant-test check it bit for bit.
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)

#include <arm_mve.h>

#include "blocked/gate_rows.h"
#include "qlstm/activation_s16.h"

extern "C" void qlstm_arm_dot4_s8_mve(const int8_t* v, const int8_t* w, int32_t stride, int32_t n, int32_t acc[4]);

namespace qlstm {
namespace arm_mve {
namespace {

constexpr int32_t kLanes = 4;  // int32 lanes

// requantize_double_rounding in every lane (multiplier >= 0, as validated).
inline int32x4_t requantize(int32x4_t x, const fxp::RequantDoubleRounding& q) {
  x = vshlq_r_s32(x, q.left);  // wraps, as the reference's shift on uint32
  x = vqrdmulhq_n_s32(x, q.multiplier);
  const int32x4_t floor = vshlq_r_s32(x, -q.right);  // arithmetic: floor(x / 2^right)
  const int32x4_t remainder = vandq_s32(x, vdupq_n_s32(q.mask));
  // threshold + 1 for negative x; add 1 where remainder > threshold, i.e. (threshold - remainder) < 0.
  const int32x4_t threshold = vsubq_s32(vdupq_n_s32(q.threshold), vshrq_n_s32(x, 31));
  return vsubq_s32(floor, vshrq_n_s32(vsubq_s32(threshold, remainder), 31));
}

inline int32x4_t saturate(int32x4_t x, int32_t lo, int32_t hi) {
  return vminq_s32(vmaxq_s32(x, vdupq_n_s32(lo)), vdupq_n_s32(hi));
}

// Table interpolation of |v| (activation_s16.h, detail::interpolate) in every lane.
inline int32x4_t interpolate(int32x4_t abs_v, int32_t step_bits, int32_t saturated) {
  using namespace detail;
  const int32x4_t index = vshlq_r_s32(abs_v, -step_bits);
  const mve_pred16_t in_table = vcmpltq_n_s32(index, kTableLastIndex);
  const uint32x4_t safe = vreinterpretq_u32_s32(vminq_s32(index, vdupq_n_s32(kTableLastIndex - 1)));
  const int32x4_t lo = vreinterpretq_s32_u32(vldrhq_gather_shifted_offset_u32(kSigmoidTableU16, safe));
  const int32x4_t hi =
      vreinterpretq_s32_u32(vldrhq_gather_shifted_offset_u32(kSigmoidTableU16, vaddq_n_u32(safe, 1)));
  const int32x4_t frac = vandq_s32(abs_v, vdupq_n_s32((1 << step_bits) - 1));
  const int32x4_t r = vaddq_s32(vshlq_r_s32(lo, step_bits), vmulq_s32(frac, vsubq_s32(hi, lo)));
  return vpselq_s32(r, vdupq_n_s32(saturated), in_table);
}

inline int32x4_t prescale(int32x4_t x, int32_t left_shift) {
  using namespace detail;
  if (left_shift >= 0) return vmulq_n_s32(x, kPrescaleFactor << left_shift);
  const int32_t right = -left_shift;
  return vshlq_r_s32(vaddq_n_s32(vmulq_n_s32(x, kPrescaleFactor), 1 << (right - 1)), -right);
}

inline int32x4_t sigmoid(int32x4_t x, int32_t left_shift) {
  using namespace detail;
  constexpr int32_t kSaturated = INT16_MAX << kSigmoidDropBits;
  constexpr int32_t kOne = 1 << (16 + kSigmoidStepBits);
  constexpr int32_t kRound = 1 << (kSigmoidDropBits - 1);
  const int32x4_t v = prescale(x, left_shift);
  const int32x4_t r = interpolate(vabsq_s32(v), kSigmoidStepBits, kSaturated);
  const int32x4_t pos = vshrq_n_s32(vaddq_n_s32(r, kRound), kSigmoidDropBits);
  const int32x4_t neg = vshrq_n_s32(vsubq_s32(vdupq_n_s32(kOne + kRound - 1), r), kSigmoidDropBits);
  return vpselq_s32(pos, neg, vcmpgeq_n_s32(v, 0));
}

inline int32x4_t tanh(int32x4_t x, int32_t left_shift) {
  using namespace detail;
  constexpr int32_t kSaturated = UINT16_MAX << kTanhStepBits;
  constexpr int32_t kHalf = 1 << (16 + kTanhStepBits - 1);
  constexpr int32_t kRound = 1 << (kTanhDropBits - 1);
  const int32x4_t v = prescale(x, left_shift);
  const int32x4_t r = interpolate(vabsq_s32(v), kTanhStepBits, kSaturated);
  const int32x4_t pos = vshrq_n_s32(vaddq_n_s32(r, kRound - kHalf), kTanhDropBits);
  const int32x4_t neg = vshrq_n_s32(vsubq_s32(vdupq_n_s32(kHalf + kRound - 1), r), kTanhDropBits);
  return vpselq_s32(pos, neg, vcmpgeq_n_s32(v, 0));
}

int32_t dot1(const int8_t* v, const int8_t* w, int32_t n, int32_t acc) {
  uint32_t a = static_cast<uint32_t>(acc);
  for (int32_t j = 0; j < n; ++j) a += static_cast<uint32_t>(v[j] * w[j]);
  return fxp::bits_to_s32(a);
}

struct Kernel {
  static void dot4(const int8_t* v, const int8_t* w, ptrdiff_t stride, int32_t n, int32_t acc[4]) {
    qlstm_arm_dot4_s8_mve(v, w, static_cast<int32_t>(stride), n, acc);
  }
  static int32_t dot1(const int8_t* v, const int8_t* w, int32_t n, int32_t acc) { return arm_mve::dot1(v, w, n, acc); }
  static void finish4(const blocked::GateRequant& rq, const int32_t ax[4], const int32_t ah[4], bool has_h,
                      int16_t* out) {
    int32x4_t pre = saturate(requantize(vldrwq_s32(ax), rq.input), fxp::kInt16Min, fxp::kInt16Max);
    if (has_h) {
      pre = saturate(vaddq_s32(pre, requantize(vldrwq_s32(ah), rq.hidden)), fxp::kInt16Min, fxp::kInt16Max);
    }
    vstrhq_s32(out, pre);
  }
  static void activate(int16_t* v, int32_t n, bool is_tanh) {
    constexpr int32_t kGateLeftShift = 0;
    for (int32_t k = 0; k < n; k += kLanes) {
      const mve_pred16_t p = vctp32q(static_cast<uint32_t>(n - k));
      const int32x4_t x = vldrhq_z_s32(v + k, p);
      vstrhq_p_s32(v + k, is_tanh ? tanh(x, kGateLeftShift) : sigmoid(x, kGateLeftShift), p);
    }
  }
};

void cell_update(const CellUpdateParams& p, int32_t count, const int16_t* f_q0_15, const int16_t* i_q0_15,
                 const int16_t* g_q0_15, int16_t* cell) {
  const auto fc = fxp::RequantDoubleRounding::make(p.forget_times_cell.multiplier, p.forget_times_cell.shift);
  const auto ig = fxp::RequantDoubleRounding::make(p.input_times_cell_gate.multiplier, p.input_times_cell_gate.shift);
  for (int32_t k = 0; k < count; k += kLanes) {
    const mve_pred16_t pr = vctp32q(static_cast<uint32_t>(count - k));
    const int32x4_t c = vldrhq_z_s32(cell + k, pr);
    const int32x4_t kept =
        saturate(requantize(vmulq_s32(vldrhq_z_s32(f_q0_15 + k, pr), c), fc), fxp::kInt16Min, fxp::kInt16Max);
    const int32x4_t added = requantize(vmulq_s32(vldrhq_z_s32(i_q0_15 + k, pr), vldrhq_z_s32(g_q0_15 + k, pr)), ig);
    vstrhq_p_s32(cell + k, saturate(vaddq_s32(kept, added), p.clip_min, p.clip_max), pr);
  }
}

void hidden_update(const HiddenUpdateParams& p, int32_t rows, int32_t hidden_size, const int16_t* o_q0_15,
                   const int16_t* cell, int8_t* h_out, ptrdiff_t h_row_stride) {
  const auto ot = fxp::RequantDoubleRounding::make(p.output_times_tanh_cell.multiplier, p.output_times_tanh_cell.shift);
  for (int32_t b = 0; b < rows; ++b) {
    const ptrdiff_t base = static_cast<ptrdiff_t>(b) * hidden_size;
    int8_t* h = h_out + b * h_row_stride;
    for (int32_t k = 0; k < hidden_size; k += kLanes) {
      const mve_pred16_t pr = vctp32q(static_cast<uint32_t>(hidden_size - k));
      const int32x4_t t = tanh(vldrhq_z_s32(cell + base + k, pr), p.tanh_left_shift);
      const int32x4_t scaled = requantize(vmulq_s32(vldrhq_z_s32(o_q0_15 + base + k, pr), t), ot);
      vstrbq_p_s32(h + k, saturate(vaddq_n_s32(scaled, p.output_zero_point), fxp::kInt8Min, fxp::kInt8Max), pr);
    }
  }
}

bool is_supported() { return true; }  // chosen at compile time on the MCU

}  // namespace
}  // namespace arm_mve

extern const LstmS8Variant kLstmS8ArmMveVariant = {"arm_mve", arm_mve::is_supported, blocked::gate<arm_mve::Kernel>,
                                                   arm_mve::cell_update, arm_mve::hidden_update, nullptr};

}  // namespace qlstm

#endif  // MVE
