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

typedef struct qlstm_softmax_s8_params {
  int32_t rows;             /* >= 0; a program's runner sets it */
  int32_t row_size;         /* >= 1 */
  int32_t input_multiplier; /* >= 0: beta * input_scale * 2^(31 - 5 - input_left_shift) */
  int32_t input_left_shift; /* in [0, 31] */
  int32_t diff_min;         /* <= 0: differences below it give an output of -128 */
} qlstm_softmax_s8_params;

qlstm_status qlstm_softmax_s8_validate(const qlstm_softmax_s8_params* params, const char** field);
/* input, output: rows x row_size int8 values (may be NULL when rows == 0). */
qlstm_status qlstm_softmax_s8(const qlstm_softmax_s8_params* params, const int8_t* input, int8_t* output);

#ifdef __cplusplus
}
#endif

#endif /* QLSTM_SOFTMAX_S8_H_ */
