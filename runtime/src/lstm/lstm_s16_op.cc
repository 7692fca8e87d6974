// The 16x8 LSTM's part of the program runner (program_op.h): a recurrent op on int16 buffers whose
// state is two int16 rows of the cell array per batch row.
#include "program_op.h"

namespace {

using namespace qlstm::program;

constexpr int32_t kStateRows = 2;  // its cell, then its int16 hidden (its rows of hidden unused)

// Its checks, scratch and state size.
using Op = RecurrentOp<qlstm_lstm_s16_params, qlstm_lstm_s16_validate,
                       qlstm_lstm_s16_scratch_bytes, kStateRows>;
constexpr RecurrentKind kRecurrent = Op::recurrent(true);

// Stateless: the context's cell and a zero hidden.
qlstm_status run_lstm_s16_op(const OpCall& c) {
  const qlstm_lstm_s16_params p = recurrent_call_params(c.program, c.op, block_of<qlstm_lstm_s16_params>(c.op), c.time_steps);
  const ptrdiff_t rows = static_cast<ptrdiff_t>(p.dims.batch) * p.dims.hidden_size;
  qlstm_lstm_s16_context ctx = {c.ctx.scratch, c.ctx.scratch_bytes, c.hidden ? c.cell + c.op.state_offset : c.ctx.cell,
                                c.hidden ? c.cell + c.op.state_offset + rows : nullptr};
  return qlstm::run_lstm_s16_prechecked(p, ctx, in_as<int16_t>(c), recurrent_out<int16_t>(c));
}

}  // namespace

extern "C" const qlstm_op_handler qlstm_op_handler_lstm_s16 =
    Op::handler(QLSTM_OP_LSTM_S16, types_of<QLSTM_ELEMENT_S16>, &kRecurrent, run_lstm_s16_op);
