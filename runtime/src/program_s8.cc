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
Failure bad_program(const char* field) { return {QLSTM_ERROR_BAD_PROGRAM, field, -1}; }

// The activation area of an intermediate buffer (1 ... buffer_count - 2).
int32_t area_of(int32_t buffer) { return (buffer - 1) % 2; }

bool is_intermediate(const qlstm_program& program, int32_t buffer) {
  return buffer > 0 && buffer < program.buffer_count - 1;
}

bool one_step(const qlstm_program& program, int32_t buffer) {
  return program.buffer_steps[buffer] == QLSTM_BUFFER_ONE_STEP;
}

// Positions (rows of the buffer's width) a buffer holds in a call of time_steps steps: B x T, or
// B for a one-step buffer. Fits int32 once the op writing or reading it is valid.
int32_t positions(const qlstm_program& program, int32_t buffer, int32_t time_steps) {
  return one_step(program, buffer) ? program.batch : program.batch * time_steps;
}

// The step a selection copies in a call of time_steps steps (-1: the last).
int32_t selected_step(const qlstm_select_step_params& s, int32_t time_steps) {
  return s.step < 0 ? time_steps + s.step : s.step;
}

bool is_recurrent(int32_t kind) {
  return kind == QLSTM_OP_LSTM_S8 || kind == QLSTM_OP_GRU_S8 || kind == QLSTM_OP_LSTM_S16;
}
bool is_lstm(int32_t kind) { return kind == QLSTM_OP_LSTM_S8 || kind == QLSTM_OP_LSTM_S16; }

// A buffer's element type (a qlstm_element_type): int8 without buffer_types.
int32_t element_type(const qlstm_program& program, int32_t buffer) {
  return program.buffer_types == nullptr ? static_cast<int32_t>(QLSTM_ELEMENT_S8) : program.buffer_types[buffer];
}
size_t element_bytes(const qlstm_program& program, int32_t buffer) {
  return qlstm_element_bytes(element_type(program, buffer));
}

// The element types an op of a valid kind reads and writes (the requantization's and a
// selection's: their buffers', checked elsewhere).
struct OpTypes {
  int32_t in, out;
};
OpTypes op_types(const qlstm_program& program, const qlstm_op& op) {
  switch (op.kind) {
    case QLSTM_OP_LSTM_S16:
    case QLSTM_OP_FULLY_CONNECTED_S16:
    case QLSTM_OP_SOFTMAX_S16: return {QLSTM_ELEMENT_S16, QLSTM_ELEMENT_S16};
    case QLSTM_OP_REQUANTIZE: return {op.requantize.input_type, op.requantize.output_type};
    case QLSTM_OP_SELECT_STEP: {
      const int32_t t = element_type(program, op.input_buffer);
      return {t, t};
    }
    default: return {QLSTM_ELEMENT_S8, QLSTM_ELEMENT_S8};
  }
}

// A recurrent op's params (P: its LSTM or GRU block) as the runner hands them to the kernel: the
// call's time steps, the row width of its output buffer. Only for an op whose output buffer index
// is valid.
template <class P>
P recurrent_call_params(const qlstm_program& program, const qlstm_op& op, const P& block, int32_t time_steps) {
  P p = block;
  p.dims.time_steps = time_steps;
  const int32_t width = program.buffer_widths[op.output_buffer];
  p.output_width = width == p.dims.hidden_size ? 0 : width;
  return p;
}
qlstm_lstm_s8_params lstm_call_params(const qlstm_program& program, const qlstm_op& op, int32_t time_steps) {
  return recurrent_call_params(program, op, op.lstm, time_steps);
}
qlstm_gru_s8_params gru_call_params(const qlstm_program& program, const qlstm_op& op, int32_t time_steps) {
  return recurrent_call_params(program, op, op.gru, time_steps);
}
qlstm_lstm_s16_params lstm_s16_call_params(const qlstm_program& program, const qlstm_op& op, int32_t time_steps) {
  return recurrent_call_params(program, op, op.lstm_s16, time_steps);
}

