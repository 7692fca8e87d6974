// The LSTM's sequence walk (docs/arithmetic.md §7), shared by the int8 and the 16x8 LSTM: the
// order of the stages, time in either layout and direction, the output width, the final-state
// output and the carried state. `Elem` is the type of the input, output and hidden state (int8_t,
// int16_t); the stages come from the caller.
#ifndef QLSTM_RUNTIME_LSTM_SEQUENCE_H_
#define QLSTM_RUNTIME_LSTM_SEQUENCE_H_

#include <stddef.h>
#include <stdint.h>

#include "qlstm/fixed_point.h"
#include "qlstm/kernels.h"
#include "qlstm/lstm_s8.h"
#include "sequence_common.h"

namespace qlstm {

// The field names a refusal reports, per gate (qlstm_gate_index order).
#define QLSTM_GATE_FIELDS(g)                                                              \
  {                                                                                       \
    "gates[" g "].input_weights", "gates[" g "].input_effective_bias",                    \
        "gates[" g "].hidden_weights", "gates[" g "].hidden_effective_bias",              \
        "gates[" g "].input_to_q3_12.multiplier", "gates[" g "].input_to_q3_12.shift",    \
        "gates[" g "].hidden_to_q3_12.multiplier", "gates[" g "].hidden_to_q3_12.shift",  \
        "gates[" g "].activation"                                                         \
  }
enum LstmGateField { kActivation = kGateMatmulFieldCount, kGateFieldCount };
inline constexpr const char* kLstmGateFieldNames[QLSTM_GATE_COUNT][kGateFieldCount] = {
    QLSTM_GATE_FIELDS("forget"), QLSTM_GATE_FIELDS("input"), QLSTM_GATE_FIELDS("cell"),
    QLSTM_GATE_FIELDS("output")};
#undef QLSTM_GATE_FIELDS

// A gate's activation: sigmoid or tanh, or (hard_sigmoid_ok: the int8 LSTM) HardSigmoid.
inline bool activation_ok(int32_t activation, bool hard_sigmoid_ok) {
  return activation == QLSTM_ACTIVATION_SIGMOID || activation == QLSTM_ACTIVATION_TANH ||
         (hard_sigmoid_ok && activation == QLSTM_ACTIVATION_HARD_SIGMOID);
}

// The fields both LSTM parameter blocks have (the dims are checked by the caller): the sequence
// options, each gate's pointers, requantizations and activation, the cell's requantizations,
// scale and clip. hard_sigmoid_ok: the block's gates may be HardSigmoid (the int8 LSTM's; the
// caller checks their lines).
template <class Params>
FieldFailure check_lstm_fields(const Params& params, bool hard_sigmoid_ok) {
  const Params* p = &params;
  const FieldFailure options = check_sequence_options(p->layout, p->time_direction, p->output_steps,
                                                      p->output_width, p->dims.batch, p->dims.time_steps,
                                                      p->dims.hidden_size);
  if (options.status != QLSTM_OK) return options;
  for (int32_t g = 0; g < QLSTM_GATE_COUNT; ++g) {
    const auto& gate = p->gates[g];
    const char* const* names = kLstmGateFieldNames[g];
    const FieldFailure f = check_gate_matmuls(gate, names);
    if (f.status != QLSTM_OK) return f;
    if (!activation_ok(gate.activation, hard_sigmoid_ok)) {
      return {QLSTM_ERROR_BAD_ACTIVATION, names[kActivation]};
    }
  }
  FieldFailure f = check_requant(p->forget_times_cell_to_cell, "forget_times_cell_to_cell.multiplier",
                                 "forget_times_cell_to_cell.shift");
  if (f.status != QLSTM_OK) return f;
  f = check_requant(p->input_times_cell_gate_to_cell, "input_times_cell_gate_to_cell.multiplier",
                    "input_times_cell_gate_to_cell.shift");
  if (f.status != QLSTM_OK) return f;
  f = check_requant(p->output_times_tanh_cell_to_hidden, "output_times_tanh_cell_to_hidden.multiplier",
                    "output_times_tanh_cell_to_hidden.shift");
  if (f.status != QLSTM_OK) return f;
  if (p->cell_scale_power < QLSTM_CELL_SCALE_POWER_MIN || p->cell_scale_power > QLSTM_CELL_SCALE_POWER_MAX) {
    return {QLSTM_ERROR_BAD_CELL_SCALE, "cell_scale_power"};
  }
  if (p->cell_clip > QLSTM_CELL_CLIP_MAX) return {QLSTM_ERROR_BAD_CELL_CLIP, "cell_clip"};
  return kNoFieldFailure;
}


// What a call's parameter block says about the walk (both LSTM parameter structs have these).
struct LstmSequence {
  qlstm_lstm_dims dims;
  int32_t layout, time_direction, output_steps, output_width;
  int32_t cell_clip;
  bool input_repeated;  // one [B][I] input step read at every step (the int8 LSTM's input_repeated)
};
// Whether the block's input is one step read at every step: the int8 LSTM's field (the 16x8 LSTM
// reads a sequence).
inline bool input_repeated_of(const qlstm_lstm_s8_params& p) { return p.input_repeated != 0; }
template <class Params>
bool input_repeated_of(const Params&) {
  return false;
}
template <class Params>
LstmSequence lstm_sequence_of(const Params& p) {
  return {p.dims, p.layout, p.time_direction, p.output_steps, p.output_width, p.cell_clip, input_repeated_of(p)};
}

// The cell update's clip bounds: [-clip, clip] for clip > 0, the int16 range otherwise.
inline CellUpdateParams cell_update_params(const qlstm_requant& forget_times_cell,
                                           const qlstm_requant& input_times_cell_gate, int32_t cell_clip) {
  return {forget_times_cell, input_times_cell_gate, cell_clip > 0 ? -cell_clip : fxp::kInt16Min,
          cell_clip > 0 ? cell_clip : fxp::kInt16Max};
}

// Runs the steps. scratch: three int16 [B][H] gate buffers. stages.gate(gate_index, args, out),
// stages.cell_update(count, f, i, g, cell) and stages.hidden_update(rows, o, cell, h_out,
// h_row_stride) compute one step's stages; `no_state` is the hidden value of a stateless call's
// final state when T == 0 (the output zero point). projection (a repeated input, int8 only):
// the gates' input accumulators [4][B][H], which every step's gates read (GateArgs::x_acc).
template <class Elem, class Stages>
void run_lstm_sequence(const LstmSequence& q, const Stages& stages, Elem no_state, int16_t* scratch, int16_t* cell,
                       Elem* hidden_state, const Elem* input, Elem* output, const int32_t* projection = nullptr) {
  const qlstm_lstm_dims& d = q.dims;
  const int32_t B = d.batch, T = d.time_steps, I = d.input_size, H = d.hidden_size;
  const ptrdiff_t BH = static_cast<ptrdiff_t>(B) * H;
  const bool stateful = hidden_state != nullptr;
  if (!stateful) {
    for (ptrdiff_t k = 0; k < BH; ++k) cell[k] = 0;
  }

  // Element strides between consecutive time steps and between batch rows; W elements per
  // output position. Only the final state: one [B][W] output that every step overwrites (time
  // stride 0). A step reads its recurrent input, the previous h, in every gate stage before the
  // hidden stage writes the new one, so the in-place update is the same computation.
  const bool final_only = q.output_steps != QLSTM_OUTPUT_ALL_STEPS;  // FINAL, or FIRST: one [B][W] output
  const SequenceStrides strides = sequence_strides(q.layout, q.output_steps, q.output_width, B, T, I, H, q.input_repeated);
  const ptrdiff_t x_step = strides.x_step, x_row = strides.x_row;
  const ptrdiff_t y_step = strides.y_step, y_row = strides.y_row;
  if (final_only && T == 0) {
    // No step: the final state is the initial one (the carried state, or h = zero point).
    for (int32_t b = 0; b < B; ++b) {
      for (int32_t r = 0; r < H; ++r) output[b * y_row + r] = stateful ? hidden_state[b * H + r] : no_state;
    }
  }
  // Reverse: step s processes time T-1-s, and its recurrent input is the h it wrote at step s-1.
  const bool reverse = q.time_direction == QLSTM_TIME_REVERSE;

  int16_t* const forget_q0_15 = scratch;
  int16_t* const input_q0_15 = forget_q0_15 + BH;
  int16_t* const cell_gate_q0_15 = input_q0_15 + BH;
  int16_t* const output_q0_15 = forget_q0_15;  // the forget gate is dead after the cell update

  const int32_t steps = steps_run(q.output_steps, T);
  for (int32_t s = 0; s < steps; ++s) {
    const int32_t t = reverse ? T - 1 - s : s;
    GateArgsOf<Elem> args = {B, I, H, input + t * x_step, x_row, nullptr, H};
    if (s > 0) {
      args.h = output + (reverse ? t + 1 : t - 1) * y_step;
      args.h_row_stride = y_row;
    } else if (stateful) {
      args.h = hidden_state;
    }
    // Gate g's input accumulators, when they were computed once for the call.
    auto with_projection = [&](int32_t g) {
      args.x_acc = projection != nullptr ? projection + g * BH : nullptr;
      return args;
    };
    stages.gate(QLSTM_GATE_FORGET, with_projection(QLSTM_GATE_FORGET), forget_q0_15);
    stages.gate(QLSTM_GATE_INPUT, with_projection(QLSTM_GATE_INPUT), input_q0_15);
    stages.gate(QLSTM_GATE_CELL, with_projection(QLSTM_GATE_CELL), cell_gate_q0_15);
    stages.cell_update(static_cast<int32_t>(BH), forget_q0_15, input_q0_15, cell_gate_q0_15, cell);
    stages.gate(QLSTM_GATE_OUTPUT, with_projection(QLSTM_GATE_OUTPUT), output_q0_15);
    stages.hidden_update(B, output_q0_15, cell, output + t * y_step, y_row);
  }

  if (stateful && T > 0) {
    const Elem* last = output + (reverse ? 0 : T - 1) * y_step;
    for (int32_t b = 0; b < B; ++b) {
      for (int32_t r = 0; r < H; ++r) hidden_state[b * H + r] = last[b * y_row + r];
    }
  }
}

}  // namespace qlstm

#endif  // QLSTM_RUNTIME_LSTM_SEQUENCE_H_
