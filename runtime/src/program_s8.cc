// The program runner (include/qlstm/program_s8.h): no arithmetic of its own, only which buffer
// each op reads and writes, and the checks that keep every op within its buffers.
#include "qlstm/program_s8.h"

#include <stdint.h>

#include "qlstm/kernels.h"

namespace {

struct Failure {
  qlstm_status status;
  const char* field;
  int32_t op;  // -1: a field of the program or the context
};
constexpr Failure kNoFailure = {QLSTM_OK, nullptr, -1};

Failure bad_op(const char* field, int32_t k) { return {QLSTM_ERROR_BAD_PROGRAM, field, k}; }

// The activation area of an intermediate buffer (1 ... buffer_count - 2).
int32_t area_of(int32_t buffer) { return (buffer - 1) % 2; }

bool is_intermediate(const qlstm_program& program, int32_t buffer) {
  return buffer > 0 && buffer < program.buffer_count - 1;
}

// The op's params as the runner hands them to the kernel: the call's time steps, the row width of
// its output buffer. Only for an op whose output buffer index is valid.
qlstm_lstm_s8_params call_params(const qlstm_program& program, const qlstm_op& op, int32_t time_steps) {
  qlstm_lstm_s8_params p = op.lstm;
  p.dims.time_steps = time_steps;
  const int32_t width = program.buffer_widths[op.output_buffer];
  p.output_width = width == p.dims.hidden_size ? 0 : width;
  return p;
}

// Op k of a program whose counts and arrays are valid. holds[a]: the intermediate buffer area a
// holds so far (0: none).
Failure check_op(const qlstm_program& program, int32_t k, int32_t time_steps, int32_t holds[2]) {
  const qlstm_op& op = program.ops[k];
  const int32_t last = program.buffer_count - 1;
  if (op.kind != QLSTM_OP_LSTM_S8) return bad_op("kind", k);
  if (op.input_buffer < 0 || op.input_buffer >= last) return bad_op("input_buffer", k);
  if (op.output_buffer < 1 || op.output_buffer > last) return bad_op("output_buffer", k);
  const bool reads_area = is_intermediate(program, op.input_buffer);
  const bool writes_area = is_intermediate(program, op.output_buffer);
  if (reads_area && holds[area_of(op.input_buffer)] != op.input_buffer) {
    return bad_op("input_buffer", k);  // not written yet, or its area since overwritten
  }
  if (reads_area && writes_area && area_of(op.input_buffer) == area_of(op.output_buffer)) {
    return bad_op("output_buffer", k);  // would overwrite the area it reads
  }
  const qlstm_lstm_dims& d = op.lstm.dims;
  if (d.batch != program.ops[0].lstm.dims.batch) return bad_op("dims.batch", k);
  if (op.lstm.layout != program.ops[0].lstm.layout) return bad_op("layout", k);
  if (d.input_size != program.buffer_widths[op.input_buffer]) return bad_op("dims.input_size", k);
  if (op.output_offset < 0 ||
      static_cast<int64_t>(op.output_offset) + d.hidden_size > program.buffer_widths[op.output_buffer]) {
    return bad_op("output_offset", k);
  }
  const qlstm_lstm_s8_params p = call_params(program, op, time_steps);
  const char* field = nullptr;
  const qlstm_status st = qlstm_lstm_s8_validate(&p, &field);
  if (st != QLSTM_OK) return {st, field, k};
  // B x H fits int32 once the params are valid.
  const size_t rows = static_cast<size_t>(d.batch) * static_cast<size_t>(d.hidden_size);
  if (op.state_offset > program.state_values || rows > program.state_values - op.state_offset) {
    return bad_op("state_offset", k);
  }
  if (writes_area) holds[area_of(op.output_buffer)] = op.output_buffer;
  return kNoFailure;
}

// The context of a valid program.
Failure check_context(const qlstm_program& program, const qlstm_program_context& ctx, int32_t time_steps) {
  // What the kernel would check of its context, once for every op: the runner does not ask again.
  if (ctx.scratch == nullptr) return {QLSTM_ERROR_NULL_POINTER, "scratch", -1};
  if (reinterpret_cast<uintptr_t>(ctx.scratch) % QLSTM_SCRATCH_ALIGNMENT != 0) {
    return {QLSTM_ERROR_SCRATCH_MISALIGNED, "scratch", -1};
  }
  if (ctx.cell == nullptr) return {QLSTM_ERROR_NULL_POINTER, "cell", -1};
  for (int32_t k = 0; k < program.op_count; ++k) {
    const qlstm_op& op = program.ops[k];
    const qlstm_lstm_s8_params p = call_params(program, op, time_steps);
    if (ctx.scratch_bytes < qlstm_lstm_s8_scratch_bytes(&p.dims)) {
      return {QLSTM_ERROR_SCRATCH_TOO_SMALL, "scratch_bytes", -1};
    }
    if (!is_intermediate(program, op.output_buffer)) continue;
    if (ctx.activations[area_of(op.output_buffer)] == nullptr) return {QLSTM_ERROR_NULL_POINTER, "activations", -1};
    // B x T x width fits int32: qlstm_lstm_s8_validate checked it (as output_width, or as B x T x H).
    const size_t bytes = static_cast<size_t>(p.dims.batch) * static_cast<size_t>(time_steps) *
                         static_cast<size_t>(program.buffer_widths[op.output_buffer]);
    if (bytes > ctx.activation_bytes) return {QLSTM_ERROR_SCRATCH_TOO_SMALL, "activation_bytes", -1};
  }
  return kNoFailure;
}

Failure check_program(const qlstm_program* program, const qlstm_program_context* ctx, int32_t time_steps) {
  if (program == nullptr) return {QLSTM_ERROR_NULL_POINTER, "program", -1};
  if (program->ops == nullptr) return {QLSTM_ERROR_NULL_POINTER, "ops", -1};
  if (program->buffer_widths == nullptr) return {QLSTM_ERROR_NULL_POINTER, "buffer_widths", -1};
  if (program->op_count < 1) return {QLSTM_ERROR_BAD_PROGRAM, "op_count", -1};
  if (program->buffer_count < 2) return {QLSTM_ERROR_BAD_PROGRAM, "buffer_count", -1};
  if (time_steps < 0) return {QLSTM_ERROR_BAD_DIMS, "max_time_steps", -1};
  int32_t holds[2] = {0, 0};
  for (int32_t k = 0; k < program->op_count; ++k) {
    const Failure f = check_op(*program, k, time_steps, holds);
    if (f.status != QLSTM_OK) return f;
  }
  return ctx == nullptr ? kNoFailure : check_context(*program, *ctx, time_steps);
}

}  // namespace

