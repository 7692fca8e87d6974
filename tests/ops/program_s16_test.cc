// The 16x8 ops in a program (program_s8.h): int16 buffers, the 16x8 LSTM and fully connected ops
// and the requantization between int16 and int8 (docs/arithmetic.md §15). A program's result
// equals the kernels called one by one; a stateful 16x8 LSTM keeps its cell and int16 hidden in
// the cell array; the runner refuses a buffer of the wrong element type, naming it.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "hand_programs.h"
#include "program_kinds.h"
#include "program_ops.h"
#include "qlstm/fixed_point.h"
#include "qlstm/program_s8.h"

namespace {

using testing_support::hand::Built;
using testing_support::block;
using testing_support::program_op;
using testing_support::set_block;
using testing_support::refusal;
using testing_support::verdict;

constexpr int32_t kB = 2, kT = 6, kI = 5, kH = 7, kO = 4;

// A 16x8 LSTM with typical values (the kernels' own tests cover the extremes).
struct LstmS16 {
  std::vector<int8_t> w[QLSTM_GATE_COUNT][2];
  std::vector<int64_t> b[QLSTM_GATE_COUNT][2];
  qlstm_lstm_s16_params p{};
};
void make_lstm_s16(LstmS16& l, std::mt19937_64& rng) {
  std::uniform_int_distribution<int32_t> w(-127, 127), bias(-3000000, 3000000);
  l.p.dims = {kB, 0, kI, kH};
  for (int g = 0; g < QLSTM_GATE_COUNT; ++g) {
    const int32_t cols[2] = {kI, kH};
    for (int side = 0; side < 2; ++side) {
      for (int32_t k = 0; k < kH * cols[side]; ++k) l.w[g][side].push_back(static_cast<int8_t>(w(rng)));
      for (int32_t k = 0; k < kH; ++k) l.b[g][side].push_back(bias(rng));
    }
    qlstm_gate_s16_params& gp = l.p.gates[g];
    gp = {{1518500250, -9}, l.w[g][0].data(), l.b[g][0].data(), {1374389535, -9}, l.w[g][1].data(), l.b[g][1].data(),
          g == QLSTM_GATE_CELL ? QLSTM_ACTIVATION_TANH : QLSTM_ACTIVATION_SIGMOID};
  }
  l.p.forget_times_cell_to_cell = {1 << 30, -14};
  l.p.input_times_cell_gate_to_cell = {1 << 30, -16};
  l.p.output_times_tanh_cell_to_hidden = {1 << 30, -14};
  l.p.cell_scale_power = -12;
  l.p.output_steps = QLSTM_OUTPUT_ALL_STEPS;
}

struct FcS16 {
  std::vector<int8_t> w;
  std::vector<int64_t> bias;
  qlstm_fc_s16_params p{};
};
void make_fc_s16(FcS16& f, std::mt19937_64& rng) {
  std::uniform_int_distribution<int32_t> w(-127, 127), bias(-100000, 100000);
  for (int32_t k = 0; k < kO * kH; ++k) f.w.push_back(static_cast<int8_t>(w(rng)));
  for (int32_t k = 0; k < kO; ++k) f.bias.push_back(bias(rng));
  f.p = {0, kH, kO, 1288490189, -7, f.w.data(), f.bias.data(), INT16_MIN, INT16_MAX};
}

std::vector<int16_t> random_s16(size_t n, std::mt19937_64& rng) { return testing_support::hand::random_s16(n, rng, -20000, 20000); }

// x (int16) -> LSTM 16x8 -> FC 16x8 -> requantize to int8 -> softmax: a 16x8 classifier of every
// step with an int8 softmax.
struct Classifier {
  LstmS16 lstm;
  FcS16 fc;
  Built b;
  explicit Classifier(uint64_t seed) {
    std::mt19937_64 rng(seed);
    make_lstm_s16(lstm, rng);
    make_fc_s16(fc, rng);
    b.B = kB;
    b.T = kT;
    b.widths = {kI, kH, kO, kO, kO};
    b.steps.assign(5, QLSTM_BUFFER_EVERY_STEP);
    b.types = {QLSTM_ELEMENT_S16, QLSTM_ELEMENT_S16, QLSTM_ELEMENT_S16, QLSTM_ELEMENT_S8, QLSTM_ELEMENT_S8};
    qlstm_op l = program_op(QLSTM_OP_LSTM_S16, 0, 1);
    set_block(l, lstm.p);
    qlstm_op f = program_op(QLSTM_OP_FULLY_CONNECTED_S16, 1, 2);
    set_block(f, fc.p);
    qlstm_op q = program_op(QLSTM_OP_REQUANTIZE, 2, 3);
    set_block(q, qlstm_requantize_params{0, kO, QLSTM_ELEMENT_S16, QLSTM_ELEMENT_S8, 0, -3, {1 << 30, -7}});
    qlstm_op s = program_op(QLSTM_OP_SOFTMAX_S8, 3, 4);
    set_block(s, qlstm_softmax_s8_params{0, kO, 1518500250, 22, -496});
    b.ops = {l, f, q, s};
    b.state_values = 2 * static_cast<size_t>(kB * kH);
    b.finish();
  }
  // The same four kernels called one by one; cell and hidden (both int16) null: stateless.
  std::vector<int8_t> by_kernels(const std::vector<int16_t>& x, int32_t T, int16_t* cell, int16_t* hidden) const {
    qlstm_lstm_s16_params lp = lstm.p;
    lp.dims.time_steps = T;
    std::vector<unsigned char> scratch(qlstm_lstm_s16_scratch_bytes(&lp.dims) + QLSTM_SCRATCH_ALIGNMENT);
    void* aligned = scratch.data();
    size_t space = scratch.size();
    std::align(QLSTM_SCRATCH_ALIGNMENT, 1, aligned, space);
    std::vector<int16_t> own_cell(static_cast<size_t>(kB * kH), 0);
    qlstm_lstm_s16_context c = {aligned, space, cell != nullptr ? cell : own_cell.data(), hidden};
    const int32_t rows = kB * T;
    std::vector<int16_t> h(static_cast<size_t>(rows * kH)), logits(static_cast<size_t>(rows * kO));
    EXPECT_EQ(qlstm_lstm_s16(&lp, &c, x.data(), h.data()), QLSTM_OK);
    qlstm_fc_s16_params fp = fc.p;
    fp.rows = rows;
    EXPECT_EQ(qlstm_fc_s16(&fp, h.data(), logits.data()), QLSTM_OK);
    qlstm_requantize_params qp = block<qlstm_requantize_params>(b.ops[2]);
    qp.rows = rows;
    std::vector<int8_t> q(static_cast<size_t>(rows * kO)), y(q.size());
    EXPECT_EQ(qlstm_requantize(&qp, logits.data(), q.data()), QLSTM_OK);
    qlstm_softmax_s8_params sp = block<qlstm_softmax_s8_params>(b.ops[3]);
    sp.rows = rows;
    EXPECT_EQ(qlstm_softmax_s8(&sp, q.data(), y.data()), QLSTM_OK);
    return y;
  }
};

TEST(ProgramS16, StatelessEqualsTheKernelsOneByOne) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    Classifier c(seed);
    std::mt19937_64 rng(seed + 100);
    const std::vector<int16_t> x = random_s16(static_cast<size_t>(kB * kT * kI), rng);
    ASSERT_EQ(verdict(&c.b.program, &c.b.ctx, kT), "ok");
    std::vector<int8_t> y(c.b.output_size(), 0x5A);
    ASSERT_EQ(qlstm_program_run(&c.b.program, &c.b.ctx, x.data(), y.data(), kT, nullptr, nullptr), QLSTM_OK);
    EXPECT_EQ(y, c.by_kernels(x, kT, nullptr, nullptr)) << "seed " << seed;
  }
}

