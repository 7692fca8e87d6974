/*
 * qlstm: the embedding op (nn.Embedding, ONNX Gather from a constant table): each position's int32
 * token id selects one row of an int8 table, which is copied to the output. The table holds the
 * float rows quantized at the output's scale and zero point, so the op moves bytes only
 * (docs/arithmetic.md §20). An id outside [0, table_rows) is refused with QLSTM_ERROR_BAD_INDEX
 * before anything is written: no row is ever read out of bounds.
 */
#ifndef QLSTM_EMBEDDING_S8_H_
#define QLSTM_EMBEDDING_S8_H_

#include <stddef.h>
#include <stdint.h>

#include "qlstm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qlstm_embedding_s8_params {
  int32_t rows;         /* >= 0: the ids looked up; a program's runner sets it */
  int32_t table_rows;   /* >= 1: the vocabulary, V */
  int32_t row_size;     /* >= 1: E, elements per row */
  const int8_t* table;  /* [table_rows][row_size] */
} qlstm_embedding_s8_params;

/* Checks every field; on failure and if field is not NULL, *field names the first offending one
 * ("params", "rows", "table_rows", "row_size", "table"). */
qlstm_status qlstm_embedding_s8_validate(const qlstm_embedding_s8_params* params, const char** field);
/* ids: rows int32 values; output: rows x row_size int8 values (both may be NULL when rows == 0).
 * Every id is checked first: one outside [0, table_rows) gives QLSTM_ERROR_BAD_INDEX and the
 * output is left untouched. */
qlstm_status qlstm_embedding_s8(const qlstm_embedding_s8_params* params, const int32_t* ids, int8_t* output);

#ifdef __cplusplus
}
#endif

#endif /* QLSTM_EMBEDDING_S8_H_ */
