// The embedding op (embedding_s8.h): each id's table row, exactly; its validation naming each
// field; an id outside the table refused before anything is written. In a program: an int32 input
// buffer of token ids, the op first, its buffers' types and widths checked, a bad id stopping the
// call with the output untouched.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "qlstm/embedding_s8.h"
#include "qlstm/program_s8.h"

namespace {

constexpr int32_t kRows = 11, kWidth = 5;
constexpr int8_t kUntouched = 0x5A;

std::vector<int8_t> random_table(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> d(-128, 127);
  std::vector<int8_t> t(static_cast<size_t>(kRows) * kWidth);
  for (int8_t& v : t) v = static_cast<int8_t>(d(rng));
  return t;
}

TEST(Embedding, CopiesEachIdsRow) {
  std::mt19937_64 rng(3);
  const std::vector<int8_t> table = random_table(rng);
  const std::vector<int32_t> ids = {0, 10, 3, 3, 7, 0, 9};
  const qlstm_embedding_s8_params p = {static_cast<int32_t>(ids.size()), kRows, kWidth, table.data()};
  std::vector<int8_t> out(ids.size() * kWidth, kUntouched);
  ASSERT_EQ(qlstm_embedding_s8(&p, ids.data(), out.data()), QLSTM_OK);
  for (size_t r = 0; r < ids.size(); ++r) {
    for (int32_t e = 0; e < kWidth; ++e) {
      EXPECT_EQ(out[r * kWidth + static_cast<size_t>(e)], table[static_cast<size_t>(ids[r]) * kWidth + static_cast<size_t>(e)])
          << "row " << r << " element " << e;
    }
  }
}

TEST(Embedding, AnIdOutsideTheTableIsRefusedBeforeAnyRowIsWritten) {
  std::mt19937_64 rng(4);
  const std::vector<int8_t> table = random_table(rng);
  for (const int32_t bad : {-1, kRows, INT32_MIN, INT32_MAX}) {
    const std::vector<int32_t> ids = {1, 2, bad, 4};  // the good ids before it are not written either
    const qlstm_embedding_s8_params p = {4, kRows, kWidth, table.data()};
    std::vector<int8_t> out(4 * kWidth, kUntouched);
    EXPECT_EQ(qlstm_embedding_s8(&p, ids.data(), out.data()), QLSTM_ERROR_BAD_INDEX) << bad;
    for (int8_t v : out) EXPECT_EQ(v, kUntouched) << bad;
  }
}

TEST(Embedding, ValidationNamesTheField) {
  const int8_t table[kRows * kWidth] = {};
  struct Case {
    void (*change)(qlstm_embedding_s8_params& p);
    qlstm_status status;
    const char* field;
  };
  const Case cases[] = {
      {[](qlstm_embedding_s8_params& p) { p.rows = -1; }, QLSTM_ERROR_BAD_DIMS, "rows"},
      {[](qlstm_embedding_s8_params& p) { p.table_rows = 0; }, QLSTM_ERROR_BAD_DIMS, "table_rows"},
      {[](qlstm_embedding_s8_params& p) { p.row_size = 0; }, QLSTM_ERROR_BAD_DIMS, "row_size"},
      {[](qlstm_embedding_s8_params& p) { p.table_rows = 1 << 20; p.row_size = 1 << 12; }, QLSTM_ERROR_BAD_DIMS,
       "table_rows"},
      {[](qlstm_embedding_s8_params& p) { p.rows = 1 << 29; }, QLSTM_ERROR_BAD_DIMS, "rows"},
      {[](qlstm_embedding_s8_params& p) { p.table = nullptr; }, QLSTM_ERROR_NULL_POINTER, "table"},
  };
  for (const Case& c : cases) {
    qlstm_embedding_s8_params p = {3, kRows, kWidth, table};
    c.change(p);
    const char* field = nullptr;
    EXPECT_EQ(qlstm_embedding_s8_validate(&p, &field), c.status) << c.field;
    EXPECT_STREQ(field, c.field);
  }
  const char* field = nullptr;
  EXPECT_EQ(qlstm_embedding_s8_validate(nullptr, &field), QLSTM_ERROR_NULL_POINTER);
  EXPECT_STREQ(field, "params");
  const qlstm_embedding_s8_params p = {3, kRows, kWidth, table};
  int8_t out[3 * kWidth];
  EXPECT_EQ(qlstm_embedding_s8(&p, nullptr, out), QLSTM_ERROR_NULL_POINTER);
  const int32_t ids[3] = {0, 1, 2};
  EXPECT_EQ(qlstm_embedding_s8(&p, ids, nullptr), QLSTM_ERROR_NULL_POINTER);
}

// ids [B][T] (int32, buffer 0) -> embedding -> a table op (negation) -> the output [B][T][E].
struct IdProgram {
  static constexpr int32_t B = 2, T = 3;
  std::vector<int8_t> table, negate;
  qlstm_embedding_s8_params embedding{};
  qlstm_table_s8_params lookup{};
  qlstm_op ops[2] = {};
  int32_t widths[3] = {1, kWidth, kWidth};
  int32_t steps[3] = {QLSTM_BUFFER_EVERY_STEP, QLSTM_BUFFER_EVERY_STEP, QLSTM_BUFFER_EVERY_STEP};
  int32_t types[3] = {QLSTM_ELEMENT_S32, QLSTM_ELEMENT_S8, QLSTM_ELEMENT_S8};
  qlstm_program program{};
  std::vector<int8_t> area = std::vector<int8_t>(static_cast<size_t>(B) * T * kWidth);
  qlstm_program_context ctx{};

