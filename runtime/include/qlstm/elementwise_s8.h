/*
 * qlstm: int8 elementwise add and multiply of two operands of the same shape, bit-exact with
 * CMSIS-NN's arm_elementwise_add_s8 / arm_elementwise_mul_s8 (TFLite's int8 ADD and MUL without
 * broadcasting). The arithmetic and the parameters' derivation: docs/arithmetic.md §19.
 */
#ifndef QLSTM_ELEMENTWISE_S8_H_
#define QLSTM_ELEMENTWISE_S8_H_

#include <stddef.h>
#include <stdint.h>

#include "qlstm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest left_shift of an add: |x - zero_point| <= 255 shifted by it stays below 2^31. */
#define QLSTM_ADD_S8_LEFT_SHIFT_MAX 23

/* Where an elementwise op's operands and output are, shared by the add and the multiply. The
 * kernel's own call reads rows x row_size contiguous values of each operand and writes as many. In
 * a program, operand 1 is the op's input buffer and operand 2 its second input buffer; each
 * position's row_size values start input1_offset / input2_offset elements into that position's
 * row of its buffer (a feature slice: 0 and the buffer's width for a whole row), and the runner
 * sets rows. */
typedef struct qlstm_elementwise_s8_shape {
  int32_t rows;          /* >= 0 */
  int32_t row_size;      /* >= 1 */
  int32_t input1_offset; /* >= 0; the kernel's own call ignores it */
  int32_t input2_offset; /* >= 0; the kernel's own call ignores it */
} qlstm_elementwise_s8_shape;

/* y = clamp(RQ(RQ((x1 - zp1) << left_shift, m1, s1) + RQ((x2 - zp2) << left_shift, m2, s2),
 *              m_out, s_out) + zp_out, activation_min, activation_max),
 * RQ the double-rounding requantization (fixed_point.h: requantize_double_rounding). */
typedef struct qlstm_add_s8_params {
  qlstm_elementwise_s8_shape shape;
  int32_t input1_zero_point;  /* in [-128, 127] */
  int32_t input2_zero_point;  /* in [-128, 127] */
  int32_t left_shift;         /* in [0, QLSTM_ADD_S8_LEFT_SHIFT_MAX]; TFLite's preparation: 20 */
  int32_t input1_multiplier;  /* >= 0 */
  int32_t input1_shift;       /* in [QLSTM_SHIFT_MIN, QLSTM_SHIFT_MAX] */
  int32_t input2_multiplier;  /* >= 0 */
  int32_t input2_shift;       /* in [QLSTM_SHIFT_MIN, QLSTM_SHIFT_MAX] */
  int32_t output_multiplier;  /* >= 0 */
  int32_t output_shift;       /* in [QLSTM_SHIFT_MIN, QLSTM_SHIFT_MAX] */
  int32_t output_zero_point;  /* in [-128, 127] */
  int32_t activation_min;     /* -128 <= activation_min <= activation_max <= 127 */
  int32_t activation_max;
} qlstm_add_s8_params;

/* y = clamp(RQ((x1 - zp1) * (x2 - zp2), m_out, s_out) + zp_out, activation_min, activation_max). */
typedef struct qlstm_mul_s8_params {
  qlstm_elementwise_s8_shape shape;
  int32_t input1_zero_point;  /* in [-128, 127] */
  int32_t input2_zero_point;  /* in [-128, 127] */
  int32_t output_multiplier;  /* >= 0 */
  int32_t output_shift;       /* in [QLSTM_SHIFT_MIN, QLSTM_SHIFT_MAX] */
  int32_t output_zero_point;  /* in [-128, 127] */
  int32_t activation_min;     /* -128 <= activation_min <= activation_max <= 127 */
  int32_t activation_max;
} qlstm_mul_s8_params;

/* Check every field. On failure and if field is not NULL, *field names the first offending field
 * (a static string such as "shape.row_size" or "left_shift"). */
qlstm_status qlstm_add_s8_validate(const qlstm_add_s8_params* params, const char** field);
qlstm_status qlstm_mul_s8_validate(const qlstm_mul_s8_params* params, const char** field);

/* input1, input2, output: rows x row_size int8 values each (NULL only when rows == 0); the output
 * may be either input (each value is read before it is written), not a partial overlap. */
qlstm_status qlstm_add_s8(const qlstm_add_s8_params* params, const int8_t* input1, const int8_t* input2,
                          int8_t* output);
qlstm_status qlstm_mul_s8(const qlstm_mul_s8_params* params, const int8_t* input1, const int8_t* input2,
                          int8_t* output);

#ifdef __cplusplus
}
#endif

#endif /* QLSTM_ELEMENTWISE_S8_H_ */
