// Step selection: one step, or step_count consecutive steps, of every batch row of a sequence
// buffer copied into a one-step buffer (in the program's layout: table_s8.h).
// It has no kernel of its own; the copy is here, in its part of the program runner (program_op.h).
#include "program_op.h"

namespace {

using namespace qlstm::program;

// Its buffers' type, whichever it is (the runner checks both buffers have the same).
OpTypes select_types(const qlstm_program& program, const qlstm_op& op) {
  const int32_t t = element_type(program, op.input_buffer);
  return {t, t};
}

// The first step a selection copies in a call of time_steps steps (-1: the last).
int32_t selected_step(const qlstm_select_step_params& s, int32_t time_steps) {
  return s.step < 0 ? time_steps + s.step : s.step;
}

// One step written as a part of each output row (from output_offset): torch.cat((y[:, -1],
// y.mean(1)), 1) is a selection and a pooling writing one buffer side by side.
bool writes_part(const qlstm_program& program, const qlstm_op& op, const qlstm_select_step_params& select) {
  return select.step_count == 1 && (op.output_offset != 0 || select.row_size != out_width(program, op));
}

Failure check_select(const qlstm_program& program, int32_t k, int32_t time_steps) {
  const qlstm_op& op = program.ops[k];
  const qlstm_select_step_params& select = block_of<qlstm_select_step_params>(op);
  const bool part = writes_part(program, op, select);
  const Failure f = check_rows(program, k, time_steps, true, part && select.row_size > 0 ? select.row_size : 0);
  if (f.status != QLSTM_OK) return f;
  if (select.row_size < 1 || select.row_size != in_width(program, op)) return bad_op("row_size", k);
  if (!part &&
      (select.step_count < 1 || static_cast<int64_t>(select.step_count) * select.row_size != out_width(program, op))) {
    return bad_op("step_count", k);
  }
  if (select.step < -time_steps || select.step >= time_steps) return bad_op("step", k);
  // The last step taken is within the call's.
  if (static_cast<int64_t>(selected_step(select, time_steps)) + select.step_count > time_steps) return bad_op("step_count", k);
  return kNoFailure;
}

// Copies steps t0 ... t0 + K - 1 of every batch row (bytes: W elements of the buffers' type). The
// taken steps keep the sequence's order: position p of the output is the input's position
// p + t0 x B (time-major), or batch row b's steps side by side (batch-major).
void select_step(const qlstm_program& program, const qlstm_op& op, int32_t time_steps, const int8_t* in,
                 int8_t* out) {
  const qlstm_select_step_params& select = block_of<qlstm_select_step_params>(op);
  const int32_t B = program.batch, t0 = selected_step(select, time_steps), K = select.step_count;
  const ptrdiff_t bytes = static_cast<ptrdiff_t>(element_bytes(program, op.input_buffer));
  const ptrdiff_t W = static_cast<ptrdiff_t>(select.row_size) * bytes;
  // A part of each row: one step into its place in a wider row (K is 1: position p is batch row p).
  const bool part = writes_part(program, op, select);
  const ptrdiff_t out_stride = part ? static_cast<ptrdiff_t>(out_width(program, op)) * bytes : W;
  out += part ? static_cast<ptrdiff_t>(op.output_offset) * bytes : 0;
  const bool time_major = program.layout == QLSTM_LAYOUT_TIME_MAJOR;
  for (int32_t b = 0; b < B; ++b) {
    for (int32_t j = 0; j < K; ++j) {
      const int32_t t = t0 + j;
      const ptrdiff_t from = time_major ? static_cast<ptrdiff_t>(t) * B + b : static_cast<ptrdiff_t>(b) * time_steps + t;
      const ptrdiff_t to = time_major ? static_cast<ptrdiff_t>(j) * B + b : static_cast<ptrdiff_t>(b) * K + j;
      const int8_t* src = in + from * W;
      int8_t* dst = out + to * out_stride;
      for (ptrdiff_t e = 0; e < W; ++e) dst[e] = src[e];
    }
  }
}

qlstm_status run_select(const OpCall& c) {
  select_step(c.program, c.op, c.time_steps, in_as<int8_t>(c), out_as<int8_t>(c));
  return QLSTM_OK;
}

}  // namespace

extern "C" const qlstm_op_handler qlstm_op_handler_select_step = {
    QLSTM_OP_SELECT_STEP, select_types, check_select, nullptr, run_select,
};
