// The vanilla RNN's argument checks, buffer sizes, sequence walk (docs/arithmetic.md §23, §7) and
// dispatch over its variants (kernels.h): each step the variant's gate, then its output stage.
#include "qlstm/rnn_s8.h"

#include "qlstm/kernels.h"
#include "reference/gru_s8_reference.h"
#include "reference/lstm_s8_reference.h"
#include "reference/rnn_s8_reference.h"
#include "sequence_common.h"

namespace qlstm {
namespace {

// Scratch: the int16 [B][H] state of a stateless call, then the int8 [B][H] recurrent operand of a
// stateful call's first step (h8 of the given state).
constexpr int64_t kScratchBytesPerUnit = static_cast<int64_t>(sizeof(int16_t) + sizeof(int8_t));

bool dims_ok(const qlstm_rnn_dims& d) {
  return sequence_dims_ok(d.batch, d.time_steps, d.input_size, d.hidden_size, kScratchBytesPerUnit);
}

size_t scratch_bytes_for(const qlstm_rnn_dims& d) {
  return static_cast<size_t>(kScratchBytesPerUnit * d.batch * d.hidden_size);
}

const char* const kGateFieldNames[kGateMatmulFieldCount] = {
    "gate.input_weights",         "gate.input_effective_bias",  "gate.hidden_weights",
    "gate.hidden_effective_bias", "gate.input_to_q3_12.multiplier", "gate.input_to_q3_12.shift",
    "gate.hidden_to_q3_12.multiplier", "gate.hidden_to_q3_12.shift"};

FieldFailure check_params(const qlstm_rnn_s8_params* p) {
  if (p == nullptr) return {QLSTM_ERROR_NULL_POINTER, "params"};
  if (!dims_ok(p->dims)) return {QLSTM_ERROR_BAD_DIMS, "dims"};
  FieldFailure f = check_sequence_options(p->layout, p->time_direction, p->output_steps, p->output_width,
                                          p->dims.batch, p->dims.time_steps, p->dims.hidden_size);
  if (f.status != QLSTM_OK) return f;
  f = check_gate_matmuls(p->gate, kGateFieldNames);
  if (f.status != QLSTM_OK) return f;
  if (p->activation != QLSTM_RNN_TANH && p->activation != QLSTM_RNN_RELU) {
    return {QLSTM_ERROR_BAD_ACTIVATION, "activation"};
  }
  f = check_requant(p->hidden_to_output, "hidden_to_output.multiplier", "hidden_to_output.shift");
  if (f.status != QLSTM_OK) return f;
  return check_output_zero_point(p->output_zero_point);
}

qlstm_status check_call(const qlstm_rnn_s8_params* params, const qlstm_rnn_s8_context* ctx, const int8_t* input,
                        const int8_t* output) {
  const FieldFailure f = check_params(params);
  if (f.status != QLSTM_OK) return f.status;
  if (ctx == nullptr) return QLSTM_ERROR_NULL_POINTER;
  return check_sequence_buffers(params->dims.time_steps, params->output_steps, input, output, ctx->scratch,
                                ctx->scratch_bytes, scratch_bytes_for(params->dims));
}

// The walk of a validated call with a variant's two stages: step k's gate writes the new hidden
// from x and the row written at step k-1 (none at a stateless first step), then its output stage
// writes the step's int8 row. The gate reads args.h before y is written, so with one output row
// (the final state only) y may be args.h.
qlstm_status walk(const RnnS8Variant& v, const qlstm_rnn_s8_params& p, qlstm_rnn_s8_context& ctx,
                  const int8_t* input, int8_t* output) {
  const qlstm_rnn_dims& d = p.dims;
  const int32_t B = d.batch, T = d.time_steps, I = d.input_size, H = d.hidden_size;
  const ptrdiff_t BH = static_cast<ptrdiff_t>(B) * H;
  const qlstm_gate_s8_params gate = rnn_reference::gate_block(p);

  int16_t* hidden_s16 = ctx.hidden_s16;
  const int8_t* initial_h8 = nullptr;
  if (hidden_s16 == nullptr) {
    hidden_s16 = static_cast<int16_t*>(ctx.scratch);
    for (ptrdiff_t k = 0; k < BH; ++k) hidden_s16[k] = 0;
  } else {
    int8_t* const h8 = reinterpret_cast<int8_t*>(static_cast<int16_t*>(ctx.scratch) + BH);
    v.output(p.hidden_to_output, p.output_zero_point, B, H, hidden_s16, h8, H);
    initial_h8 = h8;
  }

  const SequenceStrides s = sequence_strides(p.layout, p.output_steps, p.output_width, B, T, I, H);
  if (p.output_steps != QLSTM_OUTPUT_ALL_STEPS && T == 0) {
    v.output(p.hidden_to_output, p.output_zero_point, B, H, hidden_s16, output, s.y_row);  // the initial state
  }
  // Reverse: step k processes time T-1-k, and its recurrent operand is the row it wrote at k-1.
  const bool reverse = p.time_direction == QLSTM_TIME_REVERSE;
  const int32_t steps = steps_run(p.output_steps, T);
  for (int32_t k = 0; k < steps; ++k) {
    const int32_t t = reverse ? T - 1 - k : k;
    GateArgs args = {B, I, H, input + t * s.x_step, s.x_row, initial_h8, H};
    if (k > 0) {
      args.h = output + (reverse ? t + 1 : t - 1) * s.y_step;
      args.h_row_stride = s.y_row;
    }
    v.gate(gate, args, hidden_s16);
    v.output(p.hidden_to_output, p.output_zero_point, B, H, hidden_s16, output + t * s.y_step, s.y_row);
  }
  return QLSTM_OK;
}

qlstm_status run_if_supported(const RnnS8Variant& v, const qlstm_rnn_s8_params& p, qlstm_rnn_s8_context& ctx,
                              const int8_t* input, int8_t* output) {
  if (v.is_supported != nullptr && !v.is_supported()) return QLSTM_ERROR_UNSUPPORTED;
  if (v.can_run != nullptr && !v.can_run(p)) return QLSTM_ERROR_NO_VARIANT;
  return walk(v, p, ctx, input, output);
}

qlstm_status run_default(const qlstm_rnn_s8_params& p, qlstm_rnn_s8_context& ctx, const int8_t* input,
                         int8_t* output) {
  size_t count = 0;
  const RnnS8Variant* const* all = rnn_s8_variants(&count);
  const RnnS8Variant* v = first_runnable_variant(all, count, p);
  if (v == nullptr) return QLSTM_ERROR_NO_VARIANT;
  return walk(*v, p, ctx, input, output);
}

}  // namespace

// The reference: the LSTM reference's gate and the GRU reference's output stage.
extern const RnnS8Variant kRnnS8ReferenceVariant = {"reference", nullptr, nullptr, reference::gate,
                                                    gru_reference::output};

qlstm_status run_rnn_s8(const RnnS8Variant& variant, const qlstm_rnn_s8_params* params, qlstm_rnn_s8_context* ctx,
                        const int8_t* input, int8_t* output) {
  const qlstm_status st = check_call(params, ctx, input, output);
  if (st != QLSTM_OK) return st;
  return run_if_supported(variant, *params, *ctx, input, output);
}

qlstm_status run_rnn_s8_prechecked(const RnnS8Variant* variant, const qlstm_rnn_s8_params& params,
                                   qlstm_rnn_s8_context& ctx, const int8_t* input, int8_t* output) {
  if (variant == nullptr) return run_default(params, ctx, input, output);
  return run_if_supported(*variant, params, ctx, input, output);
}

}  // namespace qlstm

