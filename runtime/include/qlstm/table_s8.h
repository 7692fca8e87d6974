/*
 * qlstm: any elementwise int8 -> int8 function (Sigmoid, Tanh, HardSigmoid, LeakyReLU, GELU,
 * SiLU, ...) as a 256-entry table the compiler computes from the float function and the input and
 * output quantizations: output = table[input + 128]. And the time-step selection op, which copies
 * one step of a sequence (y[:, k]) out of it. Both move bytes only (docs/arithmetic.md §12).
 */
#ifndef QLSTM_TABLE_S8_H_
#define QLSTM_TABLE_S8_H_

#include <stddef.h>
#include <stdint.h>

#include "qlstm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QLSTM_TABLE_S8_ENTRIES 256

typedef struct qlstm_table_s8_params {
  int32_t rows;         /* >= 0; a program's runner sets it */
  int32_t row_size;     /* >= 1 */
  const int8_t* table;  /* [QLSTM_TABLE_S8_ENTRIES]: table[x + 128] for input x */
} qlstm_table_s8_params;

/* Checks every field; on failure and if field is not NULL, *field names the first offending one
 * ("rows", "row_size", "table"). */
qlstm_status qlstm_table_s8_validate(const qlstm_table_s8_params* params, const char** field);
/* input, output: rows x row_size int8 values (may be NULL when rows == 0); may be equal. */
qlstm_status qlstm_table_s8(const qlstm_table_s8_params* params, const int8_t* input, int8_t* output);

/* step_count consecutive time steps of a sequence buffer, from step: step >= 0 counts from the
 * first step, < 0 from the last (-1: the last, PyTorch's y[:, -1]; step -k with step_count k:
 * y[:, -k:]). The program runner does the copy into a one-step buffer of step_count x row_size
 * values per batch row, in the program's layout: batch-major, each row's steps in order; time-major,
 * step j of every batch row before step j + 1's (the selected sequence's own order). */
typedef struct qlstm_select_step_params {
  int32_t step;
  int32_t row_size;   /* >= 1: elements per position of the input buffer (its width) */
  int32_t step_count; /* >= 1: the steps taken; the output buffer's width is step_count x row_size */
} qlstm_select_step_params;

#ifdef __cplusplus
}
#endif

#endif /* QLSTM_TABLE_S8_H_ */
