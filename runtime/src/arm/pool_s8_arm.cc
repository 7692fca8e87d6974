// "arm_dsp" pooling (Cortex-M4, M33, M55 without Helium): eight channels per block in two words
// (blocked/pool_blocks.h). The max: SSUB8 sets each byte's GE flag where the new value is at least
// the running max and SEL takes those bytes: two instructions per four values. The sum: SXTAB16
// adds bytes 0 and 2 (and, rotated by 8, bytes 1 and 3) of a word into two 16-bit lanes, exact for
// 256 positions (256 x -128 = -32768), then widened into the int32 sums. Blocks of fewer than 8
// channels take the portable loops. (Cortex-M3 has no DSP instructions: it runs "scalar".)
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FEATURE_DSP)

#include <arm_acle.h>

#include "blocked/pool_blocks.h"
#include "qlstm/kernels.h"

namespace qlstm {
namespace arm {
namespace {

constexpr int32_t kExactPositions = 256;  // 16-bit lanes of int8 sums stay exact this long
constexpr uint32_t kBytesOf(int32_t v) { return 0x01010101u * (static_cast<uint32_t>(v) & 0xFFu); }

// A word of four int8 values: one LDR (unaligned loads are allowed on these cores; the builtin, as
// the freestanding build has no memcpy to inline).
inline uint32_t load4(const int8_t* p) {
  uint32_t w;
  __builtin_memcpy(&w, p, sizeof w);
  return w;
}
inline void store4(int8_t* p, uint32_t w) { __builtin_memcpy(p, &w, sizeof w); }
// Rotated right by 8 (GCC folds it into SXTAB16's ROR operand).
inline uint32_t ror8(uint32_t w) { return (w >> 8) | (w << 24); }
// Bytewise max: SEL takes a where SSUB8 found a - b >= 0.
inline uint32_t max4(uint32_t a, uint32_t b) {
  (void)__ssub8(static_cast<int8x4_t>(a), static_cast<int8x4_t>(b));
  return static_cast<uint32_t>(__sel(static_cast<uint8x4_t>(a), static_cast<uint8x4_t>(b)));
}
// Bytewise min: SEL takes a where SSUB8 found b - a >= 0.
inline uint32_t min4(uint32_t a, uint32_t b) {
  (void)__ssub8(static_cast<int8x4_t>(b), static_cast<int8x4_t>(a));
  return static_cast<uint32_t>(__sel(static_cast<uint8x4_t>(a), static_cast<uint8x4_t>(b)));
}

// sums[0..3] += the 16-bit lanes of even (bytes 0, 2) and odd (bytes 1, 3).
inline void widen(uint32_t even, uint32_t odd, int32_t* sums) {
  sums[0] += static_cast<int16_t>(even & 0xFFFFu);
  sums[2] += static_cast<int32_t>(even) >> 16;
  sums[1] += static_cast<int16_t>(odd & 0xFFFFu);
  sums[3] += static_cast<int32_t>(odd) >> 16;
}

struct Pool {
  struct State {};
  static constexpr int32_t kChannels = 8;
  static void max(const blocked::PoolWindow& w, int32_t n, int32_t lo, int32_t hi, int8_t* out) {
    if (n != kChannels) return blocked::portable_max(w, n, lo, hi, out);
    uint32_t a0 = kBytesOf(fxp::kInt8Min), a1 = a0;
    blocked::for_each_position(w, 0, [&](const int8_t* s) {
      a0 = max4(load4(s), a0);
      a1 = max4(load4(s + 4), a1);
    }, blocked::no_widen);
    const uint32_t l = kBytesOf(lo), h = kBytesOf(hi);
    store4(out, min4(max4(a0, l), h));
    store4(out + 4, min4(max4(a1, l), h));
  }
  static void average(const blocked::PoolWindow& w, int32_t n, int32_t lo, int32_t hi, int8_t* out, State&) {
    if (n != kChannels) return blocked::portable_average(w, n, lo, hi, out);
    int32_t sums[kChannels] = {0, 0, 0, 0, 0, 0, 0, 0};
    uint32_t e0 = 0, o0 = 0, e1 = 0, o1 = 0;
    const auto widen_all = [&]() {
      widen(e0, o0, sums);
      widen(e1, o1, sums + 4);
      e0 = o0 = e1 = o1 = 0;
    };
    blocked::for_each_position(w, kExactPositions, [&](const int8_t* s) {
      const uint32_t v0 = load4(s), v1 = load4(s + 4);
      e0 = static_cast<uint32_t>(__sxtab16(static_cast<int16x2_t>(e0), static_cast<int8x4_t>(v0)));
      o0 = static_cast<uint32_t>(__sxtab16(static_cast<int16x2_t>(o0), static_cast<int8x4_t>(ror8(v0))));
      e1 = static_cast<uint32_t>(__sxtab16(static_cast<int16x2_t>(e1), static_cast<int8x4_t>(v1)));
      o1 = static_cast<uint32_t>(__sxtab16(static_cast<int16x2_t>(o1), static_cast<int8x4_t>(ror8(v1))));
    }, widen_all);
    widen_all();
    blocked::finish_average(sums, kChannels, w.positions(), lo, hi, out);
  }
};

bool is_supported() { return true; }  // chosen at compile time on the MCU

}  // namespace
}  // namespace arm

extern const PoolS8Variant kPoolS8ArmDspVariant = {"arm_dsp", arm::is_supported, nullptr, blocked::pool_blocks<arm::Pool>};

}  // namespace qlstm

#endif  // Arm M-profile with DSP
