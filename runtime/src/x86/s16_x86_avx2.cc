// "x86_avx2" for the 16x8 kernels (the host simulation, chosen at run time): four weight rows per
// pass over x, sixteen columns per step, the int8 weights widened to int16 (VPMOVSXBW) and
// multiplied with x in pairs (VPMADDWD: exact, each pair sum at most 2^23). The lanes are summed in
// 32 bits over at most blocked::kS16ColumnsPer32BitSum columns, then added into the row's int64
// accumulator: exactly the reference's int64 sum (docs/arithmetic.md §14) for every input. The
// per-row arithmetic is the reference's (blocked/rows_s16.h), the cell update the int8 x86_avx2
// variant's.
//
// As in lstm_s8_x86_avx2.cc, only the functions below the target pragma are compiled for AVX2,
// with internal linkage.
#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#include "blocked/rows_s16.h"
#include "reference/lstm_s16_reference.h"

namespace qlstm {

extern const LstmS8Variant kLstmS8X86Avx2Variant;

namespace x86_s16 {
namespace {

bool is_supported() { return kLstmS8X86Avx2Variant.is_supported(); }

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2")
#endif

constexpr int32_t kColumns = 16;  // int16 lanes per step

int32_t sum8(__m256i v) {
  const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i t = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  return _mm_cvtsi128_si32(_mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1)));
}

__m256i products(__m256i x, const int8_t* w) {
  return _mm256_madd_epi16(x, _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w))));
}

struct Avx2S16 {
  using Operand = blocked::PlainS16Operand;

  static void rows4(const Operand& x, const int8_t* w, int32_t n, int32_t blocks, const int64_t* bias, int64_t* acc) {
    const int32_t body = n / kColumns * kColumns;
    for (int32_t blk = 0; blk < blocks; ++blk) {
      int64_t a[blocked::kRowsPerPass];
      for (int32_t k = 0; k < blocked::kRowsPerPass; ++k) a[k] = bias[k];
      for (int32_t j0 = 0; j0 < body; j0 += blocked::kS16ColumnsPer32BitSum) {
        const int32_t end = body - j0 < blocked::kS16ColumnsPer32BitSum ? body : j0 + blocked::kS16ColumnsPer32BitSum;
        __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
        for (int32_t j = j0; j < end; j += kColumns) {
          const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.v + j));
          s0 = _mm256_add_epi32(s0, products(xv, w + j));
          s1 = _mm256_add_epi32(s1, products(xv, w + n + j));
          s2 = _mm256_add_epi32(s2, products(xv, w + 2 * n + j));
          s3 = _mm256_add_epi32(s3, products(xv, w + 3 * n + j));
        }
        a[0] = fxp::wrapping_add_s64(a[0], sum8(s0));
        a[1] = fxp::wrapping_add_s64(a[1], sum8(s1));
        a[2] = fxp::wrapping_add_s64(a[2], sum8(s2));
        a[3] = fxp::wrapping_add_s64(a[3], sum8(s3));
      }
      for (int32_t k = 0; k < blocked::kRowsPerPass; ++k) {
        acc[k] = s16::dot_plus_bias(x.v + body, w + static_cast<ptrdiff_t>(k) * n + body, n - body, a[k]);
      }
      w += static_cast<ptrdiff_t>(blocked::kRowsPerPass) * n;
      bias += blocked::kRowsPerPass;
      acc += blocked::kRowsPerPass;
    }
  }

  static int64_t dot1(const Operand& x, const int8_t* w, int32_t n, int64_t acc) {
    const int32_t body = n / kColumns * kColumns;
    for (int32_t j0 = 0; j0 < body; j0 += blocked::kS16ColumnsPer32BitSum) {
      const int32_t end = body - j0 < blocked::kS16ColumnsPer32BitSum ? body : j0 + blocked::kS16ColumnsPer32BitSum;
      __m256i s = _mm256_setzero_si256();
      for (int32_t j = j0; j < end; j += kColumns) {
        s = _mm256_add_epi32(s, products(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.v + j)), w + j));
      }
      acc = fxp::wrapping_add_s64(acc, sum8(s));
    }
    return s16::dot_plus_bias(x.v + body, w + body, n - body, acc);
  }
};

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

// gate_s16_chunked and fc_s16_chunked (compiled without AVX2) with the AVX2 dot products.
constexpr LstmS16Variant with_cpu_check(LstmS16Variant v) {
  v.is_supported = is_supported;
  return v;
}
constexpr FcS16Variant with_cpu_check(FcS16Variant v) {
  v.is_supported = is_supported;
  return v;
}

}  // namespace
}  // namespace x86_s16

extern const LstmS16Variant kLstmS16X86Avx2Variant =
    x86_s16::with_cpu_check(blocked::lstm_s16_variant<x86_s16::Avx2S16, kLstmS8X86Avx2Variant>("x86_avx2"));
extern const FcS16Variant kFcS16X86Avx2Variant =
    x86_s16::with_cpu_check(blocked::fc_s16_variant<x86_s16::Avx2S16>("x86_avx2"));

}  // namespace qlstm

#endif  // x86-64
