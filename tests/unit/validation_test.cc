// Every bad argument gets its status and names its field; every accepted extreme runs.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "naive_lstm.h"
#include "qlstm/activation_s16.h"
#include "qlstm/lstm_s8.h"
#include "random_lstm.h"
#include "scratch_buffer.h"

namespace {

using testing_support::make_random_lstm;
using testing_support::RandomLstm;
using testing_support::Regime;

class Validation : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(7);
    make_random_lstm(lstm_, rng, {2, 3, 5, 4}, true, Regime::kTypical);
    scratch_ = std::make_unique<testing_support::ScratchBuffer>(lstm_.params.dims);
    cell_.assign(8, 0);
    out_.assign(2 * 3 * 4, 0);
    ctx_ = scratch_->context(cell_.data(), nullptr);
  }
  void expect_invalid(const std::function<void(qlstm_lstm_s8_params&)>& mutate,
                      qlstm_status status, const char* field) {
    qlstm_lstm_s8_params p = lstm_.params;
    mutate(p);
    const char* got_field = nullptr;
    EXPECT_EQ(qlstm_lstm_s8_validate(&p, &got_field), status);
    ASSERT_NE(got_field, nullptr);
    EXPECT_STREQ(got_field, field);
    EXPECT_EQ(qlstm_lstm_s8(&p, &ctx_, lstm_.input.data(), out_.data()), status);
  }
  RandomLstm lstm_;
  std::unique_ptr<testing_support::ScratchBuffer> scratch_;
  std::vector<int16_t> cell_;
  std::vector<int8_t> out_;
  qlstm_lstm_s8_context ctx_{};
};

TEST_F(Validation, ValidParamsPass) {
  const char* field = "unchanged";
  EXPECT_EQ(qlstm_lstm_s8_validate(&lstm_.params, &field), QLSTM_OK);
  EXPECT_EQ(field, nullptr);
  EXPECT_EQ(qlstm_lstm_s8(&lstm_.params, &ctx_, lstm_.input.data(), out_.data()), QLSTM_OK);
}

TEST_F(Validation, Dims) {
  expect_invalid([](auto& p) { p.dims.batch = 0; }, QLSTM_ERROR_BAD_DIMS, "dims");
  expect_invalid([](auto& p) { p.dims.time_steps = -1; }, QLSTM_ERROR_BAD_DIMS, "dims");
  expect_invalid([](auto& p) { p.dims.input_size = 0; }, QLSTM_ERROR_BAD_DIMS, "dims");
  expect_invalid([](auto& p) { p.dims.hidden_size = -3; }, QLSTM_ERROR_BAD_DIMS, "dims");
  expect_invalid([](auto& p) { p.dims.time_steps = 1 << 20; p.dims.batch = 1 << 12; },
                 QLSTM_ERROR_BAD_DIMS, "dims");
  expect_invalid([](auto& p) { p.dims.hidden_size = 1 << 16; }, QLSTM_ERROR_BAD_DIMS, "dims");
  qlstm_lstm_dims bad = {0, 1, 1, 1};
  EXPECT_EQ(qlstm_lstm_s8_scratch_bytes(&bad), 0u);
  EXPECT_EQ(qlstm_lstm_s8_scratch_bytes(nullptr), 0u);
}

TEST_F(Validation, LayoutActivationZeroPointClipScale) {
  expect_invalid([](auto& p) { p.layout = 2; }, QLSTM_ERROR_BAD_LAYOUT, "layout");
  expect_invalid([](auto& p) { p.gates[QLSTM_GATE_CELL].activation = 7; },
                 QLSTM_ERROR_BAD_ACTIVATION, "gates[cell].activation");
  expect_invalid([](auto& p) { p.output_zero_point = 128; }, QLSTM_ERROR_BAD_ZERO_POINT,
                 "output_zero_point");
  expect_invalid([](auto& p) { p.output_zero_point = -129; }, QLSTM_ERROR_BAD_ZERO_POINT,
                 "output_zero_point");
  expect_invalid([](auto& p) { p.cell_clip = 32768; }, QLSTM_ERROR_BAD_CELL_CLIP, "cell_clip");
  expect_invalid([](auto& p) { p.cell_scale_power = QLSTM_CELL_SCALE_POWER_MIN - 1; },
                 QLSTM_ERROR_BAD_CELL_SCALE, "cell_scale_power");
  expect_invalid([](auto& p) { p.cell_scale_power = QLSTM_CELL_SCALE_POWER_MAX + 1; },
                 QLSTM_ERROR_BAD_CELL_SCALE, "cell_scale_power");
}