qlstm_status validate_block(const qlstm_lstm_s8_params& p, const char** field) { return qlstm_lstm_s8_validate(&p, field); }
qlstm_status validate_block(const qlstm_gru_s8_params& p, const char** field) { return qlstm_gru_s8_validate(&p, field); }
qlstm_status validate_block(const qlstm_lstm_s16_params& p, const char** field) {
  return qlstm_lstm_s16_validate(&p, field);
}

// The scratch of a recurrent op's call (0: another kind).
size_t call_scratch_bytes(const qlstm_op& op, int32_t time_steps) {
  qlstm_op call = op;
  call.lstm.dims.time_steps = time_steps;
  call.gru.dims.time_steps = time_steps;
  call.lstm_s16.dims.time_steps = time_steps;
  return qlstm_op_scratch_bytes(&call);
}

// The other kinds' params (P: the kind's block) with rows set to the input buffer's positions.
template <class P>
P row_call_params(const qlstm_program& program, const qlstm_op& op, const P& block, int32_t time_steps) {
  P p = block;
  p.rows = positions(program, op.input_buffer, time_steps);
  return p;
}

// A recurrent op (block: its LSTM or GRU params): reads a sequence, writes a sequence or (FINAL) a
// one-step buffer; its width, batch, layout, params and state rows.
template <class P>
Failure check_recurrent(const qlstm_program& program, int32_t k, const P& block, int32_t time_steps) {
  const qlstm_op& op = program.ops[k];
  const auto& d = block.dims;
  if (one_step(program, op.input_buffer)) return bad_op("input_buffer", k);
  const bool final_only = block.output_steps == QLSTM_OUTPUT_FINAL;
  if (one_step(program, op.output_buffer) != final_only) return bad_op("output_steps", k);
  if (d.batch != program.batch) return bad_op("dims.batch", k);
  if (block.layout != program.layout) return bad_op("layout", k);
  if (d.input_size != program.buffer_widths[op.input_buffer]) return bad_op("dims.input_size", k);
  if (op.output_offset < 0 ||
      static_cast<int64_t>(op.output_offset) + d.hidden_size > program.buffer_widths[op.output_buffer]) {
    return bad_op("output_offset", k);
  }
  const P p = recurrent_call_params(program, op, block, time_steps);
  const char* field = nullptr;
  const qlstm_status st = validate_block(p, &field);
  if (st != QLSTM_OK) return {st, field, k};
  // B x the state size fits int32 once the params are valid.
  const size_t rows = static_cast<size_t>(d.batch) * static_cast<size_t>(qlstm_op_state_size(&op));
  if (op.state_offset > program.state_values || rows > program.state_values - op.state_offset) {
    return bad_op("state_offset", k);
  }
  return kNoFailure;
}

