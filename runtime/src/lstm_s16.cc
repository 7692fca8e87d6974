// The 16x8 LSTM (docs/arithmetic.md §14): checks, the portable reference's 16x8 stages and the call.
// The walk, the cell update, the activations and o * tanh(c) are the int8 LSTM's.
#include "qlstm/lstm_s16.h"

#include "qlstm/activation_s16.h"
#include "qlstm/fixed_point.h"
#include "qlstm/kernels.h"
#include "lstm_sequence.h"
#include "reference/lstm_s8_reference.h"
#include "sequence_common.h"

namespace qlstm {
namespace {

constexpr int64_t kGateBuffers = 3;  // int16 [B][H] each, as the int8 LSTM's

bool dims_ok(const qlstm_lstm_dims& d) {
  return sequence_dims_ok(d.batch, d.time_steps, d.input_size, d.hidden_size,
                          kGateBuffers * static_cast<int64_t>(sizeof(int16_t)));
}

size_t scratch_bytes_for(const qlstm_lstm_dims& d) {
  return static_cast<size_t>(kGateBuffers * d.batch * d.hidden_size) * sizeof(int16_t);
}

FieldFailure check_params(const qlstm_lstm_s16_params* p) {
  if (p == nullptr) return {QLSTM_ERROR_NULL_POINTER, "params"};
  if (!dims_ok(p->dims)) return {QLSTM_ERROR_BAD_DIMS, "dims"};
  const FieldFailure f = check_lstm_fields(*p);
  if (f.status != QLSTM_OK) return f;
  // The gates' 64-bit requantization takes shifts up to QLSTM_S16_SHIFT_MAX only.
  for (int32_t g = 0; g < QLSTM_GATE_COUNT; ++g) {
    if (p->gates[g].input_to_q3_12.shift > QLSTM_S16_SHIFT_MAX) {
      return {QLSTM_ERROR_BAD_SHIFT, kLstmGateFieldNames[g][kInputShift]};
    }
    if (p->gates[g].hidden_to_q3_12.shift > QLSTM_S16_SHIFT_MAX) {
      return {QLSTM_ERROR_BAD_SHIFT, kLstmGateFieldNames[g][kHiddenShift]};
    }
  }
  return kNoFieldFailure;
}

// bias + sum_j v[j] * w_row[j], modulo 2^64.
int64_t dot_s16_plus_bias(const int16_t* v, const int8_t* w_row, int32_t n, int64_t bias) {
  int64_t acc = bias;
  for (int32_t j = 0; j < n; ++j) acc = fxp::wrapping_add_s64(acc, int64_t{int32_t{v[j]} * int32_t{w_row[j]}});
  return acc;
}

// One gate: each matmul requantized by RQ64 and added onto the Q3.12 value, saturated to int16
// after each add (the input part onto 0), then the int8 LSTM's activation.
void gate_s16(const qlstm_gate_s16_params& g, const GateArgsOf<int16_t>& a, int16_t* out_q0_15) {
  const int32_t is_tanh = g.activation == QLSTM_ACTIVATION_TANH;
  constexpr int32_t kGateLeftShift = 0;  // the pre-activation is already Q3.12
  const int32_t input_q15 = fxp::reduce_multiplier_q31_to_q15(g.input_to_q3_12.multiplier);
  const int32_t hidden_q15 = fxp::reduce_multiplier_q31_to_q15(g.hidden_to_q3_12.multiplier);
  for (int32_t b = 0; b < a.rows; ++b) {
    const int16_t* x = a.x + b * a.x_row_stride;
    const int16_t* h = a.h != nullptr ? a.h + b * a.h_row_stride : nullptr;
    int16_t* out = out_q0_15 + static_cast<ptrdiff_t>(b) * a.hidden_size;
    for (int32_t r = 0; r < a.hidden_size; ++r) {
      const int64_t acc_x = dot_s16_plus_bias(x, g.input_weights + static_cast<ptrdiff_t>(r) * a.input_size,
                                              a.input_size, g.input_effective_bias[r]);
      int32_t pre_q3_12 = fxp::saturate_to_s16(
          fxp::requantize_s64_round_half_up(acc_x, input_q15, g.input_to_q3_12.shift));
      if (h != nullptr) {
        const int64_t acc_h = dot_s16_plus_bias(h, g.hidden_weights + static_cast<ptrdiff_t>(r) * a.hidden_size,
                                                a.hidden_size, g.hidden_effective_bias[r]);
        // |pre| <= 2^15, so the int64 sum is exact.
        const int64_t sum =
            int64_t{pre_q3_12} + fxp::requantize_s64_round_half_up(acc_h, hidden_q15, g.hidden_to_q3_12.shift);
        pre_q3_12 = sum < fxp::kInt16Min ? fxp::kInt16Min : (sum > fxp::kInt16Max ? fxp::kInt16Max : static_cast<int32_t>(sum));
      }
      out[r] = activation_q0_15(static_cast<int16_t>(pre_q3_12), kGateLeftShift, is_tanh);
    }
  }
}

// h = sat16(RQ(o * tanh(c))): the int8 LSTM's product, an int16 result without zero point.
void hidden_update_s16(const HiddenUpdateParams& p, int32_t rows, int32_t hidden_size, const int16_t* o_q0_15,
                       const int16_t* cell, int16_t* h_out, ptrdiff_t h_row_stride) {
  for (int32_t b = 0; b < rows; ++b) {
    const ptrdiff_t base = static_cast<ptrdiff_t>(b) * hidden_size;
    int16_t* h = h_out + b * h_row_stride;
    for (int32_t r = 0; r < hidden_size; ++r) {
      h[r] = fxp::saturate_to_s16(reference::output_times_tanh_cell(p, o_q0_15[base + r], cell[base + r]));
    }
  }
}

struct ReferenceStages {
  const qlstm_gate_s16_params* gates;
  CellUpdateParams cell;
  HiddenUpdateParams hidden;
  int32_t H;
  void gate(int32_t g, const GateArgsOf<int16_t>& args, int16_t* out) const { gate_s16(gates[g], args, out); }
  void cell_update(int32_t count, const int16_t* f, const int16_t* i, const int16_t* g, int16_t* c) const {
    reference::cell_update(cell, count, f, i, g, c);
  }
  void hidden_update(int32_t rows, const int16_t* o, const int16_t* c, int16_t* h, ptrdiff_t stride) const {
    hidden_update_s16(hidden, rows, H, o, c, h, stride);
  }
};

}  // namespace
}  // namespace qlstm

