// Hand-built programs for tests: an LSTM or GRU op, an op of another kind whose parameter block the
// test fills in, and what qlstm_program_validate says of a program.
#ifndef QLSTM_TESTS_PROGRAM_OPS_H_
#define QLSTM_TESTS_PROGRAM_OPS_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>

#include "qlstm/params_codec.h"
#include "qlstm/program_s8.h"

namespace testing_support {

// The blocks the tests' hand-built ops point to: one per set_block, kept for the test binary's
// whole run (never const, so a test may change one through block<P>()).
inline std::deque<qlstm::OpBlock>& test_blocks() {
  static std::deque<qlstm::OpBlock> blocks;
  return blocks;
}

// A copy of p as op's block (op.kind must be set: p is its kind's block type).
template <class P>
void set_block(qlstm_op& op, const P& p) {
  qlstm_op source = op;
  source.params = &p;
  op.params = qlstm::copy_op_block(source, &test_blocks().emplace_back());
}

// The op's block, for a test to read or change (a hand-built op's, in test_blocks(), or one of a
// RuntimeProgram's blocks: storage that is not const either way).
template <class P>
P& block(const qlstm_op& op) {
  return *const_cast<P*>(static_cast<const P*>(op.params));
}

inline qlstm_op program_op(int32_t kind, int32_t input_buffer, int32_t output_buffer) {
  qlstm_op op{};
  op.kind = kind;
  op.input_buffer = input_buffer;
  op.output_buffer = output_buffer;
  return op;
}

inline qlstm_op lstm_op(const qlstm_lstm_s8_params& p, int32_t input_buffer, int32_t output_buffer,
                        size_t state_offset) {
  qlstm_op op = program_op(QLSTM_OP_LSTM_S8, input_buffer, output_buffer);
  set_block(op, p);
  op.state_offset = state_offset;
  return op;
}

inline qlstm_op gru_op(const qlstm_gru_s8_params& p, int32_t input_buffer, int32_t output_buffer,
                       size_t state_offset) {
  qlstm_op op = program_op(QLSTM_OP_GRU_S8, input_buffer, output_buffer);
  set_block(op, p);
  op.state_offset = state_offset;
  return op;
}

// How qlstm_program_validate refuses: "<status> <field> <op index>".
inline std::string refusal(qlstm_status status, const char* field, int32_t op) {
  return std::to_string(status) + " " + field + " " + std::to_string(op);
}

// What qlstm_program_validate says: "ok", or its refusal.
inline std::string verdict(const qlstm_program* program, const qlstm_program_context* ctx, int32_t max_time_steps) {
  const char* field = "unset";
  int32_t op = -2;
  const qlstm_status st = qlstm_program_validate(program, ctx, max_time_steps, &field, &op);
  if (st == QLSTM_OK) return field == nullptr && op == -1 ? "ok" : "ok with a field";
  return refusal(st, field ? field : "null", op);
}

}  // namespace testing_support

#endif  // QLSTM_TESTS_PROGRAM_OPS_H_