// An op of another kind: keeps the positions (a selection: one step of a sequence), writes a
// whole row of its output buffer, has no state; then its kernel's own validation.
Failure check_row_op(const qlstm_program& program, int32_t k, int32_t time_steps) {
  const qlstm_op& op = program.ops[k];
  const int32_t in_width = program.buffer_widths[op.input_buffer];
  const int32_t out_width = program.buffer_widths[op.output_buffer];
  if (op.kind == QLSTM_OP_SELECT_STEP) {
    if (one_step(program, op.input_buffer)) return bad_op("input_buffer", k);
    if (!one_step(program, op.output_buffer)) return bad_op("output_buffer", k);
  } else if (one_step(program, op.input_buffer) != one_step(program, op.output_buffer)) {
    return bad_op("output_buffer", k);
  }
  if (op.output_offset != 0) return bad_op("output_offset", k);
  if (op.state_offset != 0) return bad_op("state_offset", k);
  // Every element of both buffers must be addressable in int32 (a recurrent op checks its own).
  const int64_t rows = one_step(program, op.input_buffer) ? program.batch : static_cast<int64_t>(program.batch) * time_steps;
  if (rows * (in_width > out_width ? in_width : out_width) > INT32_MAX) return {QLSTM_ERROR_BAD_DIMS, "rows", k};
  const char* field = nullptr;
  qlstm_status st = QLSTM_OK;
  switch (op.kind) {
    case QLSTM_OP_FULLY_CONNECTED_S8: {
      if (op.fc.input_size != in_width) return bad_op("input_size", k);
      if (op.fc.output_size != out_width) return bad_op("output_size", k);
      const qlstm_fc_s8_params p = row_call_params(program, op, op.fc, time_steps);
      st = qlstm_fc_s8_validate(&p, &field);
      break;
    }
    case QLSTM_OP_SOFTMAX_S8: {
      if (op.softmax.row_size != in_width || op.softmax.row_size != out_width) return bad_op("row_size", k);
      const qlstm_softmax_s8_params p = row_call_params(program, op, op.softmax, time_steps);
      st = qlstm_softmax_s8_validate(&p, &field);
      break;
    }
    case QLSTM_OP_TABLE_S8: {
      if (op.table.row_size != in_width || op.table.row_size != out_width) return bad_op("row_size", k);
      const qlstm_table_s8_params p = row_call_params(program, op, op.table, time_steps);
      st = qlstm_table_s8_validate(&p, &field);
      break;
    }
    case QLSTM_OP_FULLY_CONNECTED_S16: {
      if (op.fc_s16.input_size != in_width) return bad_op("input_size", k);
      if (op.fc_s16.output_size != out_width) return bad_op("output_size", k);
      if (op.fc_s16.bias == nullptr) return {QLSTM_ERROR_NULL_POINTER, "bias", k};
      const qlstm_fc_s16_params p = row_call_params(program, op, op.fc_s16, time_steps);
      st = qlstm_fc_s16_validate(&p, &field);
      break;
    }
    case QLSTM_OP_SOFTMAX_S16: {
      if (op.softmax_s16.row_size != in_width || op.softmax_s16.row_size != out_width) return bad_op("row_size", k);
      const qlstm_softmax_s16_params p = row_call_params(program, op, op.softmax_s16, time_steps);
      st = qlstm_softmax_s16_validate(&p, &field);
      break;
    }
    case QLSTM_OP_REQUANTIZE: {
      if (op.requantize.row_size != in_width || op.requantize.row_size != out_width) return bad_op("row_size", k);
      const qlstm_requantize_params p = row_call_params(program, op, op.requantize, time_steps);
      st = qlstm_requantize_validate(&p, &field);
      break;
    }
    default: {  // QLSTM_OP_SELECT_STEP: the copy is the runner's own
      if (op.select.row_size < 1 || op.select.row_size != in_width || op.select.row_size != out_width) {
        return bad_op("row_size", k);
      }
      if (op.select.step < -time_steps || op.select.step >= time_steps) return bad_op("step", k);
      break;
    }
  }
  return st == QLSTM_OK ? kNoFailure : Failure{st, field, k};
}

// Op k of a program whose counts and arrays are valid. holds[a]: the intermediate buffer area a
// holds so far (0: none).
Failure check_op(const qlstm_program& program, int32_t k, int32_t time_steps, int32_t holds[2]) {
  const qlstm_op& op = program.ops[k];
  const int32_t last = program.buffer_count - 1;
  if (op.kind < 0 || op.kind >= QLSTM_OP_KIND_COUNT) return bad_op("kind", k);
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
  const OpTypes types = op_types(program, op);
  if (types.in != element_type(program, op.input_buffer)) return {QLSTM_ERROR_BAD_ELEMENT_TYPE, "input_buffer", k};
  if (types.out != element_type(program, op.output_buffer)) return {QLSTM_ERROR_BAD_ELEMENT_TYPE, "output_buffer", k};
  const Failure f = op.kind == QLSTM_OP_LSTM_S8    ? check_recurrent(program, k, op.lstm, time_steps)
                    : op.kind == QLSTM_OP_GRU_S8   ? check_recurrent(program, k, op.gru, time_steps)
                    : op.kind == QLSTM_OP_LSTM_S16 ? check_recurrent(program, k, op.lstm_s16, time_steps)
                                                   : check_row_op(program, k, time_steps);
  if (f.status != QLSTM_OK) return f;
  if (writes_area) holds[area_of(op.output_buffer)] = op.output_buffer;
  return kNoFailure;
}