  explicit IdProgram(std::mt19937_64& rng) : table(random_table(rng)), negate(QLSTM_TABLE_S8_ENTRIES) {
    for (int32_t x = -128; x <= 127; ++x) negate[static_cast<size_t>(x + 128)] = static_cast<int8_t>(x == -128 ? 127 : -x);
    embedding = {0, kRows, kWidth, table.data()};
    lookup = {0, kWidth, negate.data()};
    ops[0] = {QLSTM_OP_EMBEDDING_S8, &embedding, 0, 1, 0, 0, 0};
    ops[1] = {QLSTM_OP_TABLE_S8, &lookup, 1, 2, 0, 0, 0};
    program = {ops, 2, 3, widths, 0, steps, B, QLSTM_LAYOUT_BATCH_MAJOR, types};
    ctx.activations[0] = area.data();
    ctx.activation_bytes = area.size();
  }
  qlstm_status validate(const char** field, int32_t* op) const {
    return qlstm_program_validate(&program, &ctx, T, field, op);
  }
};

TEST(EmbeddingProgram, RunsOnTokenIdsAndABadIdLeavesTheOutputUntouched) {
  std::mt19937_64 rng(5);
  IdProgram p(rng);
  const std::vector<int32_t> ids = {4, 0, 10, 2, 2, 9};
  std::vector<int8_t> y(ids.size() * kWidth, kUntouched);
  ASSERT_EQ(qlstm_program_run(&p.program, &p.ctx, ids.data(), y.data(), IdProgram::T, nullptr, nullptr), QLSTM_OK);
  for (size_t r = 0; r < ids.size(); ++r) {
    for (size_t e = 0; e < kWidth; ++e) {
      const int8_t v = p.table[static_cast<size_t>(ids[r]) * kWidth + e];
      EXPECT_EQ(y[r * kWidth + e], v == -128 ? 127 : -v);
    }
  }
  std::vector<int32_t> bad = ids;
  bad[4] = kRows;
  std::fill(y.begin(), y.end(), kUntouched);
  EXPECT_EQ(qlstm_program_run(&p.program, &p.ctx, bad.data(), y.data(), IdProgram::T, nullptr, nullptr),
            QLSTM_ERROR_BAD_INDEX);
  for (int8_t v : y) EXPECT_EQ(v, kUntouched);
}

TEST(EmbeddingProgram, ItsBuffersAndPlaceAreChecked) {
  struct Case {
    const char* what;
    void (*change)(IdProgram& p);
    qlstm_status status;
    const char* field;
    int32_t op;
  };
  const Case cases[] = {
      {"int8 ids", [](IdProgram& p) { p.types[0] = QLSTM_ELEMENT_S8; }, QLSTM_ERROR_BAD_ELEMENT_TYPE, "input_buffer", 0},
      {"int32 rows out", [](IdProgram& p) { p.types[1] = QLSTM_ELEMENT_S32; }, QLSTM_ERROR_BAD_ELEMENT_TYPE,
       "output_buffer", 0},
      {"two values per position", [](IdProgram& p) { p.widths[0] = 2; }, QLSTM_ERROR_BAD_PROGRAM, "input_buffer", 0},
      {"a row of another width", [](IdProgram& p) { p.embedding.row_size = kWidth - 1; }, QLSTM_ERROR_BAD_PROGRAM,
       "row_size", 0},
      {"an empty table", [](IdProgram& p) { p.embedding.table_rows = 0; }, QLSTM_ERROR_BAD_DIMS, "table_rows", 0},
      {"no table", [](IdProgram& p) { p.embedding.table = nullptr; }, QLSTM_ERROR_NULL_POINTER, "table", 0},
      {"an output offset", [](IdProgram& p) { p.ops[0].output_offset = 1; }, QLSTM_ERROR_BAD_PROGRAM, "output_offset", 0},
  };
  for (const Case& c : cases) {
    std::mt19937_64 rng(6);
    IdProgram p(rng);
    c.change(p);
    const char* field = nullptr;
    int32_t op = -2;
    EXPECT_EQ(p.validate(&field, &op), c.status) << c.what;
    EXPECT_STREQ(field, c.field) << c.what;
    EXPECT_EQ(op, c.op) << c.what;
  }
  // Not the first op (two lookups of the same ids): a bad id would stop the call after another op
  // had written.
  std::mt19937_64 rng(7);
  IdProgram p(rng);
  p.ops[1] = {QLSTM_OP_EMBEDDING_S8, &p.embedding, 0, 2, 0, 0, 0};
  const char* field = nullptr;
  int32_t op = -2;
  EXPECT_EQ(p.validate(&field, &op), QLSTM_ERROR_BAD_PROGRAM);
  EXPECT_STREQ(field, "kind");
  EXPECT_EQ(op, 1);
  p.ops[1] = {QLSTM_OP_TABLE_S8, &p.lookup, 1, 2, 0, 0, 0};
  EXPECT_EQ(p.validate(&field, &op), QLSTM_OK);
}

}  // namespace
