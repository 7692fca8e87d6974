// The int8 table op's part of the program runner (program_op.h).
#include "program_op.h"

using namespace qlstm::program;

extern "C" const qlstm_op_handler qlstm_op_handler_table_s8 =
    same_width_handler<qlstm_table_s8_params, qlstm_table_s8_validate, int8_t, int8_t,
                       qlstm::table_s8_prechecked>(QLSTM_OP_TABLE_S8, types_of<QLSTM_ELEMENT_S8>);
