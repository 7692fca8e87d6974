/* A program of fused int8 and 16x8 ops over buffers: what a compiled model is
 * (docs/model-format.md). Each buffer holds int8 or int16 elements (buffer_types).
 * Buffer 0 is the program input and buffer buffer_count - 1 its output (both the caller's);
 * the buffers between live in two caller-provided activation areas, buffer b in area
 * (b - 1) % 2; an op must not read and write the same area (qlstm_program_validate refuses it),
 * but for an elementwise op writing over an operand of its output's steps and width (in place).
 * Ops run in order. C-compatible. */
#ifndef QLSTM_PROGRAM_S8_H_
#define QLSTM_PROGRAM_S8_H_

#include <stddef.h>
#include <stdint.h>

#include "qlstm/fully_connected_s16.h"
#include "qlstm/fully_connected_s8.h"
#include "qlstm/elementwise_s8.h"
#include "qlstm/embedding_s8.h"
#include "qlstm/attention_pool_s8.h"
#include "qlstm/layer_norm_s8.h"
#include "qlstm/gru_s8.h"
#include "qlstm/rnn_s8.h"
#include "qlstm/lstm_s16.h"
#include "qlstm/lstm_s8.h"
#include "qlstm/op_kinds.h"
#include "qlstm/log_softmax_s8.h"
#include "qlstm/pool_s8.h"
#include "qlstm/requantize.h"
#include "qlstm/softmax_s16.h"
#include "qlstm/softmax_s8.h"
#include "qlstm/status.h"
#include "qlstm/table_s8.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The op kinds: QLSTM_OP_LSTM_S8 = 0, QLSTM_OP_FULLY_CONNECTED_S8 = 1, ... as qlstm/op_kinds.h
 * lists them (with what each runs). */
typedef enum qlstm_op_kind {
#define QLSTM_OP_KIND_VALUE(name, value, handler, member, block, visit) QLSTM_OP_##name = value,
  QLSTM_OP_KINDS(QLSTM_OP_KIND_VALUE)
#undef QLSTM_OP_KIND_VALUE
  QLSTM_OP_KIND_COUNT /* one past the last (the list's values are 0, 1, ... in order) */
} qlstm_op_kind;

/* How many positions a buffer holds per batch row. */
typedef enum qlstm_buffer_steps {
  QLSTM_BUFFER_EVERY_STEP = 0, /* T: a sequence, in the program's layout */
  QLSTM_BUFFER_ONE_STEP = 1    /* 1: [B][width] (a recurrent op's final state, a selected step, a head) */
} qlstm_buffer_steps;

/* One op: its kind and a pointer to that kind's parameter block. Every op reads its input
 * buffer's positions and writes as many to its output buffer (an LSTM or GRU with output_steps
 * QLSTM_OUTPUT_FINAL or QLSTM_OUTPUT_FIRST, a step selection and a pooling over time write one per batch row). The LSTM and the GRU are the
 * recurrent ops: the ones with state. An op holds only its own kind's block, so a program's table
 * grows by a pointer per op, not by every kind's block. */