// A HardSigmoid gate's line is checked (and only then: a sigmoid gate's is not read); any offset
// is accepted (the line's sum is 64-bit); the 16x8 LSTM has no HardSigmoid (lstm_s16_test.cc).
TEST_F(Validation, HardSigmoidLines) {
  auto hard = [](qlstm_lstm_s8_params& p, int g) {
    p.gates[g].activation = QLSTM_ACTIVATION_HARD_SIGMOID;
    p.gates[g].hard_sigmoid = {{1717986918, 1}, 16384};
  };
  expect_invalid([&](auto& p) { hard(p, QLSTM_GATE_INPUT); p.gates[QLSTM_GATE_INPUT].hard_sigmoid.slope.shift = 32; },
                 QLSTM_ERROR_BAD_SHIFT, "gates[input].hard_sigmoid.slope.shift");
  expect_invalid([&](auto& p) { hard(p, QLSTM_GATE_OUTPUT); p.gates[QLSTM_GATE_OUTPUT].hard_sigmoid.slope.multiplier = -1; },
                 QLSTM_ERROR_BAD_MULTIPLIER, "gates[output].hard_sigmoid.slope.multiplier");
  expect_invalid([](auto& p) { p.gates[QLSTM_GATE_FORGET].activation = QLSTM_ACTIVATION_HARD_SIGMOID + 1; },
                 QLSTM_ERROR_BAD_ACTIVATION, "gates[forget].activation");
  qlstm_lstm_s8_params p = lstm_.params;
  p.gates[QLSTM_GATE_FORGET].hard_sigmoid.slope.shift = 99;  // a sigmoid gate's line is not read
  EXPECT_EQ(qlstm_lstm_s8_validate(&p, nullptr), QLSTM_OK);
  for (int g = 0; g < QLSTM_GATE_COUNT; ++g) hard(p, g);
  p.gates[QLSTM_GATE_FORGET].hard_sigmoid.slope.shift = 0;
  p.gates[QLSTM_GATE_CELL].hard_sigmoid.offset_q0_15 = INT32_MIN;
  p.gates[QLSTM_GATE_OUTPUT].hard_sigmoid.offset_q0_15 = INT32_MAX;
  EXPECT_EQ(qlstm_lstm_s8_validate(&p, nullptr), QLSTM_OK);
  EXPECT_EQ(qlstm_lstm_s8(&p, &ctx_, lstm_.input.data(), out_.data()), QLSTM_OK);
}

TEST_F(Validation, MultipliersAndShifts) {
  expect_invalid([](auto& p) { p.gates[QLSTM_GATE_FORGET].input_to_q3_12.shift = 32; },
                 QLSTM_ERROR_BAD_SHIFT, "gates[forget].input_to_q3_12.shift");
  expect_invalid([](auto& p) { p.gates[QLSTM_GATE_OUTPUT].hidden_to_q3_12.shift = -32; },
                 QLSTM_ERROR_BAD_SHIFT, "gates[output].hidden_to_q3_12.shift");
  expect_invalid([](auto& p) { p.gates[QLSTM_GATE_INPUT].hidden_to_q3_12.multiplier = -1; },
                 QLSTM_ERROR_BAD_MULTIPLIER, "gates[input].hidden_to_q3_12.multiplier");
  expect_invalid([](auto& p) { p.forget_times_cell_to_cell.multiplier = INT32_MIN; },
                 QLSTM_ERROR_BAD_MULTIPLIER, "forget_times_cell_to_cell.multiplier");
  expect_invalid([](auto& p) { p.input_times_cell_gate_to_cell.shift = 40; },
                 QLSTM_ERROR_BAD_SHIFT, "input_times_cell_gate_to_cell.shift");
  expect_invalid([](auto& p) { p.output_times_tanh_cell_to_hidden.shift = INT32_MIN; },
                 QLSTM_ERROR_BAD_SHIFT, "output_times_tanh_cell_to_hidden.shift");
}