// The context of a valid program.
Failure check_context(const qlstm_program& program, const qlstm_program_context& ctx, int32_t time_steps) {
  bool has_lstm = false, has_recurrent = false, has_s16 = false;
  for (int32_t k = 0; k < program.op_count; ++k) {
    has_lstm = has_lstm || is_lstm(program.ops[k].kind);
    has_recurrent = has_recurrent || is_recurrent(program.ops[k].kind);
  }
  for (int32_t b = 1; b < program.buffer_count - 1; ++b) has_s16 = has_s16 || element_type(program, b) == QLSTM_ELEMENT_S16;
  // What the recurrent kernels would check of their context, once for every op: the runner does
  // not ask again. The other kinds need no scratch; a stateless GRU keeps its hidden in its scratch.
  if (has_recurrent) {
    if (ctx.scratch == nullptr) return {QLSTM_ERROR_NULL_POINTER, "scratch", -1};
    if (reinterpret_cast<uintptr_t>(ctx.scratch) % QLSTM_SCRATCH_ALIGNMENT != 0) {
      return {QLSTM_ERROR_SCRATCH_MISALIGNED, "scratch", -1};
    }
  }
  if (has_lstm && ctx.cell == nullptr) return {QLSTM_ERROR_NULL_POINTER, "cell", -1};
  for (int32_t k = 0; k < program.op_count; ++k) {
    const qlstm_op& op = program.ops[k];
    if (ctx.scratch_bytes < call_scratch_bytes(op, time_steps)) {
      return {QLSTM_ERROR_SCRATCH_TOO_SMALL, "scratch_bytes", -1};
    }
    if (!is_intermediate(program, op.output_buffer)) continue;
    const int8_t* const area = ctx.activations[area_of(op.output_buffer)];
    if (area == nullptr) return {QLSTM_ERROR_NULL_POINTER, "activations", -1};
    if (has_s16 && reinterpret_cast<uintptr_t>(area) % sizeof(int16_t) != 0) {
      return {QLSTM_ERROR_SCRATCH_MISALIGNED, "activations", -1};
    }
    // Positions x width fits int32: the op's validation checked it.
    const size_t bytes = static_cast<size_t>(positions(program, op.output_buffer, time_steps)) *
                         static_cast<size_t>(program.buffer_widths[op.output_buffer]) *
                         element_bytes(program, op.output_buffer);
    if (bytes > ctx.activation_bytes) return {QLSTM_ERROR_SCRATCH_TOO_SMALL, "activation_bytes", -1};
  }
  return kNoFailure;
}

Failure check_program(const qlstm_program* program, const qlstm_program_context* ctx, int32_t time_steps) {
  if (program == nullptr) return {QLSTM_ERROR_NULL_POINTER, "program", -1};
  if (program->ops == nullptr) return {QLSTM_ERROR_NULL_POINTER, "ops", -1};
  if (program->buffer_widths == nullptr) return {QLSTM_ERROR_NULL_POINTER, "buffer_widths", -1};
  if (program->buffer_steps == nullptr) return {QLSTM_ERROR_NULL_POINTER, "buffer_steps", -1};
  if (program->op_count < 1) return bad_program("op_count");
  if (program->buffer_count < 2) return bad_program("buffer_count");
  if (program->batch < 1) return {QLSTM_ERROR_BAD_DIMS, "batch", -1};
  if (program->layout != QLSTM_LAYOUT_BATCH_MAJOR && program->layout != QLSTM_LAYOUT_TIME_MAJOR) {
    return {QLSTM_ERROR_BAD_LAYOUT, "layout", -1};
  }
  if (time_steps < 0) return {QLSTM_ERROR_BAD_DIMS, "max_time_steps", -1};
  // The input is a sequence; every buffer is one of the two kinds.
  if (program->buffer_steps[0] != QLSTM_BUFFER_EVERY_STEP) return bad_program("buffer_steps");
  for (int32_t b = 1; b < program->buffer_count; ++b) {
    const int32_t s = program->buffer_steps[b];
    if (s != QLSTM_BUFFER_EVERY_STEP && s != QLSTM_BUFFER_ONE_STEP) return bad_program("buffer_steps");
  }
  for (int32_t b = 0; b < program->buffer_count; ++b) {
    if (element_bytes(*program, b) == 0) return {QLSTM_ERROR_BAD_ELEMENT_TYPE, "buffer_types", -1};
  }
  int32_t holds[2] = {0, 0};
  for (int32_t k = 0; k < program->op_count; ++k) {
    const Failure f = check_op(*program, k, time_steps, holds);
    if (f.status != QLSTM_OK) return f;
  }
  return ctx == nullptr ? kNoFailure : check_context(*program, *ctx, time_steps);
}

