/*
 * qlstm: fused int8 vanilla RNN (PyTorch nn.RNN, ONNX RNN), h' = act(W_x x + b_x + W_h h + b_h)
 * with act tanh or ReLU, in the LSTM's formats: one LSTM gate per step (its two matmuls, its
 * int16 pre-activation, its activation) and an int16 hidden state. The arithmetic is
 * docs/arithmetic.md §23.
 *
 * C-compatible API, as lstm_s8.h: plain-data parameters, caller-owned memory, status returns.
 * Nothing here allocates, throws or keeps global state. The layout, time direction, output steps,
 * requantization and scratch alignment are the LSTM's (lstm_s8.h).
 */
#ifndef QLSTM_RNN_S8_H_
#define QLSTM_RNN_S8_H_

#include <stddef.h>
#include <stdint.h>

#include "qlstm/gru_s8.h"
#include "qlstm/lstm_s8.h"
#include "qlstm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The RNN's activation (ONNX RNN's `activations`: Tanh, the default, or Relu). */
typedef enum qlstm_rnn_activation {
  QLSTM_RNN_TANH = 0, /* the pre-activation in Q3.12, the hidden state tanh of it in Q0.15 */
  QLSTM_RNN_RELU = 1  /* the pre-activation and the hidden state in one int16 format the compiler
                         chooses (ReLU needs no table): h = clamp(pre, 0, 32767) */
} qlstm_rnn_activation;

typedef struct qlstm_rnn_dims {
  int32_t batch;       /* B >= 1 */
  int32_t time_steps;  /* T >= 0 */
  int32_t input_size;  /* I >= 1 */
  int32_t hidden_size; /* H >= 1 */
} qlstm_rnn_dims;

typedef struct qlstm_rnn_s8_params {
  qlstm_rnn_dims dims;
  int32_t layout; /* a qlstm_layout */
  /* The step's two matmuls, as a GRU gate's: pre = sat16(RQ(acc_x)) + RQ(acc_h), saturated to
   * int16. input_effective_bias = round((b_x + b_h) / (s_x s_Wx)) - zp_x * rowsum(W_x) and
   * hidden_effective_bias = -zp_h * rowsum(W_h), as the LSTM's: a zero state's recurrent term is
   * 0, which a stateless first step uses without the recurrent matmul. The requantizations map
   * to Q3.12 for tanh, to the chosen int16 format for ReLU. */
  qlstm_gru_gate_s8_params gate;
  int32_t activation;              /* a qlstm_rnn_activation */
  qlstm_requant hidden_to_output;  /* the int16 hidden -> int8 output scale */
  int32_t output_zero_point;       /* zero point of the int8 output (the recurrent operand) */
  int32_t time_direction;          /* a qlstm_time_direction; 0 = forward */
  /* Elements per output position (b, t), as qlstm_lstm_s8_params.output_width. */
  int32_t output_width;
  int32_t output_steps; /* a qlstm_output_steps; 0 = every step */
} qlstm_rnn_s8_params;

/* Caller-owned memory for one call. If hidden_s16 is NULL the call is stateless: it starts from
 * h = 0. If it is set the call is stateful: it starts from hidden_s16 (int16, in the hidden
 * state's format) and leaves the final state there (T = 0 leaves it untouched). hidden_s16 must
 * not overlap the output or the scratch. */
typedef struct qlstm_rnn_s8_context {
  void* scratch; /* qlstm_rnn_s8_scratch_bytes() bytes, QLSTM_SCRATCH_ALIGNMENT-aligned */
  size_t scratch_bytes;
  int16_t* hidden_s16; /* [B][H]; NULL = stateless */
} qlstm_rnn_s8_context;

/* Scratch bytes a call with these dims needs. Returns 0 when dims is NULL or invalid. */
size_t qlstm_rnn_s8_scratch_bytes(const qlstm_rnn_dims* dims);

/* Checks every field of params. On failure and if field is not NULL, *field names the first
 * offending field (a static string such as "gate.hidden_to_q3_12.shift"). */
qlstm_status qlstm_rnn_s8_validate(const qlstm_rnn_s8_params* params, const char** field);

/* Sets the state to the start of a sequence: hidden_s16 = 0 (QLSTM_ERROR_NULL_POINTER when ctx or
 * ctx->hidden_s16 is NULL). A stateful call after a reset computes what a stateless call does. */
qlstm_status qlstm_rnn_s8_reset_state(const qlstm_rnn_s8_params* params, qlstm_rnn_s8_context* ctx);

/* Runs the RNN over the whole input, by the best variant this CPU has (qlstm/kernels.h; each
 * equal to the portable reference bit for bit). Buffers as qlstm_gru_s8. */
qlstm_status qlstm_rnn_s8(const qlstm_rnn_s8_params* params, qlstm_rnn_s8_context* ctx,
                          const int8_t* input, int8_t* output);

#ifdef __cplusplus
}
#endif

#endif /* QLSTM_RNN_S8_H_ */
