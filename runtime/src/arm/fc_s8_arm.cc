// The Arm M-profile fully connected variants (blocked/fc_rows.h): the dot products of whole
// four-row blocks by the LSTM gate's assembly (arm/dot_s8_arm.h, dot4_s8_arm.S), the
// requantization, offset and clamp one output at a time.
//   arm_thumb2: byte loads and MLA, any Thumb-2 core (Cortex-M3 and up)
//   arm_dsp:    SXTB16 + SMLAD (Cortex-M4, M33, M55)
// (arm_mve: fc_s8_arm_mve.cc.)
#if defined(__ARM_ARCH_ISA_THUMB) && __ARM_ARCH_ISA_THUMB >= 2 && defined(__ARM_ARCH_PROFILE) && \
    __ARM_ARCH_PROFILE == 'M'

#include "arm/dot_s8_arm.h"
#include "blocked/fc_rows.h"

namespace qlstm {
namespace arm {
namespace {

struct Thumb2FcKernel : Thumb2Dot {
  using FcFinish = blocked::ScalarFcFinish;
};

#if defined(__ARM_FEATURE_DSP)
struct DspFcKernel : DspDot {
  using FcFinish = blocked::ScalarFcFinish;
};
#endif

bool is_supported() { return true; }  // chosen at compile time on the MCU

}  // namespace
}  // namespace arm

extern const FcS8Variant kFcS8ArmThumb2Variant = {"arm_thumb2", arm::is_supported, nullptr,
                                                  blocked::fc_chunked<arm::Thumb2FcKernel>};
#if defined(__ARM_FEATURE_DSP)
extern const FcS8Variant kFcS8ArmDspVariant = {"arm_dsp", arm::is_supported, nullptr,
                                               blocked::fc_chunked<arm::DspFcKernel>};
#endif

}  // namespace qlstm

#endif  // Thumb-2 M-profile
