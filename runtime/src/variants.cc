// The one list of kernel variants: dispatch, the variant tester and the benchmarks all read it.
// An optimized variant adds its entry here, ahead of the reference, under the ISA macro that
// its folder is built for.
#include "qlstm/kernels.h"

namespace qlstm {

#ifdef QLSTM_HAVE_CMSIS_NN
extern const LstmS8Variant kLstmS8CmsisNnVariant;
#endif
extern const LstmS8Variant kLstmS8ScalarVariant;
#if defined(__x86_64__) && defined(__GNUC__)
extern const LstmS8Variant kLstmS8X86Avx512VnniVariant;
extern const LstmS8Variant kLstmS8X86Avx2Variant;
#endif
#if defined(__ARM_ARCH_ISA_THUMB) && __ARM_ARCH_ISA_THUMB >= 2 && defined(__ARM_ARCH_PROFILE) && \
    __ARM_ARCH_PROFILE == 'M'
#define QLSTM_HAVE_ARM_M 1
extern const LstmS8Variant kLstmS8ArmThumb2Variant;
#if defined(__ARM_FEATURE_DSP)
extern const LstmS8Variant kLstmS8ArmDspVariant;
#endif
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
extern const LstmS8Variant kLstmS8ArmMveVariant;
#endif
#endif

const LstmS8Variant* const* lstm_s8_variants(size_t* count) {
  static const LstmS8Variant* const kVariants[] = {
#ifdef QLSTM_HAVE_CMSIS_NN
      &kLstmS8CmsisNnVariant,  // the user asked for it: it becomes what qlstm_lstm_s8() runs
#endif
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
      &kLstmS8ArmMveVariant,
#endif
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_DSP)
      &kLstmS8ArmDspVariant,
#endif
#if defined(QLSTM_HAVE_ARM_M)
      &kLstmS8ArmThumb2Variant,
#endif
#if defined(__x86_64__) && defined(__GNUC__)
      &kLstmS8X86Avx512VnniVariant,
      &kLstmS8X86Avx2Variant,
#endif
      &kLstmS8ScalarVariant,
      &kLstmS8ReferenceVariant,
  };
  if (count != nullptr) *count = sizeof(kVariants) / sizeof(kVariants[0]);
  return kVariants;
}

#ifdef QLSTM_HAVE_CMSIS_NN
extern const FcS8Variant kFcS8CmsisNnVariant;
#endif
extern const FcS8Variant kFcS8ScalarVariant;
#if defined(__x86_64__) && defined(__GNUC__)
extern const FcS8Variant kFcS8X86Avx512VnniVariant;
extern const FcS8Variant kFcS8X86Avx2Variant;
#endif
#if defined(QLSTM_HAVE_ARM_M)
extern const FcS8Variant kFcS8ArmThumb2Variant;
#if defined(__ARM_FEATURE_DSP)
extern const FcS8Variant kFcS8ArmDspVariant;
#endif
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
extern const FcS8Variant kFcS8ArmMveVariant;
#endif
#endif

// The same order as the LSTM's: each FC variant has the name of the LSTM variant for its ISA.
const FcS8Variant* const* fc_s8_variants(size_t* count) {
  static const FcS8Variant* const kVariants[] = {
#ifdef QLSTM_HAVE_CMSIS_NN
      &kFcS8CmsisNnVariant,
#endif
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
      &kFcS8ArmMveVariant,
#endif
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_DSP)
      &kFcS8ArmDspVariant,
#endif
#if defined(QLSTM_HAVE_ARM_M)
      &kFcS8ArmThumb2Variant,
#endif
#if defined(__x86_64__) && defined(__GNUC__)
      &kFcS8X86Avx512VnniVariant,
      &kFcS8X86Avx2Variant,
#endif
      &kFcS8ScalarVariant,
      &kFcS8ReferenceVariant,
  };
  if (count != nullptr) *count = sizeof(kVariants) / sizeof(kVariants[0]);
  return kVariants;
}

