// "x86_avx512vnni": the host simulation on x86-64 with AVX-512 VNNI (chosen at run time, ahead of
// x86_avx2). The gate's dot products by VPDPBUSD on 256-bit vectors (AVX512VL): 32 byte products
// per instruction, summed four at a time into int32 lanes, exact. VPDPBUSD multiplies unsigned by
// signed bytes, so the weights are flipped to w + 128 (an XOR of the sign bit) and
// 128 * sum(v) is taken back from each row: the sums are the reference's modulo 2^32, bit for bit.
// The last partial vector uses masked loads (zero beyond n, and no access there). Everything else
// is x86_avx2's (lstm_s8_x86_lanes.inc), compiled here for this target; so is the fully connected
// op (fc_s8_x86_lanes.inc), with these dot products.
#if defined(__x86_64__) && defined(__GNUC__)

#include <cpuid.h>
#include <immintrin.h>

#include "gate_activation.h"
#include "qlstm/activation_s16.h"
#include "qlstm/fixed_point.h"
#include "qlstm/kernels.h"
#include "reference/gru_s8_reference.h"
#include "reference/lstm_s8_reference.h"

namespace qlstm {
namespace x86_vnni {
namespace {

// The CPU's AVX-512 F, BW, VL and VNNI flags, and the OS saving the opmask and ZMM state.
bool is_supported() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0 || (ecx & bit_OSXSAVE) == 0) return false;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  constexpr unsigned kAvx512State = 0xE6;  // XMM, YMM, opmask, ZMM_Hi256, Hi16_ZMM
  if ((xcr0_lo & kAvx512State) != kAvx512State) return false;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  constexpr unsigned kEbx = bit_AVX2 | bit_AVX512F | bit_AVX512BW | bit_AVX512VL;
  return (ebx & kEbx) == kEbx && (ecx & bit_AVX512VNNI) != 0;
}

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512vnni"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,avx512f,avx512bw,avx512vl,avx512vnni")
#endif

#include "x86/lstm_s8_x86_lanes.inc"

constexpr int32_t kBytes = 32;  // int8 lanes per vector

__m256i dot8(const int8_t* v, const int8_t* w, ptrdiff_t stride, int32_t n, const int32_t* bias) {
  __m256i acc[kRows];
  for (int32_t k = 0; k < kRows; ++k) acc[k] = _mm256_setzero_si256();
  const __m256i sign = _mm256_set1_epi8(static_cast<char>(0x80));
  const __m256i ones = _mm256_set1_epi8(1);
  __m256i v_sum = _mm256_setzero_si256();
  for (int32_t j = 0; j < n; j += kBytes) {
    const __mmask32 m = n - j >= kBytes ? ~__mmask32{0} : (__mmask32{1} << (n - j)) - 1u;
    const __m256i vv = _mm256_maskz_loadu_epi8(m, v + j);
    v_sum = _mm256_dpbusd_epi32(v_sum, ones, vv);
    for (int32_t k = 0; k < kRows; ++k) {
      const __m256i ww = _mm256_xor_si256(_mm256_maskz_loadu_epi8(m, w + k * stride + j), sign);
      acc[k] = _mm256_dpbusd_epi32(acc[k], ww, vv);
    }
  }
  // (w + 128) . v = w . v + 128 * sum(v); lanes past n hold 128 * 0.
  const __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(v_sum), _mm256_extracti128_si256(v_sum, 1));
  const __m128i s2 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
  const __m128i s1 = _mm_add_epi32(s2, _mm_shuffle_epi32(s2, 0xB1));
  const __m256i offset = _mm256_slli_epi32(_mm256_broadcastd_epi32(s1), 7);  // 128 * sum(v)
  const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bias));
  return _mm256_add_epi32(_mm256_sub_epi32(reduce8(acc), offset), b);
}

#include "x86/fc_s8_x86_lanes.inc"
#include "x86/gru_s8_x86_lanes.inc"

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

}  // namespace
}  // namespace x86_vnni

extern const LstmS8Variant kLstmS8X86Avx512VnniVariant = {"x86_avx512vnni", x86_vnni::is_supported, nullptr, x86_vnni::gate,
                                                          x86_vnni::cell_update, x86_vnni::hidden_update, nullptr};

extern const FcS8Variant kFcS8X86Avx512VnniVariant = {"x86_avx512vnni", x86_vnni::is_supported, nullptr, x86_vnni::fc};

extern const GruS8Variant kGruS8X86Avx512VnniVariant = {"x86_avx512vnni", x86_vnni::is_supported, nullptr, x86_vnni::gate,
    x86_vnni::gru_new_gate, x86_vnni::gru_update, x86_vnni::gru_output, nullptr};

extern const RnnS8Variant kRnnS8X86Avx512VnniVariant = {"x86_avx512vnni", x86_vnni::is_supported, nullptr,
                                                        x86_vnni::gate, x86_vnni::gru_output};

}  // namespace qlstm

#endif  // x86-64
