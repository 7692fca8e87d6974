// The int8 fully connected op's part of the program runner (program_op.h).
#include "program_op.h"

namespace {

using namespace qlstm::program;

qlstm_status run_fc_s8_op(const OpCall& c) {
  return qlstm::run_fc_s8_prechecked(c.options.fc_variant, row_call_params(c.program, c.op, block_of<qlstm_fc_s8_params>(c.op), c.time_steps),
                                     in_as<int8_t>(c), out_as<int8_t>(c));
}

}  // namespace

extern "C" const qlstm_op_handler qlstm_op_handler_fully_connected_s8 =
    fully_connected_handler<qlstm_fc_s8_params, qlstm_fc_s8_validate, false>(
        QLSTM_OP_FULLY_CONNECTED_S8, types_of<QLSTM_ELEMENT_S8>, run_fc_s8_op);
