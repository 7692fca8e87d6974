// The one list of kernel variants: dispatch, the variant tester and the benchmarks all read it.
// An optimized variant adds its entry here, ahead of the reference, under the ISA macro that
// its folder is built for.
#include "qlstm/kernels.h"

namespace qlstm {

#ifdef QLSTM_HAVE_CMSIS_NN
extern const LstmS8Variant kLstmS8CmsisNnVariant;
#endif

const LstmS8Variant* const* lstm_s8_variants(size_t* count) {
  static const LstmS8Variant* const kVariants[] = {
#ifdef QLSTM_HAVE_CMSIS_NN
      &kLstmS8CmsisNnVariant,  // the user asked for it: it becomes what qlstm_lstm_s8() runs
#endif
      &kLstmS8ReferenceVariant,
  };
  if (count != nullptr) *count = sizeof(kVariants) / sizeof(kVariants[0]);
  return kVariants;
}

}  // namespace qlstm
