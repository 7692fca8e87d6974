// The walk every optimized pooling variant shares (pool_s8.h, docs/arithmetic.md §17): each output
// position's window (its part inside the image), the channels in blocks of K::kChannels, and per
// block the variant's kernel K:
//   K::max(window, n, lo, hi, out): the max of n <= kChannels channels over the window, clamped to
//     [lo, hi], stored as n bytes;
//   K::average(window, n, lo, hi, out, state): their sums over the window (exact in int32: the window's
//     area is at most QLSTM_POOL_MAX_WINDOW_AREA), the reference's rounded average, the clamp.
// The reference (pool/pool_s8.cc) walks channel by channel; the blocks keep a channel block's
// accumulators in registers over the window. The portable block functions below are the scalar
// variant's and the SIMD kernels' tails. Everything here is static or a template of the kernel,
// so a file compiled for another ISA (the AVX2 one) keeps its own copies.
#ifndef QLSTM_RUNTIME_SRC_BLOCKED_POOL_BLOCKS_H_
#define QLSTM_RUNTIME_SRC_BLOCKED_POOL_BLOCKS_H_

#include <stddef.h>
#include <stdint.h>

#include "pool/pool_average.h"
#include "qlstm/fixed_point.h"
#include "qlstm/pool_s8.h"

namespace qlstm {
namespace blocked {

// The in-image part of one window, at a block's first channel: rows x cols positions.
struct PoolWindow {
  const int8_t* first;
  int32_t rows, cols;
  ptrdiff_t row_stride, col_stride;  // bytes from one row / position of the image to the next
  int32_t positions() const { return rows * cols; }
};

// Calls add(p) at each position of the window (p: the block's first channel there), row by row,
// pointers stepped, no index arithmetic. With exact_positions > 0 and a window of more positions
// than that, calls widen() after every exact_positions of them: SIMD kernels sum into 16-bit lanes
// and widen them into int32 before they could overflow. (Their caller widens once more at the end.)
template <class Add, class Widen>
static inline void for_each_position(const PoolWindow& w, int32_t exact_positions, Add add, Widen widen) {
  const int8_t* row = w.first;
  if (exact_positions == 0 || w.positions() <= exact_positions) {
    if (w.cols == 1 || w.row_stride == w.cols * w.col_stride) {  // one run of positions (over time: T x 1)
      const ptrdiff_t step = w.cols == 1 ? w.row_stride : w.col_stride;
      for (int32_t k = w.positions(); k > 0; --k, row += step) add(row);
      return;
    }
    for (int32_t r = 0; r < w.rows; ++r, row += w.row_stride) {
      const int8_t* p = row;
      for (int32_t c = 0; c < w.cols; ++c, p += w.col_stride) add(p);
    }
    return;
  }
  int32_t left = exact_positions;
  for (int32_t r = 0; r < w.rows; ++r, row += w.row_stride) {
    const int8_t* p = row;
    for (int32_t c = 0; c < w.cols; ++c, p += w.col_stride) {
      add(p);
      if (--left == 0) {
        widen();
        left = exact_positions;
      }
    }
  }
}

static inline void no_widen() {}

static inline int32_t pool_max_of(int32_t a, int32_t b) { return a > b ? a : b; }

// The average's rounding and the clamp of n sums over `count` positions (pool/pool_average.h).
static inline void finish_average(const int32_t* sums, int32_t n, int32_t count, int32_t lo, int32_t hi, int8_t* out) {
  for (int32_t j = 0; j < n; ++j) out[j] = static_cast<int8_t>(fxp::clamp(pool_rounded_average(sums[j], count), lo, hi));
}

// n channels, one at a time over the window: the scalar variant's and the SIMD kernels' tails.
static inline void portable_max(const PoolWindow& w, int32_t n, int32_t lo, int32_t hi, int8_t* out) {
  for (int32_t j = 0; j < n; ++j) {
    int32_t acc = fxp::kInt8Min;
    for_each_position(w, 0, [&](const int8_t* p) { acc = pool_max_of(acc, p[j]); }, no_widen);
    out[j] = static_cast<int8_t>(fxp::clamp(acc, lo, hi));
  }
}

static inline void portable_average(const PoolWindow& w, int32_t n, int32_t lo, int32_t hi, int8_t* out) {
  for (int32_t j = 0; j < n; ++j) {
    int32_t acc = 0;
    for_each_position(w, 0, [&](const int8_t* p) { acc += p[j]; }, no_widen);
    finish_average(&acc, 1, w.positions(), lo, hi, out + j);
  }
}

// K::State: what a kernel keeps from one window to the next of a call (the MVE average's
// reciprocal of the last window's count), default-constructed once per call.
template <class K>
void pool_blocks(const qlstm_pool_s8_params& p, const int8_t* input, int8_t* output) {
  // Every field read once into a local: the int8 stores below may alias anything, so a field read
  // in the loops would be read again after each store.
  const int32_t H = p.input_height, W = p.input_width, C = p.channels, batch = p.batch;
  const int32_t out_h = p.output_height, out_w = p.output_width, win_h = p.window_height, win_w = p.window_width;
  const int32_t stride_h = p.stride_height, stride_w = p.stride_width, pad_h = p.padding_height, pad_w = p.padding_width;
  const int32_t lo = p.activation_min, hi = p.activation_max;
  const bool max = p.kind == QLSTM_POOL_MAX;
  const ptrdiff_t row = static_cast<ptrdiff_t>(W) * C;
  typename K::State state;
  for (int32_t b = 0; b < batch; ++b) {
    const int8_t* image = input + static_cast<ptrdiff_t>(b) * H * row;
    for (int32_t oy = 0; oy < out_h; ++oy) {
      const int32_t y0 = oy * stride_h - pad_h;
      const int32_t y_begin = y0 > 0 ? y0 : 0, y_end = y0 + win_h < H ? y0 + win_h : H;
      for (int32_t ox = 0; ox < out_w; ++ox) {
        const int32_t x0 = ox * stride_w - pad_w;
        const int32_t x_begin = x0 > 0 ? x0 : 0, x_end = x0 + win_w < W ? x0 + win_w : W;
        const int8_t* first = image + y_begin * row + static_cast<ptrdiff_t>(x_begin) * C;
        PoolWindow w{first, y_end - y_begin, x_end - x_begin, row, C};
        for (int32_t c = 0; c < C; c += K::kChannels) {
          const int32_t n = C - c < K::kChannels ? C - c : K::kChannels;
          w.first = first + c;
          if (max) {
            K::max(w, n, lo, hi, output + c);
          } else {
            K::average(w, n, lo, hi, output + c, state);
          }
        }
        output += C;
      }
    }
  }
}

}  // namespace blocked
}  // namespace qlstm

#endif  // QLSTM_RUNTIME_SRC_BLOCKED_POOL_BLOCKS_H_
