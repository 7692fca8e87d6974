// The vanilla RNN's part of the program runner (program_op.h): a recurrent op on int8 buffers
// whose state is its int16 hidden, one row of the cell array per batch row (as the GRU's).
#include "program_op.h"

namespace {

using namespace qlstm::program;

constexpr int32_t kStateRows = 1;  // its hidden, in the cell array (its rows of hidden unused)

using Op = RecurrentOp<qlstm_rnn_s8_params, qlstm_rnn_s8_validate, qlstm_rnn_s8_scratch_bytes, kStateRows>;
constexpr RecurrentKind kRecurrent = Op::recurrent(false);

// Stateless: NULL, the kernel's own zero state in its scratch.
qlstm_status run_rnn_s8_op(const OpCall& c) {
  const qlstm_rnn_s8_params p = recurrent_call_params(c.program, c.op, block_of<qlstm_rnn_s8_params>(c.op), c.time_steps);
  qlstm_rnn_s8_context ctx = {c.ctx.scratch, c.ctx.scratch_bytes, c.hidden ? c.cell + c.op.state_offset : nullptr};
  return qlstm::run_rnn_s8_prechecked(c.options.rnn_variant, p, ctx, in_as<int8_t>(c), recurrent_out<int8_t>(c));
}

}  // namespace

extern "C" const qlstm_op_handler qlstm_op_handler_rnn_s8 =
    Op::handler(QLSTM_OP_RNN_S8, types_of<QLSTM_ELEMENT_S8>, &kRecurrent, run_rnn_s8_op);
