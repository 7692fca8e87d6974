// The Arm M-profile variants: the gate rows four at a time (blocked/gate_rows.h) with the dot
// products in assembly (dot4_s8_arm.S).
//   arm_thumb2: byte loads and MLA, any Thumb-2 core (Cortex-M3 and up)
//   arm_dsp:    SXTB16 + SMLAD, two multiply-accumulates per instruction (Cortex-M4, M33, M55)
// (arm_mve, with the vector stages: lstm_s8_arm_mve.cc.)
// Cell and hidden stages: the reference's.
#include "blocked/gate_rows.h"
#include "reference/lstm_s8_reference.h"

#if defined(__ARM_ARCH_ISA_THUMB) && __ARM_ARCH_ISA_THUMB >= 2 && defined(__ARM_ARCH_PROFILE) && \
    __ARM_ARCH_PROFILE == 'M'

extern "C" void qlstm_arm_dot4_s8_thumb2(const int8_t* v, const int8_t* w, int32_t stride, int32_t n,
                                         int32_t acc[4]);
#if defined(__ARM_FEATURE_DSP)
extern "C" void qlstm_arm_dot4_s8_dsp(const int8_t* v, const int8_t* w, int32_t stride, int32_t n, int32_t acc[4]);
#endif

namespace qlstm {
namespace arm {
namespace {

int32_t dot1(const int8_t* v, const int8_t* w, int32_t n, int32_t acc) {
  uint32_t a = static_cast<uint32_t>(acc);
  for (int32_t j = 0; j < n; ++j) a += static_cast<uint32_t>(v[j] * w[j]);
  return fxp::bits_to_s32(a);
}

struct Thumb2Kernel : blocked::ScalarFinish {
  static void dot4(const int8_t* v, const int8_t* w, ptrdiff_t stride, int32_t n, int32_t acc[4]) {
    qlstm_arm_dot4_s8_thumb2(v, w, static_cast<int32_t>(stride), n, acc);
  }
  static int32_t dot1(const int8_t* v, const int8_t* w, int32_t n, int32_t acc) { return arm::dot1(v, w, n, acc); }
  static void activate(int16_t* v, int32_t n, bool is_tanh) { blocked::activate_scalar(v, n, is_tanh); }
};

#if defined(__ARM_FEATURE_DSP)
struct DspKernel : blocked::ScalarFinish {
  static void dot4(const int8_t* v, const int8_t* w, ptrdiff_t stride, int32_t n, int32_t acc[4]) {
    qlstm_arm_dot4_s8_dsp(v, w, static_cast<int32_t>(stride), n, acc);
  }
  static int32_t dot1(const int8_t* v, const int8_t* w, int32_t n, int32_t acc) { return arm::dot1(v, w, n, acc); }
  static void activate(int16_t* v, int32_t n, bool is_tanh) { blocked::activate_scalar(v, n, is_tanh); }
};
#endif

bool is_supported() { return true; }  // chosen at compile time on the MCU

}  // namespace
}  // namespace arm

extern const LstmS8Variant kLstmS8ArmThumb2Variant = {"arm_thumb2", arm::is_supported,
                                                      blocked::gate<arm::Thumb2Kernel>, reference::cell_update,
                                                      reference::hidden_update, nullptr};
#if defined(__ARM_FEATURE_DSP)
extern const LstmS8Variant kLstmS8ArmDspVariant = {"arm_dsp", arm::is_supported, blocked::gate<arm::DspKernel>,
                                                   reference::cell_update, reference::hidden_update, nullptr};
#endif

}  // namespace qlstm

#endif  // Thumb-2 M-profile
