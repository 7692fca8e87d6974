// "scalar" pooling: portable C, eight channels per block held in registers over the window
// (blocked/pool_blocks.h): the best variant of cores without a SIMD unit (Cortex-M3), where a byte
// load and a compare or an add per value is all there is, and the fallback everywhere.
#include "blocked/pool_blocks.h"
#include "qlstm/kernels.h"

namespace qlstm {
namespace scalar {
namespace {

// A block of N channels, each accumulator in a register over the window: the max, or the sum
// then the average.
template <bool kMax, size_t N>
void block(const blocked::PoolWindow& w, int32_t lo, int32_t hi, int8_t* out) {
  int32_t a[N];
  for (size_t j = 0; j < N; ++j) a[j] = kMax ? fxp::kInt8Min : 0;
  blocked::for_each_position(w, 0, [&](const int8_t* s) {
#pragma GCC unroll 8
    for (size_t j = 0; j < N; ++j) a[j] = kMax ? blocked::pool_max_of(a[j], s[j]) : a[j] + s[j];
  }, blocked::no_widen);
  if (!kMax) return blocked::finish_average(a, N, w.positions(), lo, hi, out);
  for (size_t j = 0; j < N; ++j) out[j] = static_cast<int8_t>(fxp::clamp(a[j], lo, hi));
}

// n channels: a block of 8, or one of 4 and then one channel at a time.
template <bool kMax>
void blocks(const blocked::PoolWindow& w, int32_t n, int32_t lo, int32_t hi, int8_t* out) {
  if (n == 8) return block<kMax, 8>(w, lo, hi, out);
  blocked::PoolWindow rest = w;
  if (n >= 4) {
    block<kMax, 4>(w, lo, hi, out);
    rest.first += 4;
  }
  if (kMax) return blocked::portable_max(rest, n % 4, lo, hi, out + (n - n % 4));
  blocked::portable_average(rest, n % 4, lo, hi, out + (n - n % 4));
}

struct Pool {
  struct State {};
  static constexpr int32_t kChannels = 8;
  static void max(const blocked::PoolWindow& w, int32_t n, int32_t lo, int32_t hi, int8_t* out) {
    blocks<true>(w, n, lo, hi, out);
  }
  static void average(const blocked::PoolWindow& w, int32_t n, int32_t lo, int32_t hi, int8_t* out, State&) {
    blocks<false>(w, n, lo, hi, out);
  }
};

bool is_supported() { return true; }

}  // namespace
}  // namespace scalar

extern const PoolS8Variant kPoolS8ScalarVariant = {"scalar", scalar::is_supported, nullptr,
                                                   blocked::pool_blocks<scalar::Pool>};

}  // namespace qlstm
