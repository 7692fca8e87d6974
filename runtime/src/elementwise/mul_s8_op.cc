// The int8 elementwise multiply's part of the program runner (elementwise_op.h).
#include "elementwise/elementwise_op.h"

using namespace qlstm::program;

extern "C" const qlstm_op_handler qlstm_op_handler_mul_s8 =
    elementwise_handler<qlstm_mul_s8_params, qlstm_mul_s8_validate, qlstm::mul_s8_prechecked,
                       &qlstm::ProgramRunOptions::mul_variant>(QLSTM_OP_MUL_S8);
