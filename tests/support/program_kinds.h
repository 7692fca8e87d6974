// The runner's kind table (qlstm_program_run_kinds, program_s8.h) on a built program: run with the
// table of its own kinds (in reverse order: the order is free) it writes the bytes qlstm_program_run
// writes, output and state; a table lacking one of its kinds is refused, naming the first op of that
// kind's "kind" field with QLSTM_ERROR_UNSUPPORTED, and runs no op.
#ifndef QLSTM_TESTS_PROGRAM_KINDS_H_
#define QLSTM_TESTS_PROGRAM_KINDS_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "qlstm/program_s8.h"

namespace testing_support {

// Every kind's handler, by qlstm_op_kind.
inline const qlstm_op_handler* handler_of_kind(int32_t kind) {
#define QLSTM_TEST_KIND_HANDLER(NAME, value, handler, member, block, visit) &qlstm_op_handler_##handler,
  static const qlstm_op_handler* const kAll[] = {QLSTM_OP_KINDS(QLSTM_TEST_KIND_HANDLER)};
#undef QLSTM_TEST_KIND_HANDLER
  static_assert(sizeof(kAll) / sizeof(kAll[0]) == QLSTM_OP_KIND_COUNT, "a handler per kind");
  return kAll[kind];
}

// The kinds of a program's ops, in the order of their first op.
inline std::vector<int32_t> kinds_of(const qlstm_program& program) {
  std::vector<int32_t> kinds;
  for (int32_t k = 0; k < program.op_count; ++k) {
    if (std::find(kinds.begin(), kinds.end(), program.ops[k].kind) == kinds.end()) kinds.push_back(program.ops[k].kind);
  }
  return kinds;
}

inline std::vector<const qlstm_op_handler*> handlers_of(const std::vector<int32_t>& kinds) {
  std::vector<const qlstm_op_handler*> handlers;
  for (int32_t kind : kinds) handlers.push_back(handler_of_kind(kind));
  return handlers;
}

// One call's bytes: input and output (int16-aligned storage), the state (empty: stateless).
struct KindsCall {
  std::vector<int16_t> input, output, cell;
  std::vector<int8_t> hidden;
};

// See the top of the file. The caller's ctx serves both runs, one after the other.
inline void expect_kinds_run_as_every_kind(const qlstm_program& program, qlstm_program_context& ctx,
                                           int32_t time_steps, bool stateful, uint64_t seed) {
  const auto bytes = [&](int32_t b) {
    const size_t positions = static_cast<size_t>(program.buffer_steps[b] == QLSTM_BUFFER_ONE_STEP
                                                     ? program.batch
                                                     : program.batch * time_steps);
    const int32_t type = program.buffer_types ? program.buffer_types[b] : static_cast<int32_t>(QLSTM_ELEMENT_S8);
    return positions * static_cast<size_t>(program.buffer_widths[b]) * qlstm_element_bytes(type);
  };
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> value(-2000, 2000);
  KindsCall every;
  every.input.resize(bytes(0) / 2 + 1);
  for (int16_t& v : every.input) v = static_cast<int16_t>(value(rng));
  every.output.assign(bytes(program.buffer_count - 1) / 2 + 1, 0x5A5A);
  if (stateful) {
    every.hidden.resize(program.state_values);
    every.cell.resize(program.state_values);
    for (int8_t& v : every.hidden) v = static_cast<int8_t>(value(rng) % 128);
    for (int16_t& v : every.cell) v = static_cast<int16_t>(value(rng));
  }
  KindsCall own = every;
  // A table of kinds (kinds may be NULL for none), or every kind (qlstm_program_run) when count < 0.
  const auto run = [&](KindsCall& c, const qlstm_op_handler* const* kinds, int32_t count) {
    int8_t* hidden = stateful ? c.hidden.data() : nullptr;
    int16_t* cell = stateful ? c.cell.data() : nullptr;
    return count < 0 ? qlstm_program_run(&program, &ctx, c.input.data(), c.output.data(), time_steps, hidden, cell)
                            : qlstm_program_run_kinds(&program, kinds, count, &ctx, c.input.data(), c.output.data(),
                                                      time_steps, hidden, cell);
  };
  const std::vector<int32_t> kinds = kinds_of(program);
  std::vector<const qlstm_op_handler*> table = handlers_of(kinds);
  std::reverse(table.begin(), table.end());
  const int32_t count = static_cast<int32_t>(table.size());
  ASSERT_EQ(run(every, nullptr, -1), QLSTM_OK);
  const char* field = "unset";
  int32_t op_index = -2;
  ASSERT_EQ(qlstm_program_validate_kinds(&program, table.data(), count, &ctx, time_steps, &field, &op_index), QLSTM_OK);
  EXPECT_EQ(field, nullptr);
  EXPECT_EQ(op_index, -1);
  ASSERT_EQ(run(own, table.data(), count), QLSTM_OK);
  EXPECT_EQ(own.output, every.output) << "the program's own kinds write other output bytes than qlstm_program_run";
  EXPECT_EQ(own.hidden, every.hidden);
  EXPECT_EQ(own.cell, every.cell);
  // Each of its kinds left out of the table: refused, naming the first op of that kind, before any op runs.
  for (size_t left_out = 0; left_out < kinds.size(); ++left_out) {
    std::vector<int32_t> fewer = kinds;
    fewer.erase(fewer.begin() + static_cast<std::ptrdiff_t>(left_out));
    const std::vector<const qlstm_op_handler*> partial = handlers_of(fewer);
    const int32_t n = static_cast<int32_t>(partial.size());
    int32_t first = 0;
    while (program.ops[first].kind != kinds[left_out]) ++first;
    const std::string what = "kind " + std::to_string(kinds[left_out]) + " left out";
    EXPECT_EQ(qlstm_program_validate_kinds(&program, partial.data(), n, &ctx, time_steps, &field, &op_index),
              QLSTM_ERROR_UNSUPPORTED)
        << what;
    EXPECT_STREQ(field, "kind") << what;
    EXPECT_EQ(op_index, first) << what;
    KindsCall refused = every;
    refused.output.assign(refused.output.size(), 0x5A5A);
    EXPECT_EQ(run(refused, partial.data(), n), QLSTM_ERROR_UNSUPPORTED) << what;
    EXPECT_TRUE(std::all_of(refused.output.begin(), refused.output.end(), [](int16_t v) { return v == 0x5A5A; }))
        << what << ": an op ran";
    EXPECT_EQ(refused.hidden, every.hidden) << what;
    EXPECT_EQ(refused.cell, every.cell) << what;
  }
}

}  // namespace testing_support

#endif  // QLSTM_TESTS_PROGRAM_KINDS_H_
