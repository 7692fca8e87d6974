// "arm_mve" fully connected: Helium (Cortex-M55). The dot products of whole four-row blocks by
// the LSTM gate's VMLADAVA loop (arm/mve_s8.h, blocked/fc_rows.h), then four outputs per pass:
// requantized in int32 lanes as the LSTM's cell update does (VQRDMULH is the SRDHM, VRSHL the
// rounding divide), one multiplier for all or one per output, offset, clamped and stored as bytes.
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)

#include "arm/mve_s8.h"
#include "blocked/fc_rows.h"

namespace qlstm {
namespace arm_mve {
namespace {

class FcFinish {
 public:
  explicit FcFinish(const qlstm_fc_s8_params& p)
      : p_(p), per_tensor_(fxp::RequantDoubleRounding::make(p.multipliers[0], p.shifts[0])) {}
  void operator()(const int32_t* acc, int32_t first, int32_t n, int8_t* y) const {
    for (int32_t k = 0; k < n; k += kLanes) {
      const mve_pred16_t pr = vctp32q(static_cast<uint32_t>(n - k));
      int32x4_t v = vldrwq_z_s32(acc + k, pr);
      v = p_.per_channel ? per_channel(v, first + k, pr) : per_tensor_(v);
      v = saturate(vaddq_n_s32(v, p_.output_zero_point), p_.activation_min, p_.activation_max);
      vstrbq_p_s32(y + k, v, pr);
    }
  }

 private:
  // Requant's steps with one multiplier and shift per lane: left = max(shift, 0), the rounding
  // shift by min(shift, 0), and the fix (1 off negative values) where shift < 0.
  int32x4_t per_channel(int32x4_t v, int32_t o, mve_pred16_t pr) const {
    const int32x4_t shift = vldrwq_z_s32(p_.shifts + o, pr);
    const int32x4_t zero = vdupq_n_s32(0);
    v = vqrdmulhq_s32(vshlq_s32(v, vmaxq_s32(shift, zero)), vldrwq_z_s32(p_.multipliers + o, pr));
    v = vaddq_s32(v, vandq_s32(vshrq_n_s32(v, 31), vshrq_n_s32(shift, 31)));
    return vrshlq_s32(v, vminq_s32(shift, zero));
  }

  const qlstm_fc_s8_params& p_;
  Requant per_tensor_;
};

struct FcKernel : MveDot {
  using FcFinish = arm_mve::FcFinish;
};

bool is_supported() { return true; }  // chosen at compile time on the MCU

}  // namespace
}  // namespace arm_mve

extern const FcS8Variant kFcS8ArmMveVariant = {"arm_mve", arm_mve::is_supported, nullptr,
                                               blocked::fc_chunked<arm_mve::FcKernel>};

}  // namespace qlstm

#endif  // MVE
