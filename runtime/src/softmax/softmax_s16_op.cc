// The 16x8 softmax's part of the program runner (program_op.h).
#include "program_op.h"

using namespace qlstm::program;

extern "C" const qlstm_op_handler qlstm_op_handler_softmax_s16 =
    same_width_handler<qlstm_softmax_s16_params, qlstm_softmax_s16_validate, int16_t, int16_t,
                       qlstm::softmax_s16_prechecked>(QLSTM_OP_SOFTMAX_S16, types_of<QLSTM_ELEMENT_S16>);
