// The embedding op's part of the program runner (program_op.h): int32 ids in (the program's input
// buffer), width 1; int8 rows out, of the table's width.
#include "program_op.h"

namespace {

using namespace qlstm::program;

Failure check_embedding(const qlstm_program& program, int32_t k, int32_t time_steps) {
  const Failure f = check_rows(program, k, time_steps, false);
  if (f.status != QLSTM_OK) return f;
  // First, so that a bad id stops the call before any op has written a buffer or the state.
  if (k != 0) return bad_op("kind", k);
  const qlstm_op& op = program.ops[k];
  const qlstm_embedding_s8_params& block = block_of<qlstm_embedding_s8_params>(op);
  if (in_width(program, op) != 1) return bad_op("input_buffer", k);
  if (block.row_size != out_width(program, op)) return bad_op("row_size", k);
  return validated(qlstm_embedding_s8_validate, row_call_params(program, op, block, time_steps, 1), k);
}

qlstm_status run_embedding(const OpCall& c) {
  const qlstm_embedding_s8_params& block = block_of<qlstm_embedding_s8_params>(c.op);
  return qlstm::embedding_s8_prechecked(row_call_params(c.program, c.op, block, c.time_steps, 1), in_as<int32_t>(c),
                                        out_as<int8_t>(c));
}

OpTypes embedding_types(const qlstm_program&, const qlstm_op&) { return {QLSTM_ELEMENT_S32, QLSTM_ELEMENT_S8}; }

}  // namespace

extern "C" const qlstm_op_handler qlstm_op_handler_embedding_s8 = {
    QLSTM_OP_EMBEDDING_S8, embedding_types, check_embedding, nullptr, run_embedding,
};
