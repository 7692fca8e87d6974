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
#include "program_ops.h"
#include "random_lstm.h"
#include "scratch_buffer.h"

namespace {

using testing_support::lstm_op;
using testing_support::make_random_lstm;
using testing_support::program_op;
using testing_support::refusal;
using testing_support::verdict;
using testing_support::RandomLstm;
using testing_support::Regime;
using testing_support::ScratchBuffer;

constexpr int32_t kEvery = QLSTM_BUFFER_EVERY_STEP, kOne = QLSTM_BUFFER_ONE_STEP;

std::vector<int8_t> random_s8(size_t n, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> s8(-128, 127);
  std::vector<int8_t> v(n);
  for (auto& x : v) x = static_cast<int8_t>(s8(rng));
  return v;
}

// An FC op's owned arrays.
struct Fc {
  std::vector<int8_t> weights;
  std::vector<int32_t> bias, multipliers, shifts;
  qlstm_fc_s8_params params{};
};
void make_fc(Fc& f, int32_t I, int32_t O, bool per_channel, bool relu, std::mt19937_64& rng) {
  std::uniform_int_distribution<int32_t> bias(-3000, 3000), m(1 << 30, INT32_MAX), s(-11, -7), zp(-20, 20);
  f.weights = random_s8(static_cast<size_t>(I * O), rng);
  f.bias.resize(static_cast<size_t>(O));
  for (auto& b : f.bias) b = bias(rng);
  const size_t n = per_channel ? static_cast<size_t>(O) : 1;
  f.multipliers.resize(n);
  f.shifts.resize(n);
  for (size_t k = 0; k < n; ++k) {
    f.multipliers[k] = m(rng);
    f.shifts[k] = s(rng);
  }
  const int32_t out_zp = zp(rng);
  f.params = {0, I, O, per_channel ? 1 : 0, f.multipliers.data(), f.shifts.data(), f.weights.data(),
              f.bias.data(), out_zp, relu ? out_zp : -128, 127};
}

struct Table {
  std::vector<int8_t> entries;
  qlstm_table_s8_params params{};
};
void make_table(Table& t, int32_t row_size, std::mt19937_64& rng) {
  t.entries = random_s8(QLSTM_TABLE_S8_ENTRIES, rng);
  t.params = {0, row_size, t.entries.data()};
}

// A hand-built program with its owned parameters and a context sized for T steps.
struct Built {
  std::deque<RandomLstm> lstms;
  std::deque<Fc> fcs;
  std::deque<Table> tables;
  std::vector<qlstm_op> ops;
  std::vector<int32_t> widths, steps;
  int32_t B = 0, T = 0, layout = QLSTM_LAYOUT_BATCH_MAJOR;
  size_t state_values = 0;
  std::vector<unsigned char> scratch_storage;
  std::vector<int16_t> cell;
  std::vector<int8_t> areas[2];
  qlstm_program program{};
  qlstm_program_context ctx{};

