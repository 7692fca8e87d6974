// The program runner with the kinds around the LSTM: hand-built mixed programs (LSTM -> select ->
// FC -> softmax; LSTM final state -> FC -> table; a front FC -> LSTM -> per-step FC) equal the
// ops called one by one, in both layouts, stateless and stateful, with every FC variant; and
// every rule of the validation for the new kinds and one-step buffers refuses, naming the field
// and the op, before any op runs.
#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "qlstm/kernels.h"
#include "hand_programs.h"
#include "program_ops.h"
#include "random_lstm.h"
#include "scratch_buffer.h"

namespace {

using namespace testing_support::hand;  // NOLINT: the programs and their sizes
using testing_support::lstm_op;
using testing_support::make_random_lstm;
using testing_support::program_op;
using testing_support::refusal;
using testing_support::verdict;
using testing_support::RandomLstm;
using testing_support::Regime;
using testing_support::ScratchBuffer;

// The LSTM alone, as qlstm_lstm_s8 runs it; stateful when hidden is not null.
std::vector<int8_t> lstm_alone(const qlstm_lstm_s8_params& params, int32_t T, const std::vector<int8_t>& x,
                               int8_t* hidden, int16_t* cell) {
  qlstm_lstm_s8_params p = params;
  p.dims.time_steps = T;
  ScratchBuffer scratch(p.dims);
  std::vector<int16_t> own_cell(static_cast<size_t>(p.dims.batch * p.dims.hidden_size));
  qlstm_lstm_s8_context c = scratch.context(hidden ? cell : own_cell.data(), hidden);
  const size_t positions = static_cast<size_t>(p.dims.batch) * (p.output_steps == QLSTM_OUTPUT_FINAL ? 1 : T);
  std::vector<int8_t> y(positions * static_cast<size_t>(p.dims.hidden_size));
  EXPECT_EQ(qlstm_lstm_s8(&p, &c, x.data(), y.data()), QLSTM_OK);
  return y;
}
std::vector<int8_t> softmax_alone(const qlstm_softmax_s8_params& params, const std::vector<int8_t>& x) {
  qlstm_softmax_s8_params p = params;
  p.rows = static_cast<int32_t>(x.size()) / p.row_size;
  std::vector<int8_t> y(x.size());
  EXPECT_EQ(qlstm_softmax_s8(&p, x.data(), y.data()), QLSTM_OK);
  return y;
}
std::vector<int8_t> log_softmax_alone(const qlstm_log_softmax_s8_params& params, const std::vector<int8_t>& x) {
  qlstm_log_softmax_s8_params p = params;
  p.rows = static_cast<int32_t>(x.size()) / p.row_size;
  std::vector<int8_t> y(x.size());
  EXPECT_EQ(qlstm_log_softmax_s8(&p, x.data(), y.data()), QLSTM_OK);
  return y;
}
std::vector<int8_t> table_alone(const qlstm_table_s8_params& params, const std::vector<int8_t>& x) {
  qlstm_table_s8_params p = params;
  p.rows = static_cast<int32_t>(x.size()) / p.row_size;
  std::vector<int8_t> y(x.size());
  EXPECT_EQ(qlstm_table_s8(&p, x.data(), y.data()), QLSTM_OK);
  return y;
}
// Step `step` (< 0: from the end) of every batch row of a [B][T][W] or [T][B][W] sequence.
std::vector<int8_t> select_alone(const std::vector<int8_t>& y, int32_t B, int32_t T, int32_t W, int32_t step,
                                 bool time_major) {
  const int32_t t = step < 0 ? T + step : step;
  std::vector<int8_t> out;
  for (int32_t b = 0; b < B; ++b) {
    const int32_t pos = time_major ? t * B + b : b * T + t;
    out.insert(out.end(), y.begin() + pos * W, y.begin() + (pos + 1) * W);
  }
  return out;
}

TEST(ProgramRunner, ClassifierOnASelectedStepEqualsTheOpsOneByOne) {
  for (const bool time_major : {false, true}) {
    for (const int32_t step : {-1, -T, 0, 2, T - 1}) {
      std::mt19937_64 rng(100 + static_cast<unsigned>(step + 10 * time_major));
      Built b;
      build_classifier(b, time_major, step, rng);
      const std::vector<int8_t> x = random_s8(static_cast<size_t>(B * T * I), rng);
      std::vector<int8_t> y(b.output_size(), 0x5A);
      ASSERT_EQ(qlstm_program_run(&b.program, &b.ctx, x.data(), y.data(), T, nullptr, nullptr), QLSTM_OK);
      const std::vector<int8_t> seq = lstm_alone(b.lstms[0].params, T, x, nullptr, nullptr);
      const std::vector<int8_t> expected =
          softmax_alone(block<qlstm_softmax_s8_params>(b.ops[3]), fc_alone(b.fcs[0].params, select_alone(seq, B, T, H, step, time_major)));
      EXPECT_EQ(y, expected) << (time_major ? "time-major" : "batch-major") << " step " << step;
      EXPECT_EQ(y.size(), static_cast<size_t>(B * O));
    }
  }
}

// A classifier on K consecutive steps (y[:, t0:t0 + K] then a Linear and a softmax on each): the
// selection copies the steps in the sequence's order and the FC and the softmax run on each
// selected step's row, as K selections of one step would.
TEST(ProgramRunner, ClassifierOnSeveralStepsEqualsOneStepAtATime) {
  for (const bool time_major : {false, true}) {
    for (const auto& [step, K] : {std::pair{-3, 3}, std::pair{-T, T}, std::pair{1, 2}, std::pair{0, T}}) {
      std::mt19937_64 rng(300 + static_cast<unsigned>(step + 10 * K + 100 * time_major));
      Built b;
      build_classifier(b, time_major, step, rng);
      block<qlstm_select_step_params>(b.ops[1]).step_count = K;
      b.widths = {I, H, K * H, K * O, K * O};
      b.finish();
      ASSERT_EQ(verdict(&b.program, &b.ctx, T), "ok");
      const std::vector<int8_t> x = random_s8(static_cast<size_t>(B * T * I), rng);
      std::vector<int8_t> y(static_cast<size_t>(B * K * O), 0x5A);
      ASSERT_EQ(qlstm_program_run(&b.program, &b.ctx, x.data(), y.data(), T, nullptr, nullptr), QLSTM_OK);
      const std::vector<int8_t> seq = lstm_alone(b.lstms[0].params, T, x, nullptr, nullptr);
      const int32_t t0 = step < 0 ? T + step : step;
      std::vector<std::vector<int8_t>> per_step;  // [j][B][O]
      for (int32_t j = 0; j < K; ++j) {
        per_step.push_back(softmax_alone(block<qlstm_softmax_s8_params>(b.ops[3]),
                                         fc_alone(b.fcs[0].params, select_alone(seq, B, T, H, t0 + j, time_major))));
      }
      std::vector<int8_t> expected;  // batch-major [B][K][O], time-major [K][B][O]
      for (int32_t outer = 0; outer < (time_major ? K : B); ++outer) {
        for (int32_t inner = 0; inner < (time_major ? B : K); ++inner) {
          const std::vector<int8_t>& rows = per_step[static_cast<size_t>(time_major ? outer : inner)];
          const int32_t b_row = time_major ? inner : outer;
          expected.insert(expected.end(), rows.begin() + b_row * O, rows.begin() + (b_row + 1) * O);
        }
      }
      EXPECT_EQ(y, expected) << (time_major ? "time-major" : "batch-major") << " step " << step << " K " << K;
    }
  }
}

TEST(ProgramRunner, LogSoftmaxClassifierEqualsTheOpsOneByOne) {
  for (const bool time_major : {false, true}) {
    std::mt19937_64 rng(150 + static_cast<unsigned>(time_major));
    Built b;
    build_classifier(b, time_major, -1, rng, true);
    const std::vector<int8_t> x = random_s8(static_cast<size_t>(B * T * I), rng);
    std::vector<int8_t> y(b.output_size(), 0x5A);
    ASSERT_EQ(qlstm_program_run(&b.program, &b.ctx, x.data(), y.data(), T, nullptr, nullptr), QLSTM_OK);
    const std::vector<int8_t> seq = lstm_alone(b.lstms[0].params, T, x, nullptr, nullptr);
    const std::vector<int8_t> expected = log_softmax_alone(block<qlstm_log_softmax_s8_params>(b.ops[3]),
                                                           fc_alone(b.fcs[0].params, select_alone(seq, B, T, H, -1, time_major)));
    EXPECT_EQ(y, expected) << (time_major ? "time-major" : "batch-major");
  }
}

// y1 + lstm(y1) (and y1 * lstm(y1)): the elementwise op reads the front FC's buffer and the LSTM's.
TEST(ProgramRunner, ResidualAddAndMultiplyEqualTheOpsOneByOne) {
  for (const bool time_major : {false, true}) {
    for (const bool multiply : {false, true}) {
      std::mt19937_64 rng(170 + 2 * static_cast<unsigned>(time_major) + static_cast<unsigned>(multiply));
      Built b;
      build_residual(b, time_major, multiply, rng);
      const std::vector<int8_t> x = random_s8(static_cast<size_t>(B * T * I), rng);
      std::vector<int8_t> y(b.output_size(), 0x5A);
      ASSERT_EQ(qlstm_program_run(&b.program, &b.ctx, x.data(), y.data(), T, nullptr, nullptr), QLSTM_OK);
      const std::vector<int8_t> y1 = fc_alone(b.fcs[0].params, x);
      const std::vector<int8_t> y2 = lstm_alone(b.lstms[0].params, T, y1, nullptr, nullptr);
      std::vector<int8_t> expected(y1.size());
      if (multiply) {
        qlstm_mul_s8_params p = block<qlstm_mul_s8_params>(b.ops[2]);
        p.shape.rows = B * T;
        ASSERT_EQ(qlstm_mul_s8(&p, y1.data(), y2.data(), expected.data()), QLSTM_OK);
      } else {
        qlstm_add_s8_params p = block<qlstm_add_s8_params>(b.ops[2]);
        p.shape.rows = B * T;
        ASSERT_EQ(qlstm_add_s8(&p, y1.data(), y2.data(), expected.data()), QLSTM_OK);
      }
      EXPECT_EQ(y, expected) << (time_major ? "time-major" : "batch-major") << (multiply ? " multiply" : " add");
    }
  }
}

// The residual sum written in place over y1 (the area that held it), then an FC head on it.
TEST(ProgramRunner, ElementwiseOpWritesInPlaceOverAWholeOperand) {
  for (const bool time_major : {false, true}) {
    std::mt19937_64 rng(175 + static_cast<unsigned>(time_major));
    Built b;
    build_residual(b, time_major, false, rng, true);
    ASSERT_EQ(b.ops[2].output_buffer, 3);
    ASSERT_EQ((3 - 1) % 2, (1 - 1) % 2) << "the sum shares y1's area";
    const std::vector<int8_t> x = random_s8(static_cast<size_t>(B * T * I), rng);
    std::vector<int8_t> y(b.output_size(), 0x5A);
    ASSERT_EQ(qlstm_program_run(&b.program, &b.ctx, x.data(), y.data(), T, nullptr, nullptr), QLSTM_OK);
    const std::vector<int8_t> y1 = fc_alone(b.fcs[0].params, x);
    const std::vector<int8_t> y2 = lstm_alone(b.lstms[0].params, T, y1, nullptr, nullptr);
    qlstm_add_s8_params p = block<qlstm_add_s8_params>(b.ops[2]);
    p.shape.rows = B * T;
    std::vector<int8_t> sum(y1.size());
    ASSERT_EQ(qlstm_add_s8(&p, y1.data(), y2.data(), sum.data()), QLSTM_OK);
    EXPECT_EQ(y, fc_alone(b.fcs[1].params, sum)) << (time_major ? "time-major" : "batch-major");
  }
  // Not over an operand of another width: [x | x'] (2H) in area 0, an FC's H in area 1, their
  // add into area 0 would write H-wide rows over 2H-wide ones still being read.
  std::mt19937_64 rng(177);
  Fc wide, narrow, head;
  make_fc(wide, I, 2 * H, true, false, rng);
  make_fc(narrow, I, H, true, false, rng);
  make_fc(head, H, O, true, false, rng);
  qlstm_op ops[4] = {fc_op(wide.params, 0, 1), fc_op(narrow.params, 0, 2), program_op(QLSTM_OP_ADD_S8, 1, 3),
                     fc_op(head.params, 3, 4)};
  set_block(ops[2], random_add(H, rng));
  ops[2].second_input_buffer = 2;
  const int32_t widths[] = {I, 2 * H, H, H, O}, steps[] = {kEvery, kEvery, kEvery, kEvery, kEvery};
  const qlstm_program program = {ops, 4, 5, widths, 0, steps, B, QLSTM_LAYOUT_BATCH_MAJOR, nullptr};
  EXPECT_EQ(verdict(&program, nullptr, T), refusal(QLSTM_ERROR_BAD_PROGRAM, "output_buffer", 2));
}

// An elementwise op on slices of its buffers' rows: the program's input [x1 | x2] (each of width
// H), the add of its second half and its first, as the kernel computes it on the halves.
TEST(ProgramRunner, ElementwiseOpOnSlicesOfOneBuffer) {
  std::mt19937_64 rng(180);
  qlstm_add_s8_params add = random_add(H, rng);
  add.shape.input1_offset = H;
  qlstm_op op = program_op(QLSTM_OP_ADD_S8, 0, 1);
  set_block(op, add);
  const int32_t widths[] = {2 * H, H}, steps[] = {kEvery, kEvery};
  const qlstm_program program = {&op, 1, 2, widths, 0, steps, B, QLSTM_LAYOUT_BATCH_MAJOR, nullptr};
  qlstm_program_context ctx = {nullptr, 0, nullptr, {nullptr, nullptr}, 0};
  const std::vector<int8_t> x = random_s8(static_cast<size_t>(B * T * 2 * H), rng);
  std::vector<int8_t> y(static_cast<size_t>(B * T * H)), first, second;
  for (size_t pos = 0; pos < static_cast<size_t>(B * T); ++pos) {
    first.insert(first.end(), x.begin() + static_cast<ptrdiff_t>(pos * 2 * H), x.begin() + static_cast<ptrdiff_t>(pos * 2 * H + H));
    second.insert(second.end(), x.begin() + static_cast<ptrdiff_t>(pos * 2 * H + H),
                  x.begin() + static_cast<ptrdiff_t>((pos + 1) * 2 * H));
  }
  ASSERT_EQ(qlstm_program_run(&program, &ctx, x.data(), y.data(), T, nullptr, nullptr), QLSTM_OK);
  qlstm_add_s8_params whole = add;
  whole.shape.rows = B * T;
  std::vector<int8_t> expected(y.size());
  ASSERT_EQ(qlstm_add_s8(&whole, second.data(), first.data(), expected.data()), QLSTM_OK);
  EXPECT_EQ(y, expected);
}

TEST(ProgramRunner, FinalStateHeadEqualsTheOpsOneByOneAndCarriesState) {
  for (const bool time_major : {false, true}) {
    std::mt19937_64 rng(200 + static_cast<unsigned>(time_major));
    Built b;
    build_final_head(b, time_major, rng);
    const qlstm_lstm_s8_params& lp = b.lstms[0].params;
    // Two chunks on a carried state, as a stream runs; the state must continue one sequence.
    std::vector<int8_t> hidden(b.state_values), model_hidden(b.state_values);
    std::vector<int16_t> cell(b.state_values), model_cell(b.state_values);
    for (size_t k = 0; k < hidden.size(); ++k) hidden[k] = model_hidden[k] = static_cast<int8_t>(lp.output_zero_point);
    for (const int32_t t : {T, 2, 0}) {
      const std::vector<int8_t> x = random_s8(static_cast<size_t>(B * t * I), rng);
      std::vector<int8_t> y(static_cast<size_t>(B * O), 0x5A);
      ASSERT_EQ(qlstm_program_run(&b.program, &b.ctx, x.data(), y.data(), t, hidden.data(), cell.data()), QLSTM_OK);
      const std::vector<int8_t> h = lstm_alone(lp, t, x, model_hidden.data(), model_cell.data());
      EXPECT_EQ(y, table_alone(b.tables[0].params, fc_alone(b.fcs[0].params, h))) << "T=" << t;
      EXPECT_EQ(hidden, model_hidden);
      EXPECT_EQ(cell, model_cell);
    }
    // Stateless with no steps: the head of h = zero point (input and output buffers of T = 0).
    std::vector<int8_t> y(static_cast<size_t>(B * O), 0x5A);
    ASSERT_EQ(qlstm_program_run(&b.program, &b.ctx, nullptr, y.data(), 0, nullptr, nullptr), QLSTM_OK);
    const std::vector<int8_t> zp(static_cast<size_t>(B * H), static_cast<int8_t>(lp.output_zero_point));
    EXPECT_EQ(y, table_alone(b.tables[0].params, fc_alone(b.fcs[0].params, zp)));
    EXPECT_EQ(qlstm_program_run(&b.program, &b.ctx, nullptr, nullptr, 0, nullptr, nullptr), QLSTM_ERROR_NULL_POINTER);
  }
}

TEST(ProgramRunner, FrontFcThenLstmThenPerStepFcWithEveryFcVariant) {
  size_t n = 0;
  const qlstm::FcS8Variant* const* variants = qlstm::fc_s8_variants(&n);
  for (const bool time_major : {false, true}) {
    std::mt19937_64 rng(300 + static_cast<unsigned>(time_major));
    Built b;
    build_front(b, time_major, rng);
    const std::vector<int8_t> x = random_s8(static_cast<size_t>(B * T * I), rng);
    const std::vector<int8_t> expected =
        fc_alone(b.fcs[1].params, lstm_alone(b.lstms[0].params, T, fc_alone(b.fcs[0].params, x), nullptr, nullptr));
    for (size_t k = 0; k < n; ++k) {
      const qlstm::FcS8Variant& v = *variants[k];
      if (v.is_supported != nullptr && !v.is_supported()) {
        std::printf("FC variant %s: not supported on this CPU, skipped\n", v.name);
        continue;
      }
      qlstm::ProgramRunOptions options;
      options.fc_variant = &v;
      std::vector<int8_t> y(b.output_size(), 0x5A);
      const qlstm_status st = qlstm::run_program_s8(&b.program, &b.ctx, x.data(), y.data(), T, nullptr, nullptr, options);
      if (v.can_run != nullptr && (!v.can_run(b.fcs[0].params) || !v.can_run(b.fcs[1].params))) {
        EXPECT_EQ(st, QLSTM_ERROR_NO_VARIANT) << v.name;
        continue;
      }
      ASSERT_EQ(st, QLSTM_OK) << v.name;
      EXPECT_EQ(y, expected) << v.name << (time_major ? " time-major" : " batch-major");
    }
    std::vector<int8_t> y(b.output_size(), 0x5A);
    ASSERT_EQ(qlstm_program_run(&b.program, &b.ctx, x.data(), y.data(), T, nullptr, nullptr), QLSTM_OK);
    EXPECT_EQ(y, expected);
  }
}

// LSTM -> mean or max over time -> FC, each pooling variant this CPU supports against the
// reference's run of the same program (the pooling op's window set per call from T and the layout).
TEST(ProgramRunner, PooledOverTimeWithEveryPoolVariant) {
  size_t n = 0;
  const qlstm::PoolS8Variant* const* variants = qlstm::pool_s8_variants(&n);
  for (const bool time_major : {false, true}) {
    for (const int32_t kind : {QLSTM_POOL_MAX, QLSTM_POOL_AVERAGE}) {
      std::mt19937_64 rng(500 + static_cast<unsigned>(time_major) * 2 + static_cast<unsigned>(kind));
      Built b;
      build_pooled(b, time_major, kind, rng);
      const std::vector<int8_t> x = random_s8(static_cast<size_t>(B * T * I), rng);
      qlstm::ProgramRunOptions reference;
      reference.pool_variant = &qlstm::kPoolS8ReferenceVariant;
      std::vector<int8_t> want(b.output_size(), 0x5A);
      ASSERT_EQ(qlstm::run_program_s8(&b.program, &b.ctx, x.data(), want.data(), T, nullptr, nullptr, reference),
                QLSTM_OK);
      for (size_t k = 0; k < n; ++k) {
        const qlstm::PoolS8Variant& v = *variants[k];
        if (v.is_supported != nullptr && !v.is_supported()) {
          std::printf("pooling variant %s: not supported on this CPU, skipped\n", v.name);
          continue;
        }
        qlstm::ProgramRunOptions options;
        options.pool_variant = &v;
        std::vector<int8_t> y(b.output_size(), 0x5A);
        ASSERT_EQ(qlstm::run_program_s8(&b.program, &b.ctx, x.data(), y.data(), T, nullptr, nullptr, options), QLSTM_OK)
            << v.name;
        EXPECT_EQ(y, want) << v.name << (time_major ? " time-major" : " batch-major") << " kind " << kind;
      }
    }
  }
}

// LSTM (every step) -> the poolings of `kinds` over time side by side, [B][parts x H]: one pooling op
// per part, each at its output offset in one buffer (torch.cat((y.mean(1), y.max(1).values), 1)).
void build_pool_parts(Built& b, bool time_major, const std::vector<int32_t>& kinds, std::mt19937_64& rng) {
  begin_with_lstm(b, time_major, rng);
  const int32_t parts = static_cast<int32_t>(kinds.size());
  b.widths = {I, H, H * parts};
  b.steps = {kEvery, kEvery, kOne};
  b.ops.push_back(lstm_op(b.lstms[0].params, 0, 1, 0));
  for (int32_t k = 0; k < parts; ++k) {
    qlstm_pool_s8_params pool{};
    pool.kind = kinds[static_cast<size_t>(k)];
    pool.channels = H;
    pool.activation_min = -128;
    pool.activation_max = 127;
    add_op(b, QLSTM_OP_POOL_S8, 1, 2, pool);
    b.ops.back().output_offset = k * H;
  }
  b.state_values = static_cast<size_t>(B * H);
  b.finish();
}

// The mean and the max side by side in one row are each alone, byte for byte, with every pooling
// variant; time-major (a row's steps not one block) and an offset past the row are refused.
TEST(ProgramRunner, PoolingsWriteTheirPartsOfOneRow) {
  size_t n = 0;
  const qlstm::PoolS8Variant* const* variants = qlstm::pool_s8_variants(&n);
  const std::vector<int32_t> both = {QLSTM_POOL_AVERAGE, QLSTM_POOL_MAX};
  auto run = [&](const std::vector<int32_t>& kinds, const qlstm::PoolS8Variant* v) {
    std::mt19937_64 rng(610);  // the same LSTM every time
    Built b;
    build_pool_parts(b, false, kinds, rng);
    const std::vector<int8_t> x = random_s8(static_cast<size_t>(B * T * I), rng);
    qlstm::ProgramRunOptions options;
    options.pool_variant = v;
    std::vector<int8_t> y(static_cast<size_t>(B * H) * kinds.size(), 0x5A);
    EXPECT_EQ(qlstm::run_program_s8(&b.program, &b.ctx, x.data(), y.data(), T, nullptr, nullptr, options), QLSTM_OK);
    return y;
  };
  for (size_t k = 0; k < n; ++k) {
    const qlstm::PoolS8Variant* v = variants[k];
    if (v->is_supported != nullptr && !v->is_supported()) continue;
    const std::vector<int8_t> mean = run({QLSTM_POOL_AVERAGE}, v), max = run({QLSTM_POOL_MAX}, v), cat = run(both, v);
    for (int32_t b = 0; b < B; ++b) {
      const auto row = cat.begin() + static_cast<ptrdiff_t>(b) * 2 * H;
      EXPECT_TRUE(std::equal(row, row + H, mean.begin() + static_cast<ptrdiff_t>(b) * H)) << v->name << " row " << b;
      EXPECT_TRUE(std::equal(row + H, row + 2 * H, max.begin() + static_cast<ptrdiff_t>(b) * H)) << v->name << " row " << b;
    }
  }
  std::mt19937_64 rng(611);
  Built tm;
  build_pool_parts(tm, true, both, rng);
  EXPECT_EQ(verdict(&tm.program, &tm.ctx, T), refusal(QLSTM_ERROR_BAD_PROGRAM, "output_width", 1));
  Built past;
  build_pool_parts(past, false, both, rng);
  past.ops[2].output_offset = H + 1;
  EXPECT_EQ(verdict(&past.program, &past.ctx, T), refusal(QLSTM_ERROR_BAD_PROGRAM, "output_offset", 2));
}

// LSTM (every step) -> its first and its last step side by side, [B][2H]: two one-step
// selections writing their parts of one row (as torch.cat((y[:, 0], y.mean(1), y[:, -1]), 1) has them).
void build_step_parts(Built& b, bool time_major, std::mt19937_64& rng) {
  begin_with_lstm(b, time_major, rng);
  b.widths = {I, H, 2 * H};
  b.steps = {kEvery, kEvery, kOne};
  b.ops.push_back(lstm_op(b.lstms[0].params, 0, 1, 0));
  add_op(b, QLSTM_OP_SELECT_STEP, 1, 2, qlstm_select_step_params{0, H, 1});
  add_op(b, QLSTM_OP_SELECT_STEP, 1, 2, qlstm_select_step_params{-1, H, 1});
  b.ops.back().output_offset = H;
  b.state_values = static_cast<size_t>(B * H);
  b.finish();
}

// Each selected step lands in its part of its batch row's row, in both layouts: the LSTM's own
// sequence (run alone) at steps 0 and T - 1.
TEST(ProgramRunner, StepSelectionsWriteTheirPartsOfOneRow) {
  for (const bool time_major : {false, true}) {
    std::mt19937_64 rng(620);
    Built parts;
    build_step_parts(parts, time_major, rng);
    const std::vector<int8_t> x = random_s8(static_cast<size_t>(B * T * I), rng);
    std::vector<int8_t> y(static_cast<size_t>(B * 2 * H), 0x5A);
    ASSERT_EQ(qlstm_program_run(&parts.program, &parts.ctx, x.data(), y.data(), T, nullptr, nullptr), QLSTM_OK);
    // The sequence itself: the same LSTM alone, every step.
    qlstm_lstm_s8_params p = parts.lstms[0].params;
    p.dims.time_steps = T;
    std::vector<int8_t> seq(static_cast<size_t>(B * T * H));
    qlstm_lstm_s8_context ctx = {parts.ctx.scratch, parts.ctx.scratch_bytes, parts.cell.data(), nullptr};
    ASSERT_EQ(qlstm_lstm_s8(&p, &ctx, x.data(), seq.data()), QLSTM_OK);
    for (int32_t b = 0; b < B; ++b) {
      for (const int32_t t : {0, T - 1}) {
        const ptrdiff_t at = (time_major ? static_cast<ptrdiff_t>(t) * B + b : static_cast<ptrdiff_t>(b) * T + t) * H;
        const auto row = y.begin() + static_cast<ptrdiff_t>(b) * 2 * H + (t == 0 ? 0 : H);
        EXPECT_TRUE(std::equal(row, row + H, seq.begin() + at)) << (time_major ? "time-major" : "batch-major") << " b " << b
                                                                 << " t " << t;
      }
    }
  }
}

// A program without an LSTM needs no scratch and no cell.
TEST(ProgramRunner, FcOnlyProgramNeedsNoScratch) {
  std::mt19937_64 rng(400);
  Fc f;
  make_fc(f, I, O, true, false, rng);
  qlstm_op op = program_op(QLSTM_OP_FULLY_CONNECTED_S8, 0, 1);
  set_block(op, f.params);
  const int32_t widths[] = {I, O}, steps[] = {kEvery, kEvery};
  const qlstm_program program = {&op, 1, 2, widths, 0, steps, B, QLSTM_LAYOUT_BATCH_MAJOR, nullptr};
  qlstm_program_context ctx = {nullptr, 0, nullptr, {nullptr, nullptr}, 0};
  const std::vector<int8_t> x = random_s8(static_cast<size_t>(B * T * I), rng);
  std::vector<int8_t> y(static_cast<size_t>(B * T * O));
  ASSERT_EQ(qlstm_program_run(&program, &ctx, x.data(), y.data(), T, nullptr, nullptr), QLSTM_OK);
  EXPECT_EQ(y, fc_alone(f.params, x));
}

std::string bad(const char* field, int32_t op) { return refusal(QLSTM_ERROR_BAD_PROGRAM, field, op); }

struct Case {
  const char* what;
  void (*build)(Built&, bool, std::mt19937_64&);
  std::function<void(Built&)> mutate;
  std::string expected;
};

void classifier(Built& b, bool time_major, std::mt19937_64& rng) { build_classifier(b, time_major, -1, rng); }
void residual_add(Built& b, bool time_major, std::mt19937_64& rng) { build_residual(b, time_major, false, rng); }
void residual_mul(Built& b, bool time_major, std::mt19937_64& rng) { build_residual(b, time_major, true, rng); }

TEST(ProgramValidate, NamesEachRuleOfTheNewKindsAndOneStepBuffers) {
  const Case cases[] = {
      // The program's own fields.
      {"no buffer steps", classifier, [](Built& b) { b.program.buffer_steps = nullptr; },
       refusal(QLSTM_ERROR_NULL_POINTER, "buffer_steps", -1)},
      {"one-step input", classifier, [](Built& b) { b.steps[0] = kOne; }, bad("buffer_steps", -1)},
      {"unknown steps", classifier, [](Built& b) { b.steps[3] = 2; }, bad("buffer_steps", -1)},
      {"batch", classifier, [](Built& b) { b.program.batch = 0; }, refusal(QLSTM_ERROR_BAD_DIMS, "batch", -1)},
      {"layout", classifier, [](Built& b) { b.program.layout = 2; }, refusal(QLSTM_ERROR_BAD_LAYOUT, "layout", -1)},
      {"kind", classifier, [](Built& b) { b.ops[2].kind = QLSTM_OP_KIND_COUNT; }, bad("kind", 2)},
      // An op without its block: named, and it has neither state nor scratch.
      {"params", classifier,
       [](Built& b) {
         b.ops[0].params = nullptr;
         EXPECT_EQ(qlstm_op_state_size(&b.ops[0]), 0);
         EXPECT_EQ(qlstm_op_scratch_bytes(&b.ops[0]), 0u);
       },
       refusal(QLSTM_ERROR_NULL_POINTER, "params", 0)},
      // Steps of the buffers.
      {"LSTM reads one step", classifier, [](Built& b) { b.ops[2] = lstm_op(b.lstms[0].params, 2, 3, 0); },
       bad("input_buffer", 2)},
      {"LSTM every step into one step", classifier, [](Built& b) { b.steps[1] = kOne; }, bad("output_steps", 0)},
      {"LSTM final into a sequence", build_final_head,
       [](Built& b) { b.steps[1] = kEvery; b.steps[2] = kEvery; b.steps[3] = kEvery; }, bad("output_steps", 0)},
      {"select into a sequence", classifier, [](Built& b) { b.steps[2] = kEvery; }, bad("output_buffer", 1)},
      {"select from one step", build_final_head,
       [](Built& b) {
         b.ops[1] = program_op(QLSTM_OP_SELECT_STEP, 1, 2);
         set_block(b.ops[1], qlstm_select_step_params{0, H, 1});
         b.widths[2] = H;
       },
       bad("input_buffer", 1)},
      {"FC changes the steps", classifier, [](Built& b) { b.steps[3] = kEvery; }, bad("output_buffer", 2)},
      {"softmax changes the steps", classifier, [](Built& b) { b.steps[4] = kEvery; }, bad("output_buffer", 3)},
      {"table changes the steps", build_final_head, [](Built& b) { b.steps[3] = kEvery; }, bad("output_buffer", 2)},
      // Widths.
      {"FC input size", classifier, [](Built& b) { block<qlstm_fc_s8_params>(b.ops[2]).input_size = H + 1; }, bad("input_size", 2)},
      {"FC output size", classifier, [](Built& b) { b.widths[3] = O + 1; }, bad("output_size", 2)},
      {"softmax row size", classifier, [](Built& b) { block<qlstm_softmax_s8_params>(b.ops[3]).row_size = O - 1; }, bad("row_size", 3)},
      {"softmax output width", classifier, [](Built& b) { b.widths[4] = O + 2; }, bad("row_size", 3)},
      {"table row size", build_final_head, [](Built& b) { block<qlstm_table_s8_params>(b.ops[2]).row_size = O + 1; }, bad("row_size", 2)},
      {"select row size", classifier, [](Built& b) { block<qlstm_select_step_params>(b.ops[1]).row_size = H - 1; }, bad("row_size", 1)},
      // A one-step selection may write a part of a wider row (a concatenation's); the FC after it
      // then reads a row of another width.
      {"select output width", classifier, [](Built& b) { b.widths[2] = H + 1; }, bad("input_size", 2)},
      {"select of two steps into a part", classifier,
       [](Built& b) {
         block<qlstm_select_step_params>(b.ops[1]).step_count = 2;
         b.widths[2] = 3 * H;
       },
       bad("step_count", 1)},
      {"select part past its row", classifier, [](Built& b) { b.ops[1].output_offset = 1; }, bad("output_offset", 1)},
      {"select step_count", classifier, [](Built& b) { block<qlstm_select_step_params>(b.ops[1]).step_count = 0; }, bad("step_count", 1)},
      {"FC output offset", classifier, [](Built& b) { b.ops[2].output_offset = 1; }, bad("output_offset", 2)},
      {"LSTM final width", build_final_head, [](Built& b) { b.widths[1] = H - 1; }, bad("output_offset", 0)},
      // The step.
      {"step T", classifier, [](Built& b) { block<qlstm_select_step_params>(b.ops[1]).step = T; }, bad("step", 1)},
      {"step -T-1", classifier, [](Built& b) { block<qlstm_select_step_params>(b.ops[1]).step = -T - 1; }, bad("step", 1)},
      // State only for an LSTM.
      {"FC state offset", classifier, [](Built& b) { b.ops[2].state_offset = 1; }, bad("state_offset", 2)},
      // The kernels' own validation, named as they name it.
      {"FC shift", classifier, [](Built& b) { b.fcs[0].shifts[1] = 40; }, refusal(QLSTM_ERROR_BAD_SHIFT, "shifts", 2)},
      {"FC weights", classifier, [](Built& b) { block<qlstm_fc_s8_params>(b.ops[2]).weights = nullptr; },
       refusal(QLSTM_ERROR_NULL_POINTER, "weights", 2)},
      {"FC clamp", build_final_head, [](Built& b) { block<qlstm_fc_s8_params>(b.ops[1]).activation_max = -129; },
       refusal(QLSTM_ERROR_BAD_DIMS, "activation_max", 1)},
      {"softmax diff_min", classifier, [](Built& b) { block<qlstm_softmax_s8_params>(b.ops[3]).diff_min = 5; },
       refusal(QLSTM_ERROR_BAD_DIFF_MIN, "diff_min", 3)},
      {"softmax shift", classifier, [](Built& b) { block<qlstm_softmax_s8_params>(b.ops[3]).input_left_shift = -1; },
       refusal(QLSTM_ERROR_BAD_SHIFT, "input_left_shift", 3)},
      {"table entries", build_final_head, [](Built& b) { block<qlstm_table_s8_params>(b.ops[2]).table = nullptr; },
       refusal(QLSTM_ERROR_NULL_POINTER, "table", 2)},
      {"LSTM output steps", build_final_head, [](Built& b) { block<qlstm_lstm_s8_params>(b.ops[0]).output_steps = QLSTM_OUTPUT_ALL_STEPS; },
       bad("output_steps", 0)},
      {"LSTM batch", build_final_head, [](Built& b) { block<qlstm_lstm_s8_params>(b.ops[0]).dims.batch = B + 1; }, bad("dims.batch", 0)},
      {"LSTM layout", classifier,
       [](Built& b) { block<qlstm_lstm_s8_params>(b.ops[0]).layout = 1 - b.layout; }, bad("layout", 0)},
      // An elementwise op's second input: only of a kind that reads one, written, not in the area
      // the op writes, of the input's steps; each slice within its buffer's rows.
      {"second input of an FC", classifier, [](Built& b) { b.ops[2].second_input_buffer = 1; }, bad("second_input_buffer", 2)},
      {"second input past the buffers", residual_add, [](Built& b) { b.ops[2].second_input_buffer = 3; },
       bad("second_input_buffer", 2)},
      {"second input negative", residual_mul, [](Built& b) { b.ops[2].second_input_buffer = -1; },
       bad("second_input_buffer", 2)},
      {"second input not written", residual_add, [](Built& b) { b.ops[1].output_buffer = 3; },
       bad("second_input_buffer", 2)},
      {"second input one step", residual_mul,
       [](Built& b) { block<qlstm_lstm_s8_params>(b.ops[1]).output_steps = QLSTM_OUTPUT_FINAL; b.steps[2] = kOne; },
       bad("second_input_buffer", 2)},
      {"first slice", residual_add, [](Built& b) { block<qlstm_add_s8_params>(b.ops[2]).shape.input1_offset = 1; },
       bad("shape.input1_offset", 2)},
      {"second slice", residual_mul, [](Built& b) { block<qlstm_mul_s8_params>(b.ops[2]).shape.input2_offset = 1; },
       bad("shape.input2_offset", 2)},
      {"elementwise output width", residual_add, [](Built& b) { b.widths[3] = H + 1; }, bad("shape.row_size", 2)},
      {"add left shift", residual_add, [](Built& b) { block<qlstm_add_s8_params>(b.ops[2]).left_shift = 24; },
       refusal(QLSTM_ERROR_BAD_SHIFT, "left_shift", 2)},
      // The context: one-step buffers are B positions.
      {"one-step area", build_final_head, [](Built& b) { b.ctx.activation_bytes = B * H - 1; },
       refusal(QLSTM_ERROR_SCRATCH_TOO_SMALL, "activation_bytes", -1)},
      {"sequence area", build_front, [](Built& b) { b.ctx.activation_bytes -= 1; },
       refusal(QLSTM_ERROR_SCRATCH_TOO_SMALL, "activation_bytes", -1)},
      {"scratch", build_front, [](Built& b) { b.ctx.scratch = nullptr; }, refusal(QLSTM_ERROR_NULL_POINTER, "scratch", -1)},
  };
  for (const bool time_major : {false, true}) {
    for (const Case& c : cases) {
      std::mt19937_64 rng(9);
      Built good;
      c.build(good, time_major, rng);
      EXPECT_EQ(verdict(&good.program, &good.ctx, T), "ok") << c.what;
      rng.seed(9);
      Built b;
      c.build(b, time_major, rng);
      c.mutate(b);
      EXPECT_EQ(verdict(&b.program, &b.ctx, T), c.expected) << c.what;
      // The runner refuses it too, before any op: the output and the state stay untouched.
      const std::vector<int8_t> x(static_cast<size_t>(B * T * I), 3);
      std::vector<int8_t> y(static_cast<size_t>(B * T * 16), 0x55), hidden(b.state_values + 8, 0x66);
      std::vector<int16_t> cell(hidden.size(), 0x77);
      EXPECT_NE(qlstm_program_run(&b.program, &b.ctx, x.data(), y.data(), T, hidden.data(), cell.data()), QLSTM_OK)
          << c.what;
      EXPECT_EQ(y, std::vector<int8_t>(y.size(), 0x55)) << c.what;
      EXPECT_EQ(hidden, std::vector<int8_t>(hidden.size(), 0x66)) << c.what;
      EXPECT_EQ(cell, std::vector<int16_t>(cell.size(), 0x77)) << c.what;
    }
  }
}

// The step is checked against each call's T: -T ... T-1 run, a shorter call refuses the step.
TEST(ProgramValidate, SelectedStepIsCheckedForTheCall) {
  std::mt19937_64 rng(10);
  Built b;
  build_classifier(b, false, 3, rng);
  EXPECT_EQ(verdict(&b.program, nullptr, T), "ok");
  EXPECT_EQ(verdict(&b.program, nullptr, 4), "ok");
  EXPECT_EQ(verdict(&b.program, nullptr, 3), bad("step", 1));
  EXPECT_EQ(verdict(&b.program, nullptr, 0), bad("step", 1));
  block<qlstm_select_step_params>(b.ops[1]).step = -1;
  EXPECT_EQ(verdict(&b.program, nullptr, 1), "ok");
  EXPECT_EQ(verdict(&b.program, nullptr, 0), bad("step", 1));
}

// The steps taken lie within the call's; the widths after them are whole multiples of the ops' rows.
TEST(ProgramValidate, SeveralSelectedStepsAreCheckedForTheCallAndTheWidths) {
  std::mt19937_64 rng(12);
  Built b;
  build_classifier(b, false, -3, rng);
  block<qlstm_select_step_params>(b.ops[1]).step_count = 3;
  b.widths = {I, H, 3 * H, 3 * O, 3 * O};
  b.finish();
  EXPECT_EQ(verdict(&b.program, nullptr, T), "ok");
  EXPECT_EQ(verdict(&b.program, nullptr, 3), "ok");
  EXPECT_EQ(verdict(&b.program, nullptr, 2), bad("step", 1));
  block<qlstm_select_step_params>(b.ops[1]).step = 2;  // steps 2, 3, 4
  EXPECT_EQ(verdict(&b.program, nullptr, 5), "ok");
  EXPECT_EQ(verdict(&b.program, nullptr, 4), bad("step_count", 1));
  block<qlstm_select_step_params>(b.ops[1]).step = -2;  // past the last step
  EXPECT_EQ(verdict(&b.program, nullptr, T), bad("step_count", 1));
  block<qlstm_select_step_params>(b.ops[1]).step = -3;
  block<qlstm_select_step_params>(b.ops[1]).step_count = 0;
  EXPECT_EQ(verdict(&b.program, nullptr, T), bad("step_count", 1));
  block<qlstm_select_step_params>(b.ops[1]).step_count = 3;
  b.widths[3] = 3 * O + 1;  // not 3 rows of the FC's outputs
  EXPECT_EQ(verdict(&b.program, nullptr, T), bad("output_size", 2));
  b.widths[3] = 2 * O;  // 3 rows in, 2 out
  EXPECT_EQ(verdict(&b.program, nullptr, T), bad("output_size", 2));
  b.widths[3] = 3 * O;
  b.widths[4] = 2 * O;  // the softmax: 3 rows in, 2 out
  EXPECT_EQ(verdict(&b.program, nullptr, T), bad("row_size", 3));
}

}  // namespace
