// The program runner (include/qlstm/program_s8.h): no arithmetic of its own, only which buffer
// each op reads and writes, and the checks that keep every op within its buffers. It knows no
// kind: each kind's handler (runtime/src/<kind>/<kind>_op.cc, program_op.h) has its rules.
#include "qlstm/program_s8.h"

#include <stdint.h>

#include "program_op.h"
#include "qlstm/kernels.h"

namespace {

using namespace qlstm::program;

Failure bad_program(const char* field) { return {QLSTM_ERROR_BAD_PROGRAM, field, -1}; }

// The activation area of an intermediate buffer (1 ... buffer_count - 2).
int32_t area_of(int32_t buffer) { return (buffer - 1) % 2; }

bool is_intermediate(const qlstm_program& program, int32_t buffer) {
  return buffer > 0 && buffer < program.buffer_count - 1;
}

// Every kind, for qlstm_program_validate and qlstm_program_run (the host, the device bundle).
const qlstm_op_handler* const kAllKinds[] = {
#define QLSTM_OP_KIND_ENTRY(name, value, handler, member, block, visit) &qlstm_op_handler_##handler,
    QLSTM_OP_KINDS(QLSTM_OP_KIND_ENTRY)
#undef QLSTM_OP_KIND_ENTRY
};
static_assert(sizeof(kAllKinds) / sizeof(kAllKinds[0]) == QLSTM_OP_KIND_COUNT, "a handler per kind");

// The kinds a call may run: the caller's table.
struct Kinds {
  const qlstm_op_handler* const* list;
  int32_t count;
};
constexpr Kinds kEveryKind = {kAllKinds, QLSTM_OP_KIND_COUNT};

// The handler of kind in the table, or nullptr.
const qlstm_op_handler* handler_of(const Kinds& kinds, int32_t kind) {
  for (int32_t i = 0; i < kinds.count; ++i) {
    if (kinds.list[i]->kind == kind) return kinds.list[i];
  }
  return nullptr;
}

// What the ops checked so far need of the context, and the intermediate buffer each activation
// area holds after them (0: none).
struct OpsSoFar {
  int32_t holds[2];
  bool need_scratch;  // a recurrent op
  bool need_cell;     // an op whose kernel takes the context's cell
};

// Op k of a program whose counts and arrays are valid, after the ops before it.
Failure check_op(const qlstm_program& program, const Kinds& kinds, int32_t k, int32_t time_steps, OpsSoFar& so_far) {
  int32_t* const holds = so_far.holds;
  const qlstm_op& op = program.ops[k];
  const int32_t last = program.buffer_count - 1;
  if (op.kind < 0 || op.kind >= QLSTM_OP_KIND_COUNT) return bad_op("kind", k);
  const qlstm_op_handler* const handler = handler_of(kinds, op.kind);
  if (handler == nullptr) return {QLSTM_ERROR_UNSUPPORTED, "kind", k};  // a kind the caller's table lacks
  if (op.params == nullptr) return {QLSTM_ERROR_NULL_POINTER, "params", k};
  const bool second = handler->reads_second_input;
  if (op.input_buffer < 0 || op.input_buffer >= last) return bad_op("input_buffer", k);
  if (second ? op.second_input_buffer < 0 || op.second_input_buffer >= last : op.second_input_buffer != 0) {
    return bad_op("second_input_buffer", k);
  }
  if (op.output_buffer < 1 || op.output_buffer > last) return bad_op("output_buffer", k);
  const bool writes_area = is_intermediate(program, op.output_buffer);
  // Each buffer the op reads holds what it was written with and is not in the area it writes
  // (unless the op writes in place over it: the same positions and width).
  const auto check_read = [&](int32_t buffer, const char* field) {
    if (!is_intermediate(program, buffer)) return kNoFailure;
    if (holds[area_of(buffer)] != buffer) return bad_op(field, k);  // not written yet, or its area since overwritten
    if (writes_area && area_of(buffer) == area_of(op.output_buffer)) {
      const bool same_width = program.buffer_widths[buffer] == program.buffer_widths[op.output_buffer];
      const bool aliased = one_step(program, buffer) == one_step(program, op.output_buffer) && same_width;
      const bool pooled = second && buffer == op.second_input_buffer && !one_step(program, buffer) &&
                          one_step(program, op.output_buffer) && same_width;
      if (!(handler->in_place && aliased) && !(handler->pools_in_place && pooled)) return bad_op("output_buffer", k);
    }
    return kNoFailure;
  };
  Failure read = check_read(op.input_buffer, "input_buffer");
  if (read.status == QLSTM_OK && second) read = check_read(op.second_input_buffer, "second_input_buffer");
  if (read.status != QLSTM_OK) return read;
  const OpTypes types = handler->types(program, op);
  if (types.in != element_type(program, op.input_buffer)) return {QLSTM_ERROR_BAD_ELEMENT_TYPE, "input_buffer", k};
  if (second && types.in != element_type(program, op.second_input_buffer)) {
    return {QLSTM_ERROR_BAD_ELEMENT_TYPE, "second_input_buffer", k};
  }
  if (types.out != element_type(program, op.output_buffer)) return {QLSTM_ERROR_BAD_ELEMENT_TYPE, "output_buffer", k};
  const Failure f = handler->check(program, k, time_steps);
  if (f.status != QLSTM_OK) return f;
  if (writes_area) holds[area_of(op.output_buffer)] = op.output_buffer;
  if (handler->recurrent != nullptr) {
    so_far.need_scratch = true;
    so_far.need_cell = so_far.need_cell || handler->recurrent->needs_context_cell;
  }
  return kNoFailure;
}
// The context of a valid program.
Failure check_context(const qlstm_program& program, const Kinds& kinds, const OpsSoFar& ops,
                      const qlstm_program_context& ctx, int32_t time_steps) {
  bool has_s16 = false;
  for (int32_t b = 1; b < program.buffer_count - 1; ++b) has_s16 = has_s16 || element_type(program, b) == QLSTM_ELEMENT_S16;
  // What the recurrent kernels would check of their context, once for every op: the runner does
  // not ask again. The other kinds need no scratch; a stateless GRU keeps its hidden in its scratch.
  if (ops.need_scratch) {
    if (ctx.scratch == nullptr) return {QLSTM_ERROR_NULL_POINTER, "scratch", -1};
    if (reinterpret_cast<uintptr_t>(ctx.scratch) % QLSTM_SCRATCH_ALIGNMENT != 0) {
      return {QLSTM_ERROR_SCRATCH_MISALIGNED, "scratch", -1};
    }
  }
  if (ops.need_cell && ctx.cell == nullptr) return {QLSTM_ERROR_NULL_POINTER, "cell", -1};
  for (int32_t k = 0; k < program.op_count; ++k) {
    const qlstm_op& op = program.ops[k];
    const RecurrentKind* const recurrent = handler_of(kinds, op.kind)->recurrent;
    if (recurrent != nullptr && ctx.scratch_bytes < recurrent->scratch_bytes(op, time_steps)) {
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

Failure check_program(const qlstm_program* program, const Kinds& kinds, const qlstm_program_context* ctx,
                      int32_t time_steps) {
  if (program == nullptr) return {QLSTM_ERROR_NULL_POINTER, "program", -1};
  if (kinds.count < 0) return bad_program("kind_count");
  if (kinds.count > 0 && kinds.list == nullptr) return {QLSTM_ERROR_NULL_POINTER, "kinds", -1};
  for (int32_t i = 0; i < kinds.count; ++i) {
    if (kinds.list[i] == nullptr) return {QLSTM_ERROR_NULL_POINTER, "kinds", -1};
  }
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
  OpsSoFar ops = {{0, 0}, false, false};
  for (int32_t k = 0; k < program->op_count; ++k) {
    const Failure f = check_op(*program, kinds, k, time_steps, ops);
    if (f.status != QLSTM_OK) return f;
  }
  return ctx == nullptr ? kNoFailure : check_context(*program, kinds, ops, *ctx, time_steps);
}

qlstm_status validate(const qlstm_program* program, const Kinds& kinds, const qlstm_program_context* ctx,
                      int32_t max_time_steps, const char** field, int32_t* op_index) {
  const Failure f = check_program(program, kinds, ctx, max_time_steps);
  if (field != nullptr) *field = f.field;
  if (op_index != nullptr) *op_index = f.op;
  return f.status;
}

qlstm_status run_program(const qlstm_program* program, const Kinds& kinds, qlstm_program_context* ctx,
                         const void* input, void* output, int32_t time_steps, int8_t* hidden, int16_t* cell,
                         const qlstm::ProgramRunOptions& options) {
  if (program == nullptr || ctx == nullptr) return QLSTM_ERROR_NULL_POINTER;
  if ((hidden == nullptr) != (cell == nullptr)) return QLSTM_ERROR_NULL_POINTER;
  const qlstm_status valid = validate(program, kinds, ctx, time_steps, nullptr, nullptr);
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
    const qlstm_op_handler* const handler = handler_of(kinds, op.kind);
    const auto source = [&](int32_t buffer) -> const void* {
      return buffer == 0 ? input : ctx->activations[area_of(buffer)];
    };
    const void* in2 = handler->reads_second_input ? source(op.second_input_buffer) : nullptr;
    void* out = op.output_buffer == last ? output : ctx->activations[area_of(op.output_buffer)];
    if (options.before_op != nullptr) options.before_op(k);
    const qlstm_status st =
        handler->run(OpCall{*program, op, time_steps, *ctx, source(op.input_buffer), in2, out, hidden, cell, options});
    if (options.after_op != nullptr) options.after_op(k);
    if (st != QLSTM_OK) return st;
  }
  return QLSTM_OK;
}

}  // namespace

extern "C" qlstm_status qlstm_program_validate(const qlstm_program* program, const qlstm_program_context* ctx,
                                               int32_t max_time_steps, const char** field, int32_t* op_index) {
  return validate(program, kEveryKind, ctx, max_time_steps, field, op_index);
}

extern "C" qlstm_status qlstm_program_validate_kinds(const qlstm_program* program, const qlstm_op_handler* const* kinds,
                                                     int32_t kind_count, const qlstm_program_context* ctx,
                                                     int32_t max_time_steps, const char** field, int32_t* op_index) {
  return validate(program, Kinds{kinds, kind_count}, ctx, max_time_steps, field, op_index);
}

extern "C" qlstm_status qlstm_program_run(const qlstm_program* program, qlstm_program_context* ctx,
                                          const void* input, void* output, int32_t time_steps, int8_t* hidden,
                                          int16_t* cell) {
  return run_program(program, kEveryKind, ctx, input, output, time_steps, hidden, cell, qlstm::ProgramRunOptions{});
}

extern "C" qlstm_status qlstm_program_run_kinds(const qlstm_program* program, const qlstm_op_handler* const* kinds,
                                                int32_t kind_count, qlstm_program_context* ctx, const void* input,
                                                void* output, int32_t time_steps, int8_t* hidden, int16_t* cell) {
  return run_program(program, Kinds{kinds, kind_count}, ctx, input, output, time_steps, hidden, cell,
                     qlstm::ProgramRunOptions{});
}

qlstm_status qlstm::run_program_s8(const qlstm_program* program, qlstm_program_context* ctx, const void* input,
                                   void* output, int32_t time_steps, int8_t* hidden, int16_t* cell,
                                   const ProgramRunOptions& options) {
  return run_program(program, kEveryKind, ctx, input, output, time_steps, hidden, cell, options);
}

// The sizes of an op of any kind, from its kind's handler: these link every kind.
namespace {
const RecurrentKind* recurrent_of(const qlstm_op* op) {
  const qlstm_op_handler* const handler =
      op == nullptr || op->params == nullptr ? nullptr : handler_of(kEveryKind, op->kind);
  return handler != nullptr ? handler->recurrent : nullptr;
}
}  // namespace

extern "C" int32_t qlstm_op_state_size(const qlstm_op* op) {
  const RecurrentKind* const recurrent = recurrent_of(op);
  return recurrent != nullptr ? recurrent->state_size(*op) : 0;
}

extern "C" size_t qlstm_op_scratch_bytes(const qlstm_op* op) {
  const RecurrentKind* const recurrent = recurrent_of(op);
  return recurrent != nullptr ? recurrent->scratch_bytes(*op, kBlockTimeSteps) : 0;
}