// The 16x8 kinds in the runner's kind table (tests/support/program_kinds.h): the program's own
// kinds run it as every kind does, stateless and stateful; one left out is refused naming its op.
TEST(ProgramS16, OwnKindsRunAsEveryKindAndAMissingKindIsRefused) {
  for (const bool stateful : {false, true}) {
    Classifier c(stateful ? 12 : 11);
    testing_support::expect_kinds_run_as_every_kind(c.b.program, c.b.ctx, kT, stateful, stateful ? 2 : 1);
  }
}

// The state: the op's cell at state_offset, its int16 hidden B x H after it; two calls on the same
// state continue one sequence.
TEST(ProgramS16, StatefulKeepsCellThenHiddenAndContinues) {
  Classifier c(7);
  std::mt19937_64 rng(8);
  const std::vector<int16_t> x = random_s16(static_cast<size_t>(kB * kT * kI), rng);
  std::vector<int16_t> state = random_s16(c.b.state_values, rng);
  std::vector<int8_t> hidden8(c.b.state_values, 0x11);
  std::vector<int16_t> cell = std::vector<int16_t>(state.begin(), state.begin() + kB * kH);
  std::vector<int16_t> hidden = std::vector<int16_t>(state.begin() + kB * kH, state.end());
  const std::vector<int8_t> want = c.by_kernels(x, kT, cell.data(), hidden.data());

  // The whole sequence as two calls (batch-major: steps [0, 2) then [2, 6) of every row).
  const int32_t t0 = 2;
  std::vector<int16_t> first, second;
  for (int32_t b = 0; b < kB; ++b) {
    const auto row = x.begin() + b * kT * kI;
    first.insert(first.end(), row, row + t0 * kI);
    second.insert(second.end(), row + t0 * kI, row + kT * kI);
  }
  std::vector<int8_t> y1(static_cast<size_t>(kB * t0 * kO)), y2(static_cast<size_t>(kB * (kT - t0) * kO));
  ASSERT_EQ(qlstm_program_run(&c.b.program, &c.b.ctx, first.data(), y1.data(), t0, hidden8.data(), state.data()),
            QLSTM_OK);
  ASSERT_EQ(qlstm_program_run(&c.b.program, &c.b.ctx, second.data(), y2.data(), kT - t0, hidden8.data(),
                              state.data()),
            QLSTM_OK);
  std::vector<int8_t> got;
  for (int32_t b = 0; b < kB; ++b) {
    got.insert(got.end(), y1.begin() + b * t0 * kO, y1.begin() + (b + 1) * t0 * kO);
    got.insert(got.end(), y2.begin() + b * (kT - t0) * kO, y2.begin() + (b + 1) * (kT - t0) * kO);
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(std::vector<int16_t>(state.begin(), state.begin() + kB * kH), cell);
  EXPECT_EQ(std::vector<int16_t>(state.begin() + kB * kH, state.end()), hidden);
  EXPECT_EQ(hidden8, std::vector<int8_t>(c.b.state_values, 0x11));  // its int8 rows unused
  EXPECT_EQ(qlstm_op_state_size(&c.b.ops[0]), 2 * kH);
}

TEST(ProgramS16, RefusesBuffersOfTheWrongTypeNamingThem) {
  struct Case {
    const char* what;
    void (*change)(Built& b);
    std::string want;
  };
  const Case cases[] = {
      {"an int8 input to the 16x8 LSTM", [](Built& b) { b.types[0] = QLSTM_ELEMENT_S8; },
       refusal(QLSTM_ERROR_BAD_ELEMENT_TYPE, "input_buffer", 0)},
      {"an int8 output of the 16x8 FC", [](Built& b) { b.types[2] = QLSTM_ELEMENT_S8; },
       refusal(QLSTM_ERROR_BAD_ELEMENT_TYPE, "output_buffer", 1)},
      {"an int16 input to the softmax", [](Built& b) { b.types[3] = QLSTM_ELEMENT_S16; },
       refusal(QLSTM_ERROR_BAD_ELEMENT_TYPE, "output_buffer", 2)},
      {"int32 token ids into the 16x8 LSTM", [](Built& b) { b.types[0] = QLSTM_ELEMENT_S32; },
       refusal(QLSTM_ERROR_BAD_ELEMENT_TYPE, "input_buffer", 0)},
      {"an unknown type", [](Built& b) { b.types[4] = 3; }, refusal(QLSTM_ERROR_BAD_ELEMENT_TYPE, "buffer_types", -1)},
      {"no types: every buffer int8", [](Built& b) { b.types.clear(); },
       refusal(QLSTM_ERROR_BAD_ELEMENT_TYPE, "input_buffer", 0)},
      {"a requantization from int8", [](Built& b) { block<qlstm_requantize_params>(b.ops[2]).input_type = QLSTM_ELEMENT_S8; },
       refusal(QLSTM_ERROR_BAD_ELEMENT_TYPE, "input_buffer", 2)},
      {"an int16 zero point out of int8", [](Built& b) { block<qlstm_requantize_params>(b.ops[2]).output_zero_point = 128; },
       refusal(QLSTM_ERROR_BAD_ZERO_POINT, "output_zero_point", 2)},
      {"a 16x8 FC without a bias", [](Built& b) { block<qlstm_fc_s16_params>(b.ops[1]).bias = nullptr; },
       refusal(QLSTM_ERROR_NULL_POINTER, "bias", 1)},
      {"the 16x8 LSTM's state past state_values", [](Built& b) { b.state_values = kB * kH; },
       refusal(QLSTM_ERROR_BAD_PROGRAM, "state_offset", 0)},
      {"a 16x8 gate shift", [](Built& b) { block<qlstm_lstm_s16_params>(b.ops[0]).gates[1].input_to_q3_12.shift = QLSTM_S16_SHIFT_MAX + 1; },
       refusal(QLSTM_ERROR_BAD_SHIFT, "gates[input].input_to_q3_12.shift", 0)},
  };
  for (const Case& k : cases) {
    Classifier c(3);
    k.change(c.b);
    c.b.finish();
    EXPECT_EQ(verdict(&c.b.program, &c.b.ctx, kT), k.want) << k.what;
  }
}

// The head as the compiler now builds it: the 16x8 softmax on the int16 logits, int16 output
// (without it: the LSTM and FC alone, the logits).
void fill_softmax_s16_program(const Classifier& c, Built& b, bool with_softmax = true) {
  const size_t buffers = with_softmax ? 4 : 3;
  b.B = kB;
  b.T = kT;
  b.widths = {kI, kH, kO, kO};
  b.widths.resize(buffers);
  b.steps.assign(buffers, QLSTM_BUFFER_EVERY_STEP);
  b.types.assign(buffers, QLSTM_ELEMENT_S16);
  b.ops = {c.b.ops[0], c.b.ops[1]};
  if (with_softmax) {
    qlstm_op s = program_op(QLSTM_OP_SOFTMAX_S16, 2, 3);
    set_block(s, qlstm_softmax_s16_params{0, kO, 1407374884, 2});
    b.ops.push_back(s);
  }
  b.state_values = c.b.state_values;
  b.finish();
}

TEST(ProgramS16, SoftmaxS16HeadEqualsTheKernelsAndIsValidatedByField) {
  Classifier c(5);
  Built b;
  fill_softmax_s16_program(c, b);
  std::mt19937_64 rng(6);
  const std::vector<int16_t> x = random_s16(static_cast<size_t>(kB * kT * kI), rng);
  ASSERT_EQ(verdict(&b.program, &b.ctx, kT), "ok");
  std::vector<int16_t> y(static_cast<size_t>(kB * kT * kO), 0x5A5A);
  ASSERT_EQ(qlstm_program_run(&b.program, &b.ctx, x.data(), y.data(), kT, nullptr, nullptr), QLSTM_OK);
  // The LSTM and FC as a program, then the softmax kernel on the logits.
  Built logits_only;
  fill_softmax_s16_program(c, logits_only, false);
  std::vector<int16_t> logits(y.size()), want(y.size());
  ASSERT_EQ(qlstm_program_run(&logits_only.program, &logits_only.ctx, x.data(), logits.data(), kT, nullptr, nullptr),
            QLSTM_OK);
  qlstm_softmax_s16_params sp = block<qlstm_softmax_s16_params>(b.ops[2]);
  sp.rows = kB * kT;
  ASSERT_EQ(qlstm_softmax_s16(&sp, logits.data(), want.data()), QLSTM_OK);
  EXPECT_EQ(y, want);
  int32_t row_sum = 0;
  for (int32_t k = 0; k < kO; ++k) row_sum += y[static_cast<size_t>(k)];
  EXPECT_NEAR(row_sum, 32768, kO);  // probabilities in Q0.15

  struct Case {
    const char* what;
    void (*change)(Built& b);
    std::string want;
  };
  const Case cases[] = {
      {"an int8 output", [](Built& b) { b.types[3] = QLSTM_ELEMENT_S8; },
       refusal(QLSTM_ERROR_BAD_ELEMENT_TYPE, "output_buffer", 2)},
      {"a row size not its buffers'", [](Built& b) { block<qlstm_softmax_s16_params>(b.ops[2]).row_size = kO + 1; },
       refusal(QLSTM_ERROR_BAD_PROGRAM, "row_size", 2)},
      {"a negative multiplier", [](Built& b) { block<qlstm_softmax_s16_params>(b.ops[2]).input_multiplier = -1; },
       refusal(QLSTM_ERROR_BAD_MULTIPLIER, "input_multiplier", 2)},
      {"a shift beyond 15", [](Built& b) { block<qlstm_softmax_s16_params>(b.ops[2]).input_left_shift = QLSTM_SOFTMAX_S16_SHIFT_MAX + 1; },
       refusal(QLSTM_ERROR_BAD_SHIFT, "input_left_shift", 2)},
  };
  for (const Case& k : cases) {
    Built bad;
    fill_softmax_s16_program(c, bad);
    k.change(bad);
    bad.finish();
    EXPECT_EQ(verdict(&bad.program, &bad.ctx, kT), k.want) << k.what;
  }
}

TEST(ProgramS16, ActivationAreasHoldTwoBytesPerInt16Element) {
  Classifier c(5);
  // Area 0 holds buffer 1 (int16 [B][T][H]) and buffer 3 (int8 [B][T][O]): 2 x B x T x H bytes.
  c.b.ctx.activation_bytes = 2 * static_cast<size_t>(kB * kT * kH) - 1;
  EXPECT_EQ(verdict(&c.b.program, &c.b.ctx, kT), refusal(QLSTM_ERROR_SCRATCH_TOO_SMALL, "activation_bytes", -1));
  c.b.ctx.activation_bytes += 1;
  EXPECT_EQ(verdict(&c.b.program, &c.b.ctx, kT), "ok");
  c.b.ctx.activations[0] += 1;  // odd: no int16 buffer may live there
  EXPECT_EQ(verdict(&c.b.program, &c.b.ctx, kT), refusal(QLSTM_ERROR_SCRATCH_MISALIGNED, "activations", -1));
}

TEST(ProgramS16, RefusesAMisalignedInt16Input) {
  Classifier c(6);
  std::vector<int16_t> x(static_cast<size_t>(kB * kT * kI) + 1, 0);
  std::vector<int8_t> y(c.b.output_size(), 0x5A);
  const void* odd = reinterpret_cast<const unsigned char*>(x.data()) + 1;
  EXPECT_EQ(qlstm_program_run(&c.b.program, &c.b.ctx, odd, y.data(), kT, nullptr, nullptr),
            QLSTM_ERROR_SCRATCH_MISALIGNED);
  EXPECT_EQ(y, std::vector<int8_t>(c.b.output_size(), 0x5A));  // nothing written
}

// ---- The requantization op on its own: every int16 to int8 and every int8 to int16, against
// the arithmetic written out.
int32_t requantized(int32_t x, const qlstm_requantize_params& p, int32_t lo, int32_t hi) {
  const int32_t v = qlstm::fxp::requantize_double_rounding(x - p.input_zero_point, p.to_output.multiplier,
                                                           p.to_output.shift);
  return qlstm::fxp::clamp(qlstm::fxp::wrapping_add(v, p.output_zero_point), lo, hi);
}

TEST(Requantize, EveryInt16ToInt8) {
  std::vector<int16_t> x;
  for (int32_t v = INT16_MIN; v <= INT16_MAX; ++v) x.push_back(static_cast<int16_t>(v));
  const qlstm_requantize_params p = {static_cast<int32_t>(x.size()), 1, QLSTM_ELEMENT_S16, QLSTM_ELEMENT_S8, 0, -7,
                                     {1717986918, -6}};
  std::vector<int8_t> y(x.size());
  ASSERT_EQ(qlstm_requantize(&p, x.data(), y.data()), QLSTM_OK);
  int saturated = 0;
  for (size_t k = 0; k < x.size(); ++k) {
    ASSERT_EQ(y[k], requantized(x[k], p, INT8_MIN, INT8_MAX)) << x[k];
    saturated += y[k] == INT8_MIN || y[k] == INT8_MAX;
  }
  EXPECT_GT(saturated, 0);
}

TEST(Requantize, EveryInt8ToInt16) {
  std::vector<int8_t> x;
  for (int32_t v = INT8_MIN; v <= INT8_MAX; ++v) x.push_back(static_cast<int8_t>(v));
  const qlstm_requantize_params p = {1, static_cast<int32_t>(x.size()), QLSTM_ELEMENT_S8, QLSTM_ELEMENT_S16, 5, 0,
                                     {1073741824, 9}};
  std::vector<int16_t> y(x.size());
  ASSERT_EQ(qlstm_requantize(&p, x.data(), y.data()), QLSTM_OK);
  for (size_t k = 0; k < x.size(); ++k) ASSERT_EQ(y[k], requantized(x[k], p, INT16_MIN, INT16_MAX)) << int{x[k]};
}

TEST(Requantize, ValidationNamesTheField) {
  const qlstm_requantize_params good = {1, 1, QLSTM_ELEMENT_S16, QLSTM_ELEMENT_S8, 0, 0, {1 << 30, -1}};
  struct Case {
    void (*change)(qlstm_requantize_params& p);
    qlstm_status status;
    const char* field;
  };
  const Case cases[] = {
      {[](qlstm_requantize_params& p) { p.rows = -1; }, QLSTM_ERROR_BAD_DIMS, "rows"},
      {[](qlstm_requantize_params& p) { p.row_size = 0; }, QLSTM_ERROR_BAD_DIMS, "row_size"},
      {[](qlstm_requantize_params& p) { p.input_type = 3; }, QLSTM_ERROR_BAD_ELEMENT_TYPE, "input_type"},
      {[](qlstm_requantize_params& p) { p.output_type = -1; }, QLSTM_ERROR_BAD_ELEMENT_TYPE, "output_type"},
      {[](qlstm_requantize_params& p) { p.input_zero_point = 32768; }, QLSTM_ERROR_BAD_ZERO_POINT, "input_zero_point"},
      {[](qlstm_requantize_params& p) { p.output_zero_point = -129; }, QLSTM_ERROR_BAD_ZERO_POINT, "output_zero_point"},
      {[](qlstm_requantize_params& p) { p.to_output.multiplier = -1; }, QLSTM_ERROR_BAD_MULTIPLIER,
       "to_output.multiplier"},
      {[](qlstm_requantize_params& p) { p.to_output.shift = 32; }, QLSTM_ERROR_BAD_SHIFT, "to_output.shift"},
  };
  const char* field = "unset";
  ASSERT_EQ(qlstm_requantize_validate(&good, &field), QLSTM_OK);
  for (const Case& k : cases) {
    qlstm_requantize_params p = good;
    k.change(p);
    field = "unset";
    EXPECT_EQ(qlstm_requantize_validate(&p, &field), k.status) << k.field;
    EXPECT_STREQ(field, k.field);
  }
}

}  // namespace
