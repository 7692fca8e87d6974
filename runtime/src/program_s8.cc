// The program runner (include/qlstm/program_s8.h): no arithmetic of its own, only which buffer
// each op reads and writes.
#include "qlstm/program_s8.h"

#include "qlstm/kernels.h"

namespace {

size_t op_output_bytes(const qlstm_lstm_s8_params& p) {
  const size_t width = static_cast<size_t>(p.output_width > 0 ? p.output_width : p.dims.hidden_size);
  return static_cast<size_t>(p.dims.batch) * static_cast<size_t>(p.dims.time_steps) * width;
}

}  // namespace

extern "C" qlstm_status qlstm_program_run(const qlstm_program* program, qlstm_program_context* ctx,
                                          const int8_t* input, int8_t* output, int32_t time_steps,
                                          int8_t* hidden, int16_t* cell) {
  return qlstm::run_program_s8(program, ctx, input, output, time_steps, hidden, cell, qlstm::ProgramRunOptions{});
}

qlstm_status qlstm::run_program_s8(const qlstm_program* program, qlstm_program_context* ctx, const int8_t* input,
                                   int8_t* output, int32_t time_steps, int8_t* hidden, int16_t* cell,
                                   const ProgramRunOptions& options) {
  if (program == nullptr || ctx == nullptr || program->ops == nullptr) return QLSTM_ERROR_NULL_POINTER;
  if ((hidden == nullptr) != (cell == nullptr)) return QLSTM_ERROR_NULL_POINTER;
  if (time_steps < 0) return QLSTM_ERROR_BAD_DIMS;
  const int32_t last = program->buffer_count - 1;
  if (program->op_count < 1 || program->buffer_count < 2) return QLSTM_ERROR_BAD_PROGRAM;
  for (int32_t k = 0; k < program->op_count; ++k) {
    const qlstm_op& op = program->ops[k];
    qlstm_lstm_s8_params p = op.lstm;
    p.dims.time_steps = time_steps;
    if (op.kind != QLSTM_OP_LSTM_S8 || op.input_buffer < 0 || op.input_buffer >= last || op.output_buffer < 1 ||
        op.output_buffer > last || op.output_buffer == op.input_buffer || op.output_offset < 0) {
      return QLSTM_ERROR_BAD_PROGRAM;
    }
    const int8_t* in = op.input_buffer == 0 ? input : ctx->activations[(op.input_buffer - 1) % 2];
    int8_t* out = output;
    if (op.output_buffer != last) {
      out = ctx->activations[(op.output_buffer - 1) % 2];
      if (out == nullptr) return QLSTM_ERROR_NULL_POINTER;
      if (op_output_bytes(p) > ctx->activation_bytes) return QLSTM_ERROR_SCRATCH_TOO_SMALL;
    }
    if (out != nullptr) out += op.output_offset;
    qlstm_lstm_s8_context c = {ctx->scratch, ctx->scratch_bytes, hidden ? cell + op.state_offset : ctx->cell,
                               hidden ? hidden + op.state_offset : nullptr};
    if (options.before_op != nullptr) options.before_op(k);
    const qlstm_status st =
        options.variant != nullptr ? run_lstm_s8(*options.variant, &p, &c, in, out) : qlstm_lstm_s8(&p, &c, in, out);
    if (options.after_op != nullptr) options.after_op(k);
    if (st != QLSTM_OK) return st;
  }
  return QLSTM_OK;
}
