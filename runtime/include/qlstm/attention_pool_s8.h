/*
 * qlstm: int8 attention pooling over time: each batch row's T scores (one per step) through the
 * softmax over time, then the sum over time of each step's features weighted by its probability
 * (w = softmax(Linear(y), dim=1); (w * y).sum(dim=1)). The probabilities are the int8 softmax's
 * (CMSIS-NN's arm_softmax_s8 arithmetic, §11) kept in Q0.15 instead of rounded to 1/256; the
 * weighted sum is exact in int32 and rounded once, at the sequence's own quantization (a weighted
 * mean of its values: docs/arithmetic.md §22).
 */
#ifndef QLSTM_ATTENTION_POOL_S8_H_
#define QLSTM_ATTENTION_POOL_S8_H_

#include <stddef.h>
#include <stdint.h>

#include "qlstm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest sequence: the softmax's sum of exponentials (each at most 2^19 in Q12.19) fits int32. */
#define QLSTM_ATTENTION_POOL_S8_TIME_STEPS_MAX 4095
/* The probabilities' fractional bits (Q0.15). */
#define QLSTM_ATTENTION_POOL_S8_PROBABILITY_BITS 15

typedef struct qlstm_attention_pool_s8_params {
  int32_t batch;        /* B >= 0; a program's runner sets it */
  int32_t time_steps;   /* T: 1 ... QLSTM_ATTENTION_POOL_S8_TIME_STEPS_MAX; the runner sets it */
  int32_t layout;       /* a qlstm_layout of both sequences: batch-major [B][T] or time-major [T][B] */
  int32_t row_size;     /* W >= 1: the features of a step of the sequence, and of the output row */
  /* The scores' softmax: arm_softmax_s8's scaling of a difference from the row's maximum (the
   * scores' scale, beta 1), as qlstm_softmax_s8_params has it. */
  int32_t input_multiplier;  /* >= 0 */
  int32_t input_left_shift;  /* 0 ... 31 */
  int32_t diff_min;          /* <= 0: a difference below it has probability 0 */
  int32_t zero_point;   /* the sequence's (and the output's) zero point, -128 ... 127 */
} qlstm_attention_pool_s8_params;

/* Checks every field. On failure and if field is not NULL, *field names the first offending field. */
qlstm_status qlstm_attention_pool_s8_validate(const qlstm_attention_pool_s8_params* params, const char** field);
/* scores: B x T int8 (one per step, in the layout); sequence: B x T x W int8 (in the layout);
 * output: B x W int8. output may share sequence's memory from its start: each output row is
 * written after the positions it covers were read. */
qlstm_status qlstm_attention_pool_s8(const qlstm_attention_pool_s8_params* params, const int8_t* scores,
                                     const int8_t* sequence, int8_t* output);

#ifdef __cplusplus
}
#endif

#endif /* QLSTM_ATTENTION_POOL_S8_H_ */
