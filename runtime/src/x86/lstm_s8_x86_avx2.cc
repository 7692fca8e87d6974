// "x86_avx2": the host simulation, fast and bit-exact, on x86-64 with AVX2 (chosen at run time).
// Gate rows eight at a time: int8 widened to int16 (VPMOVSXBW) and VPMADDWD, exact for int8
// operands, eight accumulators reduced with horizontal adds; every elementwise step in eight
// int32 lanes: the requantization (64-bit products of VPMULDQ for the SRDHM, shifts and masks for
// the rounding divide), the table activations (one 32-bit gather fetches both neighbours), the
// cell and the hidden update. Lane by lane it is the reference's arithmetic (docs/arithmetic.md);
// tests/variants checks it bit for bit.
//
// Everything below the target pragma (GCC's, or clang's attribute push) is compiled for AVX2 and
// has internal linkage, so no inline function of a shared header is emitted here with AVX2
// instructions for the rest of the program.
#if defined(__x86_64__) && defined(__GNUC__)

#include <cpuid.h>
#include <immintrin.h>

#include "qlstm/activation_s16.h"
#include "qlstm/fixed_point.h"
#include "qlstm/kernels.h"
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

constexpr int32_t kRows = 8;   // gate rows per pass
constexpr int32_t kLanes = 8;  // int32 lanes

// The eight accumulators' totals, one per lane (wrapping adds).
inline __m256i reduce8(const __m256i a[kRows]) {
  const __m256i s0123 = _mm256_hadd_epi32(_mm256_hadd_epi32(a[0], a[1]), _mm256_hadd_epi32(a[2], a[3]));
  const __m256i s4567 = _mm256_hadd_epi32(_mm256_hadd_epi32(a[4], a[5]), _mm256_hadd_epi32(a[6], a[7]));
  return _mm256_add_epi32(_mm256_permute2x128_si256(s0123, s4567, 0x20),
                          _mm256_permute2x128_si256(s0123, s4567, 0x31));
}

// bias[k] + sum_j v[j] * w[k * stride + j], k < 8, as eight lanes (mod 2^32).
inline __m256i dot8(const int8_t* v, const int8_t* w, ptrdiff_t stride, int32_t n, const int32_t* bias) {
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

// requantize_double_rounding in every lane (multiplier >= 0, as validated).
inline __m256i requantize(__m256i x, const fxp::RequantDoubleRounding& q) {
  x = _mm256_sll_epi32(x, _mm_cvtsi32_si128(q.left));  // wraps, as the reference's shift on uint32
  // SRDHM: bits 31..62 of x * m + 2^30, for the even lanes and then the odd ones.
  const __m256i m = _mm256_set1_epi32(q.multiplier);
  const __m256i half = _mm256_set1_epi64x(int64_t{1} << 30);
  const __m256i even = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epi32(x, m), half), 31);
  const __m256i odd = _mm256_slli_epi64(
      _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), m), half), 31), 32);
  const __m256i high = _mm256_blend_epi32(even, odd, 0xAA);
  // RDBPOT: floor, plus one where the remainder exceeds the threshold (+1 for negatives).
  const __m256i floor = _mm256_sra_epi32(high, _mm_cvtsi32_si128(q.right));
  const __m256i remainder = _mm256_and_si256(high, _mm256_set1_epi32(q.mask));
  const __m256i threshold = _mm256_sub_epi32(_mm256_set1_epi32(q.threshold), _mm256_srai_epi32(high, 31));
  return _mm256_sub_epi32(floor, _mm256_srai_epi32(_mm256_sub_epi32(threshold, remainder), 31));
}

inline __m256i saturate(__m256i x, int32_t lo, int32_t hi) {
  return _mm256_min_epi32(_mm256_max_epi32(x, _mm256_set1_epi32(lo)), _mm256_set1_epi32(hi));
}

inline __m256i prescale(__m256i x, int32_t left_shift) {
  using namespace detail;
  if (left_shift >= 0) return _mm256_mullo_epi32(x, _mm256_set1_epi32(kPrescaleFactor << left_shift));
  const int32_t right = -left_shift;
  const __m256i t = _mm256_add_epi32(_mm256_mullo_epi32(x, _mm256_set1_epi32(kPrescaleFactor)),
                                     _mm256_set1_epi32(1 << (right - 1)));
  return _mm256_sra_epi32(t, _mm_cvtsi32_si128(right));
}

