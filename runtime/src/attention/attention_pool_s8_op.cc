// The attention pooling's part of the program runner (program_op.h): the scores (one per step,
// width 1) are its input buffer, the sequence it pools its second input buffer; it writes one row
// of the sequence's width per batch row, over the sequence's area if the plan puts it there.
#include "program_op.h"

namespace {

using namespace qlstm::program;

qlstm_attention_pool_s8_params call_params(const qlstm_program& program, const qlstm_op& op, int32_t time_steps) {
  qlstm_attention_pool_s8_params p = block_of<qlstm_attention_pool_s8_params>(op);
  p.batch = program.batch;
  p.time_steps = time_steps;
  p.layout = program.layout;
  return p;
}

Failure check_attention_pool(const qlstm_program& program, int32_t k, int32_t time_steps) {
  const Failure f = check_rows(program, k, time_steps, true);
  if (f.status != QLSTM_OK) return f;
  const qlstm_op& op = program.ops[k];
  const qlstm_attention_pool_s8_params& block = block_of<qlstm_attention_pool_s8_params>(op);
  if (in_width(program, op) != 1) return bad_op("input_buffer", k);
  if (one_step(program, op.second_input_buffer) || program.buffer_widths[op.second_input_buffer] != block.row_size) {
    return bad_op("second_input_buffer", k);
  }
  if (block.row_size != out_width(program, op)) return bad_op("row_size", k);
  // A program may run zero steps (a recurrent op's final state is then its initial one); the
  // pooling needs one. Its time steps are checked at the largest the call may take.
  return validated(qlstm_attention_pool_s8_validate, call_params(program, op, time_steps > 0 ? time_steps : 1), k);
}

qlstm_status run_attention_pool(const OpCall& c) {
  if (c.time_steps < 1) return QLSTM_ERROR_BAD_DIMS;
  qlstm::attention_pool_s8_prechecked(call_params(c.program, c.op, c.time_steps), in_as<int8_t>(c),
                                      static_cast<const int8_t*>(c.in2), out_as<int8_t>(c));
  return QLSTM_OK;
}

}  // namespace

extern "C" const qlstm_op_handler qlstm_op_handler_attention_pool_s8 = {
    QLSTM_OP_ATTENTION_POOL_S8, types_of<QLSTM_ELEMENT_S8>, check_attention_pool, nullptr, run_attention_pool,
    /*reads_second_input=*/true, /*in_place=*/false, /*pools_in_place=*/true,
};
