// The CMSIS-NN backend: the whole call through the user's own CMSIS-NN
// arm_lstm_unidirectional_s8, built only when the build is pointed at it
// (QLSTM_CMSIS_NN_INCLUDE_DIR and QLSTM_CMSIS_NN_LIBRARY; docs/targets.md). The parameter block
// maps field by field: qlstm's parameters were laid out after CMSIS-NN's, with the same
// multiplier/shift conventions, gate order and meaning of cell_clip <= 0 (the full int16 range).
#include "arm_nnfunctions.h"
#include "qlstm/kernels.h"

namespace qlstm {
namespace {

arm_nn_activation_type cmsis_activation(int32_t a) {
  return a == QLSTM_ACTIVATION_TANH ? ARM_TANH : ARM_SIGMOID;
}

cmsis_nn_lstm_gate cmsis_gate(const qlstm_gate_s8_params& g) {
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
  c.activation_type = cmsis_activation(g.activation);
  return c;
}

qlstm_status run_cmsis_nn(const qlstm_lstm_s8_params& p, qlstm_lstm_s8_context& ctx, const int8_t* input,
                          int8_t* output) {
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
  c.output_offset = p.output_zero_point;
  c.forget_gate = cmsis_gate(p.gates[QLSTM_GATE_FORGET]);
  c.input_gate = cmsis_gate(p.gates[QLSTM_GATE_INPUT]);
  c.cell_gate = cmsis_gate(p.gates[QLSTM_GATE_CELL]);
  c.output_gate = cmsis_gate(p.gates[QLSTM_GATE_OUTPUT]);
  // Upstream needs two int16 [B][H] temporaries; qlstm's scratch holds three.
  int16_t* const temp = static_cast<int16_t*>(ctx.scratch);
  const int32_t bh = p.dims.batch * p.dims.hidden_size;
  cmsis_nn_lstm_context buffers{temp, temp + bh, ctx.cell_state, ctx.hidden_state};
  return arm_lstm_unidirectional_s8(input, output, &c, &buffers) == ARM_CMSIS_NN_SUCCESS ? QLSTM_OK
                                                                                         : QLSTM_ERROR_UNSUPPORTED;
}

// Upstream walks time forward and writes every step densely to a [..][H] output: a reverse call,
// a strided output (a bidirectional layer) or a final-state-only call goes to the next variant.
bool can_run_cmsis_nn(const qlstm_lstm_s8_params& p) {
  return p.time_direction == QLSTM_TIME_FORWARD && (p.output_width == 0 || p.output_width == p.dims.hidden_size) &&
         p.output_steps == QLSTM_OUTPUT_ALL_STEPS;
}

}  // namespace

extern const LstmS8Variant kLstmS8CmsisNnVariant = {"cmsis_nn", nullptr, can_run_cmsis_nn, nullptr,
                                                    nullptr,    nullptr, run_cmsis_nn};

}  // namespace qlstm
