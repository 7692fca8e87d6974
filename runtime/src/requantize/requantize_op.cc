// The requantization's part of the program runner (program_op.h): its element types are its
// block's, each checked against its buffer's by the runner.
#include "program_op.h"

namespace {

using namespace qlstm::program;

OpTypes requantize_types(const qlstm_program&, const qlstm_op& op) {
  return {block_of<qlstm_requantize_params>(op).input_type, block_of<qlstm_requantize_params>(op).output_type};
}

}  // namespace

extern "C" const qlstm_op_handler qlstm_op_handler_requantize =
    same_width_handler<qlstm_requantize_params, qlstm_requantize_validate, void, void,
                       qlstm::requantize_prechecked>(QLSTM_OP_REQUANTIZE, requantize_types);
