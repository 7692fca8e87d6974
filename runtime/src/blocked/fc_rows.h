// The fully connected op of the optimized variants (qlstm/fully_connected_s8.h), shared: for each
// input row, the outputs in chunks of kFcChunkRows, their dot products in whole blocks of four
// rows by the kernel's rows4 (the LSTM gate's building block, gate_rows.h), then requantized,
// offset and clamped by the kernel's FcFinish exactly as the reference does
// (fully_connected/fc_s8.cc, docs/arithmetic.md). A kernel supplies
//   struct Operand;  static void rows4(...);  static int32_t dot1(...);   as for gate_chunked
//   static constexpr int32_t kDot1TailRows;   rows after the last whole block that dot1 takes
//   struct FcFinish { explicit FcFinish(const qlstm_fc_s8_params& p);
//                     void operator()(const int32_t* acc, int32_t first, int32_t n, int8_t* y) const; };
//     y[k] = clamp(RQ_{first + k}(acc[k]) + output_zero_point), k < n
// The rows of a chunk after its last whole block go through dot1 when there are at most
// kDot1TailRows of them (or the layer has fewer than four outputs); otherwise one more block of
// four rows ends at the chunk's last row, and the rows it shares with the block before are
// recomputed to the same values.
#ifndef QLSTM_SRC_BLOCKED_FC_ROWS_H_
#define QLSTM_SRC_BLOCKED_FC_ROWS_H_

#include "blocked/gate_rows.h"
#include "qlstm/fixed_point.h"
#include "qlstm/fully_connected_s8.h"

namespace qlstm {
namespace blocked {

// One output at a time, for the kernels without a vector finish.
class ScalarFcFinish {
 public:
  explicit ScalarFcFinish(const qlstm_fc_s8_params& p)
      : p_(p), per_tensor_(fxp::RequantDoubleRounding::make(p.multipliers[0], p.shifts[0])) {}
  void operator()(const int32_t* acc, int32_t first, int32_t n, int8_t* y) const {
    for (int32_t k = 0; k < n; ++k) {
      const fxp::RequantDoubleRounding rq =
          p_.per_channel ? fxp::RequantDoubleRounding::make(p_.multipliers[first + k], p_.shifts[first + k])
                         : per_tensor_;
      const int32_t v = fxp::wrapping_add(rq(acc[k]), p_.output_zero_point);
      y[k] = static_cast<int8_t>(fxp::clamp(v, p_.activation_min, p_.activation_max));
    }
  }

 private:
  const qlstm_fc_s8_params& p_;
  fxp::RequantDoubleRounding per_tensor_;
};

// rows4 from a kernel's dot4 (gate_rows.h's contract), for the kernels that have no block call.
template <typename Dot>
struct Rows4OfDot4 : KernelDefaults {
  using Operand = PlainOperand;
  static constexpr int32_t kDot1TailRows = 1;  // a remainder of one row costs a quarter of a block
  static void rows4(const Operand& v, const int8_t* w, int32_t n, int32_t blocks, const int32_t* bias,
                    int32_t* acc) {
    for (int32_t b = 0; b < blocks; ++b) {
      for (int32_t k = 0; k < kRowsPerPass; ++k) acc[k] = bias[k];
      Dot::dot4(v.v, w, n, n, acc);
      w += static_cast<ptrdiff_t>(kRowsPerPass) * n;
      bias += kRowsPerPass;
      acc += kRowsPerPass;
    }
  }
  static int32_t dot1(const int8_t* v, const int8_t* w, int32_t n, int32_t acc) { return Dot::dot1(v, w, n, acc); }
};

// The outputs per chunk (their accumulators on the stack).
constexpr int32_t kFcChunkRows = 32;

template <typename Kernel>
void fc_chunked(const qlstm_fc_s8_params& p, const int8_t* input, int8_t* output) {
  const int32_t I = p.input_size, O = p.output_size;
  const typename Kernel::FcFinish finish(p);
  typename Kernel::Operand xo;
  // The closing block of a chunk of fewer than four rows starts up to three rows before acc.
  int32_t acc_area[kRowsPerPass + kFcChunkRows];
  int32_t* const acc = acc_area + kRowsPerPass;
  for (int32_t b = 0; b < p.rows; ++b) {
    const int8_t* x = input + static_cast<ptrdiff_t>(b) * I;
    int8_t* y = output + static_cast<ptrdiff_t>(b) * O;
    xo.prepare(x, I);
    for (int32_t c0 = 0; c0 < O; c0 += kFcChunkRows) {
      const int32_t n = O - c0 < kFcChunkRows ? O - c0 : kFcChunkRows;
      const int32_t blocks = n / kRowsPerPass;
      const int8_t* w = p.weights + static_cast<ptrdiff_t>(c0) * I;
      Kernel::rows4(xo, w, I, blocks, p.effective_bias + c0, acc);
      const int32_t tail = n - blocks * kRowsPerPass;
      if (tail > 0) {
        if (tail > Kernel::kDot1TailRows && O >= kRowsPerPass) {
          const int32_t last = n - kRowsPerPass;  // may be negative: rows of the previous chunk
          Kernel::rows4(xo, w + static_cast<ptrdiff_t>(last) * I, I, 1, p.effective_bias + c0 + last, acc + last);
        } else {
          for (int32_t r = n - tail; r < n; ++r) {
            acc[r] = Kernel::dot1(x, w + static_cast<ptrdiff_t>(r) * I, I, p.effective_bias[c0 + r]);
          }
        }
      }
      finish(acc, c0, n, y + c0);
    }
  }
}

}  // namespace blocked
}  // namespace qlstm

#endif  // QLSTM_SRC_BLOCKED_FC_ROWS_H_
