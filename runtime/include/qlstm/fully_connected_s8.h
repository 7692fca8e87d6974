/*
 * qlstm: int8 fully connected layer, bit-exact with CMSIS-NN's arm_fully_connected_s8 (one
 * multiplier) and arm_fully_connected_per_channel_s8 (one per output), default double rounding.
 * See docs/arithmetic.md §10.
 *
 * For each row r and output o:
 *   acc = effective_bias[o] + sum_i input[r][i] * weights[o][i]          (int32, wrapping)
 *   y   = clamp(requantize_double_rounding(acc, multiplier, shift) + output_zero_point,
 *               activation_min, activation_max)
 * with effective_bias[o] = bias[o] - input_zero_point * sum_i weights[o][i]: the input zero point
 * folded in once, at compile time (qlstm_fc_s8_effective_bias), as the LSTM's gates do. Modulo 2^32
 * this is upstream's sum of (input + input_offset) * weight plus bias, so the result is equal.
 *
 * C-compatible API; plain-data parameters; no scratch.
 */
#ifndef QLSTM_FULLY_CONNECTED_S8_H_
#define QLSTM_FULLY_CONNECTED_S8_H_

#include <stddef.h>
#include <stdint.h>

#include "qlstm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qlstm_fc_s8_params {
  int32_t rows;        /* >= 0: input rows of input_size values; a program's runner sets it */
  int32_t input_size;  /* I >= 1 */
  int32_t output_size; /* O >= 1 */
  int32_t per_channel; /* 0: multipliers[0], shifts[0] for every output; 1: one per output */
  const int32_t* multipliers;    /* [per_channel ? O : 1], each >= 0 */
  const int32_t* shifts;         /* [per_channel ? O : 1], each in [QLSTM_SHIFT_MIN, QLSTM_SHIFT_MAX] */
  const int8_t* weights;         /* [O][I], symmetric (zero point 0) */
  const int32_t* effective_bias; /* [O]: bias - input_zero_point * rowsum(weights) */
  int32_t output_zero_point;     /* int8 */
  int32_t activation_min;        /* int8 clamp, activation_min <= activation_max; a fused ReLU */
  int32_t activation_max;        /* is activation_min = output_zero_point */
} qlstm_fc_s8_params;

/* Checks every field. On failure and if field is not NULL, *field names the first offending field
 * (a static string such as "shifts" or "activation_min"). */
qlstm_status qlstm_fc_s8_validate(const qlstm_fc_s8_params* params, const char** field);

/* input: rows x I int8 values, output: rows x O. Both may be NULL when rows == 0. */
qlstm_status qlstm_fc_s8(const qlstm_fc_s8_params* params, const int8_t* input, int8_t* output);

/* effective_bias[o] = bias[o] - input_zero_point * sum_i weights[o][i], modulo 2^32 (bias NULL:
 * no bias). */
void qlstm_fc_s8_effective_bias(const int8_t* weights, const int32_t* bias, int32_t input_zero_point,
                                int32_t input_size, int32_t output_size, int32_t* effective_bias);

#ifdef __cplusplus
}
#endif

#endif /* QLSTM_FULLY_CONNECTED_S8_H_ */
