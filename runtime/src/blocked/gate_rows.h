// The gate stage of the optimized variants (the LSTM's gates, the GRU's r, z and new gate), shared:
// rows are taken four at a time so that each x (and h) value is loaded once for four weight rows,
// then requantized, added, saturated and activated exactly as the reference does
// (reference/lstm_s8_reference.cc, reference/gru_s8_reference.cc, docs/arithmetic.md).
// A variant supplies a Kernel with
//   static void dot4(const int8_t* v, const int8_t* w, ptrdiff_t w_row_stride, int32_t n, int32_t acc[4]);
//     acc[k] += sum_j v[j] * w[k * w_row_stride + j]   (modulo 2^32), k < 4
//   static int32_t dot1(const int8_t* v, const int8_t* w, int32_t n, int32_t acc);
//   static void activate(const qlstm_gate_s8_params& g, int16_t* q3_12_to_q0_15, int32_t n);   in place
//   static void finish4(const GateRequant& rq, const int32_t ax[4], const int32_t ah[4], bool has_h,
//                       int16_t* out);   four rows' Q3.12 pre-activations (ScalarFinish: one at a time)
#ifndef QLSTM_SRC_BLOCKED_GATE_ROWS_H_
#define QLSTM_SRC_BLOCKED_GATE_ROWS_H_

#include "gate_activation.h"
#include "qlstm/activation_s16.h"
#include "qlstm/fixed_point.h"
#include "qlstm/kernels.h"
#include "reference/gru_s8_reference.h"