// Copies step t of every batch row of a sequence buffer into a one-step buffer (bytes: W elements
// of the buffers' type).
void select_step(const qlstm_program& program, const qlstm_op& op, int32_t time_steps, const int8_t* in,
                 int8_t* out) {
  const int32_t B = program.batch, t = selected_step(op.select, time_steps);
  const ptrdiff_t W = static_cast<ptrdiff_t>(op.select.row_size) * static_cast<ptrdiff_t>(element_bytes(program, op.input_buffer));
  const bool time_major = program.layout == QLSTM_LAYOUT_TIME_MAJOR;
  for (int32_t b = 0; b < B; ++b) {
    const ptrdiff_t position = time_major ? static_cast<ptrdiff_t>(t) * B + b : static_cast<ptrdiff_t>(b) * time_steps + t;
    const int8_t* src = in + position * W;
    int8_t* dst = out + static_cast<ptrdiff_t>(b) * W;
    for (ptrdiff_t e = 0; e < W; ++e) dst[e] = src[e];
  }
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
                                          const void* input, void* output, int32_t time_steps, int8_t* hidden,
                                          int16_t* cell) {
  return qlstm::run_program_s8(program, ctx, input, output, time_steps, hidden, cell, qlstm::ProgramRunOptions{});
}

qlstm_status qlstm::run_program_s8(const qlstm_program* program, qlstm_program_context* ctx, const void* input,
                                   void* output, int32_t time_steps, int8_t* hidden, int16_t* cell,
                                   const ProgramRunOptions& options) {
  if (program == nullptr || ctx == nullptr) return QLSTM_ERROR_NULL_POINTER;
  if ((hidden == nullptr) != (cell == nullptr)) return QLSTM_ERROR_NULL_POINTER;
  const qlstm_status valid = qlstm_program_validate(program, ctx, time_steps, nullptr, nullptr);
  if (valid != QLSTM_OK) return valid;
  const int32_t last = program->buffer_count - 1;
  // A one-step output is written even when T == 0 (a recurrent op's final state is then its initial one).
  if (time_steps > 0 && input == nullptr) return QLSTM_ERROR_NULL_POINTER;
  if ((time_steps > 0 || one_step(*program, last)) && output == nullptr) return QLSTM_ERROR_NULL_POINTER;
  // The caller's int16 input or output must be aligned for its elements.
  const auto misaligned = [&](const void* p, int32_t b) {
    return p != nullptr && reinterpret_cast<uintptr_t>(p) % element_bytes(*program, b) != 0;
  };
  if (misaligned(input, 0) || misaligned(output, last)) return QLSTM_ERROR_SCRATCH_MISALIGNED;
  for (int32_t k = 0; k < program->op_count; ++k) {
    const qlstm_op& op = program->ops[k];
    const int8_t* in = op.input_buffer == 0 ? static_cast<const int8_t*>(input) : ctx->activations[area_of(op.input_buffer)];
    int8_t* out = op.output_buffer == last ? static_cast<int8_t*>(output) : ctx->activations[area_of(op.output_buffer)];
    // An int16 buffer's area or the caller's array is 2-byte aligned (checked above).
    const int16_t* in16 = static_cast<const int16_t*>(static_cast<const void*>(in));
    int16_t* out16 = static_cast<int16_t*>(static_cast<void*>(out));
    if (options.before_op != nullptr) options.before_op(k);
    qlstm_status st = QLSTM_OK;
    switch (op.kind) {
      case QLSTM_OP_LSTM_S8: {
        const qlstm_lstm_s8_params p = lstm_call_params(*program, op, time_steps);
        qlstm_lstm_s8_context c = {ctx->scratch, ctx->scratch_bytes, hidden ? cell + op.state_offset : ctx->cell,
                                   hidden ? hidden + op.state_offset : nullptr};
        st = run_lstm_s8_prechecked(options.variant, p, c, in, out != nullptr ? out + op.output_offset : nullptr);
        break;
      }
      case QLSTM_OP_GRU_S8: {
        // Its state is the int16 Q0.15 hidden in the caller's cell array; stateless: NULL, the
        // kernel's own zero state in its scratch.
        const qlstm_gru_s8_params p = gru_call_params(*program, op, time_steps);
        qlstm_gru_s8_context c = {ctx->scratch, ctx->scratch_bytes, hidden ? cell + op.state_offset : nullptr};
        st = run_gru_s8_prechecked(options.gru_variant, p, c, in, out != nullptr ? out + op.output_offset : nullptr);
        break;
      }
      case QLSTM_OP_LSTM_S16: {
        // Its state is two rows of the caller's cell array: the cell, then the int16 hidden (its
        // rows of hidden unused); stateless: the context's cell and a zero hidden.
        const qlstm_lstm_s16_params p = lstm_s16_call_params(*program, op, time_steps);
        const ptrdiff_t rows = static_cast<ptrdiff_t>(p.dims.batch) * p.dims.hidden_size;
        qlstm_lstm_s16_context c = {ctx->scratch, ctx->scratch_bytes, hidden ? cell + op.state_offset : ctx->cell,
                                    hidden ? cell + op.state_offset + rows : nullptr};
        st = run_lstm_s16_prechecked(p, c, in16, out16 != nullptr ? out16 + op.output_offset : nullptr);
        break;
      }
      case QLSTM_OP_FULLY_CONNECTED_S8:
        st = run_fc_s8_prechecked(options.fc_variant, row_call_params(*program, op, op.fc, time_steps), in, out);
        break;
      case QLSTM_OP_FULLY_CONNECTED_S16:
        st = run_fc_s16_prechecked(row_call_params(*program, op, op.fc_s16, time_steps), in16, out16);
        break;
      case QLSTM_OP_SOFTMAX_S16:
        softmax_s16_prechecked(row_call_params(*program, op, op.softmax_s16, time_steps), in16, out16);
        break;
      case QLSTM_OP_REQUANTIZE:
        requantize_prechecked(row_call_params(*program, op, op.requantize, time_steps), in, out);
        break;
      case QLSTM_OP_SOFTMAX_S8: softmax_s8_prechecked(row_call_params(*program, op, op.softmax, time_steps), in, out); break;
      case QLSTM_OP_TABLE_S8: table_s8_prechecked(row_call_params(*program, op, op.table, time_steps), in, out); break;
      default: select_step(*program, op, time_steps, in, out); break;  // QLSTM_OP_SELECT_STEP
    }
    if (options.after_op != nullptr) options.after_op(k);
    if (st != QLSTM_OK) return st;
  }
  return QLSTM_OK;
}

extern "C" int32_t qlstm_op_state_size(const qlstm_op* op) {
  if (op == nullptr) return 0;
  if (op->kind == QLSTM_OP_LSTM_S8) return op->lstm.dims.hidden_size;
  if (op->kind == QLSTM_OP_GRU_S8) return op->gru.dims.hidden_size;
  if (op->kind == QLSTM_OP_LSTM_S16) return 2 * op->lstm_s16.dims.hidden_size;  // cell, then hidden
  return 0;
}

extern "C" size_t qlstm_op_scratch_bytes(const qlstm_op* op) {
  if (op == nullptr) return 0;
  if (op->kind == QLSTM_OP_LSTM_S8) return qlstm_lstm_s8_scratch_bytes(&op->lstm.dims);
  if (op->kind == QLSTM_OP_GRU_S8) return qlstm_gru_s8_scratch_bytes(&op->gru.dims);
  if (op->kind == QLSTM_OP_LSTM_S16) return qlstm_lstm_s16_scratch_bytes(&op->lstm_s16.dims);
  return 0;
}