// detail::interpolate in every lane: one 32-bit gather at T + index holds T[index] (low half)
// and T[index + 1] (high half); the index is clamped so that it never reads past the table.
inline __m256i interpolate(__m256i abs_v, int32_t step_bits, int32_t saturated) {
  using namespace detail;
  const __m128i step = _mm_cvtsi32_si128(step_bits);
  const __m256i index = _mm256_srl_epi32(abs_v, step);
  const __m256i in_table = _mm256_cmpgt_epi32(_mm256_set1_epi32(kTableLastIndex), index);
  const __m256i safe = _mm256_min_epi32(index, _mm256_set1_epi32(kTableLastIndex - 1));
  const __m256i pair = _mm256_i32gather_epi32(reinterpret_cast<const int*>(kSigmoidTableU16), safe, 2);
  const __m256i lo = _mm256_and_si256(pair, _mm256_set1_epi32(0xFFFF));
  const __m256i hi = _mm256_srli_epi32(pair, 16);
  const __m256i frac = _mm256_and_si256(abs_v, _mm256_set1_epi32((1 << step_bits) - 1));
  const __m256i r = _mm256_add_epi32(_mm256_sll_epi32(lo, step), _mm256_mullo_epi32(frac, _mm256_sub_epi32(hi, lo)));
  return _mm256_blendv_epi8(_mm256_set1_epi32(saturated), r, in_table);
}

inline __m256i sigmoid(__m256i x, int32_t left_shift) {
  using namespace detail;
  constexpr int32_t kSaturated = INT16_MAX << kSigmoidDropBits;
  constexpr int32_t kOne = 1 << (16 + kSigmoidStepBits);
  constexpr int32_t kRound = 1 << (kSigmoidDropBits - 1);
  const __m256i v = prescale(x, left_shift);
  const __m256i r = interpolate(_mm256_abs_epi32(v), kSigmoidStepBits, kSaturated);
  const __m256i pos = _mm256_srai_epi32(_mm256_add_epi32(r, _mm256_set1_epi32(kRound)), kSigmoidDropBits);
  const __m256i neg = _mm256_srai_epi32(_mm256_sub_epi32(_mm256_set1_epi32(kOne + kRound - 1), r), kSigmoidDropBits);
  return _mm256_blendv_epi8(neg, pos, _mm256_cmpgt_epi32(v, _mm256_set1_epi32(-1)));
}

inline __m256i tanh(__m256i x, int32_t left_shift) {
  using namespace detail;
  constexpr int32_t kSaturated = UINT16_MAX << kTanhStepBits;
  constexpr int32_t kHalf = 1 << (16 + kTanhStepBits - 1);
  constexpr int32_t kRound = 1 << (kTanhDropBits - 1);
  const __m256i v = prescale(x, left_shift);
  const __m256i r = interpolate(_mm256_abs_epi32(v), kTanhStepBits, kSaturated);
  const __m256i pos = _mm256_srai_epi32(_mm256_add_epi32(r, _mm256_set1_epi32(kRound - kHalf)), kTanhDropBits);
  const __m256i neg = _mm256_srai_epi32(_mm256_sub_epi32(_mm256_set1_epi32(kHalf + kRound - 1), r), kTanhDropBits);
  return _mm256_blendv_epi8(neg, pos, _mm256_cmpgt_epi32(v, _mm256_set1_epi32(-1)));
}

inline __m256i load_s16(const int16_t* p) {
  return _mm256_cvtepi16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Eight int32 lanes already within int16, stored as int16.
inline void store_s16(int16_t* p, __m256i x) {
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packs_epi32(x, x), 0x08);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
}

struct GateRequant {
  fxp::RequantDoubleRounding input, hidden;
};

int16_t pre_activation_scalar(const GateRequant& rq, int32_t ax, int32_t ah, bool has_h) {
  int32_t pre = fxp::saturate_to_s16(rq.input(ax));
  if (has_h) pre = fxp::saturate_to_s16(fxp::wrapping_add(pre, rq.hidden(ah)));
  return static_cast<int16_t>(pre);
}

int32_t dot1(const int8_t* v, const int8_t* w, int32_t n, int32_t acc) {
  uint32_t a = static_cast<uint32_t>(acc);
  for (int32_t j = 0; j < n; ++j) a += static_cast<uint32_t>(v[j] * w[j]);
  return fxp::bits_to_s32(a);
}

// A row of Q3.12 pre-activations, activated in place (left shift 0).
void activate_row(int16_t* v, int32_t n, bool is_tanh) {
  constexpr int32_t kGateLeftShift = 0;
  int32_t k = 0;
  for (; k + kLanes <= n; k += kLanes) {
    const __m256i x = load_s16(v + k);
    store_s16(v + k, is_tanh ? tanh(x, kGateLeftShift) : sigmoid(x, kGateLeftShift));
  }
  for (; k < n; ++k) v[k] = activation_q0_15(v[k], kGateLeftShift, is_tanh ? 1 : 0);
}

