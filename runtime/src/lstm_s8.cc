// Argument checks, buffer sizes and the sequence driver shared by every kernel variant.
#include "qlstm/lstm_s8.h"

#include "qlstm/activation_s16.h"
#include "qlstm/fixed_point.h"
#include "qlstm/kernels.h"
#include "sequence_common.h"

namespace qlstm {
namespace {

// Scratch: three int16 [B][H] gate buffers (forget, later reused for output; input; cell gate).
constexpr int64_t kGateBuffers = 3;

using Failure = FieldFailure;

bool dims_ok(const qlstm_lstm_dims& d) {
  return sequence_dims_ok(d.batch, d.time_steps, d.input_size, d.hidden_size,
                          kGateBuffers * static_cast<int64_t>(sizeof(int16_t)));
}

#define QLSTM_GATE_FIELDS(g)                                                              \
  {                                                                                       \
    "gates[" g "].input_weights", "gates[" g "].input_effective_bias",                    \
        "gates[" g "].hidden_weights", "gates[" g "].hidden_effective_bias",              \
        "gates[" g "].input_to_q3_12.multiplier", "gates[" g "].input_to_q3_12.shift",    \
        "gates[" g "].hidden_to_q3_12.multiplier", "gates[" g "].hidden_to_q3_12.shift",  \
        "gates[" g "].activation"                                                         \
  }
enum LstmGateField { kActivation = kGateMatmulFieldCount, kGateFieldCount };
const char* const kGateFieldNames[QLSTM_GATE_COUNT][kGateFieldCount] = {
    QLSTM_GATE_FIELDS("forget"), QLSTM_GATE_FIELDS("input"), QLSTM_GATE_FIELDS("cell"),
    QLSTM_GATE_FIELDS("output")};
#undef QLSTM_GATE_FIELDS

Failure check_params(const qlstm_lstm_s8_params* p) {
  if (p == nullptr) return {QLSTM_ERROR_NULL_POINTER, "params"};
  if (!dims_ok(p->dims)) return {QLSTM_ERROR_BAD_DIMS, "dims"};
  const Failure options = check_sequence_options(p->layout, p->time_direction, p->output_steps, p->output_width,
                                                 p->dims.batch, p->dims.time_steps, p->dims.hidden_size);
  if (options.status != QLSTM_OK) return options;
  for (int32_t g = 0; g < QLSTM_GATE_COUNT; ++g) {
    const qlstm_gate_s8_params& gate = p->gates[g];
    const char* const* names = kGateFieldNames[g];
    const Failure f = check_gate_matmuls(gate, names);
    if (f.status != QLSTM_OK) return f;
    if (gate.activation != QLSTM_ACTIVATION_SIGMOID && gate.activation != QLSTM_ACTIVATION_TANH) {
      return {QLSTM_ERROR_BAD_ACTIVATION, names[kActivation]};
    }
  }
  Failure f = check_requant(p->forget_times_cell_to_cell, "forget_times_cell_to_cell.multiplier",
                            "forget_times_cell_to_cell.shift");
  if (f.status != QLSTM_OK) return f;
  f = check_requant(p->input_times_cell_gate_to_cell, "input_times_cell_gate_to_cell.multiplier",
                    "input_times_cell_gate_to_cell.shift");
  if (f.status != QLSTM_OK) return f;
  f = check_requant(p->output_times_tanh_cell_to_hidden,
                    "output_times_tanh_cell_to_hidden.multiplier",
                    "output_times_tanh_cell_to_hidden.shift");
  if (f.status != QLSTM_OK) return f;
  if (p->cell_scale_power < QLSTM_CELL_SCALE_POWER_MIN ||
      p->cell_scale_power > QLSTM_CELL_SCALE_POWER_MAX) {
    return {QLSTM_ERROR_BAD_CELL_SCALE, "cell_scale_power"};
  }
  if (p->cell_clip > QLSTM_CELL_CLIP_MAX) return {QLSTM_ERROR_BAD_CELL_CLIP, "cell_clip"};
  return check_output_zero_point(p->output_zero_point);
}

size_t scratch_bytes_for(const qlstm_lstm_dims& d) {
  return static_cast<size_t>(kGateBuffers * d.batch * d.hidden_size) * sizeof(int16_t);
}

// The parameters, the context, the buffers: everything but the choice of variant.
qlstm_status check_call(const qlstm_lstm_s8_params* params, const qlstm_lstm_s8_context* ctx,
                        const int8_t* input, const int8_t* output) {
  const Failure f = check_params(params);
  if (f.status != QLSTM_OK) return f.status;
  if (ctx == nullptr || ctx->cell_state == nullptr) return QLSTM_ERROR_NULL_POINTER;
  return check_sequence_buffers(params->dims.time_steps, params->output_steps, input, output, ctx->scratch,
                                ctx->scratch_bytes, scratch_bytes_for(params->dims));
}

// A checked call with a variant that supports it: its whole sequence, or its stages in the shared
// sequence loop.
qlstm_status run_checked(const LstmS8Variant& variant, const qlstm_lstm_s8_params* params,
                         qlstm_lstm_s8_context* ctx, const int8_t* input, int8_t* output) {
  if (variant.sequence != nullptr) return variant.sequence(*params, *ctx, input, output);

  const qlstm_lstm_dims& d = params->dims;
  const int32_t B = d.batch, T = d.time_steps, I = d.input_size, H = d.hidden_size;
  const ptrdiff_t BH = static_cast<ptrdiff_t>(B) * H;
  const bool stateful = ctx->hidden_state != nullptr;
  int16_t* const cell = ctx->cell_state;
  if (!stateful) {
    for (ptrdiff_t k = 0; k < BH; ++k) cell[k] = 0;
  }

  // Element strides between consecutive time steps and between batch rows; W elements per
  // output position. Only the final state: one [B][W] output that every step overwrites (time
  // stride 0). A step reads its recurrent input, the previous h, in every gate stage before the
  // hidden stage writes the new one, so the in-place update is the same computation.
  const bool final_only = params->output_steps == QLSTM_OUTPUT_FINAL;
  const SequenceStrides strides =
      sequence_strides(params->layout, params->output_steps, params->output_width, B, T, I, H);
  const ptrdiff_t x_step = strides.x_step, x_row = strides.x_row;
  const ptrdiff_t y_step = strides.y_step, y_row = strides.y_row;
  if (final_only && T == 0) {
    // No step: the final state is the initial one (the carried state, or h = zero point).
    for (int32_t b = 0; b < B; ++b) {
      for (int32_t r = 0; r < H; ++r) {
        output[b * y_row + r] =
            stateful ? ctx->hidden_state[b * H + r] : static_cast<int8_t>(params->output_zero_point);
      }
    }
  }
  // Reverse: step s processes time T-1-s, and its recurrent input is the h it wrote at step s-1.
  const bool reverse = params->time_direction == QLSTM_TIME_REVERSE;

  int16_t* const forget_q0_15 = static_cast<int16_t*>(ctx->scratch);
  int16_t* const input_q0_15 = forget_q0_15 + BH;
  int16_t* const cell_gate_q0_15 = input_q0_15 + BH;
  int16_t* const output_q0_15 = forget_q0_15;  // the forget gate is dead after the cell update

  const CellUpdateParams cell_params = {
      params->forget_times_cell_to_cell, params->input_times_cell_gate_to_cell,
      params->cell_clip > 0 ? -params->cell_clip : fxp::kInt16Min,
      params->cell_clip > 0 ? params->cell_clip : fxp::kInt16Max};
  const HiddenUpdateParams hidden_params = {params->output_times_tanh_cell_to_hidden,
                                            params->output_zero_point,
                                            params->cell_scale_power + kQ3_12FractionalBits};
  const qlstm_gate_s8_params* const gates = params->gates;

  for (int32_t s = 0; s < T; ++s) {
    const int32_t t = reverse ? T - 1 - s : s;
    GateArgs args = {B, I, H, input + t * x_step, x_row, nullptr, H};
    if (s > 0) {
      args.h = output + (reverse ? t + 1 : t - 1) * y_step;
      args.h_row_stride = y_row;
    } else if (stateful) {
      args.h = ctx->hidden_state;
    }
    variant.gate(gates[QLSTM_GATE_FORGET], args, forget_q0_15);
    variant.gate(gates[QLSTM_GATE_INPUT], args, input_q0_15);
    variant.gate(gates[QLSTM_GATE_CELL], args, cell_gate_q0_15);
    variant.cell_update(cell_params, static_cast<int32_t>(BH), forget_q0_15, input_q0_15,
                        cell_gate_q0_15, cell);
    variant.gate(gates[QLSTM_GATE_OUTPUT], args, output_q0_15);
    variant.hidden_update(hidden_params, B, H, output_q0_15, cell, output + t * y_step, y_row);
  }

  if (stateful && T > 0) {
    const int8_t* last = output + (reverse ? 0 : T - 1) * y_step;
    for (int32_t b = 0; b < B; ++b) {
      for (int32_t r = 0; r < H; ++r) ctx->hidden_state[b * H + r] = last[b * y_row + r];
    }
  }
  return QLSTM_OK;
}

// A checked call, run by the first entry of `list` that accepts it.
qlstm_status dispatch_checked(const LstmS8Variant* const* list, size_t count,
                              const qlstm_lstm_s8_params* params, qlstm_lstm_s8_context* ctx,
                              const int8_t* input, int8_t* output) {
  const LstmS8Variant* variant = select_lstm_s8_variant(list, count, *params);
  if (variant == nullptr) return QLSTM_ERROR_NO_VARIANT;
  return run_checked(*variant, params, ctx, input, output);
}

// The sequence of the "default" entry: a checked call, dispatched over the one list.
qlstm_status run_default(const qlstm_lstm_s8_params& params, qlstm_lstm_s8_context& ctx,
                         const int8_t* input, int8_t* output) {
  size_t count = 0;
  const LstmS8Variant* const* all = lstm_s8_variants(&count);
  return dispatch_checked(all, count, &params, &ctx, input, output);
}

const LstmS8Variant kDefaultVariant = {"default", nullptr, nullptr, nullptr, nullptr, nullptr, run_default};

}  // namespace

qlstm_status run_lstm_s8(const LstmS8Variant& variant, const qlstm_lstm_s8_params* params,
                         qlstm_lstm_s8_context* ctx, const int8_t* input, int8_t* output) {
  const qlstm_status st = check_call(params, ctx, input, output);
  if (st != QLSTM_OK) return st;
  if (variant.is_supported != nullptr && !variant.is_supported()) return QLSTM_ERROR_UNSUPPORTED;
  if (variant.can_run != nullptr && !variant.can_run(*params)) return QLSTM_ERROR_NO_VARIANT;
  return run_checked(variant, params, ctx, input, output);
}

const LstmS8Variant* select_lstm_s8_variant(const LstmS8Variant* const* list, size_t count,
                                            const qlstm_lstm_s8_params& params) {
  return first_runnable_variant(list, count, params);
}

qlstm_status run_lstm_s8_dispatch(const LstmS8Variant* const* list, size_t count,
                                  const qlstm_lstm_s8_params* params, qlstm_lstm_s8_context* ctx,
                                  const int8_t* input, int8_t* output) {
  const qlstm_status st = check_call(params, ctx, input, output);
  if (st != QLSTM_OK) return st;
  return dispatch_checked(list, count, params, ctx, input, output);
}

qlstm_status run_lstm_s8_prechecked(const LstmS8Variant* variant, const qlstm_lstm_s8_params& params,
                                    qlstm_lstm_s8_context& ctx, const int8_t* input, int8_t* output) {
  if (variant == nullptr || variant == &kDefaultVariant) return run_default(params, ctx, input, output);
  if (variant->is_supported != nullptr && !variant->is_supported()) return QLSTM_ERROR_UNSUPPORTED;
  if (variant->can_run != nullptr && !variant->can_run(params)) return QLSTM_ERROR_NO_VARIANT;
  return run_checked(*variant, &params, &ctx, input, output);
}

const LstmS8Variant& lstm_s8_default_variant() { return kDefaultVariant; }

const char* gate_name(int32_t gate_index) {
  switch (gate_index) {
    case QLSTM_GATE_FORGET: return "forget";
    case QLSTM_GATE_INPUT: return "input";
    case QLSTM_GATE_CELL: return "cell";
    case QLSTM_GATE_OUTPUT: return "output";
    default: return "?";
  }
}

}  // namespace qlstm

