// Argument checks, buffer sizes and the sequence driver shared by every kernel variant.
#include "qlstm/lstm_s8.h"

#include "qlstm/activation_s16.h"
#include "qlstm/fixed_point.h"
#include "qlstm/kernels.h"
#include "input_projection.h"
#include "lstm_s8_walk.h"
#include "lstm_sequence.h"
#include "reference/lstm_s8_reference.h"
#include "sequence_common.h"

namespace qlstm {
namespace {

// Scratch: three int16 [B][H] gate buffers (forget, later reused for output; input; cell gate);
// with a repeated input, then (aligned) the input projection, int32 [4][B][H].
constexpr int64_t kGateBuffers = 3;
constexpr int64_t kGateBufferBytesPerUnit = kGateBuffers * static_cast<int64_t>(sizeof(int16_t));
constexpr int64_t kProjectionBytesPerUnit = QLSTM_GATE_COUNT * static_cast<int64_t>(sizeof(int32_t));

using Failure = FieldFailure;

bool dims_ok(const qlstm_lstm_dims& d, bool input_repeated = false) {
  return sequence_dims_ok(d.batch, d.time_steps, d.input_size, d.hidden_size,
                          kGateBufferBytesPerUnit + (input_repeated ? kProjectionBytesPerUnit + 1 : 0));
}

// The line of each HardSigmoid gate (any offset is summed in 64 bits: gate_activation.h).
#define QLSTM_HARD_SIGMOID_FIELDS(g) {"gates[" g "].hard_sigmoid.slope.multiplier", "gates[" g "].hard_sigmoid.slope.shift"}
constexpr const char* kHardSigmoidFieldNames[QLSTM_GATE_COUNT][2] = {
    QLSTM_HARD_SIGMOID_FIELDS("forget"), QLSTM_HARD_SIGMOID_FIELDS("input"), QLSTM_HARD_SIGMOID_FIELDS("cell"),
    QLSTM_HARD_SIGMOID_FIELDS("output")};
#undef QLSTM_HARD_SIGMOID_FIELDS

Failure check_params(const qlstm_lstm_s8_params* p) {
  if (p == nullptr) return {QLSTM_ERROR_NULL_POINTER, "params"};
  if (p->input_repeated != 0 && p->input_repeated != 1) return {QLSTM_ERROR_BAD_INPUT_STEPS, "input_repeated"};
  if (!dims_ok(p->dims, p->input_repeated != 0)) return {QLSTM_ERROR_BAD_DIMS, "dims"};
  const Failure f = check_lstm_fields(*p, /*hard_sigmoid_ok=*/true);
  if (f.status != QLSTM_OK) return f;
  for (int32_t g = 0; g < QLSTM_GATE_COUNT; ++g) {
    if (p->gates[g].activation != QLSTM_ACTIVATION_HARD_SIGMOID) continue;
    const Failure line = check_requant(p->gates[g].hard_sigmoid.slope, kHardSigmoidFieldNames[g][0],
                                       kHardSigmoidFieldNames[g][1]);
    if (line.status != QLSTM_OK) return line;
  }
  return check_output_zero_point(p->output_zero_point);
}

size_t scratch_bytes_for(const qlstm_lstm_dims& d) {
  return static_cast<size_t>(kGateBuffers * d.batch * d.hidden_size) * sizeof(int16_t);
}

// A repeated input's projection (input_projection.h), after the gate buffers.
const int32_t* repeated_input_projection(const qlstm_lstm_s8_params& params, void* scratch, const int8_t* input) {
  const qlstm_lstm_dims& d = params.dims;
  if (params.input_repeated == 0 || d.time_steps == 0) return nullptr;  // T == 0: no step reads it (input may be NULL)
  return project_repeated_input(params.gates, QLSTM_GATE_COUNT, d.batch, d.input_size, d.hidden_size, input, scratch,
                                scratch_bytes_for(d));
}

size_t call_scratch_bytes_for(const qlstm_lstm_s8_params& p) {
  if (p.input_repeated == 0) return scratch_bytes_for(p.dims);
  return scratch_with_projection(scratch_bytes_for(p.dims), QLSTM_GATE_COUNT, p.dims.batch, p.dims.hidden_size);
}

// The parameters, the context, the buffers: everything but the choice of variant.
qlstm_status check_call(const qlstm_lstm_s8_params* params, const qlstm_lstm_s8_context* ctx,
                        const int8_t* input, const int8_t* output) {
  const Failure f = check_params(params);
  if (f.status != QLSTM_OK) return f.status;
  if (ctx == nullptr || ctx->cell_state == nullptr) return QLSTM_ERROR_NULL_POINTER;
  return check_sequence_buffers(params->dims.time_steps, params->output_steps, input, output, ctx->scratch,
                                ctx->scratch_bytes, call_scratch_bytes_for(*params));
}

// The generic gate stage: the variant's, on the call's gates.
struct VariantGates {
  const LstmS8Variant* variant;
  const qlstm_gate_s8_params* gates;
};
void variant_gate(const void* prepared, int32_t g, const GateArgs& args, int16_t* out) {
  const VariantGates& v = *static_cast<const VariantGates*>(prepared);
  v.variant->gate(v.gates[g], args, out);
}

// A checked call with a variant that supports it: its whole sequence, or its stages in the shared
// sequence loop.
qlstm_status run_checked(const LstmS8Variant& variant, const qlstm_lstm_s8_params* params,
                         qlstm_lstm_s8_context* ctx, const int8_t* input, int8_t* output) {
  if (variant.sequence != nullptr) return variant.sequence(*params, *ctx, input, output);
  const VariantGates gates = {&variant, params->gates};
  return run_lstm_s8_walk(*params, *ctx, input, output, variant_gate, &gates, variant.cell_update,
                          variant.hidden_update);
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

qlstm_status run_lstm_s8_walk(const qlstm_lstm_s8_params& params, qlstm_lstm_s8_context& ctx, const int8_t* input,
                              int8_t* output, PreparedGateFn gate, const void* prepared, CellUpdateFn cell_update,
                              HiddenUpdateFn hidden_update) {
  struct Stages {
    PreparedGateFn gate_fn;
    const void* prepared;
    CellUpdateFn cell_fn;
    HiddenUpdateFn hidden_fn;
    CellUpdateParams cell;
    HiddenUpdateParams hidden;
    int32_t H;
    void gate(int32_t g, const GateArgs& args, int16_t* out) const { gate_fn(prepared, g, args, out); }
    void cell_update(int32_t count, const int16_t* f, const int16_t* i, const int16_t* g, int16_t* c) const {
      cell_fn(cell, count, f, i, g, c);
    }
    void hidden_update(int32_t rows, const int16_t* o, const int16_t* c, int8_t* h, ptrdiff_t stride) const {
      hidden_fn(hidden, rows, H, o, c, h, stride);
    }
  };
  const Stages stages = {
      gate,
      prepared,
      cell_update,
      hidden_update,
      cell_update_params(params.forget_times_cell_to_cell, params.input_times_cell_gate_to_cell, params.cell_clip),
      {params.output_times_tanh_cell_to_hidden, params.output_zero_point,
       params.cell_scale_power + kQ3_12FractionalBits},
      params.dims.hidden_size};
  const int32_t* const projection = repeated_input_projection(params, ctx.scratch, input);
  run_lstm_sequence(lstm_sequence_of(params), stages, static_cast<int8_t>(params.output_zero_point),
                    static_cast<int16_t*>(ctx.scratch), ctx.cell_state, ctx.hidden_state, input, output, projection);
  return QLSTM_OK;
}

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

size_t qlstm_lstm_s8_call_scratch_bytes(const qlstm_lstm_s8_params* params) {
  if (params == nullptr || (params->input_repeated != 0 && params->input_repeated != 1) ||
      !qlstm::dims_ok(params->dims, params->input_repeated != 0)) {
    return 0;
  }
  return qlstm::call_scratch_bytes_for(*params);
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