typedef struct qlstm_op {
  int32_t kind;                /* a qlstm_op_kind */
  /* The kind's block, by kind: qlstm_lstm_s8_params (LSTM_S8), qlstm_fc_s8_params
   * (FULLY_CONNECTED_S8), qlstm_softmax_s8_params (SOFTMAX_S8), qlstm_table_s8_params (TABLE_S8),
   * qlstm_select_step_params (SELECT_STEP), qlstm_gru_s8_params (GRU_S8), qlstm_lstm_s16_params
   * (LSTM_S16), qlstm_fc_s16_params (FULLY_CONNECTED_S16), qlstm_requantize_params (REQUANTIZE),
   * qlstm_softmax_s16_params (SOFTMAX_S16), qlstm_pool_s8_params (POOL_S8: input_height 0 pools a
   * sequence over time into a one-step buffer, the runner setting its geometry per call),
   * qlstm_log_softmax_s8_params (LOG_SOFTMAX_S8), qlstm_add_s8_params (ADD_S8),
   * qlstm_mul_s8_params (MUL_S8: both elementwise, of input_buffer and second_input_buffer),
   * qlstm_embedding_s8_params (EMBEDDING_S8), qlstm_layer_norm_s8_params (LAYER_NORM_S8),
   * qlstm_attention_pool_s8_params (ATTENTION_POOL_S8: the scores its input buffer, the sequence
   * its second input buffer; the runner sets batch, time_steps and layout), qlstm_rnn_s8_params (RNN_S8).
   * A recurrent op's: dims.batch and layout the program's, dims.input_size its input buffer's
   * width; the runner sets dims.time_steps (the call's) and output_width (its output buffer's
   * width) in its copy. A per-position op's: the runner sets rows (the input buffer's
   * positions); input_size / output_size / row_size are the buffers' widths (a 16x8 fully
   * connected op has a bias). An int8 fully connected op from a sequence buffer to a one-step
   * buffer reads all T steps of each batch row as one row (input_size = T x the width; batch-major,
   * calls of exactly T steps): a Linear on y.reshape(B, -1). */
  const void* params;
  int32_t input_buffer;        /* 0 ... buffer_count - 2 */
  int32_t output_buffer;       /* 1 ... buffer_count - 1, not in the input buffer's area */
  int32_t output_offset;       /* elements into each output position's row: offset + H <= width */
  size_t state_offset;         /* a recurrent op's elements into the caller's state: offset + B x
                                  qlstm_op_state_size <= state_values (0 for another kind) */
  int32_t second_input_buffer; /* an elementwise op's operand 2 (ADD_S8, MUL_S8): 0 ... buffer_count
                                  - 2, its positions those of the input buffer; 0 for another kind */
} qlstm_op;

typedef struct qlstm_program {
  const qlstm_op* ops;
  int32_t op_count;     /* >= 1 */
  int32_t buffer_count; /* >= 2 */
  const int32_t* buffer_widths; /* [buffer_count]: elements per position (batch row, step) */
  size_t state_values;  /* elements of the caller's hidden (int8) and cell (int16) state arrays */
  const int32_t* buffer_steps;  /* [buffer_count]: a qlstm_buffer_steps each; buffer 0 every step */
  int32_t batch;        /* B >= 1, of every buffer and every op */
  int32_t layout;       /* a qlstm_layout, of every sequence buffer */
  const int32_t* buffer_types;  /* [buffer_count]: a qlstm_element_type each; NULL: every buffer int8 */
} qlstm_program;

typedef struct qlstm_program_context {
  void* scratch;        /* the largest recurrent op's qlstm_op_scratch_bytes(), aligned (may be
                           NULL for a program without a recurrent op) */
  size_t scratch_bytes;
  int16_t* cell;        /* B x the largest LSTM H: the cell of an LSTM op run statelessly (may be
                           NULL for a program without an LSTM op; a GRU or RNN op run statelessly
                           keeps its hidden in the scratch) */
  int8_t* activations[2]; /* the buffers between the input and the output (NULL if none); 2-byte
                             aligned when a buffer is int16 */
  size_t activation_bytes; /* bytes of each area: the largest buffer in it, B x T (or B for a
                              one-step buffer) x its width x its element's bytes */
} qlstm_program_context;

