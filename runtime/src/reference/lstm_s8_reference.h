// The reference stages, exposed for the per-stage tests.
#ifndef QLSTM_SRC_REFERENCE_LSTM_S8_REFERENCE_H_
#define QLSTM_SRC_REFERENCE_LSTM_S8_REFERENCE_H_

#include "qlstm/kernels.h"

namespace qlstm {
namespace reference {

// bias + sum_j v[j] * w_row[j], modulo 2^32 (the Arm accumulate wraps): one matmul row (§3).
int32_t dot_s8_plus_bias(const int8_t* v, const int8_t* w_row, int32_t n, int32_t bias);
void gate(const qlstm_gate_s8_params& g, const GateArgs& a, int16_t* out_q0_15);
void cell_update(const CellUpdateParams& p, int32_t count, const int16_t* f_q0_15,
                 const int16_t* i_q0_15, const int16_t* g_q0_15, int16_t* cell);
// RQ(o * tanh(c)): the hidden value before its zero point and saturation (§6).
int32_t output_times_tanh_cell(const HiddenUpdateParams& p, int16_t o_q0_15, int16_t cell);
void hidden_update(const HiddenUpdateParams& p, int32_t rows, int32_t hidden_size,
                   const int16_t* o_q0_15, const int16_t* cell, int8_t* h_out,
                   ptrdiff_t h_row_stride);
bool is_supported();

}  // namespace reference
}  // namespace qlstm

#endif  // QLSTM_SRC_REFERENCE_LSTM_S8_REFERENCE_H_
