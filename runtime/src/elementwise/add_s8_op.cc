// The int8 elementwise add's part of the program runner (elementwise_op.h).
#include "elementwise/elementwise_op.h"

using namespace qlstm::program;

extern "C" const qlstm_op_handler qlstm_op_handler_add_s8 =
    elementwise_handler<qlstm_add_s8_params, qlstm_add_s8_validate, qlstm::add_s8_prechecked,
                       &qlstm::ProgramRunOptions::add_variant>(QLSTM_OP_ADD_S8);
