// "arm_mve" pooling: Helium (Cortex-M55), sixteen channels per block (blocked/pool_blocks.h), the
// last block predicated (VCTP). The max: one predicated byte load and a VMAX per position, then
// the clamp and a predicated store. The average: two widening loads (VLDRB.S16) and two 16-bit
// adds per position, exact for 256 positions (256 x -128 = -32768). A window of up to 255
// positions is finished in those lanes: the reference's rounding, its C division as a
// multiply-high by a reciprocal (exact here: Reciprocal), the clamp, a predicated byte store. A
// longer one is widened into four int32 vectors every 256 positions (VMOVLB/VMOVLT: even and odd
// channels) and finished the same way in 32-bit lanes, stored by a byte scatter in channel order.
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)

#include <arm_mve.h>

#include "blocked/pool_blocks.h"
#include "qlstm/kernels.h"

namespace qlstm {
namespace arm_mve {
namespace {

constexpr int32_t kExactPositions = 256;  // 16-bit lanes of int8 sums stay exact this long

// floor(x / d) for every x < 2^31 as a multiply-high: with l = ceil(log2 d) and
// m = ceil(2^(31 + l) / d) < 2^32, floor(x / d) = (x * m) >> (31 + l) (Granlund and Montgomery,
// "Division by invariant integers using multiplication", 1994: m * d - 2^(31 + l) < d <= 2^l).
// A window's |sum| + count / 2 stays below 2^30 + 2^22, so the reference's C division is this.
// The same for x < 2^15 in 16-bit lanes: m = ceil(2^(15 + l) / d) < 2^16. A window of at most
// kShortWindow positions keeps |sum| + count / 2 <= 255 * 128 + 127 < 2^15.
constexpr int32_t kShortWindow = 255;
template <int N>
struct Reciprocal {
  int32_t count = 0;  // d >= 2; 0: none yet
  uint32_t m = 0;
  int32_t right = 0;  // the shift after the multiply's high half: l - 1
  // Made once per count a call meets (the windows of a call mostly share one).
  const Reciprocal& of(int32_t d) {
    if (d != count) {
      const int32_t l = 32 - __builtin_clz(static_cast<uint32_t>(d - 1));
      m = static_cast<uint32_t>(((uint64_t{1} << (N + l)) + static_cast<uint64_t>(d) - 1) / static_cast<uint64_t>(d));
      right = l - 1;
      count = d;
    }
    return *this;
  }
};

struct Reciprocals {
  Reciprocal<15> short_window;  // 16-bit lanes
  Reciprocal<31> long_window;   // 32-bit lanes
};

// Eight lanes of a short window's sums (channels 0-7 of `out`), averaged, clamped and stored.
inline void finish8(int16x8_t s, int32_t count, const Reciprocal<15>& r, int32_t lo, int32_t hi, mve_pred16_t pr,
                    int8_t* out) {
  int16x8_t q = s;
  if (count > 1) {
    const uint16x8_t magnitude = vaddq_n_u16(vreinterpretq_u16_s16(vabsq_s16(s)), static_cast<uint16_t>(count / 2));
    q = vreinterpretq_s16_u16(vshlq_r_u16(vmulhq_u16(magnitude, vdupq_n_u16(static_cast<uint16_t>(r.m))), -r.right));
    q = vpselq_s16(vnegq_s16(q), q, vcmpltq_n_s16(s, 0));
  }
  q = vminq_s16(vmaxq_s16(q, vdupq_n_s16(static_cast<int16_t>(lo))), vdupq_n_s16(static_cast<int16_t>(hi)));
  vstrbq_p_s16(out, q, pr);
}

// Four lanes of sums (channels at byte offsets `at`) averaged as pool_rounded_average, clamped and
// stored where at < n.
inline void finish4(int32x4_t s, int32_t count, const Reciprocal<31>& r, int32_t lo, int32_t hi, uint32x4_t at, int32_t n,
                    int8_t* out) {
  int32x4_t q = s;
  if (count > 1) {
    const uint32x4_t magnitude = vaddq_n_u32(vreinterpretq_u32_s32(vabsq_s32(s)), static_cast<uint32_t>(count / 2));
    q = vreinterpretq_s32_u32(vshlq_r_u32(vmulhq_u32(magnitude, vdupq_n_u32(r.m)), -r.right));
    q = vpselq_s32(vnegq_s32(q), q, vcmpltq_n_s32(s, 0));
  }
  q = vminq_s32(vmaxq_s32(q, vdupq_n_s32(lo)), vdupq_n_s32(hi));
  if (n == 16) {
    vstrbq_scatter_offset_s32(out, at, q);
  } else {
    vstrbq_scatter_offset_p_s32(out, at, q, vcmpltq_s32(vreinterpretq_s32_u32(at), vdupq_n_s32(n)));
  }
}

struct Pool {
  using State = Reciprocals;
  static constexpr int32_t kChannels = 16;
  static void max(const blocked::PoolWindow& w, int32_t n, int32_t lo, int32_t hi, int8_t* out) {
    const mve_pred16_t pr = vctp8q(static_cast<uint32_t>(n));
    int8x16_t acc = vdupq_n_s8(fxp::kInt8Min);
    blocked::for_each_position(w, 0, [&](const int8_t* p) { acc = vmaxq_s8(acc, vldrbq_z_s8(p, pr)); },
                               blocked::no_widen);
    acc = vminq_s8(vmaxq_s8(acc, vdupq_n_s8(static_cast<int8_t>(lo))), vdupq_n_s8(static_cast<int8_t>(hi)));
    vstrbq_p_s8(out, acc, pr);
  }
  static void average(const blocked::PoolWindow& w, int32_t n, int32_t lo, int32_t hi, int8_t* out, State& state) {
    const mve_pred16_t lo_pr = vctp16q(static_cast<uint32_t>(n));
    const mve_pred16_t hi_pr = vctp16q(static_cast<uint32_t>(n > 8 ? n - 8 : 0));
    int16x8_t a = vdupq_n_s16(0), b = a;  // channels 0-7, 8-15
    const auto add = [&](const int8_t* p) {
      a = vaddq_s16(a, vldrbq_z_s16(p, lo_pr));
      b = vaddq_s16(b, vldrbq_z_s16(p + 8, hi_pr));
    };
    const int32_t count = w.positions();
    if (count <= kShortWindow) {  // the usual window: the finish in the 16-bit lanes themselves
      blocked::for_each_position(w, 0, add, blocked::no_widen);
      const Reciprocal<15>& r = count > 1 ? state.short_window.of(count) : state.short_window;
      finish8(a, count, r, lo, hi, lo_pr, out);
      finish8(b, count, r, lo, hi, hi_pr, out + 8);
      return;
    }
    int32x4_t s0 = vdupq_n_s32(0), s1 = s0, s2 = s0, s3 = s0;
    const auto widen = [&]() {
      s0 = vaddq_s32(s0, vmovlbq_s16(a));  // channels 0, 2, 4, 6
      s1 = vaddq_s32(s1, vmovltq_s16(a));  // 1, 3, 5, 7
      s2 = vaddq_s32(s2, vmovlbq_s16(b));  // 8, 10, 12, 14
      s3 = vaddq_s32(s3, vmovltq_s16(b));  // 9, 11, 13, 15
      a = b = vdupq_n_s16(0);
    };
    blocked::for_each_position(w, kExactPositions, add, widen);
    widen();
    const Reciprocal<31>& r = state.long_window.of(count);
    const uint32x4_t even = vidupq_n_u32(0, 2);
    finish4(s0, count, r, lo, hi, even, n, out);
    finish4(s1, count, r, lo, hi, vaddq_n_u32(even, 1), n, out);
    finish4(s2, count, r, lo, hi, vaddq_n_u32(even, 8), n, out);
    finish4(s3, count, r, lo, hi, vaddq_n_u32(even, 9), n, out);
  }
};

bool is_supported() { return true; }  // chosen at compile time on the MCU

}  // namespace
}  // namespace arm_mve

extern const PoolS8Variant kPoolS8ArmMveVariant = {"arm_mve", arm_mve::is_supported, nullptr,
                                                   blocked::pool_blocks<arm_mve::Pool>};

}  // namespace qlstm

#endif  // Helium