extern "C" {

size_t qlstm_rnn_s8_scratch_bytes(const qlstm_rnn_dims* dims) {
  if (dims == nullptr || !qlstm::dims_ok(*dims)) return 0;
  return qlstm::scratch_bytes_for(*dims);
}

qlstm_status qlstm_rnn_s8_validate(const qlstm_rnn_s8_params* params, const char** field) {
  return qlstm::report(qlstm::check_params(params), field);
}

qlstm_status qlstm_rnn_s8_reset_state(const qlstm_rnn_s8_params* params, qlstm_rnn_s8_context* ctx) {
  const qlstm::FieldFailure f = qlstm::check_params(params);
  if (f.status != QLSTM_OK) return f.status;
  if (ctx == nullptr || ctx->hidden_s16 == nullptr) return QLSTM_ERROR_NULL_POINTER;
  const int32_t count = params->dims.batch * params->dims.hidden_size;
  for (int32_t k = 0; k < count; ++k) ctx->hidden_s16[k] = 0;
  return QLSTM_OK;
}

qlstm_status qlstm_rnn_s8(const qlstm_rnn_s8_params* params, qlstm_rnn_s8_context* ctx, const int8_t* input,
                          int8_t* output) {
  const qlstm_status st = qlstm::check_call(params, ctx, input, output);
  if (st != QLSTM_OK) return st;
  return qlstm::run_default(*params, *ctx, input, output);
}

}  // extern "C"
