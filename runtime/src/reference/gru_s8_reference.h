// The GRU's reference stages (docs/arithmetic.md §13), each exposed for its own tests: the
// elementwise arithmetic and the row stages built from it (the reference variant's, which the
// optimized variants equal bit for bit; the step's order is the sequence driver's, gru_s8.cc).
#ifndef QLSTM_SRC_REFERENCE_GRU_S8_REFERENCE_H_
#define QLSTM_SRC_REFERENCE_GRU_S8_REFERENCE_H_

#include <stddef.h>
#include <stdint.h>

#include "qlstm/activation_s16.h"
#include "qlstm/fixed_point.h"
#include "qlstm/gru_s8.h"
#include "qlstm/kernels.h"

namespace qlstm {
namespace gru_reference {

// ---- Elementwise, each with its requantization RQ a callable int32 -> int32 (the reference's
// fxp::requantize_double_rounding of a qlstm_requant, or the same precomputed,
// fxp::RequantDoubleRounding, in the optimized variants' inner loops): one definition of each.
template <class Rq>
inline int32_t reset_product_q3_12_with(int16_t reset_q0_15, int16_t h_part_q3_12, const Rq& rq) {
  return rq(static_cast<int32_t>(reset_q0_15) * h_part_q3_12);  // |r * h_part| <= 2^30: exact in int32
}
inline int16_t new_gate_from_parts_q0_15(int16_t x_part_q3_12, int32_t gated_q3_12) {
  return tanh_q0_15(fxp::saturate_to_s16(fxp::wrapping_add(x_part_q3_12, gated_q3_12)), 0);  // Q3.12 already
}
template <class Rq>
inline int16_t updated_hidden_q0_15_with(int16_t update_q0_15, int16_t new_q0_15, int16_t hidden_q0_15, const Rq& rq) {
  // |diff| <= 65535 and |z| <= 32768, so |z * diff| < 2^31: exact in int32.
  const int32_t difference_q0_15 = static_cast<int32_t>(hidden_q0_15) - new_q0_15;
  return fxp::saturate_to_s16(fxp::wrapping_add(new_q0_15, rq(static_cast<int32_t>(update_q0_15) * difference_q0_15)));
}
template <class Rq>
inline int8_t hidden_to_output_s8_with(int16_t hidden_q0_15, const Rq& rq, int32_t zero_point) {
  return fxp::saturate_to_s8(fxp::wrapping_add(rq(hidden_q0_15), zero_point));
}
// The update and output row stages (below) with RQ a callable.
template <class Rq>
inline void update_with(const Rq& rq, int32_t count, const int16_t* update_q0_15, const int16_t* new_q0_15,
                        int16_t* hidden_q0_15) {
  for (int32_t k = 0; k < count; ++k) {
    hidden_q0_15[k] = updated_hidden_q0_15_with(update_q0_15[k], new_q0_15[k], hidden_q0_15[k], rq);
  }
}
template <class Rq>
inline void output_with(const Rq& rq, int32_t zero_point, int32_t rows, int32_t hidden_size,
                        const int16_t* hidden_q0_15, int8_t* y, ptrdiff_t y_row_stride) {
  for (int32_t b = 0; b < rows; ++b) {
    const int16_t* h = hidden_q0_15 + static_cast<ptrdiff_t>(b) * hidden_size;
    int8_t* row = y + b * y_row_stride;
    for (int32_t r = 0; r < hidden_size; ++r) row[r] = hidden_to_output_s8_with(h[r], rq, zero_point);
  }
}

// The same with a qlstm_requant.
// gated = RQ(r * h_part, reset_times_hidden): Q0.15 x Q3.12 -> Q3.12, not saturated.
int32_t reset_product_q3_12(int16_t reset_q0_15, int16_t h_part_q3_12, const qlstm_requant& reset_times_hidden);
// n = tanh_q0_15(sat16(x_part + gated), 0), the add wrapping in int32.
int16_t new_gate_q0_15(int16_t x_part_q3_12, int32_t gated_q3_12);
// h' = sat16(n + RQ(z * (h - n), update_times_difference)), the add wrapping in int32.
int16_t updated_hidden_q0_15(int16_t update_q0_15, int16_t new_q0_15, int16_t hidden_q0_15,
                             const qlstm_requant& update_times_difference);
// h8 = sat8(RQ(h, hidden_to_output) + zero_point), the add wrapping in int32.
int8_t hidden_to_output_s8(int16_t hidden_q0_15, const qlstm_requant& hidden_to_output, int32_t zero_point);

// ---- Row stages (kernels.h's GruS8Variant), for args.rows batch rows of args.hidden_size units;
// args.h (the int8 recurrent operand) is null at a stateless first step only (kernels.h).
// r or z is the LSTM's gate (§3) with sigmoid, so an LSTM variant's gate stage computes it: the
// driver makes each an LSTM gate block once per call, and the GRU variant of an ISA runs it by
// the LSTM variant's gate (out[rows][H]).
inline qlstm_gate_s8_params as_sigmoid_lstm_gate(const qlstm_gru_gate_s8_params& g) {
  return {g.input_to_q3_12,  g.input_weights,  g.input_effective_bias, g.hidden_to_q3_12,
          g.hidden_weights, g.hidden_effective_bias, QLSTM_ACTIVATION_SIGMOID, {{0, 0}, 0}};
}
template <const LstmS8Variant& kLstm>
void sigmoid_gate_of(const qlstm_gate_s8_params& g, const GateArgs& args, int16_t* out_q0_15) {
  kLstm.gate(g, args, out_q0_15);
}
// n from its two matmuls and r[rows][H]: new_q0_15[rows][H].
void new_gate(const qlstm_gru_gate_s8_params& g, const qlstm_requant& reset_times_hidden, const GateArgs& args,
              const int16_t* reset_q0_15, int16_t* new_q0_15);
// hidden_q0_15[k] = updated_hidden_q0_15(z[k], n[k], hidden_q0_15[k]), k < count.
void update(const qlstm_requant& update_times_difference, int32_t count, const int16_t* update_q0_15,
            const int16_t* new_q0_15, int16_t* hidden_q0_15);
// y[b][r] = hidden_to_output_s8(hidden_q0_15[b][r]); row b of y at y + b * y_row_stride.
void output(const qlstm_requant& hidden_to_output, int32_t zero_point, int32_t rows, int32_t hidden_size,
            const int16_t* hidden_q0_15, int8_t* y, ptrdiff_t y_row_stride);

}  // namespace gru_reference
}  // namespace qlstm

#endif  // QLSTM_SRC_REFERENCE_GRU_S8_REFERENCE_H_
