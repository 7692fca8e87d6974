// The int8 layer normalization's part of the program runner (program_op.h).
#include "program_op.h"

using namespace qlstm::program;

extern "C" const qlstm_op_handler qlstm_op_handler_layer_norm_s8 =
    same_width_handler<qlstm_layer_norm_s8_params, qlstm_layer_norm_s8_validate, int8_t, int8_t,
                       qlstm::layer_norm_s8_prechecked>(QLSTM_OP_LAYER_NORM_S8, types_of<QLSTM_ELEMENT_S8>);
