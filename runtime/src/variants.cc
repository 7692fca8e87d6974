// The one list of kernel variants: dispatch, the variant tester and the benchmarks all read it.
// An optimized variant adds its entry here, ahead of the reference, under the ISA macro that
// its folder is built for.
//
// QLSTM_BEST_VARIANT_ONLY (CMake option QLSTM_BEST_VARIANT_ONLY, a firmware for one Cortex-M CPU):
// each list keeps only the best variant for the CPU's ISA (MVE, else DSP, else Thumb-2; the scalar
// one for the 16x8 kernels without DSP) and the reference, which runs the calls the best declines;
// a CMSIS-NN backend, if configured, stays first. The other variants are then not linked. Without
// an Arm M-profile target (the host: its variants are chosen by CPUID at run time) it changes nothing.
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
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#define QLSTM_ARM_BEST_MVE 1  // the best variant of this CPU's ISA: MVE, DSP or Thumb-2
#elif defined(__ARM_FEATURE_DSP)
#define QLSTM_ARM_BEST_DSP 1
#else
#define QLSTM_ARM_BEST_THUMB2 1
#endif
#if defined(QLSTM_BEST_VARIANT_ONLY) && QLSTM_BEST_VARIANT_ONLY
// The lists below keep the best and the reference: no int8 scalar variant, and no DSP or Thumb-2
// one unless it is the best (the 16x8 scalar ones stand for Thumb-2, which has none of its own).
#define QLSTM_ONLY_BEST 1
#if !defined(QLSTM_ARM_BEST_DSP)
#define QLSTM_SKIP_DSP 1
#endif
#if !defined(QLSTM_ARM_BEST_THUMB2)
#define QLSTM_SKIP_THUMB2 1
#endif
#endif
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
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_DSP) && !defined(QLSTM_SKIP_DSP)
      &kLstmS8ArmDspVariant,
#endif
#if defined(QLSTM_HAVE_ARM_M) && !defined(QLSTM_SKIP_THUMB2)
      &kLstmS8ArmThumb2Variant,
#endif
#if defined(__x86_64__) && defined(__GNUC__)
      &kLstmS8X86Avx512VnniVariant,
      &kLstmS8X86Avx2Variant,
#endif
#if !defined(QLSTM_ONLY_BEST)
      &kLstmS8ScalarVariant,
#endif
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
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_DSP) && !defined(QLSTM_SKIP_DSP)
      &kFcS8ArmDspVariant,
#endif
#if defined(QLSTM_HAVE_ARM_M) && !defined(QLSTM_SKIP_THUMB2)
      &kFcS8ArmThumb2Variant,
#endif
#if defined(__x86_64__) && defined(__GNUC__)
      &kFcS8X86Avx512VnniVariant,
      &kFcS8X86Avx2Variant,
#endif
#if !defined(QLSTM_ONLY_BEST)
      &kFcS8ScalarVariant,
#endif
      &kFcS8ReferenceVariant,
  };
  if (count != nullptr) *count = sizeof(kVariants) / sizeof(kVariants[0]);
  return kVariants;
}

#ifdef QLSTM_HAVE_CMSIS_NN
extern const PoolS8Variant kPoolS8CmsisNnVariant;
#endif
extern const PoolS8Variant kPoolS8ScalarVariant;
#if defined(__x86_64__) && defined(__GNUC__)
extern const PoolS8Variant kPoolS8X86Avx2Variant;
#endif
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_DSP)
extern const PoolS8Variant kPoolS8ArmDspVariant;
#endif
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
extern const PoolS8Variant kPoolS8ArmMveVariant;
#endif

// The LSTM's order and names; no Thumb-2 one: without DSP a byte load and a compare or an add per
// value is all there is, which the portable blocks do (Cortex-M3 runs "scalar").
const PoolS8Variant* const* pool_s8_variants(size_t* count) {
  static const PoolS8Variant* const kVariants[] = {
#ifdef QLSTM_HAVE_CMSIS_NN
      &kPoolS8CmsisNnVariant,
#endif
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
      &kPoolS8ArmMveVariant,
#endif
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_DSP) && !defined(QLSTM_SKIP_DSP)
      &kPoolS8ArmDspVariant,
#endif
#if defined(__x86_64__) && defined(__GNUC__)
      &kPoolS8X86Avx2Variant,
#endif
#if !defined(QLSTM_ONLY_BEST) || defined(QLSTM_ARM_BEST_THUMB2)
      &kPoolS8ScalarVariant,  // Thumb-2's best
#endif
      &kPoolS8ReferenceVariant,
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
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_DSP) && !defined(QLSTM_SKIP_DSP)
      &kGruS8ArmDspVariant,
#endif
#if defined(QLSTM_HAVE_ARM_M) && !defined(QLSTM_SKIP_THUMB2)
      &kGruS8ArmThumb2Variant,
#endif
#if defined(__x86_64__) && defined(__GNUC__)
      &kGruS8X86Avx512VnniVariant,
      &kGruS8X86Avx2Variant,
#endif
#if !defined(QLSTM_ONLY_BEST)
      &kGruS8ScalarVariant,
#endif
      &kGruS8ReferenceVariant,
  };
  if (count != nullptr) *count = sizeof(kVariants) / sizeof(kVariants[0]);
  return kVariants;
}

