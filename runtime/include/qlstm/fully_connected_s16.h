/*
 * qlstm: 16x8 fully connected layer (int16 activations, int8 weights, int64 bias), bit-exact with
 * CMSIS-NN's arm_fully_connected_s16 (per tensor; all zero points 0). See docs/arithmetic.md §14.
 *
 * For each row r and output o:
 *   acc = bias[o] + sum_i input[r][i] * weights[o][i]                       (int64, wrapping)
 *   y   = clamp(requantize_s64_round_half_up(acc, reduce_multiplier_q31_to_q15(multiplier), shift),
 *               activation_min, activation_max)
 *
 * C-compatible API; plain-data parameters; no scratch.
 */
#ifndef QLSTM_FULLY_CONNECTED_S16_H_
#define QLSTM_FULLY_CONNECTED_S16_H_

#include <stddef.h>
#include <stdint.h>

#include "qlstm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest shift of the 16x8 requantization: its first shift, 14 - shift, is >= 0. */
#define QLSTM_S16_SHIFT_MAX 14

typedef struct qlstm_fc_s16_params {
  int32_t rows;          /* >= 0: input rows of input_size values */
  int32_t input_size;    /* I >= 1 */
  int32_t output_size;   /* O >= 1 */
  int32_t multiplier;    /* >= 0, Q31 (as the s8 kernels'); the kernel rounds it to Q15 */
  int32_t shift;         /* QLSTM_SHIFT_MIN ... QLSTM_S16_SHIFT_MAX */
  const int8_t* weights; /* [O][I], symmetric */
  const int64_t* bias;   /* [O], or NULL: no bias */
  int32_t activation_min; /* int16 clamp, activation_min <= activation_max */
  int32_t activation_max;
} qlstm_fc_s16_params;

/* Checks every field. On failure and if field is not NULL, *field names the first offending field
 * (a static string such as "shift" or "activation_min"). */
qlstm_status qlstm_fc_s16_validate(const qlstm_fc_s16_params* params, const char** field);

/* input: rows x I int16 values, output: rows x O. Both may be NULL when rows == 0. */
qlstm_status qlstm_fc_s16(const qlstm_fc_s16_params* params, const int16_t* input, int16_t* output);

#ifdef __cplusplus
}
#endif

#endif /* QLSTM_FULLY_CONNECTED_S16_H_ */
