// What the recurrent ops' entry points (LSTM, GRU) share: the checks of the sizes, the
// requantizations and the sequence options, and the strides of the sequence walk (§7).
#ifndef QLSTM_RUNTIME_SEQUENCE_COMMON_H_
#define QLSTM_RUNTIME_SEQUENCE_COMMON_H_

#include <stddef.h>
#include <stdint.h>

#include "qlstm/fixed_point.h"
#include "qlstm/lstm_s8.h"
#include "first_runnable.h"
#include "row_op.h"

namespace qlstm {

// B, I, H >= 1, T >= 0, and every element count (and the scratch size) fits int32, so that
// indexing never overflows on a 32-bit MCU.
inline bool sequence_dims_ok(int32_t batch, int32_t time_steps, int32_t input_size, int32_t hidden_size,
                             int64_t scratch_bytes_per_unit) {
  if (batch < 1 || time_steps < 0 || input_size < 1 || hidden_size < 1) return false;
  const int64_t b = batch, t = time_steps, i = input_size, h = hidden_size;
  const int64_t biggest_io = b * t * (i > h ? i : h);
  const int64_t weights = h * (i > h ? i : h);
  const int64_t scratch = scratch_bytes_per_unit * b * h;
  return biggest_io <= fxp::kInt32Max && weights <= fxp::kInt32Max && scratch <= fxp::kInt32Max;
}

inline FieldFailure check_requant(const qlstm_requant& q, const char* multiplier_field, const char* shift_field) {
  if (q.multiplier < 0) return {QLSTM_ERROR_BAD_MULTIPLIER, multiplier_field};
  if (q.shift < QLSTM_SHIFT_MIN || q.shift > QLSTM_SHIFT_MAX) return {QLSTM_ERROR_BAD_SHIFT, shift_field};
  return kNoFieldFailure;
}

// A gate's two matmuls (qlstm_gate_s8_params, qlstm_gru_gate_s8_params): the pointers and the
// requantizations, reported under names[GateMatmulField].
enum GateMatmulField {
  kInputWeights, kInputBias, kHiddenWeights, kHiddenBias, kInputMultiplier, kInputShift,
  kHiddenMultiplier, kHiddenShift, kGateMatmulFieldCount
};
template <class Gate>
FieldFailure check_gate_matmuls(const Gate& gate, const char* const* names) {
  if (gate.input_weights == nullptr) return {QLSTM_ERROR_NULL_POINTER, names[kInputWeights]};
  if (gate.input_effective_bias == nullptr) return {QLSTM_ERROR_NULL_POINTER, names[kInputBias]};
  if (gate.hidden_weights == nullptr) return {QLSTM_ERROR_NULL_POINTER, names[kHiddenWeights]};
  if (gate.hidden_effective_bias == nullptr) return {QLSTM_ERROR_NULL_POINTER, names[kHiddenBias]};
  const FieldFailure f = check_requant(gate.input_to_q3_12, names[kInputMultiplier], names[kInputShift]);
  if (f.status != QLSTM_OK) return f;
  return check_requant(gate.hidden_to_q3_12, names[kHiddenMultiplier], names[kHiddenShift]);
}

// layout, time_direction, output_steps and output_width (0, or >= H with B x T x W within int32).
inline FieldFailure check_sequence_options(int32_t layout, int32_t time_direction, int32_t output_steps,
                                           int32_t output_width, int32_t batch, int32_t time_steps,
                                           int32_t hidden_size) {
  if (layout != QLSTM_LAYOUT_BATCH_MAJOR && layout != QLSTM_LAYOUT_TIME_MAJOR) {
    return {QLSTM_ERROR_BAD_LAYOUT, "layout"};
  }
  if (time_direction != QLSTM_TIME_FORWARD && time_direction != QLSTM_TIME_REVERSE) {
    return {QLSTM_ERROR_BAD_DIRECTION, "time_direction"};
  }
  if (output_steps != QLSTM_OUTPUT_ALL_STEPS && output_steps != QLSTM_OUTPUT_FINAL && output_steps != QLSTM_OUTPUT_FIRST) {
    return {QLSTM_ERROR_BAD_OUTPUT_STEPS, "output_steps"};
  }
  if (output_width != 0) {
    const int64_t positions = static_cast<int64_t>(batch) * (output_steps != QLSTM_OUTPUT_ALL_STEPS ? 1 : time_steps);
    if (output_width < hidden_size || positions * output_width > fxp::kInt32Max) {
      return {QLSTM_ERROR_BAD_OUTPUT_WIDTH, "output_width"};
    }
  }
  return kNoFieldFailure;
}

inline FieldFailure check_output_zero_point(int32_t zero_point) {
  if (zero_point < fxp::kInt8Min || zero_point > fxp::kInt8Max) {
    return {QLSTM_ERROR_BAD_ZERO_POINT, "output_zero_point"};
  }
  return kNoFieldFailure;
}

inline bool is_scratch_aligned(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % QLSTM_SCRATCH_ALIGNMENT == 0;
}

// The buffers of a call: the input (NULL only when T == 0), the output (NULL only when nothing is
// written: T == 0 and every step) and the scratch (not NULL, large enough, aligned).
inline qlstm_status check_sequence_buffers(int32_t time_steps, int32_t output_steps, const int8_t* input,
                                           const int8_t* output, const void* scratch, size_t scratch_bytes,
                                           size_t scratch_bytes_needed) {
  if (scratch == nullptr) return QLSTM_ERROR_NULL_POINTER;
  if (time_steps > 0 && input == nullptr) return QLSTM_ERROR_NULL_POINTER;
  // The final state is written even when T == 0.
  if ((time_steps > 0 || output_steps != QLSTM_OUTPUT_ALL_STEPS) && output == nullptr) return QLSTM_ERROR_NULL_POINTER;
  if (scratch_bytes < scratch_bytes_needed) return QLSTM_ERROR_SCRATCH_TOO_SMALL;
  if (!is_scratch_aligned(scratch)) return QLSTM_ERROR_SCRATCH_MISALIGNED;
  return QLSTM_OK;
}

// Element strides of the sequence walk: between consecutive time steps and between batch rows of
// the input and the output (W elements per output position). Only the final state: one [B][W]
// output that every step overwrites (time stride 0). A repeated input (an int8 LSTM's
// input_repeated): one [B][I] step that every step reads (time stride 0).
struct SequenceStrides {
  ptrdiff_t x_step, x_row, y_step, y_row;
};
inline SequenceStrides sequence_strides(int32_t layout, int32_t output_steps, int32_t output_width, int32_t B,
                                        int32_t T, int32_t I, int32_t H, bool input_repeated = false) {
  const bool time_major = layout == QLSTM_LAYOUT_TIME_MAJOR;
  const bool final_only = output_steps != QLSTM_OUTPUT_ALL_STEPS;  // one [B][W] output
  const ptrdiff_t W = output_width > 0 ? output_width : H;
  SequenceStrides s;
  s.x_step = input_repeated ? 0 : time_major ? static_cast<ptrdiff_t>(B) * I : I;
  s.x_row = input_repeated || time_major ? I : static_cast<ptrdiff_t>(T) * I;
  s.y_step = final_only ? 0 : (time_major ? B * W : W);
  s.y_row = final_only || time_major ? W : static_cast<ptrdiff_t>(T) * W;
  return s;
}

// Steps a call runs: all T, or the first one alone (QLSTM_OUTPUT_FIRST).
inline int32_t steps_run(int32_t output_steps, int32_t time_steps) {
  return output_steps == QLSTM_OUTPUT_FIRST && time_steps > 1 ? 1 : time_steps;
}

}  // namespace qlstm

#endif  // QLSTM_RUNTIME_SEQUENCE_COMMON_H_
