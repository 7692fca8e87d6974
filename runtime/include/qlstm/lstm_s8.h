/*
 * qlstm: fused int8 LSTM, bit-exact with the integer arithmetic of CMSIS-NN's
 * arm_lstm_unidirectional_s8 (default double rounding). See docs/arithmetic.md.
 *
 * C-compatible API. Plain-data parameters, caller-owned memory, status returns.
 * Nothing here allocates, throws or keeps global state.
 */
#ifndef QLSTM_LSTM_S8_H_
#define QLSTM_LSTM_S8_H_

#include <stddef.h>
#include <stdint.h>

#include "qlstm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Required alignment of ctx->scratch, in bytes. */
#define QLSTM_SCRATCH_ALIGNMENT 16

/* Accepted range of requantization shifts: a positive shift is a left shift of the int32 value
 * before the multiply (wrapping in 32 bits), a negative one a rounding right shift after it. */
#define QLSTM_SHIFT_MIN (-31)
#define QLSTM_SHIFT_MAX 31

/* Accepted range of cell_scale_power P. tanh(c) pre-scales the cell by a left shift of P + 12
 * (2^P -> Q3.12); the range keeps that shift within [-31, 14], where every int16 cell value
 * is computed without int32 overflow. Upstream's converters use -15 ... -5. */
#define QLSTM_CELL_SCALE_POWER_MIN (-43)
#define QLSTM_CELL_SCALE_POWER_MAX 2

/* Largest accepted cell_clip. Values <= 0 mean "no clip" (full int16 range). */
#define QLSTM_CELL_CLIP_MAX 32767

typedef enum qlstm_layout {
  QLSTM_LAYOUT_BATCH_MAJOR = 0, /* input [B][T][I], output [B][T][H] */
  QLSTM_LAYOUT_TIME_MAJOR = 1   /* input [T][B][I], output [T][B][H] */
} qlstm_layout;

/* The order of the time steps (ONNX LSTM direction "forward" / "reverse"): a reverse call reads
 * x[T-1] first and writes each h_t at step t, so its output is laid out as a forward one. */
typedef enum qlstm_time_direction {
  QLSTM_TIME_FORWARD = 0,
  QLSTM_TIME_REVERSE = 1
} qlstm_time_direction;

/* Which hidden states a call writes (qlstm_lstm_s8_params.output_steps). */
typedef enum qlstm_output_steps {
  QLSTM_OUTPUT_ALL_STEPS = 0, /* every step: output [B][T][W] or [T][B][W] */
  QLSTM_OUTPUT_FINAL = 1,     /* only the final hidden state (the last step processed: step T-1
                                 forward, step 0 reverse; ONNX's Y_h, PyTorch's h_n): output [B][W].
                                 A classifier's head then needs B x W bytes, not B x T x W. With
                                 T == 0 it is the initial state: the carried hidden state of a
                                 stateful call, output_zero_point otherwise. */
  QLSTM_OUTPUT_FIRST = 2      /* only the first step processed, and only that step is run (step 0
                                 forward, step T-1 reverse: what y[:, -1] reads of a reverse
                                 direction): output [B][W], one step's work instead of T. A stateful
                                 call writes back the state after that step. With T == 0 as FINAL. */
} qlstm_output_steps;

typedef enum qlstm_activation {
  QLSTM_ACTIVATION_SIGMOID = 0,
  QLSTM_ACTIVATION_TANH = 1,
  QLSTM_ACTIVATION_HARD_SIGMOID = 2 /* clamp(alpha x + beta, 0, 1), by the gate's hard_sigmoid line (the
                                       LSTMs of Keras <= 2.2, ONNX's HardSigmoid); int8 LSTM only */
} qlstm_activation;

/* Gate order in qlstm_lstm_s8_params.gates (the kernel's order; the compiler translates
 * PyTorch's i, f, g, o and ONNX's i, o, f, c into it). */
typedef enum qlstm_gate_index {
  QLSTM_GATE_FORGET = 0,
  QLSTM_GATE_INPUT = 1,
  QLSTM_GATE_CELL = 2,
  QLSTM_GATE_OUTPUT = 3,
  QLSTM_GATE_COUNT = 4
} qlstm_gate_index;

/* real_scale ~= multiplier * 2^(shift - 31), multiplier in [2^30, 2^31 - 1] or 0. */
typedef struct qlstm_requant {
  int32_t multiplier; /* >= 0 */
  int32_t shift;      /* QLSTM_SHIFT_MIN ... QLSTM_SHIFT_MAX */
} qlstm_requant;

typedef struct qlstm_lstm_dims {
  int32_t batch;       /* B >= 1 */
  int32_t time_steps;  /* T >= 0 */
  int32_t input_size;  /* I >= 1 */
  int32_t hidden_size; /* H >= 1 */
} qlstm_lstm_dims;

/* HardSigmoid's line on a Q3.12 pre-activation (docs/arithmetic.md §3.1):
 *   y_q0_15 = clamp(RQ(pre_q3_12, slope) + offset_q0_15, 0, 32767)
 * with RQ the gates' double-rounding requantization. */
typedef struct qlstm_hard_sigmoid_params {
  qlstm_requant slope;  /* real scale 8 * alpha (Q3.12 in, Q0.15 out) */
  int32_t offset_q0_15; /* round(beta * 2^15) */
} qlstm_hard_sigmoid_params;

/* One gate: pre = sat16(RQ(acc_x)) + RQ(acc_h), saturated to int16 in Q3.12, then the activation
 * gives Q0.15. Weights are symmetric int8 with one scale per matrix. */
