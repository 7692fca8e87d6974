/* A program of fused int8 ops over buffers: what a compiled model is (docs/model-format.md).
 * Buffer 0 is the program input and buffer buffer_count - 1 its output (both the caller's);
 * the buffers between live in two caller-provided activation areas, buffer b in area
 * (b - 1) % 2, so an op never reads the area it writes. Ops run in order. C-compatible. */
#ifndef QLSTM_PROGRAM_S8_H_
#define QLSTM_PROGRAM_S8_H_

#include <stddef.h>
#include <stdint.h>

#include "qlstm/lstm_s8.h"
#include "qlstm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum qlstm_op_kind {
  QLSTM_OP_LSTM_S8 = 0, /* qlstm_lstm_s8 over the whole input buffer */
} qlstm_op_kind;

typedef struct qlstm_op {
  int32_t kind;                /* a qlstm_op_kind */
  qlstm_lstm_s8_params lstm;   /* dims.time_steps is the call's (set by qlstm_program_run) */
  int32_t input_buffer;        /* 0 ... buffer_count - 2 */
  int32_t output_buffer;       /* 1 ... buffer_count - 1, not the input buffer */
  int32_t output_offset;       /* elements into each output position's row */
  size_t state_offset;         /* elements into the caller's hidden and cell state */
} qlstm_op;

typedef struct qlstm_program {
  const qlstm_op* ops;
  int32_t op_count;     /* >= 1 */
  int32_t buffer_count; /* >= 2 */
} qlstm_program;

typedef struct qlstm_program_context {
  void* scratch;        /* the largest op's qlstm_lstm_s8_scratch_bytes(), aligned */
  size_t scratch_bytes;
  int16_t* cell;        /* B x the largest H: the cell of an op run statelessly */
  int8_t* activations[2]; /* the buffers between the input and the output (NULL if none) */
  size_t activation_bytes; /* bytes of each area: B x T x width of the widest buffer in it */
} qlstm_program_context;

/* Runs every op over time_steps steps. hidden / cell NULL: every op starts from a zero state
 * (stateless). Otherwise every op starts from hidden + state_offset / cell + state_offset and
 * writes its final state back there, so calls on the same state continue one sequence.
 * QLSTM_ERROR_BAD_PROGRAM for an unknown op kind or buffer index; QLSTM_ERROR_SCRATCH_TOO_SMALL
 * when an intermediate buffer does not fit in activation_bytes. */
qlstm_status qlstm_program_run(const qlstm_program* program, qlstm_program_context* ctx,
                               const int8_t* input, int8_t* output, int32_t time_steps,
                               int8_t* hidden, int16_t* cell);

#ifdef __cplusplus
}
#endif

#endif /* QLSTM_PROGRAM_S8_H_ */
