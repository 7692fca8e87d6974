/*
 * qlstm: fused int8 GRU (PyTorch nn.GRU, ONNX GRU with linear_before_reset = 1) in the LSTM's
 * formats, with an int16 Q0.15 hidden state. The arithmetic is docs/arithmetic.md §13.
 *
 * C-compatible API, as lstm_s8.h: plain-data parameters, caller-owned memory, status returns.
 * Nothing here allocates, throws or keeps global state. The layout, time direction, output steps,
 * requantization and scratch alignment are the LSTM's (lstm_s8.h).
 */
#ifndef QLSTM_GRU_S8_H_
#define QLSTM_GRU_S8_H_

#include <stddef.h>
#include <stdint.h>

#include "qlstm/lstm_s8.h"
#include "qlstm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Gate order in qlstm_gru_s8_params.gates (PyTorch's r, z, n). */
typedef enum qlstm_gru_gate_index {
  QLSTM_GRU_GATE_RESET = 0,  /* r = sigmoid */
  QLSTM_GRU_GATE_UPDATE = 1, /* z = sigmoid */
  QLSTM_GRU_GATE_NEW = 2,    /* n = tanh(x part + r * h part) */
  QLSTM_GRU_GATE_COUNT = 3
} qlstm_gru_gate_index;

typedef struct qlstm_gru_dims {
  int32_t batch;       /* B >= 1 */
  int32_t time_steps;  /* T >= 0 */
  int32_t input_size;  /* I >= 1 */
  int32_t hidden_size; /* H >= 1 */
} qlstm_gru_dims;

/* One gate's two matmuls. Weights are symmetric int8 with one scale per matrix. The recurrent
 * operand is the int8 output of the previous step (h8). */
typedef struct qlstm_gru_gate_s8_params {
  qlstm_requant input_to_q3_12;         /* input matmul accumulator -> Q3.12 */
  const int8_t* input_weights;          /* [H][I] */
  const int32_t* input_effective_bias;  /* [H]: r, z: (b_i + b_h) folded; n: b_in; - zp_x * rowsum */
  qlstm_requant hidden_to_q3_12;        /* recurrent matmul accumulator -> Q3.12 */
  const int8_t* hidden_weights;         /* [H][H] */
  const int32_t* hidden_effective_bias; /* [H]: r, z: -zp_h * rowsum; n: b_hn - zp_h * rowsum */
} qlstm_gru_gate_s8_params;

typedef struct qlstm_gru_s8_params {
  qlstm_gru_dims dims;
  int32_t layout; /* a qlstm_layout */
  qlstm_gru_gate_s8_params gates[QLSTM_GRU_GATE_COUNT]; /* indexed by qlstm_gru_gate_index */
  qlstm_requant reset_times_hidden_to_q3_12;     /* r (Q0.15) * h part (Q3.12) -> Q3.12 */
  qlstm_requant update_times_difference_to_q0_15; /* z (Q0.15) * (h - n) (Q0.15) -> Q0.15 */
  qlstm_requant hidden_q0_15_to_output;          /* h (Q0.15) -> int8 output scale */
  int32_t output_zero_point; /* zero point of the int8 output (the recurrent operand) */
  int32_t time_direction;    /* a qlstm_time_direction; 0 = forward */
  /* Elements per output position (b, t), as qlstm_lstm_s8_params.output_width: 0 (or H) for a
   * dense output; W > H for the interleaved halves of a bidirectional layer. */
  int32_t output_width;
  int32_t output_steps; /* a qlstm_output_steps; 0 = every step */
  /* [H]: the new gate's recurrent accumulator at a zero state, b_hn alone (round(b_hn / (s_h s_Whn)),
   * that is gates[new].hidden_effective_bias + zp_h * rowsum(W_hn) as the compiler derives them).
   * The first step of a stateless call uses it instead of the recurrent matmul, and gives r and z
   * no recurrent term, as the LSTM's first step (docs/arithmetic.md §13). */
  const int32_t* new_gate_zero_state_bias;
  /* 1: the input is one step per batch row, [B][I], read at every step (a decoder's repeated
   * vector), as qlstm_lstm_s8_params.input_repeated: the three gates' input accumulators are
   * computed once per call; the scratch is then qlstm_gru_s8_call_scratch_bytes(). 0: a sequence. */
  int32_t input_repeated;
} qlstm_gru_s8_params;

/* Caller-owned memory for one call. If hidden_q0_15 is NULL the call is stateless: it starts
 * from h = 0, its first step's recurrent terms those of a zero state (new_gate_zero_state_bias). If it is set the call is stateful: it starts from
 * hidden_q0_15 and leaves the final state there, so consecutive calls continue one sequence
 * (T = 0 leaves it untouched). hidden_q0_15 must not overlap the output or the scratch. */
typedef struct qlstm_gru_s8_context {
  void* scratch; /* qlstm_gru_s8_scratch_bytes() bytes, QLSTM_SCRATCH_ALIGNMENT-aligned */
  size_t scratch_bytes;
  int16_t* hidden_q0_15; /* [B][H], Q0.15; NULL = stateless */
} qlstm_gru_s8_context;

/* Scratch bytes a call with these dims needs (an input that is a sequence). Returns 0 when dims
 * is NULL or invalid. */
size_t qlstm_gru_s8_scratch_bytes(const qlstm_gru_dims* dims);

/* Scratch bytes the call with these params needs: qlstm_gru_s8_scratch_bytes(&params->dims), and
 * with input_repeated the input projection's int32 [3][B][H] too. Returns 0 when params is NULL or
 * its dims or input_repeated invalid. */
size_t qlstm_gru_s8_call_scratch_bytes(const qlstm_gru_s8_params* params);

/* Checks every field of params. On failure and if field is not NULL, *field names the first
 * offending field (a static string such as "gates[new].hidden_to_q3_12.shift"). */
qlstm_status qlstm_gru_s8_validate(const qlstm_gru_s8_params* params, const char** field);

/* Sets the state to the start of a sequence: hidden_q0_15 = 0 (QLSTM_ERROR_NULL_POINTER when ctx
 * or ctx->hidden_q0_15 is NULL; the scratch is not needed). A stateful call after a reset
 * computes exactly what a stateless call computes when the biases are consistent as the compiler
 * derives them (hidden_effective_bias = -zp_h * rowsum(W_h) for r and z, and
 * new_gate_zero_state_bias - zp_h * rowsum(W_hn) for n): a zero state's int8 operand is all zp_h. */
qlstm_status qlstm_gru_s8_reset_state(const qlstm_gru_s8_params* params, qlstm_gru_s8_context* ctx);

/* Runs the GRU over the whole input, by the best variant this CPU has (qlstm/kernels.h; each
 * equal to the portable reference bit for bit).
 * input: B*T*I int8 values (B*I with input_repeated), output: B*T*W int8 values (W = output_width, or H), in
 * params->layout; with output_steps QLSTM_OUTPUT_FINAL or QLSTM_OUTPUT_FIRST, output: B*W values
 * [B][W]. The input may be NULL when T == 0, and so may the output with QLSTM_OUTPUT_ALL_STEPS. */
qlstm_status qlstm_gru_s8(const qlstm_gru_s8_params* params, qlstm_gru_s8_context* ctx,
                          const int8_t* input, int8_t* output);

#ifdef __cplusplus
}
#endif

#endif /* QLSTM_GRU_S8_H_ */
