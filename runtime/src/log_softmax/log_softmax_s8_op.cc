// The int8 log-softmax's part of the program runner (program_op.h).
#include "program_op.h"

using namespace qlstm::program;

extern "C" const qlstm_op_handler qlstm_op_handler_log_softmax_s8 =
    same_width_handler<qlstm_log_softmax_s8_params, qlstm_log_softmax_s8_validate, int8_t, int8_t,
                       qlstm::log_softmax_s8_prechecked>(QLSTM_OP_LOG_SOFTMAX_S8, types_of<QLSTM_ELEMENT_S8>);
