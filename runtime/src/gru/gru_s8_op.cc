// The GRU's part of the program runner (program_op.h): a recurrent op on int8 buffers whose state
// is its int16 Q0.15 hidden, one row of the cell array per batch row.
#include "program_op.h"

namespace {

using namespace qlstm::program;

constexpr int32_t kStateRows = 1;  // its hidden, in the cell array (its rows of hidden unused)

// Its checks, scratch and state size; the scratch of its params (a repeated input's projection).
using Op =
    RecurrentOp<qlstm_gru_s8_params, qlstm_gru_s8_validate, qlstm_gru_s8_scratch_bytes, kStateRows>;
size_t call_scratch_bytes(const qlstm_op& op, int32_t time_steps) {
  qlstm_gru_s8_params p = block_of<qlstm_gru_s8_params>(op);
  if (time_steps != kBlockTimeSteps) p.dims.time_steps = time_steps;
  return qlstm_gru_s8_call_scratch_bytes(&p);
}
constexpr RecurrentKind kRecurrent = {call_scratch_bytes, recurrent_state_size<qlstm_gru_s8_params, kStateRows>,
                                      /*needs_context_cell=*/false};

// Stateless: NULL, the kernel's own zero state in its scratch.
qlstm_status run_gru_s8_op(const OpCall& c) {
  const qlstm_gru_s8_params p = recurrent_call_params(c.program, c.op, block_of<qlstm_gru_s8_params>(c.op), c.time_steps);
  qlstm_gru_s8_context ctx = {c.ctx.scratch, c.ctx.scratch_bytes, c.hidden ? c.cell + c.op.state_offset : nullptr};
  return qlstm::run_gru_s8_prechecked(c.options.gru_variant, p, ctx, in_as<int8_t>(c), recurrent_out<int8_t>(c));
}

}  // namespace

extern "C" const qlstm_op_handler qlstm_op_handler_gru_s8 =
    Op::handler(QLSTM_OP_GRU_S8, types_of<QLSTM_ELEMENT_S8>, &kRecurrent, run_gru_s8_op);