/* Checks that running the program can only touch its buffers, whatever the table holds.
 * The program: ops, buffer_widths and buffer_steps not NULL, op_count >= 1, buffer_count >= 2,
 * batch >= 1, layout a qlstm_layout, buffer 0 every step and every buffer_steps a
 * qlstm_buffer_steps. Each op: its kind; its params set (QLSTM_ERROR_NULL_POINTER, "params"); its
 * buffer indices (an elementwise op's second_input_buffer too; another kind's 0); that it does
 * not read and write the same activation area (an elementwise op may, over an operand of its
 * output buffer's steps and width: in place) nor read an intermediate buffer its area does not
 * hold (not yet written, or since overwritten); the steps of its buffers (a recurrent op and a selection read a sequence; a
 * recurrent op writes a sequence, or a one-step buffer exactly when its output_steps is
 * QLSTM_OUTPUT_FINAL or QLSTM_OUTPUT_FIRST; a selection writes a one-step buffer; a fully connected, softmax or table op
 * writes a buffer of the same steps as it reads); the widths (a recurrent op's dims.input_size is
 * its input buffer's width and output_offset + H <= its output buffer's, its dims.batch and layout
 * the program's; a fully connected op's input_size / output_size and a softmax's, table's,
 * requantization's or selection's row_size are its buffers' widths, with output_offset 0); the
 * element types (buffer_types valid; an int8 op reads and writes int8 buffers, a 16x8 op int16
 * ones, a requantization its params' types, a selection one type: QLSTM_ERROR_BAD_ELEMENT_TYPE
 * naming "buffer_types", "input_buffer" or "output_buffer"); that only a recurrent op
 * has state, its B x H rows within state_values (another kind's state_offset is 0); a selection's
 * step within [-T, T) for T = max_time_steps; and each kernel's own validation with the rows of
 * that call (B x T positions of a sequence buffer, B of a one-step one).
 * If ctx is not NULL, also: when the program has a recurrent op, that ctx's scratch is set,
 * aligned and serves every recurrent op (qlstm_op_scratch_bytes at max_time_steps); when it has
 * an LSTM op, that ctx->cell is set; that each intermediate buffer (B x T or B positions of its
 * width at max_time_steps) fits activation_bytes in a non-NULL area. The caller's input, output,
 * state and ctx->cell are sized by the program: B x T x the first buffer's width, B x T (or B, one
 * step) x the last buffer's width, state_values, B x the largest LSTM H.
 * On failure, if not NULL: *field names the offending field (a static string: a field of the
 * program or of ctx such as "op_count", "buffer_steps" or "activation_bytes", or, when *op_index
 * >= 0, a field of op *op_index: "kind", "input_buffer", "output_buffer", "output_offset",
 * "state_offset", "second_input_buffer", "output_steps", "step", "row_size", "input_size", ... or one of its kernel's
 * params as that kernel's validation names it: "dims.input_size", "cell_clip", "shifts",
 * "diff_min", "table", "gates[reset].input_to_q3_12.shift", ...) and *op_index the op (-1 for a
 * field that is not an op's).
 * QLSTM_ERROR_BAD_PROGRAM for an inconsistent table, QLSTM_ERROR_SCRATCH_TOO_SMALL for too small
 * a context, the kernel's status for bad params. */
qlstm_status qlstm_program_validate(const qlstm_program* program, const qlstm_program_context* ctx,
                                    int32_t max_time_steps, const char** field, int32_t* op_index);

/* Runs every op over time_steps steps. hidden / cell NULL: every recurrent op starts from a zero
 * state (stateless). Otherwise every LSTM op starts from hidden + state_offset / cell +
 * state_offset, and every GRU (RNN) op from its int16 Q0.15 (int16) hidden at cell + state_offset
 * (its rows of hidden are unused, left as they are); each writes its final state back there, so calls on the
 * same state continue one sequence. input may be NULL when time_steps is 0, and so may output
 * unless the last buffer is one step (a recurrent op's final state at T = 0 is its initial
 * state). A 16x8 LSTM op keeps its cell at cell + state_offset and its int16 hidden right after
 * it (B x H further; its rows of hidden unused). Fully connected ops run with the per-call
 * dispatch of qlstm_fc_s8 (qlstm_fc_s16), the LSTM ops with that of qlstm_lstm_s8
 * (qlstm_lstm_s16), the GRU ops as qlstm_gru_s8, the RNN ops as qlstm_rnn_s8. input and output hold their buffers' element
 * types (int16 arrays 2-byte aligned, else QLSTM_ERROR_SCRATCH_MISALIGNED).
 * Validates first (qlstm_program_validate with ctx at time_steps), so a refused program runs no op
 * and leaves the output and the state untouched. */
