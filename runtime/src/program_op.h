// What the program runner (program_s8.cc) and every kind's handler (runtime/src/<kind>/<kind>_op.cc)
// share: struct qlstm_op_handler, an op's call, the buffer helpers and the check and run templates
// of the recurrent ops and the per-position ops. Each handler is its own translation unit, so a
// firmware whose kind table lists only some kinds links only theirs (--gc-sections).
#ifndef QLSTM_SRC_PROGRAM_OP_H_
#define QLSTM_SRC_PROGRAM_OP_H_

#include <stddef.h>
#include <stdint.h>

#include "qlstm/kernels.h"
#include "qlstm/program_s8.h"

namespace qlstm::program {

struct Failure {
  qlstm_status status;
  const char* field;
  int32_t op;  // -1: a field of the program or the context
};
inline constexpr Failure kNoFailure = {QLSTM_OK, nullptr, -1};

inline Failure bad_op(const char* field, int32_t k) { return {QLSTM_ERROR_BAD_PROGRAM, field, k}; }

inline bool one_step(const qlstm_program& program, int32_t buffer) {
  return program.buffer_steps[buffer] == QLSTM_BUFFER_ONE_STEP;
}

// Positions (rows of the buffer's width) a buffer holds in a call of time_steps steps: B x T, or
// B for a one-step buffer. Fits int32 once the op writing or reading it is valid.
inline int32_t positions(const qlstm_program& program, int32_t buffer, int32_t time_steps) {
  return one_step(program, buffer) ? program.batch : program.batch * time_steps;
}

// A buffer's element type (a qlstm_element_type): int8 without buffer_types.
inline int32_t element_type(const qlstm_program& program, int32_t buffer) {
  return program.buffer_types == nullptr ? static_cast<int32_t>(QLSTM_ELEMENT_S8) : program.buffer_types[buffer];
}
inline size_t element_bytes(const qlstm_program& program, int32_t buffer) {
  return qlstm_element_bytes(element_type(program, buffer));
}

// The op's block as its kind's type P (the runner checked params is not NULL and the handler is
// the op's kind's).
template <class P>
const P& block_of(const qlstm_op& op) {
  return *static_cast<const P*>(op.params);
}

inline int32_t in_width(const qlstm_program& program, const qlstm_op& op) {
  return program.buffer_widths[op.input_buffer];
}
inline int32_t out_width(const qlstm_program& program, const qlstm_op& op) {
  return program.buffer_widths[op.output_buffer];
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

// One op's call on a validated program: its input and output (the caller's arrays or an area, in
// their buffers' element types), the caller's state (hidden NULL: stateless) and the options.
struct OpCall {
  const qlstm_program& program;
  const qlstm_op& op;
  int32_t time_steps;
  const qlstm_program_context& ctx;
  const void* in;
  const void* in2;  // an elementwise op's operand 2 (its second input buffer); nullptr for another kind
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

// A kernel's validation: qlstm_lstm_s8_validate, qlstm_fc_s8_validate, ...
template <class P>
using ValidateFn = qlstm_status (*)(const P*, const char**);

// The kernel's own validation of op k's params as its call hands them over.
template <class P>
Failure validated(ValidateFn<P> validate, const P& params, int32_t k) {
  const char* field = nullptr;
  const qlstm_status st = validate(&params, &field);
  return st == QLSTM_OK ? kNoFailure : Failure{st, field, k};
}

using TypesFn = OpTypes (*)(const qlstm_program& program, const qlstm_op& op);
using RunFn = qlstm_status (*)(const OpCall& call);

// qlstm_op_scratch_bytes asks for the scratch of the op's block as it is, not of a call.
inline constexpr int32_t kBlockTimeSteps = -1;

// What the runner asks of a recurrent op's kind (one with state) past its checks.
struct RecurrentKind {
  size_t (*scratch_bytes)(const qlstm_op& op, int32_t time_steps);  // time_steps: the call's, or kBlockTimeSteps
  int32_t (*state_size)(const qlstm_op& op);                         // qlstm_op_state_size
  bool needs_context_cell;  // its kernel takes the context's cell (the LSTMs: a stateless call's)
};

}  // namespace qlstm::program

// One kind's part of the runner: the types of its buffers, its checks past the buffer indices and
// areas (steps, widths, state, its kernel's own validation), its recurrent part and its run. A
// firmware that lists only its program's kinds links only theirs (qlstm_program_run_kinds).
struct qlstm_op_handler {
  int32_t kind;
  qlstm::program::TypesFn types;
  qlstm::program::Failure (*check)(const qlstm_program& program, int32_t k, int32_t time_steps);
  const qlstm::program::RecurrentKind* recurrent;  // nullptr: not a recurrent op
  qlstm::program::RunFn run;
  // Reads its second_input_buffer too (an elementwise op), of its input's element type; the
  // runner checks that buffer as it checks the input buffer.
  bool reads_second_input = false;
  // May write over an operand it reads whole (an elementwise op: each value is read before it is
  // written): its output buffer may share that operand's area when the two have the same steps
  // and width, so position p of one is position p of the other.
  bool in_place = false;
  // May write its one-step output over the every-step second input it pools, of the output's
  // width (the attention pooling: each output row is written after every position it covers was
  // read).
  bool pools_in_place = false;
};

namespace qlstm::program {

// ---- The recurrent ops (the LSTMs, the GRU; P: the kind's block, block_of<P>(op)) ----

// A recurrent op's params as the runner hands them to the kernel: the call's time steps, the row
// width of its output buffer. Only for an op whose output buffer index is valid.
template <class P>
P recurrent_call_params(const qlstm_program& program, const qlstm_op& op, const P& block, int32_t time_steps) {
  P p = block;
  p.dims.time_steps = time_steps;
  const int32_t width = program.buffer_widths[op.output_buffer];
  p.output_width = width == p.dims.hidden_size ? 0 : width;
  return p;
}

// Its state elements per batch row in each state array: kStateRows rows of H.
template <class P, int32_t kStateRows>
int32_t recurrent_state_size(const qlstm_op& op) {
  return kStateRows * block_of<P>(op).dims.hidden_size;
}

// Whether a recurrent block reads one input step at every step (the int8 LSTM's and GRU's
// input_repeated):
// its input buffer is then a one-step buffer.
inline bool reads_one_step(const qlstm_lstm_s8_params& p) { return p.input_repeated != 0; }
inline bool reads_one_step(const qlstm_gru_s8_params& p) { return p.input_repeated != 0; }
template <class P>
bool reads_one_step(const P&) {
  return false;
}

// Reads a sequence (or, input_repeated, a one-step buffer), writes a sequence or (FINAL, FIRST) a
// one-step buffer; its width, batch, layout, params and state rows.
template <class P, ValidateFn<P> Validate, int32_t kStateRows>
Failure check_recurrent(const qlstm_program& program, int32_t k, int32_t time_steps) {
  const qlstm_op& op = program.ops[k];
  const P& block = block_of<P>(op);
  const auto& d = block.dims;
  if (one_step(program, op.input_buffer) != reads_one_step(block)) return bad_op("input_buffer", k);
  const bool final_only = block.output_steps != QLSTM_OUTPUT_ALL_STEPS;  // one step written
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
  const size_t rows =
      static_cast<size_t>(d.batch) * static_cast<size_t>(recurrent_state_size<P, kStateRows>(op));
  if (op.state_offset > program.state_values || rows > program.state_values - op.state_offset) {
    return bad_op("state_offset", k);
  }
  return kNoFailure;
}

// The scratch of a recurrent op's call (Bytes: its kernel's scratch size of its dims).
template <class P, size_t (*Bytes)(const decltype(P::dims)*)>
size_t recurrent_scratch_bytes(const qlstm_op& op, int32_t time_steps) {
  decltype(P::dims) dims = block_of<P>(op).dims;
  if (time_steps != kBlockTimeSteps) dims.time_steps = time_steps;
  return Bytes(&dims);
}

// A recurrent op's output rows start output_offset elements into its output buffer's.
template <class T>
T* recurrent_out(const OpCall& c) {
  T* out = out_as<T>(c);
  return out != nullptr ? out + c.op.output_offset : nullptr;
}

// A recurrent kind's handler and recurrent part from its block, validation, scratch size and
// state rows.
template <class P, ValidateFn<P> Validate, size_t (*Bytes)(const decltype(P::dims)*),
          int32_t kStateRows>
struct RecurrentOp {
  static constexpr RecurrentKind recurrent(bool needs_context_cell) {
    return {recurrent_scratch_bytes<P, Bytes>, recurrent_state_size<P, kStateRows>, needs_context_cell};
  }
  static constexpr qlstm_op_handler handler(int32_t kind, TypesFn types, const RecurrentKind* recurrent, RunFn run) {
    return {kind, types, check_recurrent<P, Validate, kStateRows>, recurrent, run};
  }
};

// ---- The other kinds: per position, stateless ----

// A per-position op's rows per position of its buffers: their widths over its own row widths, the
// same whole number g >= 1 for both (a head on a selection of g steps runs on each step's row;
// otherwise 1). 0: the widths are not such multiples.
inline int32_t row_groups(const qlstm_program& program, const qlstm_op& op, int32_t in_row, int32_t out_row) {
  const int32_t in = in_width(program, op), out = out_width(program, op);
  if (in_row < 1 || out_row < 1 || in % in_row != 0) return 0;
  const int32_t g = in / in_row;
  return g >= 1 && static_cast<int64_t>(g) * out_row == out ? g : 0;
}

// Their params (P: the kind's block) with rows set to the input buffer's positions times the
// op's rows per position (groups: row_groups, checked).
template <class P>
P row_call_params(const qlstm_program& program, const qlstm_op& op, const P& block, int32_t time_steps,
                  int32_t groups) {
  P p = block;
  p.rows = positions(program, op.input_buffer, time_steps) * groups;
  return p;
}

// Keeps the positions (a selection: one step of a sequence), writes a whole row of its output
// buffer, has no state. Its kind's checks of its widths and its kernel's own validation follow.
// part_width > 0: the op writes part_width elements of each output row from its output_offset
// (a part of a concatenation along the features), within the row; else the whole row, offset 0.
Failure check_rows(const qlstm_program& program, int32_t k, int32_t time_steps, bool selection,
                   int32_t part_width = 0);

// A fully connected op (int8 or 16x8): its input_size / output_size are its buffers' widths, or
// the same whole fraction of both (row_groups; and a 16x8 one in a program has a bias).
template <class P, ValidateFn<P> Validate, bool kNeedsBias>
Failure check_fully_connected(const qlstm_program& program, int32_t k, int32_t time_steps) {
  const Failure f = check_rows(program, k, time_steps, false);
  if (f.status != QLSTM_OK) return f;
  const qlstm_op& op = program.ops[k];
  const P& block = block_of<P>(op);
  const int32_t groups = row_groups(program, op, block.input_size, block.output_size);
  if (groups == 0) return bad_op(block.input_size >= 1 && in_width(program, op) % block.input_size == 0 ? "output_size" : "input_size", k);
  if constexpr (kNeedsBias) {
    if (block.bias == nullptr) return {QLSTM_ERROR_NULL_POINTER, "bias", k};
  }
  return validated(Validate, row_call_params(program, op, block, time_steps, groups), k);
}

// A fully connected kind's handler (Run: its call of its kernel).
template <class P, ValidateFn<P> Validate, bool kNeedsBias>
constexpr qlstm_op_handler fully_connected_handler(int32_t kind, TypesFn types, RunFn run) {
  return {kind, types, check_fully_connected<P, Validate, kNeedsBias>, nullptr, run};
}

// A softmax, table or requantization op: row_size is both its buffers' width, or the same whole
// fraction of both (row_groups).
template <class P, ValidateFn<P> Validate>
Failure check_same_width(const qlstm_program& program, int32_t k, int32_t time_steps) {
  const Failure f = check_rows(program, k, time_steps, false);
  if (f.status != QLSTM_OK) return f;
  const qlstm_op& op = program.ops[k];
  const P& block = block_of<P>(op);
  const int32_t groups = row_groups(program, op, block.row_size, block.row_size);
  if (groups == 0) return bad_op("row_size", k);
  return validated(Validate, row_call_params(program, op, block, time_steps, groups), k);
}

// The per-position kernels without a status of their own: softmax, table, requantization.
template <class P, class In, class Out, void (*Kernel)(const P&, const In*, Out*)>
qlstm_status run_rows(const OpCall& c) {
  const P& block = block_of<P>(c.op);
  Kernel(row_call_params(c.program, c.op, block, c.time_steps, row_groups(c.program, c.op, block.row_size, block.row_size)),
         in_as<In>(c), out_as<Out>(c));
  return QLSTM_OK;
}

// A softmax, table or requantization kind's handler: the same width in and out, a kernel without a
// status of its own.
template <class P, ValidateFn<P> Validate, class In, class Out,
          void (*Kernel)(const P&, const In*, Out*)>
constexpr qlstm_op_handler same_width_handler(int32_t kind, TypesFn types) {
  return {kind, types, check_same_width<P, Validate>, nullptr, run_rows<P, In, Out, Kernel>};
}

}  // namespace qlstm::program

#endif  // QLSTM_SRC_PROGRAM_OP_H_
