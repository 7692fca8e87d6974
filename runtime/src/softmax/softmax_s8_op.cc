// The int8 softmax's part of the program runner (program_op.h).
#include "program_op.h"

using namespace qlstm::program;

extern "C" const qlstm_op_handler qlstm_op_handler_softmax_s8 =
    same_width_handler<qlstm_softmax_s8_params, qlstm_softmax_s8_validate, int8_t, int8_t,
                       qlstm::softmax_s8_prechecked>(QLSTM_OP_SOFTMAX_S8, types_of<QLSTM_ELEMENT_S8>);