qlstm_status qlstm_program_run(const qlstm_program* program, qlstm_program_context* ctx,
                               const void* input, void* output, int32_t time_steps,
                               int8_t* hidden, int16_t* cell);

/* The kinds a caller runs: one handler per op kind (its checks and its run), opaque. The runner
 * above (qlstm_program_validate, qlstm_program_run) knows every kind, so a firmware calling it links
 * every kernel; one that lists only the kinds its program uses (as the emitted NAME_model.cc does)
 * and calls qlstm_program_validate_kinds / qlstm_program_run_kinds links only theirs (with
 * -ffunction-sections -fdata-sections and --gc-sections). */
typedef struct qlstm_op_handler qlstm_op_handler;
/* One per kind: qlstm_op_handler_lstm_s8 (QLSTM_OP_LSTM_S8), ..._fully_connected_s8, ... (op_kinds.h). */
#define QLSTM_OP_KIND_HANDLER(name, value, handler, member, block, visit) \
  extern const qlstm_op_handler qlstm_op_handler_##handler;
QLSTM_OP_KINDS(QLSTM_OP_KIND_HANDLER)
#undef QLSTM_OP_KIND_HANDLER

/* qlstm_program_validate with only the kinds of kinds[0, kind_count) (in any order; NULL when
 * kind_count is 0): an op of a valid kind that the table lacks gives QLSTM_ERROR_UNSUPPORTED with
 * *field "kind" and *op_index the op. kind_count < 0: QLSTM_ERROR_BAD_PROGRAM, "kind_count"; kinds
 * NULL with kind_count > 0, or a NULL entry: QLSTM_ERROR_NULL_POINTER, "kinds". With every kind it
 * is qlstm_program_validate. */
qlstm_status qlstm_program_validate_kinds(const qlstm_program* program, const qlstm_op_handler* const* kinds,
                                          int32_t kind_count, const qlstm_program_context* ctx,
                                          int32_t max_time_steps, const char** field, int32_t* op_index);

/* qlstm_program_run with only the kinds of kinds[0, kind_count): validates first with
 * qlstm_program_validate_kinds, so a program with an op of another kind runs no op
 * (QLSTM_ERROR_UNSUPPORTED) and leaves the output and the state untouched. The same outputs and
 * states as qlstm_program_run otherwise. */
qlstm_status qlstm_program_run_kinds(const qlstm_program* program, const qlstm_op_handler* const* kinds,
                                     int32_t kind_count, qlstm_program_context* ctx, const void* input,
                                     void* output, int32_t time_steps, int8_t* hidden, int16_t* cell);

/* A recurrent op's state elements per batch row in each state array (its state holds B x this
 * many at state_offset): H of an int8 LSTM, a GRU and an RNN, 2H of a 16x8 LSTM (its cell, then its
 * int16 hidden, both in the cell array); 0 for another kind or NULL. */
int32_t qlstm_op_state_size(const qlstm_op* op);  /* 0 too when op->params is NULL */

/* The scratch bytes op's kernel needs with its block's dims (time_steps as set): that of
 * qlstm_lstm_s8_scratch_bytes, qlstm_gru_s8_scratch_bytes or qlstm_rnn_s8_scratch_bytes, 0 for another kind, for NULL (op or its params) or for
 * invalid dims. */
size_t qlstm_op_scratch_bytes(const qlstm_op* op);

#ifdef __cplusplus
}
#endif

#endif /* QLSTM_PROGRAM_S8_H_ */