TEST_F(Validation, NullPointers) {
  expect_invalid([](auto& p) { p.gates[QLSTM_GATE_CELL].input_weights = nullptr; },
                 QLSTM_ERROR_NULL_POINTER, "gates[cell].input_weights");
  expect_invalid([](auto& p) { p.gates[QLSTM_GATE_OUTPUT].hidden_effective_bias = nullptr; },
                 QLSTM_ERROR_NULL_POINTER, "gates[output].hidden_effective_bias");
  const char* field = nullptr;
  EXPECT_EQ(qlstm_lstm_s8_validate(nullptr, &field), QLSTM_ERROR_NULL_POINTER);
  EXPECT_STREQ(field, "params");
  EXPECT_EQ(qlstm_lstm_s8(nullptr, &ctx_, lstm_.input.data(), out_.data()), QLSTM_ERROR_NULL_POINTER);
  EXPECT_EQ(qlstm_lstm_s8(&lstm_.params, nullptr, lstm_.input.data(), out_.data()),
            QLSTM_ERROR_NULL_POINTER);
  EXPECT_EQ(qlstm_lstm_s8(&lstm_.params, &ctx_, nullptr, out_.data()), QLSTM_ERROR_NULL_POINTER);
  EXPECT_EQ(qlstm_lstm_s8(&lstm_.params, &ctx_, lstm_.input.data(), nullptr),
            QLSTM_ERROR_NULL_POINTER);
  qlstm_lstm_s8_context no_cell = ctx_;
  no_cell.cell_state = nullptr;
  EXPECT_EQ(qlstm_lstm_s8(&lstm_.params, &no_cell, lstm_.input.data(), out_.data()),
            QLSTM_ERROR_NULL_POINTER);
  qlstm_lstm_s8_context no_scratch = ctx_;
  no_scratch.scratch = nullptr;
  EXPECT_EQ(qlstm_lstm_s8(&lstm_.params, &no_scratch, lstm_.input.data(), out_.data()),
            QLSTM_ERROR_NULL_POINTER);
  EXPECT_EQ(qlstm_lstm_s8_reset_state(&lstm_.params, nullptr), QLSTM_ERROR_NULL_POINTER);
}

TEST_F(Validation, Scratch) {
  const size_t need = qlstm_lstm_s8_scratch_bytes(&lstm_.params.dims);
  EXPECT_EQ(need, 3u * 2u * 4u * sizeof(int16_t));
  qlstm_lstm_s8_context small = ctx_;
  small.scratch_bytes = need - 1;
  EXPECT_EQ(qlstm_lstm_s8(&lstm_.params, &small, lstm_.input.data(), out_.data()),
            QLSTM_ERROR_SCRATCH_TOO_SMALL);
  qlstm_lstm_s8_context misaligned = ctx_;
  misaligned.scratch = static_cast<unsigned char*>(scratch_->data()) + 2;
  misaligned.scratch_bytes = need;
  EXPECT_EQ(qlstm_lstm_s8(&lstm_.params, &misaligned, lstm_.input.data(), out_.data()),
            QLSTM_ERROR_SCRATCH_MISALIGNED);
  qlstm_lstm_s8_context exact = ctx_;
  exact.scratch_bytes = need;
  EXPECT_EQ(qlstm_lstm_s8(&lstm_.params, &exact, lstm_.input.data(), out_.data()), QLSTM_OK);
}