extern "C" {

size_t qlstm_lstm_s8_scratch_bytes(const qlstm_lstm_dims* dims) {
  if (dims == nullptr || !qlstm::dims_ok(*dims)) return 0;
  return qlstm::scratch_bytes_for(*dims);
}

qlstm_status qlstm_lstm_s8_validate(const qlstm_lstm_s8_params* params, const char** field) {
  const qlstm::Failure f = qlstm::check_params(params);
  if (field != nullptr) *field = f.field;
  return f.status;
}

qlstm_status qlstm_lstm_s8_reset_state(const qlstm_lstm_s8_params* params,
                                       qlstm_lstm_s8_context* ctx) {
  const qlstm::Failure f = qlstm::check_params(params);
  if (f.status != QLSTM_OK) return f.status;
  if (ctx == nullptr || ctx->cell_state == nullptr) return QLSTM_ERROR_NULL_POINTER;
  const int32_t count = params->dims.batch * params->dims.hidden_size;
  for (int32_t k = 0; k < count; ++k) ctx->cell_state[k] = 0;
  if (ctx->hidden_state != nullptr) {
    for (int32_t k = 0; k < count; ++k) {
      ctx->hidden_state[k] = static_cast<int8_t>(params->output_zero_point);
    }
  }
  return QLSTM_OK;
}

qlstm_status qlstm_lstm_s8(const qlstm_lstm_s8_params* params, qlstm_lstm_s8_context* ctx,
                           const int8_t* input, int8_t* output) {
  return qlstm::run_lstm_s8(qlstm::lstm_s8_default_variant(), params, ctx, input, output);
}

}  // extern "C"
