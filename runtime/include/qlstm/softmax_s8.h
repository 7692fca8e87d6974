/*
 * qlstm: int8 softmax over each row, bit-exact with CMSIS-NN's arm_softmax_s8 (TensorFlow Lite
 * Micro's int8 softmax): output scale 1/256, zero point -128. The parameters are derived from the
 * input scale and beta as TFLite Micro prepares them (5 integer bits for the scaled difference);
 * see docs/arithmetic.md (softmax).
 */
#ifndef QLSTM_SOFTMAX_S8_H_
#define QLSTM_SOFTMAX_S8_H_

#include <stddef.h>
#include <stdint.h>

#include "qlstm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The output quantization every int8 softmax has. */
#define QLSTM_SOFTMAX_S8_OUTPUT_ZERO_POINT (-128)
#define QLSTM_SOFTMAX_S8_OUTPUT_SCALE_LOG2 (-8) /* scale 1/256 */

/* Longest row: the sum of a row's exponentials (each at most 2^19 in Q12.19) must fit int32.
 * Upstream's rounding shift of the result is undefined beyond 511 elements (a shift of 32 or
 * more); qlstm defines it as the exact rounding there (docs/arithmetic.md §11). */
#define QLSTM_SOFTMAX_S8_ROW_SIZE_MAX 4095

typedef struct qlstm_softmax_s8_params {
  int32_t rows;             /* >= 0; a program's runner sets it */
  int32_t row_size;         /* 1 ... QLSTM_SOFTMAX_S8_ROW_SIZE_MAX */
  /* (input_multiplier, input_left_shift): beta * input_scale * 2^(31 - 5) as TFLite's
   * QuantizeMultiplierGreaterThanOne gives it (the shift is never negative upstream). */
  int32_t input_multiplier; /* >= 0 */
  int32_t input_left_shift; /* in [0, 31] */
  /* <= 0: a difference from the row's maximum below it gives an output of -128. diff_min x
   * 2^input_left_shift must fit int32 (TFLite's -CalculateInputRadius(5, shift) does). */
  int32_t diff_min;
} qlstm_softmax_s8_params;

/* Checks every field. On failure and if field is not NULL, *field names the first offending field
 * (a static string such as "row_size" or "diff_min"). */
qlstm_status qlstm_softmax_s8_validate(const qlstm_softmax_s8_params* params, const char** field);
/* input, output: rows x row_size int8 values (may be NULL when rows == 0). */
qlstm_status qlstm_softmax_s8(const qlstm_softmax_s8_params* params, const int8_t* input, int8_t* output);

#ifdef __cplusplus
}
#endif

#endif /* QLSTM_SOFTMAX_S8_H_ */
