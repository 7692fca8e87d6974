// The checks every per-position kind's handler shares (program_op.h).
#include "program_op.h"

namespace qlstm::program {

Failure check_rows(const qlstm_program& program, int32_t k, int32_t time_steps, bool selection, int32_t part_width) {
  const qlstm_op& op = program.ops[k];
  if (selection) {
    if (one_step(program, op.input_buffer)) return bad_op("input_buffer", k);
    if (!one_step(program, op.output_buffer)) return bad_op("output_buffer", k);
  } else if (one_step(program, op.input_buffer) != one_step(program, op.output_buffer)) {
    return bad_op("output_buffer", k);
  }
  if (part_width > 0 ? op.output_offset < 0 ||
                           static_cast<int64_t>(op.output_offset) + part_width > program.buffer_widths[op.output_buffer]
                     : op.output_offset != 0) {
    return bad_op("output_offset", k);
  }
  if (op.state_offset != 0) return bad_op("state_offset", k);
  // Every element of both buffers must be addressable in int32 (a recurrent op checks its own).
  const int32_t in = in_width(program, op), out = out_width(program, op);
  const int64_t rows = one_step(program, op.input_buffer) ? program.batch : static_cast<int64_t>(program.batch) * time_steps;
  if (rows * (in > out ? in : out) > INT32_MAX) return {QLSTM_ERROR_BAD_DIMS, "rows", k};
  return kNoFailure;
}

}  // namespace qlstm::program
