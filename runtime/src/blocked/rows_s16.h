// The gate stage of the 16x8 LSTM and the 16x8 fully connected op for the optimized variants,
// shared (as gate_rows.h and fc_rows.h for the int8 kernels): rows in chunks of kChunkRows, their
// dot products in whole blocks of four rows so that each x (and h) value is loaded once for four
// weight rows, then the reference's per-row arithmetic (reference/lstm_s16_reference.h): RQ64,
// the saturating adds, the activation; the FC's RQ64 and clamp.
// A kernel supplies
//   struct Operand { void prepare(const int16_t* v, int32_t n); };   the int16 vector as rows4 reads
//                     it, prepared once per batch row
//   static void rows4(const Operand& v, const int8_t* w, int32_t n, int32_t blocks, const int64_t* bias,
//                     int64_t* acc);   acc[r] = bias[r] + sum_j v[j] * w[r * n + j] (modulo 2^64), r < 4 * blocks
//   static int64_t dot1(const Operand& v, const int8_t* w, int32_t n, int64_t acc);   one row
// Both must give the reference's int64 sums exactly: a kernel that accumulates in 32 bits adds its
// partial sums into int64 before they can overflow (each product is at most 2^22 in magnitude, so
// 256 of them stay inside int32 with room to spare; CMSIS-NN's optimized 16x8 paths do not, see
// ../shared/op-vectors/FORMAT.md).
#ifndef QLSTM_SRC_BLOCKED_ROWS_S16_H_
#define QLSTM_SRC_BLOCKED_ROWS_S16_H_

#include <stddef.h>
#include <stdint.h>

#include "blocked/gate_rows.h"
#include "qlstm/kernels.h"
#include "reference/lstm_s16_reference.h"

namespace qlstm {
namespace blocked {

// The most columns a 32-bit partial sum may take before it goes into the int64 accumulator.
constexpr int32_t kS16ColumnsPer32BitSum = 256;

// acc[r] = bias[r] + v . w[r], r < n: rows of a [rows][cols] matmul from w (already at the first
// row), the whole blocks of four by rows4, the rest by dot1.
template <typename Kernel>
void chunk_dots_s16(const typename Kernel::Operand& v, const int8_t* w, int32_t cols, int32_t n, const int64_t* bias,
                    int64_t* acc) {
  const int32_t blocks = n / kRowsPerPass;
  Kernel::rows4(v, w, cols, blocks, bias, acc);
  for (int32_t r = blocks * kRowsPerPass; r < n; ++r) {
    acc[r] = Kernel::dot1(v, w + static_cast<ptrdiff_t>(r) * cols, cols, bias[r]);
  }
}

// The int16 vector itself, for kernels that read it as it is.
struct PlainS16Operand {
  const int16_t* v = nullptr;
  void prepare(const int16_t* p, int32_t) { v = p; }
};

// The reference's per-row finish of a gate (a Finish of gate_s16_chunked): out[k] = the activation
// of the pre-activation of ax[k] and ah[k], k < n; ah null: no recurrent term.
class ReferenceGateFinish {
 public:
  explicit ReferenceGateFinish(const qlstm_gate_s16_params& g)
      : rq_(g), is_tanh_(g.activation == QLSTM_ACTIVATION_TANH) {}
  void operator()(const int64_t* ax, const int64_t* ah, int32_t n, int16_t* out) const {
    for (int32_t k = 0; k < n; ++k) {
      out[k] = s16::activate(rq_.pre_activation_q3_12(ax[k], ah != nullptr ? ah[k] : 0, ah != nullptr), is_tanh_);
    }
  }

