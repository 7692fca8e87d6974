// The CMSIS-NN backend's LSTM parameter mapping, shared by the int8 (lstm_s8_cmsis_nn.cc) and the
// 16x8 (lstm_s16_cmsis_nn.cc) LSTM: qlstm's parameter blocks were laid out after CMSIS-NN's
// cmsis_nn_lstm_params, with the same multiplier/shift conventions, gate order and meaning of
// cell_clip <= 0 (the full int16 range), so the mapping is field by field.
#ifndef QLSTM_SRC_CMSIS_NN_LSTM_PARAMS_CMSIS_NN_H_
#define QLSTM_SRC_CMSIS_NN_LSTM_PARAMS_CMSIS_NN_H_

#include "arm_nnfunctions.h"
#include "qlstm/lstm_s8.h"

namespace qlstm {
namespace cmsis_nn {

// Gate: qlstm_gate_s8_params or qlstm_gate_s16_params.
template <class Gate>
cmsis_nn_lstm_gate lstm_gate(const Gate& g) {
  cmsis_nn_lstm_gate c{};
  c.input_multiplier = g.input_to_q3_12.multiplier;
  c.input_shift = g.input_to_q3_12.shift;
  c.input_weights = g.input_weights;
  c.input_effective_bias = g.input_effective_bias;
  c.hidden_multiplier = g.hidden_to_q3_12.multiplier;
  c.hidden_shift = g.hidden_to_q3_12.shift;
  c.hidden_weights = g.hidden_weights;
  c.hidden_effective_bias = g.hidden_effective_bias;
  c.bias = nullptr;  // informational upstream; the kernel reads the effective biases only
  c.activation_type = g.activation == QLSTM_ACTIVATION_TANH ? ARM_TANH : ARM_SIGMOID;
  return c;
}

// Params: qlstm_lstm_s8_params or qlstm_lstm_s16_params; output_offset is the int8 LSTM's output
// zero point, 0 for the 16x8 one.
template <class Params>
cmsis_nn_lstm_params lstm_params(const Params& p, int32_t output_offset) {
  cmsis_nn_lstm_params c{};
  c.time_major = p.layout == QLSTM_LAYOUT_TIME_MAJOR ? 1 : 0;
  c.batch_size = p.dims.batch;
  c.time_steps = p.dims.time_steps;
  c.input_size = p.dims.input_size;
  c.hidden_size = p.dims.hidden_size;
  c.input_offset = 0;  // never read upstream: the input zero point is in the effective biases
  c.forget_to_cell_multiplier = p.forget_times_cell_to_cell.multiplier;
  c.forget_to_cell_shift = p.forget_times_cell_to_cell.shift;
  c.input_to_cell_multiplier = p.input_times_cell_gate_to_cell.multiplier;
  c.input_to_cell_shift = p.input_times_cell_gate_to_cell.shift;
  c.cell_clip = p.cell_clip;
  c.cell_scale_power = p.cell_scale_power;
  c.output_multiplier = p.output_times_tanh_cell_to_hidden.multiplier;
  c.output_shift = p.output_times_tanh_cell_to_hidden.shift;
  c.output_offset = output_offset;
  c.forget_gate = lstm_gate(p.gates[QLSTM_GATE_FORGET]);
  c.input_gate = lstm_gate(p.gates[QLSTM_GATE_INPUT]);
  c.cell_gate = lstm_gate(p.gates[QLSTM_GATE_CELL]);
  c.output_gate = lstm_gate(p.gates[QLSTM_GATE_OUTPUT]);
  return c;
}

// Upstream walks time forward and writes every step densely to a [..][H] output, and its gates are
// sigmoid or tanh: a reverse call, a wider output row (a bidirectional layer), a final-state-only
// call or a HardSigmoid gate goes to the next variant.
template <class Params>
bool can_run_lstm(const Params& p) {
  for (const auto& g : p.gates) {
    if (g.activation != QLSTM_ACTIVATION_SIGMOID && g.activation != QLSTM_ACTIVATION_TANH) return false;
  }
  return p.time_direction == QLSTM_TIME_FORWARD && (p.output_width == 0 || p.output_width == p.dims.hidden_size) &&
         p.output_steps == QLSTM_OUTPUT_ALL_STEPS;
}

// Upstream's two int16 [B][H] temporaries from qlstm's scratch (three of them), and the state.
template <class Params, class Context>
cmsis_nn_lstm_context lstm_buffers(const Params& p, Context& ctx) {
  int16_t* const temp = static_cast<int16_t*>(ctx.scratch);
  const int32_t bh = p.dims.batch * p.dims.hidden_size;
  return {temp, temp + bh, ctx.cell_state, ctx.hidden_state};
}

}  // namespace cmsis_nn
}  // namespace qlstm

#endif  // QLSTM_SRC_CMSIS_NN_LSTM_PARAMS_CMSIS_NN_H_
