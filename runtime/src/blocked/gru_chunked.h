// A whole GRU call of a variant built on the chunked gate stage (the Arm ones): the shared walk
// (gru_s8_walk.h) with the three gates' finishes and the update and output's parameters built once
// per call instead of once per stage call. The same arithmetic as the variant's stages.
#ifndef QLSTM_SRC_BLOCKED_GRU_CHUNKED_H_
#define QLSTM_SRC_BLOCKED_GRU_CHUNKED_H_

#include "blocked/gate_rows.h"
#include "blocked/lstm_chunked.h"
#include "gru_s8_walk.h"

namespace qlstm {
namespace blocked {

// Kernel supplies gate_chunked's members (Operand, rows4, dot1, Finish), gru_new_gate_chunked's
// NewGateFinish, and
//   struct UpdateOutput { explicit UpdateOutput(const qlstm_gru_s8_params& p);
//                         void operator()(int32_t rows, int32_t hidden_size, const int16_t* update_q0_15,
//                                         const int16_t* new_q0_15, int16_t* hidden_q0_15, int8_t* y,
//                                         ptrdiff_t y_row_stride) const; };
//     a step's update (hidden_q0_15[rows][H] in place) then its output (int8 rows of y)
template <typename Kernel>
struct PreparedGru {
  GruCallGates gates;
  typename Kernel::Finish reset_finish, update_finish;
  typename Kernel::NewGateFinish new_finish;
  typename Kernel::UpdateOutput update_output;
  typename Kernel::Operand x, h;  // a one-row call's x and h, prepared by the step's reset gate
};

// All three gates of a step read the same x and h: where preparing them costs
// (kPrepareOncePerStep, gate_rows.h's KernelDefaults), a one-row call prepares them in the reset
// gate, once per step instead of once per gate.
template <typename Kernel>
void prepared_gru_step(const void* prepared, const GateArgs& args, const GruStepBuffers& buffers,
                       int16_t* hidden_q0_15, int8_t* y, ptrdiff_t y_row_stride) {
  PreparedGru<Kernel>& p = *static_cast<PreparedGru<Kernel>*>(const_cast<void*>(prepared));
  if constexpr (Kernel::kPrepareOncePerStep) {
    const bool one_row = args.rows == 1;
    gate_chunked_over<Kernel>(p.gates.reset, p.reset_finish, gate_args(args, QLSTM_GRU_GATE_RESET), buffers.reset_q0_15,
                              p.x, p.h, false);
    gate_chunked_over<Kernel>(p.gates.update, p.update_finish, gate_args(args, QLSTM_GRU_GATE_UPDATE),
                              buffers.update_q0_15, p.x, p.h, one_row);
    gru_new_gate_chunked_over<Kernel>(p.gates.new_gate_for(args), p.new_finish, gate_args(args, QLSTM_GRU_GATE_NEW),
                                      buffers.reset_q0_15, buffers.new_q0_15, p.x, p.h, one_row);
  } else {
    gate_chunked_with<Kernel>(p.gates.reset, p.reset_finish, gate_args(args, QLSTM_GRU_GATE_RESET), buffers.reset_q0_15);
    gate_chunked_with<Kernel>(p.gates.update, p.update_finish, gate_args(args, QLSTM_GRU_GATE_UPDATE),
                              buffers.update_q0_15);
    gru_new_gate_chunked_with<Kernel>(p.gates.new_gate_for(args), p.new_finish, gate_args(args, QLSTM_GRU_GATE_NEW),
                                      buffers.reset_q0_15, buffers.new_q0_15);
  }
  p.update_output(args.rows, args.hidden_size, buffers.update_q0_15, buffers.new_q0_15, hidden_q0_15, y,
                  y_row_stride);
}

template <typename Kernel, GruOutputFn kOutput>
qlstm_status gru_chunked(const qlstm_gru_s8_params& params, qlstm_gru_s8_context& ctx, const int8_t* input,
                         int8_t* output) {
  const GruCallGates gates(params);
  PreparedGru<Kernel> prepared = {
      gates,
      finish_of<Kernel>(gates.reset),
      finish_of<Kernel>(gates.update),
      typename Kernel::NewGateFinish(params.gates[QLSTM_GRU_GATE_NEW], params.reset_times_hidden_to_q3_12),
      typename Kernel::UpdateOutput(params),
      {},
      {}};
  return run_gru_s8_walk(params, ctx, input, output, prepared_gru_step<Kernel>, &prepared, kOutput);
}

}  // namespace blocked
}  // namespace qlstm

#endif  // QLSTM_SRC_BLOCKED_GRU_CHUNKED_H_
