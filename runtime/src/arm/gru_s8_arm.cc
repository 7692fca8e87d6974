// The Arm M-profile GRU variants (blocked::gru_variant): r and z by the LSTM variant's gate of the
// same name (the assembly dot products and gate finish of lstm_s8_arm.cc), the new gate's two
// matmuls in chunks of rows by the same dot-product blocks (arm/dot_s8_arm.h), its elementwise
// finish, the update and the output portable (the reference's arithmetic).
//   arm_thumb2: byte loads and MLA, any Thumb-2 core (Cortex-M3 and up)
//   arm_dsp:    SXTB16 + SMLAD (Cortex-M4, M33, M55)
// (arm_mve: gru_s8_arm_mve.cc.)
#if defined(__ARM_ARCH_ISA_THUMB) && __ARM_ARCH_ISA_THUMB >= 2 && defined(__ARM_ARCH_PROFILE) && \
    __ARM_ARCH_PROFILE == 'M'

#include "arm/dot_s8_arm.h"
#include "blocked/gate_rows.h"

namespace qlstm {

extern const LstmS8Variant kLstmS8ArmThumb2Variant;
extern const GruS8Variant kGruS8ArmThumb2Variant =
    blocked::gru_variant<kLstmS8ArmThumb2Variant, blocked::WithScalarNewGateFinish<arm::Thumb2Dot>>("arm_thumb2");

#if defined(__ARM_FEATURE_DSP)
extern const LstmS8Variant kLstmS8ArmDspVariant;
extern const GruS8Variant kGruS8ArmDspVariant =
    blocked::gru_variant<kLstmS8ArmDspVariant, blocked::WithScalarNewGateFinish<arm::DspDot>>("arm_dsp");
#endif

}  // namespace qlstm

#endif  // Thumb-2 M-profile
