/* Status codes returned by every qlstm runtime call. C-compatible. */
#ifndef QLSTM_STATUS_H_
#define QLSTM_STATUS_H_

#ifdef __cplusplus
extern "C" {
#endif

typedef enum qlstm_status {
  QLSTM_OK = 0,
  QLSTM_ERROR_NULL_POINTER = 1,      /* a required pointer is NULL */
  QLSTM_ERROR_BAD_DIMS = 2,          /* B, I, H < 1, T < 0, or sizes overflow */
  QLSTM_ERROR_BAD_LAYOUT = 3,        /* layout is not one of qlstm_layout */
  QLSTM_ERROR_BAD_MULTIPLIER = 4,    /* a requantization multiplier is negative */
  QLSTM_ERROR_BAD_SHIFT = 5,         /* a requantization shift is outside [-31, 31] */
  QLSTM_ERROR_BAD_ACTIVATION = 6,    /* a gate activation is not one of qlstm_activation
                                        (HardSigmoid: the int8 LSTM only) */
  QLSTM_ERROR_BAD_CELL_SCALE = 7,    /* cell_scale_power outside the supported range */
  QLSTM_ERROR_BAD_CELL_CLIP = 8,     /* cell_clip above 32767 */
  QLSTM_ERROR_BAD_ZERO_POINT = 9,    /* output zero point outside int8 */
  QLSTM_ERROR_SCRATCH_TOO_SMALL = 10, /* scratch_bytes < qlstm_lstm_s8_scratch_bytes() */
  QLSTM_ERROR_SCRATCH_MISALIGNED = 11, /* scratch not aligned to QLSTM_SCRATCH_ALIGNMENT */
  QLSTM_ERROR_UNSUPPORTED = 12,      /* the requested kernel variant cannot run on this CPU */
  QLSTM_ERROR_BAD_DIRECTION = 13,    /* time_direction is not one of qlstm_time_direction */
  QLSTM_ERROR_BAD_OUTPUT_WIDTH = 14, /* output_width is neither 0 nor >= H, or B*T*W overflows */
  QLSTM_ERROR_BAD_PROGRAM = 15,      /* a program is inconsistent (qlstm_program_validate) */
  QLSTM_ERROR_NO_VARIANT = 16,       /* no kernel variant to choose from can run this valid call
                                        (e.g. the requested one walks time forward only) */
  QLSTM_ERROR_BAD_OUTPUT_STEPS = 17, /* output_steps is not one of qlstm_output_steps */
  QLSTM_ERROR_BAD_DIFF_MIN = 18,     /* a softmax's diff_min is above 0, or diff_min x
                                        2^input_left_shift is below the int32 range */
  QLSTM_ERROR_BAD_ELEMENT_TYPE = 19, /* an element type is not one of qlstm_element_type, or a
                                        buffer's is not the one its op reads or writes */
  QLSTM_ERROR_BAD_INDEX = 20,        /* a token id outside its embedding table's rows */
  QLSTM_ERROR_BAD_INPUT_STEPS = 21   /* an LSTM's input_repeated is neither 0 nor 1 */
} qlstm_status;

/* A short, static, human-readable description of a status. Never NULL. */
const char* qlstm_status_string(qlstm_status status);

#ifdef __cplusplus
}
#endif

#endif /* QLSTM_STATUS_H_ */
