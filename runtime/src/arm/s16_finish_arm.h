// The 16x8 gate's per-row finish for the Arm variants with DSP (arm_dsp, arm_mve): the reference's
// arithmetic (reference/lstm_s16_reference.h, docs/arithmetic.md §14) with each matmul's RQ64 set
// up once per gate call, so that a row costs a few 32-bit multiplies instead of a 64-bit product
// and a 64-bit shift by a variable amount.
//
// RQ64 (fxp::requantize_s64_round_half_up): high = bits s .. s + 31 of p = x * m (mod 2^64),
// s = 14 - shift in [0, 63], m the Q15 multiplier (>= 0); result = (high + 1) >> 1 (the +1 mod 2^32).
//   s >= 32: high = (p's upper word) >> (s - 32), arithmetic: UMULL, MLA, ASR.
//   s < 32:  high = the upper word of x * (m << (32 - s)) (mod 2^64), the same bits: UMULL, two MLA.
// Then pre = sat16(sat16(RQ64(acc_x)) + RQ64(acc_h)) by SSAT and QADD (the saturating int32 add
// cannot change the int16 result), and the table activation as the reference's.
#ifndef QLSTM_SRC_ARM_S16_FINISH_ARM_H_
#define QLSTM_SRC_ARM_S16_FINISH_ARM_H_

#include <stdint.h>

#include "qlstm/activation_s16.h"
#include "qlstm/fixed_point.h"
#include "qlstm/lstm_s16.h"

namespace qlstm {
namespace arm_s16 {

inline int32_t ssat16(int32_t x) {
  int32_t r;
  __asm__("ssat %0, #16, %1" : "=r"(r) : "r"(x));
  return r;
}
inline int32_t qadd(int32_t a, int32_t b) {
  int32_t r;
  __asm__("qadd %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));
  return r;
}

class Rq64 {
 public:
  Rq64(int32_t multiplier_q31, int32_t shift) {
    const uint32_t m = static_cast<uint32_t>(fxp::reduce_multiplier_q31_to_q15(multiplier_q31));
    const int32_t s = 14 - shift;
    high_word_ = s >= 32;
    if (high_word_) {
      m_lo_ = m;
      m_hi_ = 0;
      asr_ = s - 32;
    } else {
      const uint64_t scaled = static_cast<uint64_t>(m) << (32 - s);
      m_lo_ = static_cast<uint32_t>(scaled);
      m_hi_ = static_cast<uint32_t>(scaled >> 32);
      asr_ = 0;
    }
  }
  int32_t operator()(int64_t x) const {
    const uint32_t lo = static_cast<uint32_t>(static_cast<uint64_t>(x));
    const uint32_t hi = static_cast<uint32_t>(static_cast<uint64_t>(x) >> 32);
    uint32_t high = static_cast<uint32_t>((static_cast<uint64_t>(lo) * m_lo_) >> 32) + hi * m_lo_;
    if (high_word_) {
      high = static_cast<uint32_t>(static_cast<int32_t>(high) >> asr_);
    } else {
      high += lo * m_hi_;
    }
    return static_cast<int32_t>(high + 1u) >> 1;
  }

 private:
  uint32_t m_lo_, m_hi_;
  int32_t asr_;
  bool high_word_;
};

// The finish of rows_s16.h's gate_s16_chunked: out[k] = act(pre(ax[k], ah[k])), k < n (ah null:
// no recurrent term).
class GateFinish {
 public:
  explicit GateFinish(const qlstm_gate_s16_params& g)
      : x_(g.input_to_q3_12.multiplier, g.input_to_q3_12.shift),
        h_(g.hidden_to_q3_12.multiplier, g.hidden_to_q3_12.shift),
        is_tanh_(g.activation == QLSTM_ACTIVATION_TANH) {}
  void operator()(const int64_t* ax, const int64_t* ah, int32_t n, int16_t* out) const {
    if (is_tanh_) {
      if (ah != nullptr) {
        run<true, true>(ax, ah, n, out);
      } else {
        run<true, false>(ax, ah, n, out);
      }
    } else if (ah != nullptr) {
      run<false, true>(ax, ah, n, out);
    } else {
      run<false, false>(ax, ah, n, out);
    }
  }

 private:
  template <bool kTanh, bool kHasH>
  void run(const int64_t* ax, const int64_t* ah, int32_t n, int16_t* out) const {
    constexpr int32_t kGateLeftShift = 0;  // the pre-activation is already Q3.12
    for (int32_t k = 0; k < n; ++k) {
      int32_t pre = ssat16(x_(ax[k]));
      if (kHasH) pre = ssat16(qadd(pre, h_(ah[k])));
      const int16_t v = static_cast<int16_t>(pre);
      out[k] = kTanh ? tanh_q0_15(v, kGateLeftShift) : sigmoid_q0_15(v, kGateLeftShift);
    }
  }

  Rq64 x_, h_;
  bool is_tanh_;
};

}  // namespace arm_s16
}  // namespace qlstm

#endif  // QLSTM_SRC_ARM_S16_FINISH_ARM_H_
