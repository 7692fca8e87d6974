// The one list of kernel variants: dispatch, the variant tester and the benchmarks all read it.
// An optimized variant adds its entry here, ahead of the reference, under the ISA macro that
// its folder is built for.
#include "qlstm/kernels.h"

namespace qlstm {

const LstmS8Variant* const* lstm_s8_variants(size_t* count) {
  static const LstmS8Variant* const kVariants[] = {
      &kLstmS8ReferenceVariant,
  };
  if (count != nullptr) *count = sizeof(kVariants) / sizeof(kVariants[0]);
  return kVariants;
}

}  // namespace qlstm