void gate(const qlstm_gate_s8_params& g, const GateArgs& a, int16_t* out_q0_15) {
  const int32_t I = a.input_size, H = a.hidden_size;
  const GateRequant rq{fxp::RequantDoubleRounding::make(g.input_to_q3_12.multiplier, g.input_to_q3_12.shift),
                       fxp::RequantDoubleRounding::make(g.hidden_to_q3_12.multiplier, g.hidden_to_q3_12.shift)};
  for (int32_t b = 0; b < a.rows; ++b) {
    const int8_t* x = a.x + b * a.x_row_stride;
    const int8_t* h = a.h != nullptr ? a.h + b * a.h_row_stride : nullptr;
    int16_t* out = out_q0_15 + static_cast<ptrdiff_t>(b) * H;
    int32_t r = 0;
    for (; r + kRows <= H; r += kRows) {
      const __m256i ax = dot8(x, g.input_weights + static_cast<ptrdiff_t>(r) * I, I, I, g.input_effective_bias + r);
      __m256i pre = saturate(requantize(ax, rq.input), fxp::kInt16Min, fxp::kInt16Max);
      if (h != nullptr) {
        const __m256i ah =
            dot8(h, g.hidden_weights + static_cast<ptrdiff_t>(r) * H, H, H, g.hidden_effective_bias + r);
        pre = saturate(_mm256_add_epi32(pre, requantize(ah, rq.hidden)), fxp::kInt16Min, fxp::kInt16Max);
      }
      store_s16(out + r, pre);
    }
    for (; r < H; ++r) {
      const int32_t ax = dot1(x, g.input_weights + static_cast<ptrdiff_t>(r) * I, I, g.input_effective_bias[r]);
      const int32_t ah =
          h != nullptr ? dot1(h, g.hidden_weights + static_cast<ptrdiff_t>(r) * H, H, g.hidden_effective_bias[r]) : 0;
      out[r] = pre_activation_scalar(rq, ax, ah, h != nullptr);
    }
    activate_row(out, H, g.activation == QLSTM_ACTIVATION_TANH);
  }
}

void cell_update(const CellUpdateParams& p, int32_t count, const int16_t* f_q0_15, const int16_t* i_q0_15,
                 const int16_t* g_q0_15, int16_t* cell) {
  const auto fc = fxp::RequantDoubleRounding::make(p.forget_times_cell.multiplier, p.forget_times_cell.shift);
  const auto ig = fxp::RequantDoubleRounding::make(p.input_times_cell_gate.multiplier, p.input_times_cell_gate.shift);
  int32_t k = 0;
  for (; k + kLanes <= count; k += kLanes) {
    const __m256i kept = saturate(requantize(_mm256_mullo_epi32(load_s16(f_q0_15 + k), load_s16(cell + k)), fc),
                                  fxp::kInt16Min, fxp::kInt16Max);
    const __m256i added = requantize(_mm256_mullo_epi32(load_s16(i_q0_15 + k), load_s16(g_q0_15 + k)), ig);
    store_s16(cell + k, saturate(_mm256_add_epi32(kept, added), p.clip_min, p.clip_max));
  }
  if (k < count) reference::cell_update(p, count - k, f_q0_15 + k, i_q0_15 + k, g_q0_15 + k, cell + k);
}

void hidden_update(const HiddenUpdateParams& p, int32_t rows, int32_t hidden_size, const int16_t* o_q0_15,
                   const int16_t* cell, int8_t* h_out, ptrdiff_t h_row_stride) {
  const auto ot = fxp::RequantDoubleRounding::make(p.output_times_tanh_cell.multiplier, p.output_times_tanh_cell.shift);
  for (int32_t b = 0; b < rows; ++b) {
    const ptrdiff_t base = static_cast<ptrdiff_t>(b) * hidden_size;
    int8_t* h = h_out + b * h_row_stride;
    int32_t k = 0;
    for (; k + kLanes <= hidden_size; k += kLanes) {
      const __m256i t = tanh(load_s16(cell + base + k), p.tanh_left_shift);
      const __m256i scaled = requantize(_mm256_mullo_epi32(load_s16(o_q0_15 + base + k), t), ot);
      const __m256i y = saturate(_mm256_add_epi32(scaled, _mm256_set1_epi32(p.output_zero_point)), fxp::kInt8Min,
                                 fxp::kInt8Max);
      alignas(32) int32_t lanes[kLanes];
      _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), y);
      for (int32_t l = 0; l < kLanes; ++l) h[k + l] = static_cast<int8_t>(lanes[l]);
    }
    if (k < hidden_size) {
      reference::hidden_update(p, 1, hidden_size - k, o_q0_15 + base + k, cell + base + k, h + k, 0);
    }
  }
}

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

}  // namespace
}  // namespace x86

extern const LstmS8Variant kLstmS8X86Avx2Variant = {"x86_avx2", x86::is_supported, x86::gate, x86::cell_update,
                                                    x86::hidden_update, nullptr};

}  // namespace qlstm

#endif  // x86-64
