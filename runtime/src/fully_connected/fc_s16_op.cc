// The 16x8 fully connected op's part of the program runner (program_op.h).
#include "program_op.h"

namespace {

using namespace qlstm::program;

qlstm_status run_fc_s16_op(const OpCall& c) {
  const qlstm_fc_s16_params& block = block_of<qlstm_fc_s16_params>(c.op);
  const int32_t groups = row_groups(c.program, c.op, block.input_size, block.output_size);
  return qlstm::run_fc_s16_prechecked(row_call_params(c.program, c.op, block, c.time_steps, groups), in_as<int16_t>(c),
                                      out_as<int16_t>(c));
}

}  // namespace

extern "C" const qlstm_op_handler qlstm_op_handler_fully_connected_s16 =
    fully_connected_handler<qlstm_fc_s16_params, qlstm_fc_s16_validate, true>(
        QLSTM_OP_FULLY_CONNECTED_S16, types_of<QLSTM_ELEMENT_S16>, run_fc_s16_op);
