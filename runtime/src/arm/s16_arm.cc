// "arm_dsp" for the 16x8 kernels (Cortex-M4, M33, M55): int16 activations times int8 weights two
// at a time with SMLAD. The weights' four bytes are sign-extended in pairs by SXTB16, (w0, w2) and
// (w1, w3) (the second on the word rotated by 8), so x is laid out to match once per batch row:
// (x0, x2), (x1, x3) per four columns (the Operand). Each block of four weight rows then costs,
// per four columns, one LDRD of x and per row one LDR, two SXTB16 and two SMLAD. The sums are
// 32-bit over at most blocked::kS16ColumnsPer32BitSum columns, then added into the row's int64
// accumulator: exactly the reference's int64 sum (docs/arithmetic.md §14) for every input. Up to
// Operand::kMaxColumns columns (one 32-bit sum per row, the last n % 4 columns included) the
// block loop is arm/s16_dots_arm.S's; longer rows take the C loop below.
// The gate's per-row arithmetic is arm/s16_finish_arm.h's, the FC's the reference's
// (blocked/rows_s16.h); the cell update is the int8 arm_dsp variant's.
#if defined(__ARM_ARCH_ISA_THUMB) && __ARM_ARCH_ISA_THUMB >= 2 && defined(__ARM_ARCH_PROFILE) && \
    __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FEATURE_DSP)

#include <arm_acle.h>

#include "arm/s16_finish_arm.h"
#include "blocked/rows_s16.h"
#include "reference/lstm_s16_reference.h"

namespace qlstm {

extern const LstmS8Variant kLstmS8ArmDspVariant;

extern "C" void qlstm_arm_s16_rows4_dsp(const int32_t* pairs, const int8_t* w, int32_t n, int32_t quads,
                                        int32_t blocks, int32_t* out);  // arm/s16_dots_arm.S

namespace arm_s16 {
namespace {

inline uint32_t load32(const void* p) {
  uint32_t v;
  __builtin_memcpy(&v, p, 4);  // one LDR (unaligned loads are allowed on these cores); the runtime is
  return v;                    // freestanding, so plain memcpy would stay a call
}

// SXTB16 of the word rotated by 8: (w1, w3). GCC does not fold the rotation into the instruction.
inline int32_t sxtb16_ror8(uint32_t w) {
  int32_t r;
  __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(w));
  return r;
}

inline int32_t pack(int16_t lo, int16_t hi) {
  return static_cast<int32_t>((static_cast<uint32_t>(static_cast<uint16_t>(hi)) << 16) | static_cast<uint16_t>(lo));
}

// Two SMLADs: the four products of one row's four weight bytes wq and the (x0, x2), (x1, x3) pairs.
inline int32_t mac4(uint32_t wq, int32_t x02, int32_t x13, int32_t s) {
  s = __smlad(__sxtb16(static_cast<int32_t>(wq)), x02, s);
  return __smlad(sxtb16_ror8(wq), x13, s);
}

struct DspS16 {
  // x as SMLAD takes it: pairs[2q] = (x[4q], x[4q + 2]), pairs[2q + 1] = (x[4q + 1], x[4q + 3]),
  // for up to kMaxColumns columns (1 KiB of stack); a longer vector is paired as it is read.
  struct Operand {
    static constexpr int32_t kMaxColumns = 256;
    int32_t pairs[kMaxColumns / 2];
    const int16_t* v = nullptr;
    int32_t quads = 0;
    bool expanded = false;
    void prepare(const int16_t* p, int32_t n) {
      v = p;
      quads = n / 4;
      expanded = n <= kMaxColumns;
      if (!expanded) return;
      for (int32_t q = 0; q < quads; ++q) {
        pairs[2 * q] = pack(p[4 * q], p[4 * q + 2]);
        pairs[2 * q + 1] = pack(p[4 * q + 1], p[4 * q + 3]);
      }
    }
  };

  // Quads [q0, q1) of four rows (w at row 0, rows n bytes apart) into s[4], 32-bit. Four moving
  // row pointers and the x pointer keep the loop free of stack reloads.
  template <bool kExpanded>
  static void quads4(const Operand& x, const int8_t* w, int32_t n, int32_t q0, int32_t q1, int32_t s[4]) {
    int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    const int8_t* w0 = w + 4 * q0;
    const int8_t* w1 = w0 + n;
    const int8_t* w2 = w1 + n;
    const int8_t* w3 = w2 + n;
    const int32_t* xp = x.pairs + 2 * q0;
    const int16_t* xv = x.v + 4 * q0;
    for (int32_t q = q1 - q0; q > 0; --q) {
      int32_t x02, x13;
      if (kExpanded) {
        x02 = xp[0];
        x13 = xp[1];
        xp += 2;
      } else {
        x02 = pack(xv[0], xv[2]);
        x13 = pack(xv[1], xv[3]);
        xv += 4;
      }
      s0 = mac4(load32(w0), x02, x13, s0);
      s1 = mac4(load32(w1), x02, x13, s1);
      s2 = mac4(load32(w2), x02, x13, s2);
      s3 = mac4(load32(w3), x02, x13, s3);
      w0 += 4;
      w1 += 4;
      w2 += 4;
      w3 += 4;
    }
    s[0] = s0;
    s[1] = s1;
    s[2] = s2;
    s[3] = s3;
  }

