// The int8 fully connected op's part of the program runner (program_op.h). On a sequence buffer
// writing a one-step buffer it reads every step of each batch row as one input row of T x width
// values (y.reshape(B, -1) then a Linear of T x H inputs): batch-major only, where those values
// are contiguous, and only in calls of exactly input_size / width steps.
#include "program_op.h"

namespace {

using namespace qlstm::program;

bool flattens_steps(const qlstm_program& program, const qlstm_op& op) {
  return !one_step(program, op.input_buffer) && one_step(program, op.output_buffer);
}

// Its rows: its output buffer's positions (B x T, B for one step, or B when it flattens the steps)
// times its rows per position (row_groups; 1 when it flattens the steps).
qlstm_fc_s8_params call_params(const qlstm_program& program, const qlstm_op& op, int32_t time_steps) {
  qlstm_fc_s8_params p = block_of<qlstm_fc_s8_params>(op);
  const int32_t groups = flattens_steps(program, op) ? 1 : row_groups(program, op, p.input_size, p.output_size);
  p.rows = positions(program, op.output_buffer, time_steps) * groups;
  return p;
}

Failure check_fc_s8(const qlstm_program& program, int32_t k, int32_t time_steps) {
  const qlstm_op& op = program.ops[k];
  if (!flattens_steps(program, op)) {
    return check_fully_connected<qlstm_fc_s8_params, qlstm_fc_s8_validate, false>(program, k, time_steps);
  }
  const qlstm_fc_s8_params& block = block_of<qlstm_fc_s8_params>(op);
  if (program.layout != QLSTM_LAYOUT_BATCH_MAJOR) return bad_op("layout", k);
  if (op.output_offset != 0) return bad_op("output_offset", k);
  if (op.state_offset != 0) return bad_op("state_offset", k);
  if (static_cast<int64_t>(in_width(program, op)) * time_steps != block.input_size) return bad_op("input_size", k);
  if (block.output_size != out_width(program, op)) return bad_op("output_size", k);
  return validated(qlstm_fc_s8_validate, call_params(program, op, time_steps), k);
}

qlstm_status run_fc_s8_op(const OpCall& c) {
  return qlstm::run_fc_s8_prechecked(c.options.fc_variant, call_params(c.program, c.op, c.time_steps), in_as<int8_t>(c),
                                     out_as<int8_t>(c));
}

}  // namespace

extern "C" const qlstm_op_handler qlstm_op_handler_fully_connected_s8 = {
    QLSTM_OP_FULLY_CONNECTED_S8, types_of<QLSTM_ELEMENT_S8>, check_fc_s8, nullptr, run_fc_s8_op,
};
