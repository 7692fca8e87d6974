// The GRU's sequence walk (docs/arithmetic.md §7's walk, §13's step) as one function, with the
// step supplied by the caller: the stages of any variant (gru_s8.cc) or a step whose stages a
// variant prepared once per call (blocked/gru_chunked.h). One instantiation in a firmware.
#ifndef QLSTM_SRC_GRU_S8_WALK_H_
#define QLSTM_SRC_GRU_S8_WALK_H_

#include "qlstm/gru_s8.h"
#include "qlstm/kernels.h"
#include "reference/gru_s8_reference.h"

namespace qlstm {

// A call's gates as the step stages take them: r and z as the LSTM's sigmoid gate, n as in the
// block, and n at a stateless first step (its recurrent accumulator the zero-state bias,
// kernels.h). Built once per call.
struct GruCallGates {
  qlstm_gate_s8_params reset, update;
  qlstm_gru_gate_s8_params new_gate, new_gate_at_zero_state;
  explicit GruCallGates(const qlstm_gru_s8_params& p)
      : reset(gru_reference::as_sigmoid_lstm_gate(p.gates[QLSTM_GRU_GATE_RESET])),
        update(gru_reference::as_sigmoid_lstm_gate(p.gates[QLSTM_GRU_GATE_UPDATE])),
        new_gate(p.gates[QLSTM_GRU_GATE_NEW]),
        new_gate_at_zero_state(p.gates[QLSTM_GRU_GATE_NEW]) {
    new_gate_at_zero_state.hidden_effective_bias = p.new_gate_zero_state_bias;
  }
  const qlstm_gru_gate_s8_params& new_gate_for(const GateArgs& args) const {
    return args.h != nullptr ? new_gate : new_gate_at_zero_state;
  }
};

// The int16 [B][H] buffers of a step, in the call's scratch.
struct GruStepBuffers {
  int16_t* reset_q0_15;
  int16_t* update_q0_15;
  int16_t* new_q0_15;
};

// Gate g's arguments: args, with a repeated input's projection [3][B][H] (args.x_acc, when set)
// moved to that gate's accumulators.
inline GateArgs gate_args(const GateArgs& args, int32_t g) {
  GateArgs a = args;
  if (a.x_acc != nullptr) a.x_acc += static_cast<ptrdiff_t>(g) * a.rows * a.hidden_size;
  return a;
}

// One time step (§13), from what the caller prepared: r, z, n from x and the recurrent operand
// args.h (null: a stateless first step, kernels.h; args.x_acc: a repeated input's projection of
// all three, gate_args), then hidden_q0_15[rows][H] in place, then its
// int8 rows y. All three gates read args.h before y is written, so y may be args.h (the
// final-state-only walk).
using GruStepFn = void (*)(const void* prepared, const GateArgs& args, const GruStepBuffers& buffers,
                           int16_t* hidden_q0_15, int8_t* y, ptrdiff_t y_row_stride);

// A validated call (run_gru_s8's checks done): the walk with this step. output_stage (the
// variant's) writes the int8 form of a given initial state, and the final state of a call
// without steps.
qlstm_status run_gru_s8_walk(const qlstm_gru_s8_params& params, qlstm_gru_s8_context& ctx, const int8_t* input,
                             int8_t* output, GruStepFn step, const void* prepared, GruOutputFn output_stage);

}  // namespace qlstm

#endif  // QLSTM_SRC_GRU_S8_WALK_H_
