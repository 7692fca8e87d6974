// "arm_thumb2" and "arm_dsp" elementwise add and multiply (blocked/elementwise_blocks.h): the
// plan's rounded high product plus a constant is SMULL and a 64-bit add on every Cortex-M
// (Thumb-2), one SMMLAR with the DSP extension; the clamp to [-128, 127] is SSAT #8 on both
// (ARMv7-M has it).
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'

#include "blocked/elementwise_blocks.h"
#include "qlstm/kernels.h"

namespace qlstm {
namespace arm {
namespace {

// SSAT #8 (the ACLE macro's types trip -Wsign-conversion).
inline int32_t ssat8(int32_t v) {
  int32_t r;
  __asm__("ssat %0, #8, %1" : "=r"(r) : "r"(v));
  return r;
}

struct Thumb2Ops {
  static int32_t mul_hi_round_add(int32_t a, int32_t b, int32_t c) { return blocked::PortableOps::mul_hi_round_add(a, b, c); }
  static int32_t clamp_s8(int32_t v) { return ssat8(v); }
};

#if defined(__ARM_FEATURE_DSP)
struct DspOps {
  // SMMLAR: c plus the high word of a * b + 2^31 (ACLE has no intrinsic for it).
  static int32_t mul_hi_round_add(int32_t a, int32_t b, int32_t c) {
    int32_t r;
    __asm__("smmlar %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
  }
  static int32_t clamp_s8(int32_t v) { return ssat8(v); }
};
#endif

bool is_supported() { return true; }  // chosen at compile time on the MCU

}  // namespace
}  // namespace arm

extern const AddS8Variant kAddS8ArmThumb2Variant = {"arm_thumb2", arm::is_supported, blocked::add_can_run,
                                                    blocked::add_s8<arm::Thumb2Ops>};
extern const MulS8Variant kMulS8ArmThumb2Variant = {"arm_thumb2", arm::is_supported, blocked::mul_can_run,
                                                    blocked::mul_s8<arm::Thumb2Ops>};
#if defined(__ARM_FEATURE_DSP)
extern const AddS8Variant kAddS8ArmDspVariant = {"arm_dsp", arm::is_supported, blocked::add_can_run,
                                                 blocked::add_s8<arm::DspOps>};
extern const MulS8Variant kMulS8ArmDspVariant = {"arm_dsp", arm::is_supported, blocked::mul_can_run,
                                                 blocked::mul_s8<arm::DspOps>};
#endif

}  // namespace qlstm

#endif  // Arm M-profile
