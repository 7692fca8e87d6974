// The Arm M-profile fully connected variants (blocked/fc_rows.h): the dot products of whole
// four-row blocks by the LSTM gate's assembly (arm/dot_s8_arm.h, dot4_s8_arm.S), the
// requantization, offset and clamp one output at a time, in assembly too (every constant in a
// register: about 22 instructions per output with one multiplier, 32 with one per output, where
// GCC 12's code of blocked::ScalarFcFinish takes about 48 and 60).
//   arm_thumb2: byte loads and MLA, any Thumb-2 core (Cortex-M3 and up)
//   arm_dsp:    SXTB16 + SMLAD (Cortex-M4, M33, M55)
// (arm_mve: fc_s8_arm_mve.cc.)
#if defined(__ARM_ARCH_ISA_THUMB) && __ARM_ARCH_ISA_THUMB >= 2 && defined(__ARM_ARCH_PROFILE) && \
    __ARM_ARCH_PROFILE == 'M'

#include <stddef.h>

#include "arm/dot_s8_arm.h"
#include "blocked/fc_rows.h"

// The parameters of the assembly FC finish, in the order it loads them.
struct qlstm_arm_fc_finish_params {
  qlstm_arm_requant_params per_tensor;
  int32_t output_zero_point, activation_min, activation_max;
  const int32_t* multipliers;
  const int32_t* shifts;
};
static_assert(offsetof(qlstm_arm_fc_finish_params, output_zero_point) == 20 &&
                  offsetof(qlstm_arm_fc_finish_params, multipliers) == 32 &&
                  offsetof(qlstm_arm_fc_finish_params, shifts) == 36,
              "dot4_s8_arm.S loads these offsets");
extern "C" void qlstm_arm_fc_finish_thumb2(const int32_t* acc, int32_t n, int8_t* y,
                                           const qlstm_arm_fc_finish_params* p);
extern "C" void qlstm_arm_fc_finish_per_channel_thumb2(const int32_t* acc, int32_t n, int8_t* y,
                                                       const qlstm_arm_fc_finish_params* p, int32_t first);

namespace qlstm {
namespace arm {
namespace {

class FcFinish {
 public:
  explicit FcFinish(const qlstm_fc_s8_params& p)
      : p_{requant_params(fxp::RequantDoubleRounding::make(p.multipliers[0], p.shifts[0])),
           p.output_zero_point,
           p.activation_min,
           p.activation_max,
           p.multipliers,
           p.shifts},
        per_channel_(p.per_channel != 0) {}
  void operator()(const int32_t* acc, int32_t first, int32_t n, int8_t* y) const {
    if (per_channel_) {
      qlstm_arm_fc_finish_per_channel_thumb2(acc, n, y, &p_, first);
    } else {
      qlstm_arm_fc_finish_thumb2(acc, n, y, &p_);
    }
  }

 private:
  qlstm_arm_fc_finish_params p_;
  bool per_channel_;
};

struct Thumb2FcKernel : Thumb2Dot {
  using FcFinish = arm::FcFinish;
};

#if defined(__ARM_FEATURE_DSP)
struct DspFcKernel : DspDot {
  using FcFinish = arm::FcFinish;
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