  static void rows4(const Operand& x, const int8_t* w, int32_t n, int32_t blocks, const int64_t* bias, int64_t* acc) {
    if (x.expanded) {
      rows4_expanded(x, w, n, blocks, bias, acc);
    } else {
      rows4_long(x, w, n, blocks, bias, acc);
    }
  }

  // At most Operand::kMaxColumns columns: one 32-bit sum per row (the last n % 4 columns
  // included), by the assembly block loop, then the int64 bias.
  static void rows4_expanded(const Operand& x, const int8_t* w, int32_t n, int32_t blocks, const int64_t* bias,
                             int64_t* acc) {
    static_assert(Operand::kMaxColumns <= blocked::kS16ColumnsPer32BitSum, "one 32-bit sum per row");
    int32_t s[blocked::kChunkRows];
    const int32_t rows = blocks * blocked::kRowsPerPass;
    qlstm_arm_s16_rows4_dsp(x.pairs, w, n, x.quads, blocks, s);
    for (int32_t j = 4 * x.quads; j < n; ++j) {  // the last n % 4 columns
      const int32_t v = x.v[j];
      const int8_t* wj = w + j;
      for (int32_t r = 0; r < rows; ++r) s[r] += v * int32_t{wj[static_cast<ptrdiff_t>(r) * n]};
    }
    for (int32_t r = 0; r < rows; ++r) acc[r] = fxp::wrapping_add_s64(bias[r], s[r]);
  }

  static void rows4_long(const Operand& x, const int8_t* w, int32_t n, int32_t blocks, const int64_t* bias,
                         int64_t* acc) {
    constexpr int32_t kQuadsPerSum = blocked::kS16ColumnsPer32BitSum / 4;
    for (int32_t blk = 0; blk < blocks; ++blk) {
      int64_t a[blocked::kRowsPerPass];
      for (int32_t k = 0; k < blocked::kRowsPerPass; ++k) a[k] = bias[k];
      for (int32_t q0 = 0; q0 < x.quads; q0 += kQuadsPerSum) {
        const int32_t q1 = x.quads - q0 < kQuadsPerSum ? x.quads : q0 + kQuadsPerSum;
        int32_t s[blocked::kRowsPerPass];
        if (x.expanded) {
          quads4<true>(x, w, n, q0, q1, s);
        } else {
          quads4<false>(x, w, n, q0, q1, s);
        }
        for (int32_t k = 0; k < blocked::kRowsPerPass; ++k) a[k] = fxp::wrapping_add_s64(a[k], s[k]);
      }
      for (int32_t j = 4 * x.quads; j < n; ++j) {  // the last n % 4 columns
        for (int32_t k = 0; k < blocked::kRowsPerPass; ++k) {
          a[k] = fxp::wrapping_add_s64(a[k], int32_t{x.v[j]} * int32_t{w[static_cast<ptrdiff_t>(k) * n + j]});
        }
      }
      for (int32_t k = 0; k < blocked::kRowsPerPass; ++k) acc[k] = a[k];
      w += static_cast<ptrdiff_t>(blocked::kRowsPerPass) * n;
      bias += blocked::kRowsPerPass;
      acc += blocked::kRowsPerPass;
    }
  }

  static int64_t dot1(const Operand& x, const int8_t* w, int32_t n, int64_t acc) {
    constexpr int32_t kQuadsPerSum = blocked::kS16ColumnsPer32BitSum / 4;
    for (int32_t q0 = 0; q0 < x.quads; q0 += kQuadsPerSum) {
      const int32_t q1 = x.quads - q0 < kQuadsPerSum ? x.quads : q0 + kQuadsPerSum;
      int32_t s = 0;
      for (int32_t q = q0; q < q1; ++q) {
        const int16_t* v = x.v + 4 * q;
        const int32_t x02 = x.expanded ? x.pairs[2 * q] : pack(v[0], v[2]);
        const int32_t x13 = x.expanded ? x.pairs[2 * q + 1] : pack(v[1], v[3]);
        s = mac4(load32(w + 4 * q), x02, x13, s);
      }
      acc = fxp::wrapping_add_s64(acc, s);
    }
    for (int32_t j = 4 * x.quads; j < n; ++j) acc = fxp::wrapping_add_s64(acc, int32_t{x.v[j]} * int32_t{w[j]});
    return acc;
  }
};

}  // namespace
}  // namespace arm_s16

extern const LstmS16Variant kLstmS16ArmDspVariant =
    blocked::lstm_s16_variant<arm_s16::DspS16, kLstmS8ArmDspVariant, s16::hidden_update_reference,
                              arm_s16::GateFinish>("arm_dsp");
extern const FcS16Variant kFcS16ArmDspVariant = blocked::fc_s16_variant<arm_s16::DspS16>("arm_dsp");

}  // namespace qlstm

#endif  // Thumb-2 M-profile with DSP
