// The GRU's argument checks, buffer sizes, sequence walk (docs/arithmetic.md §13, §7;
// gru_s8_walk.h) and dispatch over its variants (kernels.h): a variant's whole call when it has
// one, else its stages by the walk.
#include "qlstm/gru_s8.h"

#include "gru_s8_walk.h"
#include "input_projection.h"
#include "qlstm/fixed_point.h"
#include "qlstm/kernels.h"
#include "reference/gru_s8_reference.h"
#include "sequence_common.h"

namespace qlstm {
namespace {

// Scratch: the int16 [B][H] buffers r, z, n and the state of a stateless call, then the int8
// [B][H] recurrent operand of a stateful call's first step (h8 of the given state).
constexpr int64_t kInt16Buffers = 4;
constexpr int64_t kScratchBytesPerUnit =
    kInt16Buffers * static_cast<int64_t>(sizeof(int16_t)) + static_cast<int64_t>(sizeof(int8_t));

bool dims_ok(const qlstm_gru_dims& d) {
  return sequence_dims_ok(d.batch, d.time_steps, d.input_size, d.hidden_size, kScratchBytesPerUnit);
}

size_t scratch_bytes_for(const qlstm_gru_dims& d) {
  return static_cast<size_t>(kScratchBytesPerUnit * d.batch * d.hidden_size);
}

// With a repeated input, its projection's [3][B][H] after the buffers (input_projection.h).
size_t call_scratch_bytes_for(const qlstm_gru_s8_params& p) {
  if (p.input_repeated == 0) return scratch_bytes_for(p.dims);
  return scratch_with_projection(scratch_bytes_for(p.dims), QLSTM_GRU_GATE_COUNT, p.dims.batch, p.dims.hidden_size);
}

#define QLSTM_GRU_GATE_FIELDS(g)                                                                   \
  {                                                                                                \
    "gates[" g "].input_weights", "gates[" g "].input_effective_bias", "gates[" g "].hidden_weights", \
        "gates[" g "].hidden_effective_bias", "gates[" g "].input_to_q3_12.multiplier",            \
        "gates[" g "].input_to_q3_12.shift", "gates[" g "].hidden_to_q3_12.multiplier",            \
        "gates[" g "].hidden_to_q3_12.shift"                                                       \
  }
const char* const kGruGateFieldNames[QLSTM_GRU_GATE_COUNT][kGateMatmulFieldCount] = {
    QLSTM_GRU_GATE_FIELDS("reset"), QLSTM_GRU_GATE_FIELDS("update"), QLSTM_GRU_GATE_FIELDS("new")};
#undef QLSTM_GRU_GATE_FIELDS

FieldFailure check_params(const qlstm_gru_s8_params* p) {
  if (p == nullptr) return {QLSTM_ERROR_NULL_POINTER, "params"};
  if (!dims_ok(p->dims)) return {QLSTM_ERROR_BAD_DIMS, "dims"};
  FieldFailure f = check_sequence_options(p->layout, p->time_direction, p->output_steps, p->output_width,
                                          p->dims.batch, p->dims.time_steps, p->dims.hidden_size);
  if (f.status != QLSTM_OK) return f;
  for (int32_t g = 0; g < QLSTM_GRU_GATE_COUNT; ++g) {
    f = check_gate_matmuls(p->gates[g], kGruGateFieldNames[g]);
    if (f.status != QLSTM_OK) return f;
  }
  if (p->new_gate_zero_state_bias == nullptr) return {QLSTM_ERROR_NULL_POINTER, "new_gate_zero_state_bias"};
  f = check_requant(p->reset_times_hidden_to_q3_12, "reset_times_hidden_to_q3_12.multiplier",
                    "reset_times_hidden_to_q3_12.shift");
  if (f.status != QLSTM_OK) return f;
  f = check_requant(p->update_times_difference_to_q0_15, "update_times_difference_to_q0_15.multiplier",
                    "update_times_difference_to_q0_15.shift");
  if (f.status != QLSTM_OK) return f;
  f = check_requant(p->hidden_q0_15_to_output, "hidden_q0_15_to_output.multiplier", "hidden_q0_15_to_output.shift");
  if (f.status != QLSTM_OK) return f;
  if (p->input_repeated != 0 && p->input_repeated != 1) return {QLSTM_ERROR_BAD_INPUT_STEPS, "input_repeated"};
  return check_output_zero_point(p->output_zero_point);
}

qlstm_status check_call(const qlstm_gru_s8_params* params, const qlstm_gru_s8_context* ctx, const int8_t* input,
                        const int8_t* output) {
  const FieldFailure f = check_params(params);
  if (f.status != QLSTM_OK) return f.status;
  if (ctx == nullptr) return QLSTM_ERROR_NULL_POINTER;
  return check_sequence_buffers(params->dims.time_steps, params->output_steps, input, output, ctx->scratch,
                                ctx->scratch_bytes, call_scratch_bytes_for(*params));
}

// The stages of a variant, and the call's gates for them.
struct StagePrepared {
  const GruS8Variant& v;
  const qlstm_gru_s8_params& p;
  GruCallGates gates;
};

void stage_step(const void* prepared, const GateArgs& args, const GruStepBuffers& buffers, int16_t* hidden_q0_15,
                int8_t* y, ptrdiff_t y_row_stride) {
  const StagePrepared& s = *static_cast<const StagePrepared*>(prepared);
  const GruS8Variant& v = s.v;
  const qlstm_gru_s8_params& p = s.p;
  v.sigmoid_gate(s.gates.reset, gate_args(args, QLSTM_GRU_GATE_RESET), buffers.reset_q0_15);
  v.sigmoid_gate(s.gates.update, gate_args(args, QLSTM_GRU_GATE_UPDATE), buffers.update_q0_15);
  v.new_gate(s.gates.new_gate_for(args), p.reset_times_hidden_to_q3_12, gate_args(args, QLSTM_GRU_GATE_NEW),
             buffers.reset_q0_15, buffers.new_q0_15);
  v.update(p.update_times_difference_to_q0_15, args.rows * args.hidden_size, buffers.update_q0_15, buffers.new_q0_15,
           hidden_q0_15);
  v.output(p.hidden_q0_15_to_output, p.output_zero_point, args.rows, args.hidden_size, hidden_q0_15, y, y_row_stride);
}

// A checked call with a variant that supports it: its whole call, else its stages by the walk.
qlstm_status run_checked(const GruS8Variant& v, const qlstm_gru_s8_params& p, qlstm_gru_s8_context& ctx,
                         const int8_t* input, int8_t* output) {
  if (v.sequence != nullptr) return v.sequence(p, ctx, input, output);
  const StagePrepared prepared = {v, p, GruCallGates(p)};
  return run_gru_s8_walk(p, ctx, input, output, stage_step, &prepared, v.output);
}

// A checked call, run by the best variant of gru_s8_variants() that accepts it.
qlstm_status run_default(const qlstm_gru_s8_params& p, qlstm_gru_s8_context& ctx, const int8_t* input,
                         int8_t* output) {
  size_t count = 0;
  const GruS8Variant* const* all = gru_s8_variants(&count);
  const GruS8Variant* v = select_gru_s8_variant(all, count, p);
  if (v == nullptr) return QLSTM_ERROR_NO_VARIANT;
  return run_checked(*v, p, ctx, input, output);
}

// A checked call with the given variant, if this CPU has it and it accepts the call.
qlstm_status run_if_supported(const GruS8Variant& v, const qlstm_gru_s8_params& p, qlstm_gru_s8_context& ctx,
                              const int8_t* input, int8_t* output) {
  if (v.is_supported != nullptr && !v.is_supported()) return QLSTM_ERROR_UNSUPPORTED;
  if (v.can_run != nullptr && !v.can_run(p)) return QLSTM_ERROR_NO_VARIANT;
  return run_checked(v, p, ctx, input, output);
}

}  // namespace

qlstm_status run_gru_s8_walk(const qlstm_gru_s8_params& p, qlstm_gru_s8_context& ctx, const int8_t* input,
                             int8_t* output, GruStepFn step, const void* prepared, GruOutputFn output_stage) {
  const qlstm_gru_dims& d = p.dims;
  const int32_t B = d.batch, T = d.time_steps, I = d.input_size, H = d.hidden_size;
  const ptrdiff_t BH = static_cast<ptrdiff_t>(B) * H;

  int16_t* const scratch_q0_15 = static_cast<int16_t*>(ctx.scratch);
  const GruStepBuffers buffers = {scratch_q0_15, scratch_q0_15 + BH, scratch_q0_15 + 2 * BH};
  int16_t* hidden_q0_15 = ctx.hidden_q0_15;
  // The first step's recurrent operand: none for a stateless call (its recurrent terms are a zero
  // state's, from the block), else h8 of the given state.
  const int8_t* initial_h8 = nullptr;
  if (hidden_q0_15 == nullptr) {
    hidden_q0_15 = scratch_q0_15 + 3 * BH;
    for (ptrdiff_t k = 0; k < BH; ++k) hidden_q0_15[k] = 0;
  } else {
    int8_t* const h8 = reinterpret_cast<int8_t*>(scratch_q0_15 + kInt16Buffers * BH);
    output_stage(p.hidden_q0_15_to_output, p.output_zero_point, B, H, hidden_q0_15, h8, H);
    initial_h8 = h8;
  }

  const SequenceStrides s = sequence_strides(p.layout, p.output_steps, p.output_width, B, T, I, H, p.input_repeated != 0);
  // A repeated input's projection, once per call (T == 0: no step reads it, the input may be NULL).
  const int32_t* const projection =
      p.input_repeated != 0 && T > 0
          ? project_repeated_input(p.gates, QLSTM_GRU_GATE_COUNT, B, I, H, input, ctx.scratch, scratch_bytes_for(d))
          : nullptr;
  if (p.output_steps != QLSTM_OUTPUT_ALL_STEPS && T == 0) {
    // No step: the final state is the initial one.
    output_stage(p.hidden_q0_15_to_output, p.output_zero_point, B, H, hidden_q0_15, output, s.y_row);
  }
  // Reverse: step k processes time T-1-k, and its recurrent operand is the row it wrote at k-1.
  const bool reverse = p.time_direction == QLSTM_TIME_REVERSE;
  const int32_t steps = steps_run(p.output_steps, T);
  for (int32_t k = 0; k < steps; ++k) {
    const int32_t t = reverse ? T - 1 - k : k;
    GateArgs args = {B, I, H, input + t * s.x_step, s.x_row, initial_h8, H};
    args.x_acc = projection;  // the step gives each gate its part (gate_args)
    if (k > 0) {
      args.h = output + (reverse ? t + 1 : t - 1) * s.y_step;
      args.h_row_stride = s.y_row;
    }
    step(prepared, args, buffers, hidden_q0_15, output + t * s.y_step, s.y_row);
  }
  return QLSTM_OK;
}

const GruS8Variant* select_gru_s8_variant(const GruS8Variant* const* list, size_t count,
                                          const qlstm_gru_s8_params& params) {
  return first_runnable_variant(list, count, params);
}

qlstm_status run_gru_s8(const GruS8Variant& variant, const qlstm_gru_s8_params* params, qlstm_gru_s8_context* ctx,
                        const int8_t* input, int8_t* output) {
  const qlstm_status st = check_call(params, ctx, input, output);
  if (st != QLSTM_OK) return st;
  return run_if_supported(variant, *params, *ctx, input, output);
}

qlstm_status run_gru_s8_prechecked(const GruS8Variant* variant, const qlstm_gru_s8_params& params,
                                   qlstm_gru_s8_context& ctx, const int8_t* input, int8_t* output) {
  if (variant == nullptr) return run_default(params, ctx, input, output);
  return run_if_supported(*variant, params, ctx, input, output);
}

}  // namespace qlstm