 private:
  s16::GateRequant rq_;
  bool is_tanh_;
};

template <typename Kernel, typename Finish = ReferenceGateFinish>
void gate_s16_chunked(const qlstm_gate_s16_params& g, const GateArgsOf<int16_t>& a, int16_t* out_q0_15) {
  const int32_t I = a.input_size, H = a.hidden_size;
  const Finish finish(g);
  int64_t ax[kChunkRows], ah[kChunkRows];
  typename Kernel::Operand xo, ho;
  for (int32_t b = 0; b < a.rows; ++b) {
    const int16_t* h = a.h != nullptr ? a.h + b * a.h_row_stride : nullptr;
    int16_t* out = out_q0_15 + static_cast<ptrdiff_t>(b) * H;
    xo.prepare(a.x + b * a.x_row_stride, I);
    if (h != nullptr) ho.prepare(h, H);
    for (int32_t c0 = 0; c0 < H; c0 += kChunkRows) {
      const int32_t n = H - c0 < kChunkRows ? H - c0 : kChunkRows;
      chunk_dots_s16<Kernel>(xo, g.input_weights + static_cast<ptrdiff_t>(c0) * I, I, n, g.input_effective_bias + c0,
                             ax);
      if (h != nullptr) {
        chunk_dots_s16<Kernel>(ho, g.hidden_weights + static_cast<ptrdiff_t>(c0) * H, H, n,
                               g.hidden_effective_bias + c0, ah);
      }
      finish(ax, h != nullptr ? ah : nullptr, n, out + c0);
    }
  }
}

template <typename Kernel>
void fc_s16_chunked(const qlstm_fc_s16_params& p, const int16_t* input, int16_t* output) {
  const int32_t I = p.input_size, O = p.output_size;
  const s16::FcFinish finish(p);
  int64_t bias[kChunkRows], acc[kChunkRows];
  typename Kernel::Operand xo;
  for (int32_t b = 0; b < p.rows; ++b) {
    int16_t* y = output + static_cast<ptrdiff_t>(b) * O;
    xo.prepare(input + static_cast<ptrdiff_t>(b) * I, I);
    for (int32_t c0 = 0; c0 < O; c0 += kChunkRows) {
      const int32_t n = O - c0 < kChunkRows ? O - c0 : kChunkRows;
      for (int32_t k = 0; k < n; ++k) bias[k] = p.bias != nullptr ? p.bias[c0 + k] : 0;
      chunk_dots_s16<Kernel>(xo, p.weights + static_cast<ptrdiff_t>(c0) * I, I, n, bias, acc);
      for (int32_t k = 0; k < n; ++k) y[c0 + k] = finish(acc[k]);
    }
  }
}

// The cell update of kInt8, the int8 LSTM variant of the same ISA: the 16x8 cell update is the
// same arithmetic (docs/arithmetic.md §14).
template <const LstmS8Variant& kInt8>
void cell_update_of(const CellUpdateParams& p, int32_t count, const int16_t* f_q0_15, const int16_t* i_q0_15,
                    const int16_t* g_q0_15, int16_t* cell) {
  kInt8.cell_update(p, count, f_q0_15, i_q0_15, g_q0_15, cell);
}

// The 16x8 LSTM and FC variants of an ISA from its dot products (Kernel), its int8 LSTM variant
// (the cell update), its hidden update (by default the reference's) and its gates' per-row finish
// (by default the reference's). Chosen at compile time: is_supported null.
template <typename Kernel, const LstmS8Variant& kInt8, HiddenUpdateS16Fn kHiddenUpdate = s16::hidden_update_reference,
          typename Finish = ReferenceGateFinish>
constexpr LstmS16Variant lstm_s16_variant(const char* name) {
  return {name, nullptr, nullptr, gate_s16_chunked<Kernel, Finish>, cell_update_of<kInt8>, kHiddenUpdate, nullptr};
}
template <typename Kernel>
constexpr FcS16Variant fc_s16_variant(const char* name) {
  return {name, nullptr, nullptr, fc_s16_chunked<Kernel>};
}

}  // namespace blocked
}  // namespace qlstm

#endif  // QLSTM_SRC_BLOCKED_ROWS_S16_H_
