/*
 * qlstm: 16x8 softmax over each row of int16 values, bit-exact with CMSIS-NN's arm_softmax_s16
 * (TensorFlow Lite Micro's int16 softmax). The input is symmetric (zero point 0); the output is
 * int16 at scale 1/32768, zero point 0. exp and 1/(1 + x) come from two fixed 513-entry Q0.15
 * tables with linear interpolation; see docs/arithmetic.md §16.
 */
#ifndef QLSTM_SOFTMAX_S16_H_
#define QLSTM_SOFTMAX_S16_H_

#include <stddef.h>
#include <stdint.h>

#include "qlstm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The output quantization every 16x8 softmax has. */
#define QLSTM_SOFTMAX_S16_OUTPUT_ZERO_POINT 0
#define QLSTM_SOFTMAX_S16_OUTPUT_SCALE_LOG2 (-15) /* scale 1/32768 */

/* Longest row: the sum of a row's exponentials (each at most 32767) must stay below 2^31. */
#define QLSTM_SOFTMAX_S16_ROW_SIZE_MAX 65535
/* Largest input_left_shift: a difference from the row maximum (>= -65535) times 2^shift must fit
 * int32 (upstream's shift would overflow beyond it). */
#define QLSTM_SOFTMAX_S16_SHIFT_MAX 15

typedef struct qlstm_softmax_s16_params {
  int32_t rows;             /* >= 0; a program's runner sets it */
  int32_t row_size;         /* 1 ... QLSTM_SOFTMAX_S16_ROW_SIZE_MAX */
  /* (input_multiplier, input_left_shift): beta * input_scale / (10 / 65535) as TFLite's
   * QuantizeMultiplier gives it: a difference from the row maximum maps [-10, 0] of beta * x onto
   * the exp table's [-65535, 0]. */
  int32_t input_multiplier; /* >= 0 */
  int32_t input_left_shift; /* QLSTM_SHIFT_MIN (-31) ... QLSTM_SOFTMAX_S16_SHIFT_MAX */
} qlstm_softmax_s16_params;

/* Checks every field. On failure and if field is not NULL, *field names the first offending field
 * (a static string such as "row_size" or "input_left_shift"). */
qlstm_status qlstm_softmax_s16_validate(const qlstm_softmax_s16_params* params, const char** field);
/* input, output: rows x row_size int16 values (may be NULL when rows == 0). */
qlstm_status qlstm_softmax_s16(const qlstm_softmax_s16_params* params, const int16_t* input, int16_t* output);

#ifdef __cplusplus
}
#endif

#endif /* QLSTM_SOFTMAX_S16_H_ */