extern "C" {

size_t qlstm_gru_s8_scratch_bytes(const qlstm_gru_dims* dims) {
  if (dims == nullptr || !qlstm::dims_ok(*dims)) return 0;
  return qlstm::scratch_bytes_for(*dims);
}

size_t qlstm_gru_s8_call_scratch_bytes(const qlstm_gru_s8_params* params) {
  if (params == nullptr || !qlstm::dims_ok(params->dims) || (params->input_repeated != 0 && params->input_repeated != 1)) {
    return 0;
  }
  return qlstm::call_scratch_bytes_for(*params);
}

qlstm_status qlstm_gru_s8_validate(const qlstm_gru_s8_params* params, const char** field) {
  return qlstm::report(qlstm::check_params(params), field);
}

qlstm_status qlstm_gru_s8_reset_state(const qlstm_gru_s8_params* params, qlstm_gru_s8_context* ctx) {
  const qlstm::FieldFailure f = qlstm::check_params(params);
  if (f.status != QLSTM_OK) return f.status;
  if (ctx == nullptr || ctx->hidden_q0_15 == nullptr) return QLSTM_ERROR_NULL_POINTER;
  const int32_t count = params->dims.batch * params->dims.hidden_size;
  for (int32_t k = 0; k < count; ++k) ctx->hidden_q0_15[k] = 0;
  return QLSTM_OK;
}

qlstm_status qlstm_gru_s8(const qlstm_gru_s8_params* params, qlstm_gru_s8_context* ctx, const int8_t* input,
                          int8_t* output) {
  const qlstm_status st = qlstm::check_call(params, ctx, input, output);
  if (st != QLSTM_OK) return st;
  return qlstm::run_default(*params, *ctx, input, output);
}

}  // extern "C"