extern const GruS8Variant kGruS8ScalarVariant;
#if defined(__x86_64__) && defined(__GNUC__)
extern const GruS8Variant kGruS8X86Avx512VnniVariant;
extern const GruS8Variant kGruS8X86Avx2Variant;
#endif
#if defined(QLSTM_HAVE_ARM_M)
extern const GruS8Variant kGruS8ArmThumb2Variant;
#if defined(__ARM_FEATURE_DSP)
extern const GruS8Variant kGruS8ArmDspVariant;
#endif
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
extern const GruS8Variant kGruS8ArmMveVariant;
#endif
#endif

// The LSTM's order (no CMSIS-NN: it has no GRU); each GRU variant shares the dot products of the
// LSTM variant of its name.
const GruS8Variant* const* gru_s8_variants(size_t* count) {
  static const GruS8Variant* const kVariants[] = {
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
      &kGruS8ArmMveVariant,
#endif
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_DSP)
      &kGruS8ArmDspVariant,
#endif
#if defined(QLSTM_HAVE_ARM_M)
      &kGruS8ArmThumb2Variant,
#endif
#if defined(__x86_64__) && defined(__GNUC__)
      &kGruS8X86Avx512VnniVariant,
      &kGruS8X86Avx2Variant,
#endif
      &kGruS8ScalarVariant,
      &kGruS8ReferenceVariant,
  };
  if (count != nullptr) *count = sizeof(kVariants) / sizeof(kVariants[0]);
  return kVariants;
}

#ifdef QLSTM_HAVE_CMSIS_NN
extern const LstmS16Variant kLstmS16CmsisNnVariant;
#endif
extern const LstmS16Variant kLstmS16ScalarVariant;
extern const FcS16Variant kFcS16ScalarVariant;
#if defined(__x86_64__) && defined(__GNUC__)
extern const LstmS16Variant kLstmS16X86Avx2Variant;
extern const FcS16Variant kFcS16X86Avx2Variant;
#endif
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_DSP)
extern const LstmS16Variant kLstmS16ArmDspVariant;
extern const FcS16Variant kFcS16ArmDspVariant;
#endif
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
extern const LstmS16Variant kLstmS16ArmMveVariant;
extern const FcS16Variant kFcS16ArmMveVariant;
#endif

// The 16x8 kernels' lists: the int8 ones' order and names (the CMSIS-NN backend for the LSTM only,
// no Thumb-2 one: without DSP the int16 x int8 products have no packed multiply to gain from).
const LstmS16Variant* const* lstm_s16_variants(size_t* count) {
  static const LstmS16Variant* const kVariants[] = {
#ifdef QLSTM_HAVE_CMSIS_NN
      &kLstmS16CmsisNnVariant,  // the user asked for it: it becomes what qlstm_lstm_s16() runs
#endif
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
      &kLstmS16ArmMveVariant,
#endif
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_DSP)
      &kLstmS16ArmDspVariant,
#endif
#if defined(__x86_64__) && defined(__GNUC__)
      &kLstmS16X86Avx2Variant,
#endif
      &kLstmS16ScalarVariant,
      &kLstmS16ReferenceVariant,
  };
  if (count != nullptr) *count = sizeof(kVariants) / sizeof(kVariants[0]);
  return kVariants;
}

const FcS16Variant* const* fc_s16_variants(size_t* count) {
  static const FcS16Variant* const kVariants[] = {
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
      &kFcS16ArmMveVariant,
#endif
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_DSP)
      &kFcS16ArmDspVariant,
#endif
#if defined(__x86_64__) && defined(__GNUC__)
      &kFcS16X86Avx2Variant,
#endif
      &kFcS16ScalarVariant,
      &kFcS16ReferenceVariant,
  };
  if (count != nullptr) *count = sizeof(kVariants) / sizeof(kVariants[0]);
  return kVariants;
}

}  // namespace qlstm
