// The runner's kind table (qlstm_program_run_kinds, qlstm_program_validate_kinds): the hand-built
// programs (LSTM, select, FC, softmax, table, GRU ops; both layouts, stateless and stateful) run
// with the table of their own kinds write the bytes qlstm_program_run writes, and a table lacking
// one of their kinds is refused naming the first op of that kind, before any op runs
// (tests/support/program_kinds.h; the 16x8 kinds: program_s16_test); the table's own arguments.
#include <gtest/gtest.h>

#include <random>

#include "hand_programs.h"
#include "program_kinds.h"

namespace {

using namespace testing_support::hand;  // NOLINT: the programs and their sizes
using testing_support::expect_kinds_run_as_every_kind;

TEST(ProgramKinds, OwnKindsRunAsEveryKindAndAMissingKindIsRefused) {
  std::mt19937_64 rng(31);
  uint64_t seed = 1;
  for (const bool time_major : {false, true}) {
    for (const bool stateful : {false, true}) {
      for (int32_t shape = 0; shape < 7; ++shape) {
        SCOPED_TRACE("shape " + std::to_string(shape) + (time_major ? " time-major" : " batch-major") +
                     (stateful ? " stateful" : ""));
        Built b;
        switch (shape) {
          case 0: build_classifier(b, time_major, -1, rng); break;
          case 1: build_classifier(b, time_major, 2, rng); break;
          case 2: build_final_head(b, time_major, rng); break;
          case 3: build_front(b, time_major, rng); break;
          case 4: build_gru(b, time_major, QLSTM_OUTPUT_ALL_STEPS, true, rng); break;
          case 5: build_gru(b, time_major, QLSTM_OUTPUT_FINAL, false, rng); break;
          default: build_bidirectional_gru(b, time_major, QLSTM_OUTPUT_ALL_STEPS, rng); break;
        }
        expect_kinds_run_as_every_kind(b.program, b.ctx, T, stateful, seed++);
      }
    }
  }
}

TEST(ProgramKinds, TheTableItselfIsChecked) {
  std::mt19937_64 rng(5);
  Built b;
  build_final_head(b, false, rng);  // LSTM -> FC -> table
  const qlstm_op_handler* const kinds[3] = {&qlstm_op_handler_lstm_s8, &qlstm_op_handler_fully_connected_s8,
                                            &qlstm_op_handler_table_s8};
  const char* field = nullptr;
  int32_t op_index = 0;
  EXPECT_EQ(qlstm_program_validate_kinds(&b.program, kinds, 3, &b.ctx, T, &field, &op_index), QLSTM_OK);
  EXPECT_EQ(qlstm_program_validate_kinds(&b.program, kinds, -1, &b.ctx, T, &field, &op_index), QLSTM_ERROR_BAD_PROGRAM);
  EXPECT_STREQ(field, "kind_count");
  EXPECT_EQ(op_index, -1);
  EXPECT_EQ(qlstm_program_validate_kinds(&b.program, nullptr, 3, &b.ctx, T, &field, &op_index), QLSTM_ERROR_NULL_POINTER);
  EXPECT_STREQ(field, "kinds");
  const qlstm_op_handler* const with_null[3] = {&qlstm_op_handler_lstm_s8, nullptr, &qlstm_op_handler_table_s8};
  EXPECT_EQ(qlstm_program_validate_kinds(&b.program, with_null, 3, &b.ctx, T, &field, &op_index),
            QLSTM_ERROR_NULL_POINTER);
  EXPECT_STREQ(field, "kinds");
  // No kinds: the first op is refused. An invalid kind is still a bad program, with or without a table.
  EXPECT_EQ(qlstm_program_validate_kinds(&b.program, nullptr, 0, &b.ctx, T, &field, &op_index), QLSTM_ERROR_UNSUPPORTED);
  EXPECT_STREQ(field, "kind");
  EXPECT_EQ(op_index, 0);
  b.ops[1].kind = QLSTM_OP_KIND_COUNT;
  EXPECT_EQ(qlstm_program_validate_kinds(&b.program, kinds, 3, &b.ctx, T, &field, &op_index), QLSTM_ERROR_BAD_PROGRAM);
  EXPECT_STREQ(field, "kind");
  EXPECT_EQ(op_index, 1);
  // A bad program is named as qlstm_program_validate names it.
  b.ops[1].kind = QLSTM_OP_FULLY_CONNECTED_S8;
  b.ops[1].output_offset = 1;
  const char* every_field = nullptr;
  int32_t every_op = 0;
  EXPECT_EQ(qlstm_program_validate_kinds(&b.program, kinds, 3, &b.ctx, T, &field, &op_index),
            qlstm_program_validate(&b.program, &b.ctx, T, &every_field, &every_op));
  EXPECT_STREQ(field, every_field);
  EXPECT_EQ(op_index, every_op);
}

}  // namespace