TEST_F(Validation, ZeroTimeStepsAcceptsNullBuffersAndKeepsState) {
  qlstm_lstm_s8_params p = lstm_.params;
  p.dims.time_steps = 0;
  EXPECT_EQ(qlstm_lstm_s8(&p, &ctx_, nullptr, nullptr), QLSTM_OK);
  std::vector<int8_t> hidden = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<int16_t> cell = {9, 10, 11, 12, 13, 14, 15, 16};
  const auto hidden0 = hidden;
  const auto cell0 = cell;
  qlstm_lstm_s8_context stateful = scratch_->context(cell.data(), hidden.data());
  EXPECT_EQ(qlstm_lstm_s8(&p, &stateful, nullptr, nullptr), QLSTM_OK);
  EXPECT_EQ(hidden, hidden0);
  EXPECT_EQ(cell, cell0);
  // Stateless with T = 0 still starts a fresh sequence: the cell is zeroed.
  qlstm_lstm_s8_context stateless = stateful;
  stateless.hidden_state = nullptr;
  EXPECT_EQ(qlstm_lstm_s8(&p, &stateless, nullptr, nullptr), QLSTM_OK);
  EXPECT_EQ(cell, std::vector<int16_t>(8, 0));
}

TEST_F(Validation, ResetState) {
  std::vector<int8_t> hidden(8, 99);
  std::vector<int16_t> cell(8, 1234);
  qlstm_lstm_s8_context c = scratch_->context(cell.data(), hidden.data());
  ASSERT_EQ(qlstm_lstm_s8_reset_state(&lstm_.params, &c), QLSTM_OK);
  EXPECT_EQ(cell, std::vector<int16_t>(8, 0));
  EXPECT_EQ(hidden, std::vector<int8_t>(8, static_cast<int8_t>(lstm_.params.output_zero_point)));
}

TEST(StatusString, EveryStatusHasText) {
  for (int s = QLSTM_OK; s <= QLSTM_ERROR_BAD_ELEMENT_TYPE; ++s) {
    const char* text = qlstm_status_string(static_cast<qlstm_status>(s));
    ASSERT_NE(text, nullptr);
    EXPECT_STRNE(text, "unknown status") << s;
  }
}

// Every accepted extreme value runs (under the sanitizer build: without undefined behaviour)
// and agrees with the model.
TEST(AcceptedExtremes, AllShiftsMultipliersPowersAndClips) {
  std::mt19937_64 rng(99);
  const int32_t shifts[] = {-31, -30, -1, 0, 1, 30, 31};
  const int32_t multipliers[] = {0, 1, 1 << 30, INT32_MAX};
  const int32_t powers[] = {QLSTM_CELL_SCALE_POWER_MIN, -20, -15, -12, -8, 0, QLSTM_CELL_SCALE_POWER_MAX};
  const int32_t clips[] = {INT32_MIN, -1, 0, 1, 100, 32767};
  for (int k = 0; k < 60; ++k) {
    RandomLstm l;
    make_random_lstm(l, rng, {2, 3, 3, 5}, k % 2 == 0, Regime::kExtreme);
    auto pick = [&](const auto& arr) { return arr[rng() % (sizeof(arr) / sizeof(arr[0]))]; };
    for (auto& g : l.params.gates) {
      g.input_to_q3_12 = {pick(multipliers), pick(shifts)};
      g.hidden_to_q3_12 = {pick(multipliers), pick(shifts)};
    }
    l.params.forget_times_cell_to_cell = {pick(multipliers), pick(shifts)};
    l.params.input_times_cell_gate_to_cell = {pick(multipliers), pick(shifts)};
    l.params.output_times_tanh_cell_to_hidden = {pick(multipliers), pick(shifts)};
    l.params.cell_scale_power = pick(powers);
    l.params.cell_clip = pick(clips);
    testing_support::ScratchBuffer scratch(l.params.dims);
    std::vector<int16_t> cell(10);
    std::vector<int8_t> out(2 * 3 * 5);
    qlstm_lstm_s8_context ctx = scratch.context(cell.data(), nullptr);
    ASSERT_EQ(qlstm_lstm_s8(&l.params, &ctx, l.input.data(), out.data()), QLSTM_OK);
    EXPECT_EQ(out, naive::run(l.params, l.input.data(), nullptr, qlstm::kSigmoidTableU16)) << k;
  }
}

}  // namespace