  void finish() {
    program = {ops.data(), static_cast<int32_t>(ops.size()), static_cast<int32_t>(widths.size()), widths.data(),
               state_values, steps.data(), B, layout};
    size_t scratch = 0, largest_h = 1, area = 1;
    for (const qlstm_op& op : ops) {
      if (op.kind != QLSTM_OP_LSTM_S8) continue;
      qlstm_lstm_dims d = op.lstm.dims;
      d.time_steps = T;
      scratch = std::max(scratch, qlstm_lstm_s8_scratch_bytes(&d));
      largest_h = std::max(largest_h, static_cast<size_t>(d.hidden_size));
    }
    for (size_t b = 1; b + 1 < widths.size(); ++b) {
      area = std::max(area, static_cast<size_t>(widths[b]) * static_cast<size_t>(steps[b] == kOne ? B : B * T));
    }
    scratch_storage.assign(scratch + QLSTM_SCRATCH_ALIGNMENT, 0);
    void* aligned = scratch_storage.data();
    size_t space = scratch_storage.size();
    std::align(QLSTM_SCRATCH_ALIGNMENT, scratch, aligned, space);
    cell.assign(static_cast<size_t>(B) * largest_h, 0);
    areas[0].assign(area, 0);
    areas[1].assign(area, 0);
    ctx = {aligned, scratch, cell.data(), {areas[0].data(), areas[1].data()}, area};
  }
  size_t output_size() const {
    return static_cast<size_t>(widths.back()) * static_cast<size_t>(steps.back() == kOne ? B : B * T);
  }
};

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
std::vector<int8_t> fc_alone(const qlstm_fc_s8_params& params, const std::vector<int8_t>& x) {
  qlstm_fc_s8_params p = params;
  p.rows = static_cast<int32_t>(x.size()) / p.input_size;
  std::vector<int8_t> y(static_cast<size_t>(p.rows * p.output_size));
  EXPECT_EQ(qlstm_fc_s8(&p, x.data(), y.data()), QLSTM_OK);
  return y;
}
std::vector<int8_t> softmax_alone(const qlstm_softmax_s8_params& params, const std::vector<int8_t>& x) {
  qlstm_softmax_s8_params p = params;
  p.rows = static_cast<int32_t>(x.size()) / p.row_size;
  std::vector<int8_t> y(x.size());
  EXPECT_EQ(qlstm_softmax_s8(&p, x.data(), y.data()), QLSTM_OK);
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

const int32_t B = 3, T = 5, I = 4, H = 6, O = 5;

// LSTM (every step) -> select step -> FC -> softmax: a classifier on y[:, step].
void build_classifier(Built& b, bool time_major, int32_t step, std::mt19937_64& rng) {
  b.B = B;
  b.T = T;
  b.layout = time_major ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR;
  make_random_lstm(b.lstms.emplace_back(), rng, {B, T, I, H}, time_major, Regime::kTypical);
  make_fc(b.fcs.emplace_back(), H, O, true, false, rng);
  b.widths = {I, H, H, O, O};
  b.steps = {kEvery, kEvery, kOne, kOne, kOne};
  b.ops.push_back(lstm_op(b.lstms[0].params, 0, 1, 0));
  qlstm_op select = program_op(QLSTM_OP_SELECT_STEP, 1, 2);
  select.select = {step, H};
  b.ops.push_back(select);
  qlstm_op fc = program_op(QLSTM_OP_FULLY_CONNECTED_S8, 2, 3);
  fc.fc = b.fcs[0].params;
  b.ops.push_back(fc);
  qlstm_op softmax = program_op(QLSTM_OP_SOFTMAX_S8, 3, 4);
  softmax.softmax = {0, O, 1518500250, 22, -496};
  b.ops.push_back(softmax);
  b.state_values = static_cast<size_t>(B * H);
  b.finish();
}

// LSTM final state -> FC (ReLU, per tensor) -> table: a head on h_n.
void build_final_head(Built& b, bool time_major, std::mt19937_64& rng) {
  b.B = B;
  b.T = T;
  b.layout = time_major ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR;
  make_random_lstm(b.lstms.emplace_back(), rng, {B, T, I, H}, time_major, Regime::kTypical);
  b.lstms[0].params.output_steps = QLSTM_OUTPUT_FINAL;
  make_fc(b.fcs.emplace_back(), H, O, false, true, rng);
  make_table(b.tables.emplace_back(), O, rng);
  b.widths = {I, H, O, O};
  b.steps = {kEvery, kOne, kOne, kOne};
  b.ops.push_back(lstm_op(b.lstms[0].params, 0, 1, 0));
  qlstm_op fc = program_op(QLSTM_OP_FULLY_CONNECTED_S8, 1, 2);
  fc.fc = b.fcs[0].params;
  b.ops.push_back(fc);
  qlstm_op table = program_op(QLSTM_OP_TABLE_S8, 2, 3);
  table.table = b.tables[0].params;
  b.ops.push_back(table);
  b.state_values = static_cast<size_t>(B * H);
  b.finish();
}

// Front FC -> LSTM -> FC on every step: a forecaster with an input projection.
void build_front(Built& b, bool time_major, std::mt19937_64& rng) {
  const int32_t F = 7;
  b.B = B;
  b.T = T;
  b.layout = time_major ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR;
  make_fc(b.fcs.emplace_back(), I, F, true, true, rng);
  make_random_lstm(b.lstms.emplace_back(), rng, {B, T, F, H}, time_major, Regime::kTypical);
  make_fc(b.fcs.emplace_back(), H, O, false, false, rng);
  b.widths = {I, F, H, O};
  b.steps = {kEvery, kEvery, kEvery, kEvery};
  qlstm_op front = program_op(QLSTM_OP_FULLY_CONNECTED_S8, 0, 1);
  front.fc = b.fcs[0].params;
  b.ops.push_back(front);
  b.ops.push_back(lstm_op(b.lstms[0].params, 1, 2, 0));
  qlstm_op head = program_op(QLSTM_OP_FULLY_CONNECTED_S8, 2, 3);
  head.fc = b.fcs[1].params;
  b.ops.push_back(head);
  b.state_values = static_cast<size_t>(B * H);
  b.finish();
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
          softmax_alone(b.ops[3].softmax, fc_alone(b.fcs[0].params, select_alone(seq, B, T, H, step, time_major)));
      EXPECT_EQ(y, expected) << (time_major ? "time-major" : "batch-major") << " step " << step;
      EXPECT_EQ(y.size(), static_cast<size_t>(B * O));
    }
  }
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

// A program without an LSTM needs no scratch and no cell.
TEST(ProgramRunner, FcOnlyProgramNeedsNoScratch) {
  std::mt19937_64 rng(400);
  Fc f;
  make_fc(f, I, O, true, false, rng);
  qlstm_op op = program_op(QLSTM_OP_FULLY_CONNECTED_S8, 0, 1);
  op.fc = f.params;
  const int32_t widths[] = {I, O}, steps[] = {kEvery, kEvery};
  const qlstm_program program = {&op, 1, 2, widths, 0, steps, B, QLSTM_LAYOUT_BATCH_MAJOR};
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
         b.ops[1].select = {0, H};
         b.widths[2] = H;
       },
       bad("input_buffer", 1)},
      {"FC changes the steps", classifier, [](Built& b) { b.steps[3] = kEvery; }, bad("output_buffer", 2)},
      {"softmax changes the steps", classifier, [](Built& b) { b.steps[4] = kEvery; }, bad("output_buffer", 3)},
      {"table changes the steps", build_final_head, [](Built& b) { b.steps[3] = kEvery; }, bad("output_buffer", 2)},
      // Widths.
      {"FC input size", classifier, [](Built& b) { b.ops[2].fc.input_size = H + 1; }, bad("input_size", 2)},
      {"FC output size", classifier, [](Built& b) { b.widths[3] = O + 1; }, bad("output_size", 2)},
      {"softmax row size", classifier, [](Built& b) { b.ops[3].softmax.row_size = O - 1; }, bad("row_size", 3)},
      {"softmax output width", classifier, [](Built& b) { b.widths[4] = O + 2; }, bad("row_size", 3)},
      {"table row size", build_final_head, [](Built& b) { b.ops[2].table.row_size = O + 1; }, bad("row_size", 2)},
      {"select row size", classifier, [](Built& b) { b.ops[1].select.row_size = H - 1; }, bad("row_size", 1)},
      {"select output width", classifier, [](Built& b) { b.widths[2] = H + 1; }, bad("row_size", 1)},
      {"FC output offset", classifier, [](Built& b) { b.ops[2].output_offset = 1; }, bad("output_offset", 2)},
      {"LSTM final width", build_final_head, [](Built& b) { b.widths[1] = H - 1; }, bad("output_offset", 0)},
      // The step.
      {"step T", classifier, [](Built& b) { b.ops[1].select.step = T; }, bad("step", 1)},
      {"step -T-1", classifier, [](Built& b) { b.ops[1].select.step = -T - 1; }, bad("step", 1)},
      // State only for an LSTM.
      {"FC state offset", classifier, [](Built& b) { b.ops[2].state_offset = 1; }, bad("state_offset", 2)},
      // The kernels' own validation, named as they name it.
      {"FC shift", classifier, [](Built& b) { b.fcs[0].shifts[1] = 40; }, refusal(QLSTM_ERROR_BAD_SHIFT, "shifts", 2)},
      {"FC weights", classifier, [](Built& b) { b.ops[2].fc.weights = nullptr; },
       refusal(QLSTM_ERROR_NULL_POINTER, "weights", 2)},
      {"FC clamp", build_final_head, [](Built& b) { b.ops[1].fc.activation_max = -129; },
       refusal(QLSTM_ERROR_BAD_DIMS, "activation_max", 1)},
      {"softmax diff_min", classifier, [](Built& b) { b.ops[3].softmax.diff_min = 5; },
       refusal(QLSTM_ERROR_BAD_DIFF_MIN, "diff_min", 3)},
      {"softmax shift", classifier, [](Built& b) { b.ops[3].softmax.input_left_shift = -1; },
       refusal(QLSTM_ERROR_BAD_SHIFT, "input_left_shift", 3)},
      {"table entries", build_final_head, [](Built& b) { b.ops[2].table.table = nullptr; },
       refusal(QLSTM_ERROR_NULL_POINTER, "table", 2)},
      {"LSTM output steps", build_final_head, [](Built& b) { b.ops[0].lstm.output_steps = 3; },
       bad("output_steps", 0)},
      {"LSTM batch", build_final_head, [](Built& b) { b.ops[0].lstm.dims.batch = B + 1; }, bad("dims.batch", 0)},
      {"LSTM layout", classifier,
       [](Built& b) { b.ops[0].lstm.layout = 1 - b.layout; }, bad("layout", 0)},
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
  b.ops[1].select.step = -1;
  EXPECT_EQ(verdict(&b.program, nullptr, 1), "ok");
  EXPECT_EQ(verdict(&b.program, nullptr, 0), bad("step", 1));
}

}  // namespace
