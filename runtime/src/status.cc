#include "qlstm/status.h"

extern "C" const char* qlstm_status_string(qlstm_status status) {
  switch (status) {
    case QLSTM_OK: return "ok";
    case QLSTM_ERROR_NULL_POINTER: return "a required pointer is null";
    case QLSTM_ERROR_BAD_DIMS: return "dimensions out of range (need B, I, H >= 1, T >= 0, sizes within int32)";
    case QLSTM_ERROR_BAD_LAYOUT: return "layout is neither batch-major nor time-major";
    case QLSTM_ERROR_BAD_MULTIPLIER: return "requantization multiplier is negative";
    case QLSTM_ERROR_BAD_SHIFT: return "requantization shift outside [-31, 31] ([-31, 14] for a 16x8 kernel)";
    case QLSTM_ERROR_BAD_ACTIVATION: return "gate activation is neither sigmoid nor tanh";
    case QLSTM_ERROR_BAD_CELL_SCALE: return "cell_scale_power outside [-43, 2]";
    case QLSTM_ERROR_BAD_CELL_CLIP: return "cell_clip above 32767";
    case QLSTM_ERROR_BAD_ZERO_POINT: return "output zero point outside [-128, 127]";
    case QLSTM_ERROR_SCRATCH_TOO_SMALL: return "scratch buffer smaller than qlstm_lstm_s8_scratch_bytes()";
    case QLSTM_ERROR_SCRATCH_MISALIGNED: return "scratch buffer not aligned to QLSTM_SCRATCH_ALIGNMENT";
    case QLSTM_ERROR_UNSUPPORTED: return "kernel variant not supported on this CPU";
    case QLSTM_ERROR_BAD_DIRECTION: return "time_direction is neither forward nor reverse";
    case QLSTM_ERROR_BAD_OUTPUT_WIDTH: return "output_width is neither 0 nor at least H, or B*T*output_width exceeds int32";
    case QLSTM_ERROR_BAD_PROGRAM: return "a program is inconsistent (op kind, buffer index or width, activation area or state offset)";
    case QLSTM_ERROR_NO_VARIANT: return "no kernel variant to choose from can run this call (e.g. its time direction or output width)";
    case QLSTM_ERROR_BAD_OUTPUT_STEPS: return "output_steps is neither every step nor the final state";
    case QLSTM_ERROR_BAD_DIFF_MIN: return "softmax diff_min above 0, or diff_min x 2^input_left_shift below int32";
    case QLSTM_ERROR_BAD_ELEMENT_TYPE: return "element type not int8, int16 or int32, or not the one the op reads or writes";
    case QLSTM_ERROR_BAD_INDEX: return "a token id outside [0, table_rows) of its embedding table";
    case QLSTM_ERROR_BAD_INPUT_STEPS: return "input_repeated is neither 0 (a sequence) nor 1 (one step, repeated)";
  }
  return "unknown status";
}