extern "C" {

size_t qlstm_lstm_s16_scratch_bytes(const qlstm_lstm_dims* dims) {
  if (dims == nullptr || !qlstm::dims_ok(*dims)) return 0;
  return qlstm::scratch_bytes_for(*dims);
}

qlstm_status qlstm_lstm_s16_validate(const qlstm_lstm_s16_params* params, const char** field) {
  return qlstm::report(qlstm::check_params(params), field);
}

qlstm_status qlstm_lstm_s16_reset_state(const qlstm_lstm_s16_params* params, qlstm_lstm_s16_context* ctx) {
  const qlstm_status st = qlstm_lstm_s16_validate(params, nullptr);
  if (st != QLSTM_OK) return st;
  if (ctx == nullptr || ctx->cell_state == nullptr) return QLSTM_ERROR_NULL_POINTER;
  const int32_t count = params->dims.batch * params->dims.hidden_size;
  for (int32_t k = 0; k < count; ++k) ctx->cell_state[k] = 0;
  if (ctx->hidden_state != nullptr) {
    for (int32_t k = 0; k < count; ++k) ctx->hidden_state[k] = 0;
  }
  return QLSTM_OK;
}

qlstm_status qlstm_lstm_s16(const qlstm_lstm_s16_params* params, qlstm_lstm_s16_context* ctx, const int16_t* input,
                            int16_t* output) {
  const qlstm_status st = qlstm_lstm_s16_validate(params, nullptr);
  if (st != QLSTM_OK) return st;
  if (ctx == nullptr || ctx->cell_state == nullptr) return QLSTM_ERROR_NULL_POINTER;
  // Only the pointers' nullness matters to the buffer check.
  const qlstm_status buffers = qlstm::check_sequence_buffers(
      params->dims.time_steps, params->output_steps, reinterpret_cast<const int8_t*>(input),
      reinterpret_cast<const int8_t*>(output), ctx->scratch, ctx->scratch_bytes, qlstm::scratch_bytes_for(params->dims));
  if (buffers != QLSTM_OK) return buffers;
  const qlstm::ReferenceStages stages = {
      params->gates,
      qlstm::cell_update_params(params->forget_times_cell_to_cell, params->input_times_cell_gate_to_cell,
                                params->cell_clip),
      {params->output_times_tanh_cell_to_hidden, 0, params->cell_scale_power + qlstm::kQ3_12FractionalBits},
      params->dims.hidden_size};
  constexpr int16_t kNoState = 0;  // symmetric: a stateless call's hidden state is 0
  qlstm::run_lstm_sequence(qlstm::lstm_sequence_of(*params), stages, kNoState, static_cast<int16_t*>(ctx->scratch),
                           ctx->cell_state, ctx->hidden_state, input, output);
  return QLSTM_OK;
}

}  // extern "C"
