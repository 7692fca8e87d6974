/*
 * qlstm: int8 log-softmax over each row, bit-exact with TensorFlow Lite (Micro)'s int8
 * LOG_SOFTMAX: output scale 16/256, zero point 127 (so outputs span [-255/16, 0]). The parameters
 * are derived from the input scale as TFLite prepares them (5 integer bits for the scaled
 * difference, as the int8 softmax); see docs/arithmetic.md §18.
 */
#ifndef QLSTM_LOG_SOFTMAX_S8_H_
#define QLSTM_LOG_SOFTMAX_S8_H_

#include <stddef.h>
#include <stdint.h>

#include "qlstm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The output quantization every int8 log-softmax has. */
#define QLSTM_LOG_SOFTMAX_S8_OUTPUT_ZERO_POINT 127
#define QLSTM_LOG_SOFTMAX_S8_OUTPUT_SCALE_LOG2 (-4) /* scale 16/256 */

/* Longest row: the sum of a row's exponentials (each at most 2^19 in Q12.19) must fit int32. */
#define QLSTM_LOG_SOFTMAX_S8_ROW_SIZE_MAX 4095

typedef struct qlstm_log_softmax_s8_params {
  int32_t rows;             /* >= 0; a program's runner sets it */
  int32_t row_size;         /* 1 ... QLSTM_LOG_SOFTMAX_S8_ROW_SIZE_MAX */
  /* (input_multiplier, input_left_shift): input_scale * 2^(31 - 5) as TFLite's
   * QuantizeMultiplierGreaterThanOne gives it: a difference from the row's maximum in Q5.26. */
  int32_t input_multiplier; /* >= 0 */
  int32_t input_left_shift; /* in [0, 31] */
  /* (reverse_multiplier, reverse_shift): the inverse of that scaling, 2^(31 - input_left_shift) /
   * input_multiplier as TFLite's QuantizeMultiplierSmallerThanOneExp gives it (a right shift). It
   * maps the most negative Q5.26 value a difference may reach after log(sum) is subtracted back to
   * a difference: below it the output is -128. */
  int32_t reverse_multiplier; /* >= 0 */
  int32_t reverse_shift;      /* in [-31, 0] */
  /* <= 0 and above INT32_MIN: a difference from the row's maximum below it is left out of the sum
   * and gives -128. diff_min x 2^input_left_shift must fit int32. */
  int32_t diff_min;
} qlstm_log_softmax_s8_params;

/* Checks every field. On failure and if field is not NULL, *field names the first offending field
 * (a static string such as "row_size" or "reverse_shift"). */
qlstm_status qlstm_log_softmax_s8_validate(const qlstm_log_softmax_s8_params* params, const char** field);
/* input, output: rows x row_size int8 values (may be NULL when rows == 0). */
qlstm_status qlstm_log_softmax_s8(const qlstm_log_softmax_s8_params* params, const int8_t* input, int8_t* output);

#ifdef __cplusplus
}
#endif

#endif /* QLSTM_LOG_SOFTMAX_S8_H_ */
