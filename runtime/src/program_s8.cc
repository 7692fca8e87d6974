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

// The element types an op reads and writes (a requantization's and a selection's: their buffers',
// checked elsewhere): each kind's handler has its own.
struct OpTypes {
  int32_t in, out;
};
template <int32_t Type>
OpTypes types_of(const qlstm_program&, const qlstm_op&) {
  return {Type, Type};
}
OpTypes requantize_types(const qlstm_program&, const qlstm_op& op) {
  return {op.requantize.input_type, op.requantize.output_type};
}
OpTypes select_types(const qlstm_program& program, const qlstm_op& op) {
  const int32_t t = element_type(program, op.input_buffer);
  return {t, t};
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
// The kernel's own validation of op k's params as its call hands them over.
template <class P>
Failure validated(qlstm_status (*validate)(const P*, const char**), const P& params, int32_t k) {
  const char* field = nullptr;
  const qlstm_status st = validate(&params, &field);
  return st == QLSTM_OK ? kNoFailure : Failure{st, field, k};
}

// A kernel's validation: qlstm_lstm_s8_validate, qlstm_fc_s8_validate, ...
template <class P>
using ValidateFn = qlstm_status (*)(const P*, const char**);

// A recurrent op (Block: its LSTM or GRU params): reads a sequence, writes a sequence or (FINAL) a
// one-step buffer; its width, batch, layout, params and state rows.
template <class P, P qlstm_op::*Block, ValidateFn<P> Validate>
Failure check_recurrent(const qlstm_program& program, int32_t k, int32_t time_steps) {
  const qlstm_op& op = program.ops[k];
  const P& block = op.*Block;
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
  const Failure f = validated(Validate, recurrent_call_params(program, op, block, time_steps), k);
  if (f.status != QLSTM_OK) return f;
  // B x the state size fits int32 once the params are valid.
  const size_t rows = static_cast<size_t>(d.batch) * static_cast<size_t>(qlstm_op_state_size(&op));
  if (op.state_offset > program.state_values || rows > program.state_values - op.state_offset) {
    return bad_op("state_offset", k);
  }
  return kNoFailure;
}

// The scratch of a recurrent op's call (Bytes: its kernel's scratch size of its dims).
template <class P, P qlstm_op::*Block, size_t (*Bytes)(const decltype(P::dims)*)>
size_t recurrent_scratch_bytes(const qlstm_op& op, int32_t time_steps) {
  decltype(P::dims) dims = (op.*Block).dims;
  dims.time_steps = time_steps;
  return Bytes(&dims);
}

// The other kinds' params (P: the kind's block) with rows set to the input buffer's positions.
template <class P>
P row_call_params(const qlstm_program& program, const qlstm_op& op, const P& block, int32_t time_steps) {
  P p = block;
  p.rows = positions(program, op.input_buffer, time_steps);
  return p;
}

int32_t in_width(const qlstm_program& program, const qlstm_op& op) { return program.buffer_widths[op.input_buffer]; }
int32_t out_width(const qlstm_program& program, const qlstm_op& op) { return program.buffer_widths[op.output_buffer]; }

// An op of another kind: keeps the positions (a selection: one step of a sequence), writes a
// whole row of its output buffer, has no state. Its kind's checks of its widths and its kernel's
// own validation follow.
Failure check_rows(const qlstm_program& program, int32_t k, int32_t time_steps, bool selection) {
  const qlstm_op& op = program.ops[k];
  if (selection) {
    if (one_step(program, op.input_buffer)) return bad_op("input_buffer", k);
    if (!one_step(program, op.output_buffer)) return bad_op("output_buffer", k);
  } else if (one_step(program, op.input_buffer) != one_step(program, op.output_buffer)) {
    return bad_op("output_buffer", k);
  }
  if (op.output_offset != 0) return bad_op("output_offset", k);
  if (op.state_offset != 0) return bad_op("state_offset", k);
  // Every element of both buffers must be addressable in int32 (a recurrent op checks its own).
  const int32_t in = in_width(program, op), out = out_width(program, op);
  const int64_t rows = one_step(program, op.input_buffer) ? program.batch : static_cast<int64_t>(program.batch) * time_steps;
  if (rows * (in > out ? in : out) > INT32_MAX) return {QLSTM_ERROR_BAD_DIMS, "rows", k};
  return kNoFailure;
}

// A fully connected op (int8 or 16x8): its input_size / output_size are its buffers' widths (and a
// 16x8 one in a program has a bias).
template <class P, P qlstm_op::*Block, ValidateFn<P> Validate, bool kNeedsBias>
Failure check_fully_connected(const qlstm_program& program, int32_t k, int32_t time_steps) {
  const Failure f = check_rows(program, k, time_steps, false);
  if (f.status != QLSTM_OK) return f;
  const qlstm_op& op = program.ops[k];
  const P& block = op.*Block;
  if (block.input_size != in_width(program, op)) return bad_op("input_size", k);
  if (block.output_size != out_width(program, op)) return bad_op("output_size", k);
  if constexpr (kNeedsBias) {
    if (block.bias == nullptr) return {QLSTM_ERROR_NULL_POINTER, "bias", k};
  }
  return validated(Validate, row_call_params(program, op, block, time_steps), k);
}

// A softmax, table or requantization op: row_size is both its buffers' width.
template <class P, P qlstm_op::*Block, ValidateFn<P> Validate>
Failure check_same_width(const qlstm_program& program, int32_t k, int32_t time_steps) {
  const Failure f = check_rows(program, k, time_steps, false);
  if (f.status != QLSTM_OK) return f;
  const qlstm_op& op = program.ops[k];
  const P& block = op.*Block;
  if (block.row_size != in_width(program, op) || block.row_size != out_width(program, op)) return bad_op("row_size", k);
  return validated(Validate, row_call_params(program, op, block, time_steps), k);
}

// A selection: the copy is the runner's own.
Failure check_select(const qlstm_program& program, int32_t k, int32_t time_steps) {
  const Failure f = check_rows(program, k, time_steps, true);
  if (f.status != QLSTM_OK) return f;
  const qlstm_op& op = program.ops[k];
  if (op.select.row_size < 1 || op.select.row_size != in_width(program, op) ||
      op.select.row_size != out_width(program, op)) {
    return bad_op("row_size", k);
  }
  if (op.select.step < -time_steps || op.select.step >= time_steps) return bad_op("step", k);
  return kNoFailure;
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

// One op's call on a validated program: its input and output (the caller's arrays or an area, in
// their buffers' element types), the caller's state (hidden NULL: stateless) and the options.
struct OpCall {
  const qlstm_program& program;
  const qlstm_op& op;
  int32_t time_steps;
  const qlstm_program_context& ctx;
  const void* in;
  void* out;
  int8_t* hidden;
  int16_t* cell;
  const qlstm::ProgramRunOptions& options;
};
// An int16 buffer's area or the caller's array is 2-byte aligned (checked before any op runs).
template <class T>
const T* in_as(const OpCall& c) {
  return static_cast<const T*>(c.in);
}
template <class T>
T* out_as(const OpCall& c) {
  return static_cast<T*>(c.out);
}
// A recurrent op's output rows start output_offset elements into its output buffer's.
template <class T>
T* recurrent_out(const OpCall& c) {
  T* out = out_as<T>(c);
  return out != nullptr ? out + c.op.output_offset : nullptr;
}

qlstm_status run_lstm_s8_op(const OpCall& c) {
  const qlstm_lstm_s8_params p = recurrent_call_params(c.program, c.op, c.op.lstm, c.time_steps);
  qlstm_lstm_s8_context ctx = {c.ctx.scratch, c.ctx.scratch_bytes, c.hidden ? c.cell + c.op.state_offset : c.ctx.cell,
                               c.hidden ? c.hidden + c.op.state_offset : nullptr};
  return qlstm::run_lstm_s8_prechecked(c.options.variant, p, ctx, in_as<int8_t>(c), recurrent_out<int8_t>(c));
}

// Its state is the int16 Q0.15 hidden in the caller's cell array; stateless: NULL, the kernel's own
// zero state in its scratch.
qlstm_status run_gru_s8_op(const OpCall& c) {
  const qlstm_gru_s8_params p = recurrent_call_params(c.program, c.op, c.op.gru, c.time_steps);
  qlstm_gru_s8_context ctx = {c.ctx.scratch, c.ctx.scratch_bytes, c.hidden ? c.cell + c.op.state_offset : nullptr};
  return qlstm::run_gru_s8_prechecked(c.options.gru_variant, p, ctx, in_as<int8_t>(c), recurrent_out<int8_t>(c));
}

// Its state is two rows of the caller's cell array: the cell, then the int16 hidden (its rows of
// hidden unused); stateless: the context's cell and a zero hidden.
qlstm_status run_lstm_s16_op(const OpCall& c) {
  const qlstm_lstm_s16_params p = recurrent_call_params(c.program, c.op, c.op.lstm_s16, c.time_steps);
  const ptrdiff_t rows = static_cast<ptrdiff_t>(p.dims.batch) * p.dims.hidden_size;
  qlstm_lstm_s16_context ctx = {c.ctx.scratch, c.ctx.scratch_bytes, c.hidden ? c.cell + c.op.state_offset : c.ctx.cell,
                                c.hidden ? c.cell + c.op.state_offset + rows : nullptr};
  return qlstm::run_lstm_s16_prechecked(p, ctx, in_as<int16_t>(c), recurrent_out<int16_t>(c));
}

qlstm_status run_fc_s8_op(const OpCall& c) {
  return qlstm::run_fc_s8_prechecked(c.options.fc_variant, row_call_params(c.program, c.op, c.op.fc, c.time_steps),
                                     in_as<int8_t>(c), out_as<int8_t>(c));
}

qlstm_status run_fc_s16_op(const OpCall& c) {
  return qlstm::run_fc_s16_prechecked(row_call_params(c.program, c.op, c.op.fc_s16, c.time_steps), in_as<int16_t>(c),
                                      out_as<int16_t>(c));
}

// The per-position kernels without a status of their own: softmax, table, requantization.
template <class P, P qlstm_op::*Block, class In, class Out, void (*Kernel)(const P&, const In*, Out*)>
qlstm_status run_rows(const OpCall& c) {
  Kernel(row_call_params(c.program, c.op, c.op.*Block, c.time_steps), in_as<In>(c), out_as<Out>(c));
  return QLSTM_OK;
}

qlstm_status run_select(const OpCall& c) {
  select_step(c.program, c.op, c.time_steps, in_as<int8_t>(c), out_as<int8_t>(c));
  return QLSTM_OK;
}

}  // namespace

// One kind's part of the runner: the types of its buffers, its checks past the buffer indices and
// areas (steps, widths, state, its kernel's own validation), its call's scratch and its run. A
// firmware that lists only its program's kinds links only theirs (qlstm_program_run_kinds).
struct qlstm_op_handler {
  int32_t kind;
  OpTypes (*types)(const qlstm_program& program, const qlstm_op& op);
  Failure (*check)(const qlstm_program& program, int32_t k, int32_t time_steps);
  size_t (*scratch_bytes)(const qlstm_op& op, int32_t time_steps);  // nullptr: none (not a recurrent op)
  qlstm_status (*run)(const OpCall& call);
};

extern "C" {
const qlstm_op_handler qlstm_op_handler_lstm_s8 = {
    QLSTM_OP_LSTM_S8, types_of<QLSTM_ELEMENT_S8>,
    check_recurrent<qlstm_lstm_s8_params, &qlstm_op::lstm, qlstm_lstm_s8_validate>,
    recurrent_scratch_bytes<qlstm_lstm_s8_params, &qlstm_op::lstm, qlstm_lstm_s8_scratch_bytes>, run_lstm_s8_op};
const qlstm_op_handler qlstm_op_handler_fully_connected_s8 = {
    QLSTM_OP_FULLY_CONNECTED_S8, types_of<QLSTM_ELEMENT_S8>,
    check_fully_connected<qlstm_fc_s8_params, &qlstm_op::fc, qlstm_fc_s8_validate, false>, nullptr, run_fc_s8_op};
const qlstm_op_handler qlstm_op_handler_softmax_s8 = {
    QLSTM_OP_SOFTMAX_S8, types_of<QLSTM_ELEMENT_S8>,
    check_same_width<qlstm_softmax_s8_params, &qlstm_op::softmax, qlstm_softmax_s8_validate>, nullptr,
    run_rows<qlstm_softmax_s8_params, &qlstm_op::softmax, int8_t, int8_t, qlstm::softmax_s8_prechecked>};
const qlstm_op_handler qlstm_op_handler_table_s8 = {
    QLSTM_OP_TABLE_S8, types_of<QLSTM_ELEMENT_S8>,
    check_same_width<qlstm_table_s8_params, &qlstm_op::table, qlstm_table_s8_validate>, nullptr,
    run_rows<qlstm_table_s8_params, &qlstm_op::table, int8_t, int8_t, qlstm::table_s8_prechecked>};
const qlstm_op_handler qlstm_op_handler_select_step = {QLSTM_OP_SELECT_STEP, select_types, check_select, nullptr,
                                                       run_select};
const qlstm_op_handler qlstm_op_handler_gru_s8 = {
    QLSTM_OP_GRU_S8, types_of<QLSTM_ELEMENT_S8>,
    check_recurrent<qlstm_gru_s8_params, &qlstm_op::gru, qlstm_gru_s8_validate>,
    recurrent_scratch_bytes<qlstm_gru_s8_params, &qlstm_op::gru, qlstm_gru_s8_scratch_bytes>, run_gru_s8_op};
const qlstm_op_handler qlstm_op_handler_lstm_s16 = {
    QLSTM_OP_LSTM_S16, types_of<QLSTM_ELEMENT_S16>,
    check_recurrent<qlstm_lstm_s16_params, &qlstm_op::lstm_s16, qlstm_lstm_s16_validate>,
    recurrent_scratch_bytes<qlstm_lstm_s16_params, &qlstm_op::lstm_s16, qlstm_lstm_s16_scratch_bytes>, run_lstm_s16_op};
const qlstm_op_handler qlstm_op_handler_fully_connected_s16 = {
    QLSTM_OP_FULLY_CONNECTED_S16, types_of<QLSTM_ELEMENT_S16>,
    check_fully_connected<qlstm_fc_s16_params, &qlstm_op::fc_s16, qlstm_fc_s16_validate, true>, nullptr,
    run_fc_s16_op};
const qlstm_op_handler qlstm_op_handler_requantize = {
    QLSTM_OP_REQUANTIZE, requantize_types,
    check_same_width<qlstm_requantize_params, &qlstm_op::requantize, qlstm_requantize_validate>, nullptr,
    run_rows<qlstm_requantize_params, &qlstm_op::requantize, void, void, qlstm::requantize_prechecked>};
const qlstm_op_handler qlstm_op_handler_softmax_s16 = {
    QLSTM_OP_SOFTMAX_S16, types_of<QLSTM_ELEMENT_S16>,
    check_same_width<qlstm_softmax_s16_params, &qlstm_op::softmax_s16, qlstm_softmax_s16_validate>, nullptr,
    run_rows<qlstm_softmax_s16_params, &qlstm_op::softmax_s16, int16_t, int16_t, qlstm::softmax_s16_prechecked>};
}  // extern "C"

namespace {

// Every kind, for qlstm_program_validate and qlstm_program_run (the host, the device bundle).
const qlstm_op_handler* const kAllKinds[] = {
    &qlstm_op_handler_lstm_s8,  &qlstm_op_handler_fully_connected_s8,  &qlstm_op_handler_softmax_s8,
    &qlstm_op_handler_table_s8, &qlstm_op_handler_select_step,         &qlstm_op_handler_gru_s8,
    &qlstm_op_handler_lstm_s16, &qlstm_op_handler_fully_connected_s16, &qlstm_op_handler_requantize,
    &qlstm_op_handler_softmax_s16,
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

// Op k of a program whose counts and arrays are valid. holds[a]: the intermediate buffer area a
// holds so far (0: none).
Failure check_op(const qlstm_program& program, const Kinds& kinds, int32_t k, int32_t time_steps, int32_t holds[2]) {
  const qlstm_op& op = program.ops[k];
  const int32_t last = program.buffer_count - 1;
  if (op.kind < 0 || op.kind >= QLSTM_OP_KIND_COUNT) return bad_op("kind", k);
  const qlstm_op_handler* const handler = handler_of(kinds, op.kind);
  if (handler == nullptr) return {QLSTM_ERROR_UNSUPPORTED, "kind", k};  // a kind the caller's table lacks
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
  const OpTypes types = handler->types(program, op);
  if (types.in != element_type(program, op.input_buffer)) return {QLSTM_ERROR_BAD_ELEMENT_TYPE, "input_buffer", k};
  if (types.out != element_type(program, op.output_buffer)) return {QLSTM_ERROR_BAD_ELEMENT_TYPE, "output_buffer", k};
  const Failure f = handler->check(program, k, time_steps);
  if (f.status != QLSTM_OK) return f;
  if (writes_area) holds[area_of(op.output_buffer)] = op.output_buffer;
  return kNoFailure;
}
// The context of a valid program.
Failure check_context(const qlstm_program& program, const Kinds& kinds, const qlstm_program_context& ctx,
                      int32_t time_steps) {
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
    const qlstm_op_handler* const handler = handler_of(kinds, op.kind);
    if (handler->scratch_bytes != nullptr && ctx.scratch_bytes < handler->scratch_bytes(op, time_steps)) {
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
  int32_t holds[2] = {0, 0};
  for (int32_t k = 0; k < program->op_count; ++k) {
    const Failure f = check_op(*program, kinds, k, time_steps, holds);
    if (f.status != QLSTM_OK) return f;
  }
  return ctx == nullptr ? kNoFailure : check_context(*program, kinds, *ctx, time_steps);
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
    const void* in = op.input_buffer == 0 ? input : ctx->activations[area_of(op.input_buffer)];
    void* out = op.output_buffer == last ? output : ctx->activations[area_of(op.output_buffer)];
    if (options.before_op != nullptr) options.before_op(k);
    const qlstm_status st =
        handler_of(kinds, op.kind)->run(OpCall{*program, op, time_steps, *ctx, in, out, hidden, cell, options});
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
