/*
 * qlstm: the requantization op between two affine quantizations of int8 or int16 values (the
 * boundary between a 16x8 part of a program and an int8 part: docs/arithmetic.md §15):
 *   y = sat_out( RQ(x - input_zero_point, to_output) + output_zero_point )
 * RQ the double-rounding requantization of the int8 kernels (fixed_point.h,
 * requantize_double_rounding), the difference and the add in int32, sat_out the output type's
 * range. C-compatible; plain-data parameters; no scratch.
 */
#ifndef QLSTM_REQUANTIZE_H_
#define QLSTM_REQUANTIZE_H_

#include <stddef.h>
#include <stdint.h>

#include "qlstm/lstm_s8.h"
#include "qlstm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The element type of a buffer or an operand. */
typedef enum qlstm_element_type {
  QLSTM_ELEMENT_S8 = 0,
  QLSTM_ELEMENT_S16 = 1,
  QLSTM_ELEMENT_S32 = 2 /* token ids: an embedding's input (embedding_s8.h), never requantized */
} qlstm_element_type;

typedef struct qlstm_requantize_params {
  int32_t rows;              /* >= 0; a program's runner sets it */
  int32_t row_size;          /* >= 1 */
  int32_t input_type;        /* a qlstm_element_type */
  int32_t output_type;       /* a qlstm_element_type */
  int32_t input_zero_point;  /* within the input type's range */
  int32_t output_zero_point; /* within the output type's range */
  qlstm_requant to_output;   /* s_in / s_out: multiplier >= 0, shift QLSTM_SHIFT_MIN ... QLSTM_SHIFT_MAX */
} qlstm_requantize_params;

/* Bytes of one element of a qlstm_element_type (0 for another value). */
size_t qlstm_element_bytes(int32_t type);
/* Checks every field; on failure and if field is not NULL, *field names the first offending one
 * ("rows", "row_size", "input_type", "output_type", "input_zero_point", "output_zero_point",
 * "to_output.multiplier", "to_output.shift"). */
qlstm_status qlstm_requantize_validate(const qlstm_requantize_params* params, const char** field);
/* input: rows x row_size values of input_type, output: of output_type (int16 arrays 2-byte
 * aligned). Both may be NULL when rows == 0. */
qlstm_status qlstm_requantize(const qlstm_requantize_params* params, const void* input, void* output);

#ifdef __cplusplus
}
#endif

#endif /* QLSTM_REQUANTIZE_H_ */