namespace qlstm {
namespace blocked {

constexpr int32_t kRowsPerPass = 4;

// The Q3.12 pre-activation of one row from its two accumulators (has_h: a recurrent term).
struct GateRequant {
  fxp::RequantDoubleRounding input, hidden;
  explicit GateRequant(const qlstm_gate_s8_params& g)
      : input(fxp::RequantDoubleRounding::make(g.input_to_q3_12.multiplier, g.input_to_q3_12.shift)),
        hidden(fxp::RequantDoubleRounding::make(g.hidden_to_q3_12.multiplier, g.hidden_to_q3_12.shift)) {}
  int16_t pre_activation_q3_12(int32_t acc_x, int32_t acc_h, bool has_h) const {
    int32_t pre = fxp::saturate_to_s16(input(acc_x));
    if (has_h) pre = fxp::saturate_to_s16(fxp::wrapping_add(pre, hidden(acc_h)));
    return static_cast<int16_t>(pre);
  }
};

struct ScalarFinish {
  static void finish4(const GateRequant& rq, const int32_t ax[4], const int32_t ah[4], bool has_h, int16_t* out) {
    for (int32_t k = 0; k < 4; ++k) out[k] = rq.pre_activation_q3_12(ax[k], ah[k], has_h);
  }
};

// HardSigmoid's line with its requantization's shifts and masks computed once (equal to
// hard_sigmoid_q0_15 for every pre-activation: RequantDoubleRounding equals the reference's
// requantization for the multipliers the validation accepts).
struct HardSigmoidLine {
  fxp::RequantDoubleRounding slope;
  int32_t offset_q0_15;
  explicit HardSigmoidLine(const qlstm_hard_sigmoid_params& p)
      : slope(fxp::RequantDoubleRounding::make(p.slope.multiplier, p.slope.shift)), offset_q0_15(p.offset_q0_15) {}
  int16_t operator()(int16_t pre_q3_12) const {
    const int64_t line = static_cast<int64_t>(slope(pre_q3_12)) + offset_q0_15;
    constexpr int64_t kOne = fxp::kInt16Max;
    return static_cast<int16_t>(line < 0 ? 0 : line > kOne ? kOne : line);
  }
};

// A chunk's finish in C++ for a HardSigmoid gate `g`, where a variant's assembly finish has no
// line: each row's pre-activation as the reference's, then the line (gate_activation.h). Without
// h, ah is zero and adds exactly 0 (gate_chunked_body), so the recurrent term is taken. Out of
// line, its constants made per chunk: a sigmoid or tanh gate's finish only keeps a pointer.
__attribute__((noinline)) inline void finish_hard_sigmoid(const qlstm_gate_s8_params& g, const int32_t* ax,
                                                         const int32_t* ah, int32_t n, int16_t* out) {
  const GateRequant rq(g);
  const HardSigmoidLine line(g.hard_sigmoid);
  for (int32_t k = 0; k < n; ++k) out[k] = line(rq.pre_activation_q3_12(ax[k], ah[k], true));
}

template <typename Kernel>
void gate(const qlstm_gate_s8_params& g, const GateArgs& a, int16_t* out_q0_15) {
  const int32_t I = a.input_size, H = a.hidden_size;
  const GateRequant rq(g);
  for (int32_t b = 0; b < a.rows; ++b) {
    const int8_t* x = a.x + b * a.x_row_stride;
    const int8_t* h = a.h != nullptr ? a.h + b * a.h_row_stride : nullptr;
    int16_t* out = out_q0_15 + static_cast<ptrdiff_t>(b) * H;
    const int32_t* x_acc = a.x_acc != nullptr ? a.x_acc + static_cast<ptrdiff_t>(b) * H : nullptr;
    int32_t r = 0;
    for (; r + kRowsPerPass <= H; r += kRowsPerPass) {
      int32_t ax[kRowsPerPass], ah[kRowsPerPass] = {0, 0, 0, 0};
      for (int32_t k = 0; k < kRowsPerPass; ++k) ax[k] = x_acc != nullptr ? x_acc[r + k] : g.input_effective_bias[r + k];
      if (x_acc == nullptr) Kernel::dot4(x, g.input_weights + static_cast<ptrdiff_t>(r) * I, I, I, ax);
      if (h != nullptr) {
        for (int32_t k = 0; k < kRowsPerPass; ++k) ah[k] = g.hidden_effective_bias[r + k];
        Kernel::dot4(h, g.hidden_weights + static_cast<ptrdiff_t>(r) * H, H, H, ah);
      }
      Kernel::finish4(rq, ax, ah, h != nullptr, out + r);
    }
    for (; r < H; ++r) {
      const int32_t ax = x_acc != nullptr ? x_acc[r]
                                          : Kernel::dot1(x, g.input_weights + static_cast<ptrdiff_t>(r) * I, I,
                                                         g.input_effective_bias[r]);
      const int32_t ah = h != nullptr ? Kernel::dot1(h, g.hidden_weights + static_cast<ptrdiff_t>(r) * H, H,
                                                     g.hidden_effective_bias[r])
                                      : 0;
      out[r] = rq.pre_activation_q3_12(ax, ah, h != nullptr);
    }
    Kernel::activate(g, out, H);
  }
}

// The gate in chunks of rows, for kernels that take whole blocks of four rows per call:
//   struct Operand { void prepare(const int8_t* v, int32_t n); };   x or h as rows4 reads it,
//                     prepared once per batch row (PlainOperand: the int8 vector itself)
//   static void rows4(const Operand& v, const int8_t* w, int32_t n, int32_t blocks, const int32_t* bias,
//                     int32_t* acc);   acc[r] = bias[r] + sum_j v[j] * w[r * n + j], r < 4 * blocks
//   struct Finish { Finish(const GateRequant& rq, const qlstm_gate_s8_params& g);   g: its activation
//                   void operator()(const int32_t* ax, const int32_t* ah, int32_t n, int16_t* out_q0_15) const; };
//                     n rows to Q0.15, activated; built once per gate call (its parameters set up once);
//                     it may overwrite the chunk's accumulators (gate_chunked's own stack, all
//                     2 * kChunkRows of them)
// (and dot1 for the rows after the last whole block), deriving from KernelDefaults (below). The
// accumulators of a chunk live on the stack: 2 * Kernel::kChunkRows int32 (512 bytes at the
// default), ah right after ax. Without h, ah stays zero:
// requantized it adds exactly 0, as the reference's h-less gate. 64 rows: a gate of up to 64
// units is one chunk, each chunk costs the driver's loop and three calls (two rows4, a finish).
constexpr int32_t kChunkRows = 64;

// What a kernel may set, with their defaults; every chunked kernel derives from this.
//   kChunkRows: rows per chunk, for kernels whose per-call cost is large enough that longer
//     chunks pay for their stack (arm_mve: 128 rows, 1,024 bytes);
//   kPrepareOncePerStep: whether a whole LSTM call prepares a one-row call's x and h once per
//     step (blocked/lstm_chunked.h: where preparing costs, as ExpandedOperand's sign extension)
//     and gate_chunked_over inlines its chunks' dot products (fewer cycles per gate call, more
//     flash). The others keep their operands local to the gate and call chunk_dots.
struct KernelDefaults {
  static constexpr int32_t kChunkRows = blocked::kChunkRows;
  static constexpr bool kPrepareOncePerStep = false;
};

struct PlainOperand {
  const int8_t* v = nullptr;
  void prepare(const int8_t* p, int32_t) { v = p; }
};

// acc[r] = bias[c0 + r] + v . w[c0 + r], r < n: rows [c0, c0 + n) of a [rows][cols] matmul, the
// whole blocks of four by rows4 (vo: v prepared), the rest by dot1.
template <typename Kernel>
__attribute__((always_inline)) inline void chunk_dots_inlined(const typename Kernel::Operand& vo, const int8_t* v, const int8_t* w, int32_t cols, int32_t c0,
                int32_t n, const int32_t* bias, int32_t* acc) {
  const int32_t blocks = n / kRowsPerPass;
  w += static_cast<ptrdiff_t>(c0) * cols;
  bias += c0;
  Kernel::rows4(vo, w, cols, blocks, bias, acc);
  for (int32_t r = blocks * kRowsPerPass; r < n; ++r) {
    acc[r] = Kernel::dot1(v, w + static_cast<ptrdiff_t>(r) * cols, cols, bias[r]);
  }
}

template <typename Kernel>
void chunk_dots(const typename Kernel::Operand& vo, const int8_t* v, const int8_t* w, int32_t cols, int32_t c0,
                int32_t n, const int32_t* bias, int32_t* acc) {
  chunk_dots_inlined<Kernel>(vo, v, w, cols, c0, n, bias, acc);
}

template <typename Kernel>
__attribute__((always_inline)) inline void gate_chunk_dots(const typename Kernel::Operand& vo, const int8_t* v,
                                                           const int8_t* w, int32_t cols, int32_t c0, int32_t n,
                                                           const int32_t* bias, int32_t* acc) {
  if constexpr (Kernel::kPrepareOncePerStep) {
    chunk_dots_inlined<Kernel>(vo, v, w, cols, c0, n, bias, acc);
  } else {
    chunk_dots<Kernel>(vo, v, w, cols, c0, n, bias, acc);
  }
}

// A repeated input's accumulators of n rows into the chunk's own (the finish may overwrite them).
// A loop, kept one by the empty asm: GCC would make it a call of the C library's memcpy, 236 to 308
// bytes of flash that nothing else of an LSTM firmware links.
inline void copy_accumulators(int32_t* dst, const int32_t* src, int32_t n) {
  for (int32_t k = 0; k < n; ++k) {
    dst[k] = src[k];
    __asm__ volatile("");
  }
}

// The gate with its finish built by the caller, over the caller's operands xo and ho: each batch
// row's x and h are prepared into them, except when `prepared` (a one-row call whose x and h the
// caller prepared already: blocked/lstm_chunked.h prepares them once per step for all four gates).
template <typename Kernel>
__attribute__((always_inline)) inline void gate_chunked_body(const qlstm_gate_s8_params& g,
                                                             const typename Kernel::Finish& finish, const GateArgs& a,
                                                             int16_t* out_q0_15, typename Kernel::Operand& xo,
                                                             typename Kernel::Operand& ho, bool prepared) {
  const int32_t I = a.input_size, H = a.hidden_size;
  constexpr int32_t kRows = Kernel::kChunkRows;
  int32_t acc[static_cast<size_t>(2 * kRows)];
  int32_t* const ax = acc;
  int32_t* const ah = acc + kRows;
  if (a.h == nullptr) {
    // A call, where GCC would unroll and vectorize the loop into about 240 bytes of every Arm
    // variant's flash; it runs at a call's first step only (no h yet).
    const int32_t rows = H < kRows ? H : kRows;
    __builtin_memset(ah, 0, sizeof(int32_t) * static_cast<size_t>(rows));
  }
  for (int32_t b = 0; b < a.rows; ++b) {
    const int8_t* x = a.x + b * a.x_row_stride;
    const int8_t* h = a.h != nullptr ? a.h + b * a.h_row_stride : nullptr;
    const int32_t* x_acc = a.x_acc != nullptr ? a.x_acc + static_cast<ptrdiff_t>(b) * H : nullptr;
    int16_t* out = out_q0_15 + static_cast<ptrdiff_t>(b) * H;
    if (!prepared) {
      if (x_acc == nullptr) xo.prepare(x, I);
      if (h != nullptr) ho.prepare(h, H);
    }
    for (int32_t c0 = 0; c0 < H; c0 += kRows) {
      const int32_t n = H - c0 < kRows ? H - c0 : kRows;
      if (x_acc != nullptr) {
        // The input part computed once per call (a repeated input): its accumulators as they are.
        copy_accumulators(ax, x_acc + c0, n);
      } else {
        gate_chunk_dots<Kernel>(xo, x, g.input_weights, I, c0, n, g.input_effective_bias, ax);
      }
      if (h != nullptr) gate_chunk_dots<Kernel>(ho, h, g.hidden_weights, H, c0, n, g.hidden_effective_bias, ah);
      finish(ax, ah, n, out + c0);
    }
  }
}

template <typename Kernel>
__attribute__((noinline)) void gate_chunked_over(const qlstm_gate_s8_params& g, const typename Kernel::Finish& finish,
                                                 const GateArgs& a, int16_t* out_q0_15, typename Kernel::Operand& xo,
                                                 typename Kernel::Operand& ho, bool prepared) {
  gate_chunked_body<Kernel>(g, finish, a, out_q0_15, xo, ho, prepared);
}

// The gate with its finish built by the caller (once per call: blocked/gru_chunked.h).
template <typename Kernel>
void gate_chunked_with(const qlstm_gate_s8_params& g, const typename Kernel::Finish& finish, const GateArgs& a,
                       int16_t* out_q0_15) {
  typename Kernel::Operand xo, ho;
  if constexpr (Kernel::kPrepareOncePerStep) {
    gate_chunked_over<Kernel>(g, finish, a, out_q0_15, xo, ho, false);
  } else {
    gate_chunked_body<Kernel>(g, finish, a, out_q0_15, xo, ho, false);
  }
}

template <typename Kernel>
void gate_chunked(const qlstm_gate_s8_params& g, const GateArgs& a, int16_t* out_q0_15) {
  const typename Kernel::Finish finish(GateRequant(g), g);
  gate_chunked_with<Kernel>(g, finish, a, out_q0_15);
}

// The GRU's new gate (docs/arithmetic.md §13) in the same chunks, its input and recurrent
// accumulators kept apart (r multiplies the recurrent part alone). The kernel supplies, besides
// Operand, rows4 and dot1,
//   struct NewGateFinish { NewGateFinish(const qlstm_gru_gate_s8_params& g, const qlstm_requant& reset_times_hidden);
//                          void operator()(const int32_t* ax, int32_t* ah, int32_t n, const int16_t* reset_q0_15,
//                                          int16_t* new_q0_15) const; };   n rows to Q0.15
// ah sits at ax + kChunkRows (as the LSTM gate's), and the finish may overwrite it.
// Without h (a stateless first step) ah is the bias alone, copied: no matmul.
// gru_new_gate_chunked_with: the same with the finish built by the caller (once per call:
// blocked/gru_chunked.h).
// gru_new_gate_chunked_over: over the caller's operands xo and ho, as gate_chunked_over (a
// one-row call whose x and h the caller prepared: `prepared`; blocked/gru_chunked.h).
template <typename Kernel>
__attribute__((noinline)) void gru_new_gate_chunked_over(const qlstm_gru_gate_s8_params& g,
                                                         const typename Kernel::NewGateFinish& finish,
                                                         const GateArgs& a, const int16_t* reset_q0_15,
                                                         int16_t* new_q0_15, typename Kernel::Operand& xo,
                                                         typename Kernel::Operand& ho, bool prepared) {
  const int32_t I = a.input_size, H = a.hidden_size;
  constexpr int32_t kRows = Kernel::kChunkRows;
  int32_t acc[static_cast<size_t>(2 * kRows)];
  int32_t* const ax = acc;
  int32_t* const ah = acc + kRows;
  for (int32_t b = 0; b < a.rows; ++b) {
    const int8_t* x = a.x + b * a.x_row_stride;
    const int8_t* h = a.h != nullptr ? a.h + b * a.h_row_stride : nullptr;
    const ptrdiff_t base = static_cast<ptrdiff_t>(b) * H;
    const int32_t* x_acc = a.x_acc != nullptr ? a.x_acc + base : nullptr;
    if (!prepared) {
      if (x_acc == nullptr) xo.prepare(x, I);
      if (h != nullptr) ho.prepare(h, H);
    }
    for (int32_t c0 = 0; c0 < H; c0 += kRows) {
      const int32_t n = H - c0 < kRows ? H - c0 : kRows;
      if (x_acc != nullptr) {
        copy_accumulators(ax, x_acc + c0, n);
      } else {
        gate_chunk_dots<Kernel>(xo, x, g.input_weights, I, c0, n, g.input_effective_bias, ax);
      }
      if (h != nullptr) {
        gate_chunk_dots<Kernel>(ho, h, g.hidden_weights, H, c0, n, g.hidden_effective_bias, ah);
      } else {
        for (int32_t k = 0; k < n; ++k) ah[k] = g.hidden_effective_bias[c0 + k];
      }
      finish(ax, ah, n, reset_q0_15 + base + c0, new_q0_15 + base + c0);
    }
  }
}
template <typename Kernel>
void gru_new_gate_chunked_with(const qlstm_gru_gate_s8_params& g, const typename Kernel::NewGateFinish& finish,
                               const GateArgs& a, const int16_t* reset_q0_15, int16_t* new_q0_15) {
  typename Kernel::Operand xo, ho;
  gru_new_gate_chunked_over<Kernel>(g, finish, a, reset_q0_15, new_q0_15, xo, ho, false);
}

template <typename Kernel>
void gru_new_gate_chunked(const qlstm_gru_gate_s8_params& g, const qlstm_requant& reset_times_hidden,
                          const GateArgs& a, const int16_t* reset_q0_15, int16_t* new_q0_15) {
  gru_new_gate_chunked_with<Kernel>(g, typename Kernel::NewGateFinish(g, reset_times_hidden), a, reset_q0_15,
                                    new_q0_15);
}

// The GRU's new gate one row at a time, portable: the reference's elementwise arithmetic on the
// accumulators of the kernel's dot products.
class ScalarNewGateFinish {
 public:
  ScalarNewGateFinish(const qlstm_gru_gate_s8_params& g, const qlstm_requant& reset_times_hidden)
      : input_(fxp::RequantDoubleRounding::make(g.input_to_q3_12.multiplier, g.input_to_q3_12.shift)),
        hidden_(fxp::RequantDoubleRounding::make(g.hidden_to_q3_12.multiplier, g.hidden_to_q3_12.shift)),
        reset_(fxp::RequantDoubleRounding::make(reset_times_hidden.multiplier, reset_times_hidden.shift)) {}
  void operator()(const int32_t* ax, const int32_t* ah, int32_t n, const int16_t* reset_q0_15,
                  int16_t* new_q0_15) const {
    for (int32_t k = 0; k < n; ++k) {
      const int16_t x_part_q3_12 = fxp::saturate_to_s16(input_(ax[k]));
      const int16_t h_part_q3_12 = fxp::saturate_to_s16(hidden_(ah[k]));
      new_q0_15[k] = gru_reference::new_gate_from_parts_q0_15(
          x_part_q3_12, gru_reference::reset_product_q3_12_with(reset_q0_15[k], h_part_q3_12, reset_));
    }
  }