typedef struct qlstm_gate_s8_params {
  qlstm_requant input_to_q3_12;        /* input matmul accumulator -> Q3.12 */
  const int8_t* input_weights;         /* [H][I] */
  const int32_t* input_effective_bias; /* [H]: bias - zp_x * rowsum(input_weights) */
  qlstm_requant hidden_to_q3_12;       /* recurrent matmul accumulator -> Q3.12 */
  const int8_t* hidden_weights;        /* [H][H] */
  const int32_t* hidden_effective_bias; /* [H]: -zp_h * rowsum(hidden_weights) */
  int32_t activation;                  /* a qlstm_activation */
  qlstm_hard_sigmoid_params hard_sigmoid; /* its line; read only when activation is HARD_SIGMOID */
} qlstm_gate_s8_params;

typedef struct qlstm_lstm_s8_params {
  qlstm_lstm_dims dims;
  int32_t layout; /* a qlstm_layout */
  qlstm_gate_s8_params gates[QLSTM_GATE_COUNT]; /* indexed by qlstm_gate_index */
  qlstm_requant forget_times_cell_to_cell;      /* f (Q0.15) * c (2^P) -> 2^P */
  qlstm_requant input_times_cell_gate_to_cell;  /* i (Q0.15) * g (Q0.15) -> 2^P */
  qlstm_requant output_times_tanh_cell_to_hidden; /* o (Q0.15) * tanh(c) (Q0.15) -> int8 scale */
  int32_t cell_scale_power;  /* P: the int16 cell state has scale 2^P */
  int32_t cell_clip;         /* > 0: clamp the cell to [-clip, clip]; <= 0: full int16 range */
  int32_t output_zero_point; /* zero point of the int8 output and hidden state */
  int32_t time_direction;    /* a qlstm_time_direction; 0 = forward */
  /* Elements per output position (b, t): 0 (or H) for a dense [..][H] output; W > H writes the
   * H values of each position at the start of a W-wide row, so that two directions write their
   * halves of a [..][2H] output in place (the reverse one at output + H). */
  int32_t output_width;
  int32_t output_steps; /* a qlstm_output_steps; 0 = every step */
  /* 1: the input is one step per batch row, [B][I] in either layout, read at every step: a vector
   * repeated over time (an autoencoder's decoder). Its input projection is computed once per call
   * instead of once per step, with the same result as a sequence of T copies (docs/arithmetic.md
   * §24); the scratch is then qlstm_lstm_s8_call_scratch_bytes(). 0: the input is a sequence. */
  int32_t input_repeated;
} qlstm_lstm_s8_params;

/* Caller-owned memory for one call. If hidden_state is NULL the call is stateless: the cell
 * state is zeroed first and the first step has no recurrent term. If hidden_state is set the
 * call is stateful: it starts from hidden_state and cell_state and writes the final state back
 * (when T > 0), so consecutive calls continue one sequence. hidden_state must not overlap the
 * output. */
typedef struct qlstm_lstm_s8_context {
  void* scratch;        /* qlstm_lstm_s8_scratch_bytes() bytes, QLSTM_SCRATCH_ALIGNMENT-aligned */
  size_t scratch_bytes;
  int16_t* cell_state;  /* [B][H], scale 2^P; always required */
  int8_t* hidden_state; /* [B][H], output scale and zero point; NULL = stateless */
} qlstm_lstm_s8_context;

/* Scratch bytes a call with these dims needs (for every kernel variant built in), a call whose
 * input is a sequence. Returns 0 when dims is NULL or invalid. */
size_t qlstm_lstm_s8_scratch_bytes(const qlstm_lstm_dims* dims);

/* Scratch bytes the call with these params needs: qlstm_lstm_s8_scratch_bytes(&params->dims), and
 * with input_repeated the input projection's int32 [4][B][H] too. Returns 0 when params is NULL or
 * its dims or input_repeated invalid. */
size_t qlstm_lstm_s8_call_scratch_bytes(const qlstm_lstm_s8_params* params);

/* Checks every field of params. On failure and if field is not NULL, *field names the first
 * offending field (a static string such as "gates[forget].hidden_to_q3_12.shift"). */
qlstm_status qlstm_lstm_s8_validate(const qlstm_lstm_s8_params* params, const char** field);

/* Sets the state to the start of a sequence: cell = 0, hidden = output_zero_point. A stateful
 * call after a reset computes exactly what a stateless call computes. */
qlstm_status qlstm_lstm_s8_reset_state(const qlstm_lstm_s8_params* params,
                                       qlstm_lstm_s8_context* ctx);

/* Runs the LSTM over the whole input with the best kernel variant built in that this CPU
 * supports and that can run this call (chosen per call; the portable reference runs every call).
 * input: B*T*I int8 values (B*I with input_repeated), output: B*T*W int8 values (W = output_width,
 * or H), in params->layout; with output_steps QLSTM_OUTPUT_FINAL or QLSTM_OUTPUT_FIRST, output: B*W values
 * [B][W]. The input may be NULL when T == 0, and so may the output with QLSTM_OUTPUT_ALL_STEPS. */
qlstm_status qlstm_lstm_s8(const qlstm_lstm_s8_params* params, qlstm_lstm_s8_context* ctx,
                           const int8_t* input, int8_t* output);

#ifdef __cplusplus
}
#endif

#endif /* QLSTM_LSTM_S8_H_ */