extern const RnnS8Variant kRnnS8ScalarVariant;
#if defined(__x86_64__) && defined(__GNUC__)
extern const RnnS8Variant kRnnS8X86Avx512VnniVariant;
extern const RnnS8Variant kRnnS8X86Avx2Variant;
#endif
#if defined(QLSTM_HAVE_ARM_M)
extern const RnnS8Variant kRnnS8ArmThumb2Variant;
#if defined(__ARM_FEATURE_DSP)
extern const RnnS8Variant kRnnS8ArmDspVariant;
#endif
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
extern const RnnS8Variant kRnnS8ArmMveVariant;
#endif
#endif

// The GRU's order and names: each RNN variant is its ISA's LSTM gate and GRU output stage.
const RnnS8Variant* const* rnn_s8_variants(size_t* count) {
  static const RnnS8Variant* const kVariants[] = {
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
      &kRnnS8ArmMveVariant,
#endif
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_DSP) && !defined(QLSTM_SKIP_DSP)
      &kRnnS8ArmDspVariant,
#endif
#if defined(QLSTM_HAVE_ARM_M) && !defined(QLSTM_SKIP_THUMB2)
      &kRnnS8ArmThumb2Variant,
#endif
#if defined(__x86_64__) && defined(__GNUC__)
      &kRnnS8X86Avx512VnniVariant,
      &kRnnS8X86Avx2Variant,
#endif
#if !defined(QLSTM_ONLY_BEST)
      &kRnnS8ScalarVariant,
#endif
      &kRnnS8ReferenceVariant,
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
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_DSP) && !defined(QLSTM_SKIP_DSP)
      &kLstmS16ArmDspVariant,
#endif
#if defined(__x86_64__) && defined(__GNUC__)
      &kLstmS16X86Avx2Variant,
#endif
#if !defined(QLSTM_SKIP_THUMB2)
      &kLstmS16ScalarVariant,
#endif
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
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_DSP) && !defined(QLSTM_SKIP_DSP)
      &kFcS16ArmDspVariant,
#endif
#if defined(__x86_64__) && defined(__GNUC__)
      &kFcS16X86Avx2Variant,
#endif
#if !defined(QLSTM_SKIP_THUMB2)
      &kFcS16ScalarVariant,
#endif
      &kFcS16ReferenceVariant,
  };
  if (count != nullptr) *count = sizeof(kVariants) / sizeof(kVariants[0]);
  return kVariants;
}

#ifdef QLSTM_HAVE_CMSIS_NN
extern const AddS8Variant kAddS8CmsisNnVariant;
extern const MulS8Variant kMulS8CmsisNnVariant;
#endif
extern const AddS8Variant kAddS8ScalarVariant;
extern const MulS8Variant kMulS8ScalarVariant;
#if defined(__x86_64__) && defined(__GNUC__)
extern const AddS8Variant kAddS8X86Avx2Variant;
extern const MulS8Variant kMulS8X86Avx2Variant;
#endif
#if defined(QLSTM_HAVE_ARM_M)
extern const AddS8Variant kAddS8ArmThumb2Variant;
extern const MulS8Variant kMulS8ArmThumb2Variant;
#if defined(__ARM_FEATURE_DSP)
extern const AddS8Variant kAddS8ArmDspVariant;
extern const MulS8Variant kMulS8ArmDspVariant;
#endif
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
extern const AddS8Variant kAddS8ArmMveVariant;
extern const MulS8Variant kMulS8ArmMveVariant;
#endif
#endif

// The LSTM's order and names; the add's and the multiply's lists alike.
const AddS8Variant* const* add_s8_variants(size_t* count) {
  static const AddS8Variant* const kVariants[] = {
#ifdef QLSTM_HAVE_CMSIS_NN
      &kAddS8CmsisNnVariant,
#endif
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
      &kAddS8ArmMveVariant,
#endif
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_DSP) && !defined(QLSTM_SKIP_DSP)
      &kAddS8ArmDspVariant,
#endif
#if defined(QLSTM_HAVE_ARM_M) && !defined(QLSTM_SKIP_THUMB2)
      &kAddS8ArmThumb2Variant,
#endif
#if defined(__x86_64__) && defined(__GNUC__)
      &kAddS8X86Avx2Variant,
#endif
#if !defined(QLSTM_ONLY_BEST)
      &kAddS8ScalarVariant,
#endif
      &kAddS8ReferenceVariant,
  };
  if (count != nullptr) *count = sizeof(kVariants) / sizeof(kVariants[0]);
  return kVariants;
}

const MulS8Variant* const* mul_s8_variants(size_t* count) {
  static const MulS8Variant* const kVariants[] = {
#ifdef QLSTM_HAVE_CMSIS_NN
      &kMulS8CmsisNnVariant,
#endif
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
      &kMulS8ArmMveVariant,
#endif
#if defined(QLSTM_HAVE_ARM_M) && defined(__ARM_FEATURE_DSP) && !defined(QLSTM_SKIP_DSP)
      &kMulS8ArmDspVariant,
#endif
#if defined(QLSTM_HAVE_ARM_M) && !defined(QLSTM_SKIP_THUMB2)
      &kMulS8ArmThumb2Variant,
#endif
#if defined(__x86_64__) && defined(__GNUC__)
      &kMulS8X86Avx2Variant,
#endif
#if !defined(QLSTM_ONLY_BEST)
      &kMulS8ScalarVariant,
#endif
      &kMulS8ReferenceVariant,
  };
  if (count != nullptr) *count = sizeof(kVariants) / sizeof(kVariants[0]);
  return kVariants;
}

}  // namespace qlstm