 private:
  fxp::RequantDoubleRounding input_, hidden_, reset_;
};

// The GRU's update and output stages, portable: the reference's arithmetic inlined, each
// requantization precomputed once per call.
inline void gru_update(const qlstm_requant& q, int32_t count, const int16_t* update_q0_15, const int16_t* new_q0_15,
                       int16_t* hidden_q0_15) {
  gru_reference::update_with(fxp::RequantDoubleRounding::make(q.multiplier, q.shift), count, update_q0_15, new_q0_15,
                             hidden_q0_15);
}
inline void gru_output(const qlstm_requant& q, int32_t zero_point, int32_t rows, int32_t hidden_size,
                       const int16_t* hidden_q0_15, int8_t* y, ptrdiff_t y_row_stride) {
  gru_reference::output_with(fxp::RequantDoubleRounding::make(q.multiplier, q.shift), zero_point, rows, hidden_size,
                             hidden_q0_15, y, y_row_stride);
}

// A kernel of dot products (Operand, rows4, dot1) with the portable new-gate finish.
template <typename Dot>
struct WithScalarNewGateFinish : Dot {
  using NewGateFinish = ScalarNewGateFinish;
};

// The GRU variant of an ISA built from its blocks: r and z by the gate stage of kLstm (the LSTM
// variant of the same ISA), the new gate's matmuls by Kernel in chunks, update and output
// portable (the reference's arithmetic, inlined). Chosen at compile time: is_supported null.
template <const LstmS8Variant& kLstm, typename Kernel>
constexpr GruS8Variant gru_variant(const char* name) {
  return {name,
          nullptr,
          nullptr,
          gru_reference::sigmoid_gate_of<kLstm>,
          gru_new_gate_chunked<Kernel>,
          gru_update,
          gru_output,
          nullptr};
}

}  // namespace blocked
}  // namespace qlstm

#endif  // QLSTM_SRC_BLOCKED_GATE_ROWS_H_
