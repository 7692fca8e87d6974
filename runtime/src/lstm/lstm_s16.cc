// The 16x8 LSTM (docs/arithmetic.md §14): checks, the reference variant and the dispatch over the
// 16x8 variants (variants.cc). The walk, the cell update, the activations and o * tanh(c) are the
// int8 LSTM's; the 16x8 arithmetic is in reference/lstm_s16_reference.h.
#include "qlstm/lstm_s16.h"

#include "qlstm/activation_s16.h"
#include "qlstm/fixed_point.h"
#include "qlstm/kernels.h"
#include "lstm_sequence.h"
#include "reference/lstm_s16_reference.h"
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
  const FieldFailure f = check_lstm_fields(*p, /*hard_sigmoid_ok=*/false);
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

// The parameters, the context, the buffers: everything but the choice of variant.
qlstm_status check_call(const qlstm_lstm_s16_params* params, const qlstm_lstm_s16_context* ctx, const int16_t* input,
                        const int16_t* output) {
  const FieldFailure f = check_params(params);
  if (f.status != QLSTM_OK) return f.status;
  if (ctx == nullptr || ctx->cell_state == nullptr) return QLSTM_ERROR_NULL_POINTER;
  // Only the pointers' nullness matters to the buffer check.
  return check_sequence_buffers(params->dims.time_steps, params->output_steps, reinterpret_cast<const int8_t*>(input),
                                reinterpret_cast<const int8_t*>(output), ctx->scratch, ctx->scratch_bytes,
                                scratch_bytes_for(params->dims));
}

// A checked call: the variant's whole call if it has one, else its stages in the shared walk.
qlstm_status run_checked(const LstmS16Variant& variant, const qlstm_lstm_s16_params& params,
                         qlstm_lstm_s16_context& ctx, const int16_t* input, int16_t* output) {
  if (variant.sequence != nullptr) return variant.sequence(params, ctx, input, output);
  struct Stages {
    const LstmS16Variant& variant;
    const qlstm_gate_s16_params* gates;
    CellUpdateParams cell;
    HiddenUpdateParams hidden;
    int32_t H;
    void gate(int32_t g, const GateArgsOf<int16_t>& args, int16_t* out) const { variant.gate(gates[g], args, out); }
    void cell_update(int32_t count, const int16_t* f, const int16_t* i, const int16_t* g, int16_t* c) const {
      variant.cell_update(cell, count, f, i, g, c);
    }
    void hidden_update(int32_t rows, const int16_t* o, const int16_t* c, int16_t* h, ptrdiff_t stride) const {
      variant.hidden_update(hidden, rows, H, o, c, h, stride);
    }
  };
  const Stages stages = {
      variant, params.gates,
      cell_update_params(params.forget_times_cell_to_cell, params.input_times_cell_gate_to_cell, params.cell_clip),
      {params.output_times_tanh_cell_to_hidden, 0, params.cell_scale_power + kQ3_12FractionalBits},
      params.dims.hidden_size};
  constexpr int16_t kNoState = 0;  // symmetric: a stateless call's hidden state is 0
  run_lstm_sequence(lstm_sequence_of(params), stages, kNoState, static_cast<int16_t*>(ctx.scratch), ctx.cell_state,
                    ctx.hidden_state, input, output);
  return QLSTM_OK;
}

}  // namespace

const LstmS16Variant kLstmS16ReferenceVariant = {"reference", nullptr, nullptr, s16::gate_reference,
                                                 reference::cell_update, s16::hidden_update_reference, nullptr};

const LstmS16Variant* select_lstm_s16_variant(const LstmS16Variant* const* list, size_t count,
                                              const qlstm_lstm_s16_params& params) {
  return first_runnable_variant(list, count, params);
}

qlstm_status run_lstm_s16(const LstmS16Variant& variant, const qlstm_lstm_s16_params* params,
                          qlstm_lstm_s16_context* ctx, const int16_t* input, int16_t* output) {
  const qlstm_status st = check_call(params, ctx, input, output);
  if (st != QLSTM_OK) return st;
  if (variant.is_supported != nullptr && !variant.is_supported()) return QLSTM_ERROR_UNSUPPORTED;
  if (variant.can_run != nullptr && !variant.can_run(*params)) return QLSTM_ERROR_NO_VARIANT;
  return run_checked(variant, *params, *ctx, input, output);
}

qlstm_status run_lstm_s16_prechecked(const qlstm_lstm_s16_params& params, qlstm_lstm_s16_context& ctx,
                                     const int16_t* input, int16_t* output) {
  size_t count = 0;
  const LstmS16Variant* const* all = lstm_s16_variants(&count);
  const LstmS16Variant* variant = select_lstm_s16_variant(all, count, params);
  if (variant == nullptr) return QLSTM_ERROR_NO_VARIANT;
  return run_checked(*variant, params, ctx, input, output);
}

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
  const qlstm_status st = qlstm::check_call(params, ctx, input, output);
  if (st != QLSTM_OK) return st;
  return qlstm::run_lstm_s16_prechecked(*params, *ctx, input, output);
}

}  // extern "C"
