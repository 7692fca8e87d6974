/*
 * qlstm: int8 layer normalization over each row (nn.LayerNorm on the features, ONNX
 * LayerNormalization on the last axis): y = (x - mean) / sqrt(variance + epsilon) * gamma + beta.
 * CMSIS-NN and TFLite Micro have no int8 LayerNorm; this arithmetic is qlstm's own
 * (docs/arithmetic.md §21): the row's int32 sum and sum of squares, F^2 x its variance in int64
 * (exact), one fixed-point reciprocal square root per row (an integer square root and one
 * division), then per feature the normalized value in Q12 and one rounding of
 * normalized x gamma + beta into the output's steps.
 */
#ifndef QLSTM_LAYER_NORM_S8_H_
#define QLSTM_LAYER_NORM_S8_H_

#include <stddef.h>
#include <stdint.h>

#include "qlstm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest row: F x 255 (a centred value times F) must stay below 2^20, so that its product with
 * the reciprocal square root (below 2^32) fits int64 with room for the rounding. */
#define QLSTM_LAYER_NORM_S8_ROW_SIZE_MAX 4096
/* epsilon_term x 2^epsilon_shift stays below 2^55: with F^2 x the variance (below 2^38) the
 * square root's argument keeps its top bits for the normalization into [2^60, 2^62). */
#define QLSTM_LAYER_NORM_S8_EPSILON_SHIFT_MAX 24
/* The normalized value's fractional bits (Q12). */
#define QLSTM_LAYER_NORM_S8_NORMALIZED_FRACTION_BITS 12
/* The output rounding's shift: 0 ... 62 (the sum stays below 2^50). */
#define QLSTM_LAYER_NORM_S8_OUTPUT_SHIFT_MAX 62

typedef struct qlstm_layer_norm_s8_params {
  int32_t rows;           /* >= 0; a program's runner sets it */
  int32_t row_size;       /* F: 1 ... QLSTM_LAYER_NORM_S8_ROW_SIZE_MAX */
  /* epsilon in the input's steps times F^2: epsilon / input_scale^2 x F^2 = epsilon_term x
   * 2^epsilon_shift, added to F^2 x the row's variance (in steps) under the square root. */
  int32_t epsilon_term;   /* >= 0 */
  int32_t epsilon_shift;  /* 0 ... QLSTM_LAYER_NORM_S8_EPSILON_SHIFT_MAX */
  /* Per feature: gamma / output_scale x 2^(output_shift - 12), the normalized Q12 value's factor. */
  const int32_t* weights; /* [row_size] */
  /* Per feature: beta / output_scale x 2^output_shift. */
  const int32_t* biases;  /* [row_size] */
  int32_t output_shift;   /* 0 ... QLSTM_LAYER_NORM_S8_OUTPUT_SHIFT_MAX */
  int32_t output_zero_point; /* -128 ... 127 */
} qlstm_layer_norm_s8_params;

/* Checks every field. On failure and if field is not NULL, *field names the first offending field
 * (a static string such as "row_size" or "epsilon_shift"). */
qlstm_status qlstm_layer_norm_s8_validate(const qlstm_layer_norm_s8_params* params, const char** field);
/* input, output: rows x row_size int8 values (may be NULL when rows == 0). */
qlstm_status qlstm_layer_norm_s8(const qlstm_layer_norm_s8_params* params, const int8_t* input, int8_t* output);

#ifdef __cplusplus
}
#endif

#endif /* QLSTM_LAYER_NORM_S8_H_ */