extern "C" qlstm_status qlstm_program_validate(const qlstm_program* program, const qlstm_program_context* ctx,
                                               int32_t max_time_steps, const char** field, int32_t* op_index) {
  const Failure f = check_program(program, ctx, max_time_steps);
  if (field != nullptr) *field = f.field;
  if (op_index != nullptr) *op_index = f.op;
  return f.status;
}

extern "C" qlstm_status qlstm_program_run(const qlstm_program* program, qlstm_program_context* ctx,
                                          const int8_t* input, int8_t* output, int32_t time_steps,
                                          int8_t* hidden, int16_t* cell) {
  return qlstm::run_program_s8(program, ctx, input, output, time_steps, hidden, cell, qlstm::ProgramRunOptions{});
}

qlstm_status qlstm::run_program_s8(const qlstm_program* program, qlstm_program_context* ctx, const int8_t* input,
                                   int8_t* output, int32_t time_steps, int8_t* hidden, int16_t* cell,
                                   const ProgramRunOptions& options) {
  if (program == nullptr || ctx == nullptr) return QLSTM_ERROR_NULL_POINTER;
  if ((hidden == nullptr) != (cell == nullptr)) return QLSTM_ERROR_NULL_POINTER;
  if (time_steps > 0 && (input == nullptr || output == nullptr)) return QLSTM_ERROR_NULL_POINTER;
  const qlstm_status valid = qlstm_program_validate(program, ctx, time_steps, nullptr, nullptr);
  if (valid != QLSTM_OK) return valid;
  const int32_t last = program->buffer_count - 1;
  for (int32_t k = 0; k < program->op_count; ++k) {
    const qlstm_op& op = program->ops[k];
    qlstm_lstm_s8_params p = call_params(*program, op, time_steps);
    const int8_t* in = op.input_buffer == 0 ? input : ctx->activations[area_of(op.input_buffer)];
    int8_t* out = op.output_buffer == last ? output : ctx->activations[area_of(op.output_buffer)];
    if (out != nullptr) out += op.output_offset;
    qlstm_lstm_s8_context c = {ctx->scratch, ctx->scratch_bytes, hidden ? cell + op.state_offset : ctx->cell,
                               hidden ? hidden + op.state_offset : nullptr};
    if (options.before_op != nullptr) options.before_op(k);
    const qlstm_status st = run_lstm_s8_prechecked(options.variant, p, c, in, out);
    if (options.after_op != nullptr) options.after_op(k);
    if (st != QLSTM_OK) return st;
  }
  return QLSTM_OK;
}
