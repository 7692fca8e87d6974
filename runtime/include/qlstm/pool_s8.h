/*
 * qlstm: int8 max and average pooling over a window of NHWC images (docs/arithmetic.md §17), the
 * arithmetic of CMSIS-NN's arm_max_pool_s8 and arm_avgpool_s8. Input and output share one
 * quantization, which the kernel does not take: the average is of the raw int8 values. In a
 * program it also pools a sequence over time (y.mean(dim=1), y.max(dim=1).values): a window of
 * all T steps, which the program runner sets per call.
 */
#ifndef QLSTM_POOL_S8_H_
#define QLSTM_POOL_S8_H_

#include <stdint.h>

#include "qlstm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum qlstm_pool_kind {
  QLSTM_POOL_MAX = 0,      /* the largest in-window value */
  QLSTM_POOL_AVERAGE = 1,  /* the in-window values' sum / count, rounded half away from raw 0 */
} qlstm_pool_kind;

/* Sizes and window above QLSTM_POOL_MAX_* are refused (the average's int32 sum stays exact). */
#define QLSTM_POOL_MAX_WINDOW_AREA (1 << 23)

typedef struct qlstm_pool_s8_params {
  int32_t kind;             /* a qlstm_pool_kind */
  int32_t batch;            /* >= 0 images */
  int32_t input_height;     /* >= 1 */
  int32_t input_width;      /* >= 1 */
  int32_t channels;         /* >= 1 */
  int32_t window_height;    /* >= 1; window area <= QLSTM_POOL_MAX_WINDOW_AREA */
  int32_t window_width;     /* >= 1 */
  int32_t stride_height;    /* >= 1 */
  int32_t stride_width;     /* >= 1 */
  int32_t padding_height;   /* >= 0 and < window_height: positions before the image, left out */
  int32_t padding_width;    /* >= 0 and < window_width */
  int32_t output_height;    /* >= 1; the last window starts inside the image */
  int32_t output_width;     /* >= 1 */
  int32_t activation_min;   /* the clamp: -128 <= activation_min <= activation_max <= 127 */
  int32_t activation_max;
} qlstm_pool_s8_params;

/* Checks every field; on failure and if field is not NULL, *field names the first offending one. */
qlstm_status qlstm_pool_s8_validate(const qlstm_pool_s8_params* params, const char** field);
/* input: [batch][input_height][input_width][channels]; output: [batch][output_height]
 * [output_width][channels]; NULL only when batch == 0. They must not overlap. */
qlstm_status qlstm_pool_s8(const qlstm_pool_s8_params* params, const int8_t* input, int8_t* output);

#ifdef __cplusplus
}
#endif

#endif /* QLSTM_POOL_S8_H_ */
