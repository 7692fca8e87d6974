// "arm_mve" GRU: Helium (Cortex-M55). r and z by the arm_mve LSTM variant's gate, the new gate's
// two matmuls in chunks of rows by the same VMLADAVA blocks (arm/mve_s8.h,
// blocked::gru_variant); its elementwise finish, the update and the output portable.
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)

#include "arm/mve_s8.h"
#include "blocked/gate_rows.h"

namespace qlstm {

extern const LstmS8Variant kLstmS8ArmMveVariant;
extern const GruS8Variant kGruS8ArmMveVariant =
    blocked::gru_variant<kLstmS8ArmMveVariant, blocked::WithScalarNewGateFinish<arm_mve::MveDot>>("arm_mve");

}  // namespace qlstm

#endif  // MVE
