/*
 * qlstm: 16x8 LSTM (int16 input, output and hidden state, int8 weights, int64 effective biases),
 * bit-exact with CMSIS-NN's arm_lstm_unidirectional_s16. See docs/arithmetic.md §14.
 *
 * The API mirrors qlstm_lstm_s8 (lstm_s8.h: dims, layouts, gates, directions, output width and
 * steps, the state contract) with every zero point 0: the gates' matmuls use the 16-bit reduced
 * multiplier and 64-bit requantization of the 16x8 fully connected; the cell update and the
 * activations are the int8 LSTM's; h = sat16(RQ(o * tanh(c))).
 */
#ifndef QLSTM_LSTM_S16_H_
#define QLSTM_LSTM_S16_H_

#include <stddef.h>
#include <stdint.h>

#include "qlstm/fully_connected_s16.h"
#include "qlstm/lstm_s8.h"
#include "qlstm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One gate: pre = sat16(sat16(RQ64(acc_x)) + RQ64(acc_h)) in Q3.12 (docs/arithmetic.md §14), then
 * the activation gives Q0.15. */
typedef struct qlstm_gate_s16_params {
  qlstm_requant input_to_q3_12;        /* Q31 multiplier >= 0; shift QLSTM_SHIFT_MIN ... QLSTM_S16_SHIFT_MAX */
  const int8_t* input_weights;         /* [H][I] */
  const int64_t* input_effective_bias; /* [H] */
  qlstm_requant hidden_to_q3_12;       /* as input_to_q3_12 */
  const int8_t* hidden_weights;        /* [H][H] */
  const int64_t* hidden_effective_bias; /* [H] */
  int32_t activation;                  /* a qlstm_activation */
} qlstm_gate_s16_params;

typedef struct qlstm_lstm_s16_params {
  qlstm_lstm_dims dims;
  int32_t layout; /* a qlstm_layout */
  qlstm_gate_s16_params gates[QLSTM_GATE_COUNT]; /* indexed by qlstm_gate_index */
  qlstm_requant forget_times_cell_to_cell;        /* as in qlstm_lstm_s8_params */
  qlstm_requant input_times_cell_gate_to_cell;
  qlstm_requant output_times_tanh_cell_to_hidden; /* o (Q0.15) * tanh(c) (Q0.15) -> int16 scale */
  int32_t cell_scale_power;
  int32_t cell_clip;
  int32_t time_direction; /* a qlstm_time_direction */
  int32_t output_width;   /* 0 or >= H, as in qlstm_lstm_s8_params */
  int32_t output_steps;   /* a qlstm_output_steps */
} qlstm_lstm_s16_params;

/* As qlstm_lstm_s8_context, with an int16 hidden state. */
typedef struct qlstm_lstm_s16_context {
  void* scratch;         /* qlstm_lstm_s16_scratch_bytes() bytes, QLSTM_SCRATCH_ALIGNMENT-aligned */
  size_t scratch_bytes;
  int16_t* cell_state;   /* [B][H]; always required */
  int16_t* hidden_state; /* [B][H]; NULL = stateless */
} qlstm_lstm_s16_context;

size_t qlstm_lstm_s16_scratch_bytes(const qlstm_lstm_dims* dims);
/* On failure and if field is not NULL, *field names the first offending field. */
qlstm_status qlstm_lstm_s16_validate(const qlstm_lstm_s16_params* params, const char** field);
/* cell = 0, hidden = 0. */
qlstm_status qlstm_lstm_s16_reset_state(const qlstm_lstm_s16_params* params, qlstm_lstm_s16_context* ctx);
/* The portable reference. input: B*T*I int16 values, output: B*T*W (or B*W with
 * QLSTM_OUTPUT_FINAL or QLSTM_OUTPUT_FIRST), as qlstm_lstm_s8. */
qlstm_status qlstm_lstm_s16(const qlstm_lstm_s16_params* params, qlstm_lstm_s16_context* ctx,
                            const int16_t* input, int16_t* output);

#ifdef __cplusplus
}
#endif

#endif /* QLSTM_LSTM_S16_H_ */
