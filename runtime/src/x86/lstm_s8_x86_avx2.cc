// "x86_avx2": the host simulation, fast and bit-exact, on x86-64 with AVX2 (chosen at run time).
// Gate rows eight at a time: int8 widened to int16 (VPMOVSXBW) and VPMADDWD, exact for int8
// operands, eight accumulators reduced with horizontal adds; every elementwise step in eight
// int32 lanes (lstm_s8_x86_lanes.inc): the requantization (64-bit products of VPMULDQ for the
// SRDHM, shifts and masks for the rounding divide), the table activations (one 32-bit gather
// fetches both neighbours), the cell and the hidden update. The fully connected op: the same
// dot products and requantization (fc_s8_x86_lanes.inc). Pooling: pool_s8_x86_avx2.inc. The
// elementwise add and multiply: elementwise_s8_x86_avx2.inc.
//
// Everything below the target pragma (GCC's, or clang's attribute push) is compiled for AVX2 and
// has internal linkage, so no inline function of a shared header is emitted here with AVX2
// instructions for the rest of the program.
#if defined(__x86_64__) && defined(__GNUC__)

#include <cpuid.h>
#include <immintrin.h>

#include "gate_activation.h"
#include "qlstm/activation_s16.h"
#include "qlstm/fixed_point.h"
#include "blocked/elementwise_blocks.h"
#include "blocked/pool_blocks.h"
#include "qlstm/kernels.h"
#include "reference/gru_s8_reference.h"
#include "reference/lstm_s8_reference.h"

namespace qlstm {
namespace x86 {
namespace {

// CPUID and XGETBV directly (header-only), not __builtin_cpu_supports, whose __cpu_model lives in
// libgcc: the runtime stays freestanding. AVX2 needs the CPU's flag and the OS saving YMM state.
bool is_supported() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  if ((ecx & bit_OSXSAVE) == 0 || (ecx & bit_AVX) == 0) return false;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  constexpr unsigned kXmmYmmState = 0x6;
  if ((xcr0_lo & kXmmYmmState) != kXmmYmmState) return false;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (ebx & bit_AVX2) != 0;
}

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2")
#endif

#include "x86/lstm_s8_x86_lanes.inc"

// bias[k] + sum_j v[j] * w[k * stride + j], k < 8, as eight lanes (mod 2^32).
__m256i dot8(const int8_t* v, const int8_t* w, ptrdiff_t stride, int32_t n, const int32_t* bias) {
  __m256i acc[kRows];
  for (int32_t k = 0; k < kRows; ++k) acc[k] = _mm256_setzero_si256();
  int32_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m256i vv = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + j)));
    for (int32_t k = 0; k < kRows; ++k) {
      const __m256i ww =
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + k * stride + j)));
      acc[k] = _mm256_add_epi32(acc[k], _mm256_madd_epi16(vv, ww));
    }
  }
  alignas(32) int32_t tail[kRows];
  for (int32_t k = 0; k < kRows; ++k) {
    uint32_t t = static_cast<uint32_t>(bias[k]);
    for (int32_t c = j; c < n; ++c) t += static_cast<uint32_t>(v[c] * w[k * stride + c]);
    tail[k] = fxp::bits_to_s32(t);
  }
  return _mm256_add_epi32(reduce8(acc), _mm256_load_si256(reinterpret_cast<const __m256i*>(tail)));
}

#include "x86/fc_s8_x86_lanes.inc"
#include "x86/gru_s8_x86_lanes.inc"
#include "x86/pool_s8_x86_avx2.inc"
#include "x86/elementwise_s8_x86_avx2.inc"

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

}  // namespace
}  // namespace x86

extern const LstmS8Variant kLstmS8X86Avx2Variant = {"x86_avx2", x86::is_supported, nullptr, x86::gate, x86::cell_update,
                                                    x86::hidden_update, nullptr};

extern const FcS8Variant kFcS8X86Avx2Variant = {"x86_avx2", x86::is_supported, nullptr, x86::fc};

extern const GruS8Variant kGruS8X86Avx2Variant = {"x86_avx2", x86::is_supported, nullptr, x86::gate,
    x86::gru_new_gate, x86::gru_update, x86::gru_output, nullptr};

extern const RnnS8Variant kRnnS8X86Avx2Variant = {"x86_avx2", x86::is_supported, nullptr, x86::gate, x86::gru_output};

extern const PoolS8Variant kPoolS8X86Avx2Variant = {"x86_avx2", x86::is_supported, nullptr,
                                                    blocked::pool_blocks<x86::Pool>};

// can_run: the plan's forms (blocked/elementwise_blocks.h); the reference runs the others.
extern const AddS8Variant kAddS8X86Avx2Variant = {"x86_avx2", x86::is_supported, blocked::add_can_run, x86::add_s8};
extern const MulS8Variant kMulS8X86Avx2Variant = {"x86_avx2", x86::is_supported, blocked::mul_can_run, x86::mul_s8};

}  // namespace qlstm

#endif  // x86-64
