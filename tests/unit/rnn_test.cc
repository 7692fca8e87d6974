// The int8 vanilla RNN (include/qlstm/rnn_s8.h): hand-computed one-unit cases (ReLU's clamp,
// tanh's zero and ends, the int16 saturations), the kernel against the naive model
// (tests/support/naive_rnn.h) over edge shapes, the state contract (streaming, reset, the
// stateless first step), the conformance vectors of tests/vectors/rnn_s8.json through the entry
// point and every supported variant, and validation with each bad field named.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "naive_rnn.h"
#include "qlstm/activation_s16.h"
#include "qlstm/kernels.h"
#include "qlstm/rnn_s8.h"
#include "random_rnn.h"
#include "scratch_buffer.h"

namespace {

using testing_support::make_random_rnn;
using testing_support::random_rnn_state;
using testing_support::RandomRnn;
using testing_support::Regime;
using testing_support::rnn_output_size;
using testing_support::ScratchBuffer;

constexpr int8_t kUntouched = 0x5a;  // what output positions the kernel does not write hold

struct Call {
  std::vector<int8_t> output;
  qlstm_status status;
};

// One call through qlstm_rnn_s8; state nullptr: stateless.
Call run_rnn(const qlstm_rnn_s8_params& p, const int8_t* input, std::vector<int16_t>* state) {
  ScratchBuffer scratch(qlstm_rnn_s8_scratch_bytes(&p.dims));
  qlstm_rnn_s8_context ctx = {scratch.data(), scratch.bytes(), state != nullptr ? state->data() : nullptr};
  Call c;
  c.output.assign(rnn_output_size(p), kUntouched);
  c.status = qlstm_rnn_s8(&p, &ctx, input, c.output.data());
  return c;
}

// ---- Hand-computed cases: one unit, one input, and RQ the identity on the matmul side.

// RQ with (2^30, 1): a left shift by 1, then SRDHM(2 x, 2^30) = x exactly (|x| < 2^30).
constexpr qlstm_requant kIdentity = {1 << 30, 1};
constexpr qlstm_requant kOver16 = {1 << 30, -3};   // x / 16, rounded half away from zero
constexpr qlstm_requant kOver256 = {1 << 30, -7};  // x / 256
constexpr qlstm_requant kTimes16 = {1 << 30, 5};   // x * 16

// H = I = 1: pre = sat16(bx + wx x) (+ RQ(bh + wh h8)), h = act(pre), y = sat8(RQ(h) + zp).
struct Tiny {
  int8_t wx = 1, wh = 1;
  int32_t bx = 0, bh = 0;
  qlstm_rnn_s8_params p{};

  Tiny(int32_t activation, int32_t zero_point) {
    p.dims = {1, 1, 1, 1};
    p.gate = {kIdentity, &wx, &bx, kIdentity, &wh, &bh};
    p.activation = activation;
    p.hidden_to_output = kIdentity;
    p.output_zero_point = zero_point;
  }
  Tiny(const Tiny&) = delete;
  Tiny& operator=(const Tiny&) = delete;

  // One step from x; state: the int16 state before (stateful) or nullptr. Returns y.
  int32_t step(int8_t x, std::vector<int16_t>* state) const {
    const Call c = run_rnn(p, &x, state);
    EXPECT_EQ(c.status, QLSTM_OK);
    return c.output.at(0);
  }
};

TEST(RnnHand, ReluClampsANegativePreActivationToZero) {
  Tiny t(QLSTM_RNN_RELU, 5);
  t.bx = -100;
  EXPECT_EQ(t.step(0, nullptr), 5);  // pre -100 -> h 0 -> y = zp
  EXPECT_EQ(t.step(60, nullptr), 5);  // pre -40
  // Stateful from 0: h8 = zp = 5, and bh = -zp * rowsum cancels it; the state becomes 0.
  t.bh = -5;
  std::vector<int16_t> state = {0};
  EXPECT_EQ(t.step(0, &state), 5);
  EXPECT_EQ(state[0], 0);
  // A positive pre passes: h = 300, y = sat8(300 + 5).
  t.bx = 300;
  EXPECT_EQ(t.step(0, &state), 127);
  EXPECT_EQ(state[0], 300);
  // y = RQ(120, 1/16) + zp = round(7.5) + 5 (half away from zero).
  t.bx = 120;
  t.p.hidden_to_output = kOver16;
  EXPECT_EQ(t.step(0, nullptr), 13);
}

TEST(RnnHand, TanhOfZeroIsZeroAndItsEnds) {
  Tiny t(QLSTM_RNN_TANH, -3);
  t.bh = 3;  // -zp * rowsum
  std::vector<int16_t> state = {0};
  EXPECT_EQ(t.step(0, nullptr), -3);  // tanh(0) = 0 -> y = zp
  EXPECT_EQ(t.step(0, &state), -3);
  EXPECT_EQ(state[0], 0);
  // tanh(1.0): pre 4096 in Q3.12 -> about 0.76159 * 2^15 = 24956 in Q0.15; tanh is odd.
  t.bx = 4096;
  state = {0};
  t.step(0, &state);
  const int32_t tanh_one = state[0];
  EXPECT_NEAR(tanh_one, std::tanh(1.0) * 32768, 2);
  EXPECT_EQ(tanh_one, naive_rnn::activate(4096, QLSTM_RNN_TANH, qlstm::kSigmoidTableU16));
  t.bx = -4096;
  state = {0};
  t.step(0, &state);
  EXPECT_EQ(state[0], -tanh_one);
  // The ends of int16: tanh(32767) = 32767, tanh(-32768) = -32767 in Q0.15.
  for (const auto& [bx, h] : {std::pair<int32_t, int32_t>{32767, 32767}, {-32768, -32767}}) {
    t.bx = bx;
    state = {0};
    t.step(0, &state);
    EXPECT_EQ(state[0], h) << "pre " << bx;
  }
}

// The input term saturates to int16 on its own, then the sum with the recurrent term again.
TEST(RnnHand, PreActivationSaturatesAtInt16) {
  Tiny relu(QLSTM_RNN_RELU, 0), tanh_rnn(QLSTM_RNN_TANH, 0);
  relu.p.hidden_to_output = kOver256;
  relu.bx = 40000;  // RQ(acc_x) = 40000 -> 32767
  std::vector<int16_t> state = {0};
  relu.wh = 0;
  EXPECT_EQ(relu.step(0, &state), 127);  // RQ(32767, 1/256) = 128 -> sat8
  EXPECT_EQ(state[0], 32767);
  relu.bx = -40000;
  EXPECT_EQ(relu.step(0, &state), 0);
  EXPECT_EQ(state[0], 0);
  tanh_rnn.bx = -40000;
  state = {0};
  tanh_rnn.step(0, &state);
  EXPECT_EQ(state[0], -32767);

  // Recurrent: state 2560 -> h8 = 10; acc_h = 100 * 10 = 1000 -> RQ(x16) = 16000.
  relu.wh = 100;
  relu.p.gate.hidden_to_q3_12 = kTimes16;
  relu.bx = 30000;
  state = {2560};
  relu.step(0, &state);
  EXPECT_EQ(state[0], 32767);  // 30000 + 16000 saturates, no wrap
  relu.bx = 40000;
  relu.wh = -100;
  state = {2560};
  relu.step(0, &state);
  EXPECT_EQ(state[0], 32767 - 16000);  // the input term saturated before the add
  relu.bx = -30000;
  state = {2560};
  relu.step(0, &state);
  EXPECT_EQ(state[0], 0);  // -46000 -> -32768 -> ReLU 0
}

// A stateless first step has no recurrent term, not even the hidden bias; a stateful one from a
// zero state reads the int8 operand zp (and the bias).
TEST(RnnHand, StatelessFirstStepHasNoRecurrentTerm) {
  Tiny t(QLSTM_RNN_RELU, 7);
  t.p.hidden_to_output = kOver16;
  t.bx = 1000;
  t.bh = 50;
  t.wh = 2;  // a zero state's operand 7: acc_h = 50 + 14
  EXPECT_EQ(t.step(0, nullptr), 63 + 7);  // RQ(1000, 1/16) = round(62.5)
  std::vector<int16_t> state = {0};
  EXPECT_EQ(t.step(0, &state), 67 + 7);  // RQ(1064, 1/16) = round(66.5)
  EXPECT_EQ(state[0], 1064);
}

// ---- The kernel against the naive model, and the state contract.

std::string describe(const qlstm_rnn_s8_params& p, int regime, bool stateful) {
  return "B " + std::to_string(p.dims.batch) + " T " + std::to_string(p.dims.time_steps) + " I " +
         std::to_string(p.dims.input_size) + " H " + std::to_string(p.dims.hidden_size) + " activation " +
         std::to_string(p.activation) + " layout " + std::to_string(p.layout) + " direction " +
         std::to_string(p.time_direction) + " steps " + std::to_string(p.output_steps) + " width " +
         std::to_string(p.output_width) + " regime " + std::to_string(regime) + (stateful ? " stateful" : " stateless");
}

TEST(RnnKernel, MatchesNaiveModelOverEdgeShapes) {
  std::mt19937_64 rng(6);
  const int32_t sizes[] = {1, 2, 3, 7, 16, 33};
  int case_index = 0;
  for (int32_t I : sizes) {
    for (int32_t H : sizes) {
      for (int32_t B : {1, 3}) {
        for (int32_t T : {0, 1, 5}) {
          for (int option = 0; option < 12; ++option, ++case_index) {
            const int regime = case_index % 3;
            const int32_t activation = option % 2 == 0 ? QLSTM_RNN_TANH : QLSTM_RNN_RELU;
            RandomRnn rnn;
            make_random_rnn(rnn, rng, {B, T, I, H}, (option / 2) % 2 != 0, static_cast<Regime>(regime), activation);
            qlstm_rnn_s8_params& p = rnn.params;
            p.time_direction = case_index % 4 < 2 ? QLSTM_TIME_REVERSE : QLSTM_TIME_FORWARD;
            p.output_steps = option / 4;  // all, final, first
            p.output_width = case_index % 5 == 0 ? H + 3 : 0;
            const bool stateful = case_index % 7 < 4;
            std::vector<int16_t> state = random_rnn_state(rng, p.dims, false), model_state = state;
            const Call got = run_rnn(p, rnn.input.data(), stateful ? &state : nullptr);
            ASSERT_EQ(got.status, QLSTM_OK) << describe(p, regime, stateful);
            const std::vector<int8_t> want = naive_rnn::run(p, rnn.input.data(), stateful ? &model_state : nullptr,
                                                            qlstm::kSigmoidTableU16, kUntouched);
            ASSERT_EQ(got.output, want) << describe(p, regime, stateful);
            ASSERT_EQ(state, model_state) << describe(p, regime, stateful);
          }
        }
      }
    }
  }
}

// Steps [t0, t0 + count) of a [B][T][n] or [T][B][n] sequence, in the same layout.
std::vector<int8_t> slice_steps(const std::vector<int8_t>& seq, bool time_major, int32_t B, int32_t T, int32_t n,
                                int32_t t0, int32_t count) {
  std::vector<int8_t> out;
  for (int32_t outer = 0; outer < (time_major ? count : B); ++outer) {
    for (int32_t inner = 0; inner < (time_major ? B : count); ++inner) {
      const int32_t b = time_major ? inner : outer, t = t0 + (time_major ? outer : inner);
      const size_t at = static_cast<size_t>(time_major ? (t * B + b) * n : (b * T + t) * n);
      out.insert(out.end(), seq.begin() + static_cast<ptrdiff_t>(at), seq.begin() + static_cast<ptrdiff_t>(at) + n);
    }
  }
  return out;
}

// Two stateful calls of T1 and T2 steps (T1 from the end for a reverse call) equal one call of
// T1 + T2: the outputs, the final state, and a final-state call's row.
TEST(RnnKernel, TwoStreamedCallsEqualOneCall) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int32_t> size(1, 9);
  for (int trial = 0; trial < 200; ++trial) {
    const int32_t B = 1 + trial % 3, T = 2 + trial % 9, I = size(rng), H = size(rng);
    const bool time_major = trial % 2 == 0, reverse = (trial / 2) % 2 == 1;
    RandomRnn rnn;
    make_random_rnn(rnn, rng, {B, T, I, H}, time_major, static_cast<Regime>(trial % 3),
                    (trial / 4) % 2 == 0 ? QLSTM_RNN_TANH : QLSTM_RNN_RELU);
    qlstm_rnn_s8_params& p = rnn.params;
    p.time_direction = reverse ? QLSTM_TIME_REVERSE : QLSTM_TIME_FORWARD;
    const std::vector<int16_t> start = random_rnn_state(rng, p.dims, false);
    std::vector<int16_t> whole_state = start;
    const Call whole = run_rnn(p, rnn.input.data(), &whole_state);
    ASSERT_EQ(whole.status, QLSTM_OK);

    const int32_t t1 = static_cast<int32_t>(rng() % static_cast<uint64_t>(T + 1));
    std::vector<int16_t> state = start;
    for (int part = 0; part < 2; ++part) {
      const int32_t count = part == 0 ? t1 : T - t1, done = part == 0 ? 0 : t1;
      const int32_t t0 = reverse ? T - done - count : done;
      qlstm_rnn_s8_params cp = p;
      cp.dims.time_steps = count;
      const std::vector<int8_t> x = slice_steps(rnn.input, time_major, B, T, I, t0, count);
      const Call got = run_rnn(cp, x.data(), &state);
      ASSERT_EQ(got.status, QLSTM_OK);
      ASSERT_EQ(got.output, slice_steps(whole.output, time_major, B, T, H, t0, count))
          << "trial " << trial << " steps " << t0 << "+" << count;
    }
    ASSERT_EQ(state, whole_state) << "trial " << trial;
    // The last step's row: what a final-state call of the whole sequence writes.
    const int32_t last = reverse ? 0 : T - 1;
    const std::vector<int8_t> last_row = slice_steps(whole.output, time_major, B, T, H, last, 1);
    qlstm_rnn_s8_params fp = p;
    fp.output_steps = QLSTM_OUTPUT_FINAL;
    std::vector<int16_t> final_state = start;
    EXPECT_EQ(run_rnn(fp, rnn.input.data(), &final_state).output, last_row) << "trial " << trial;
    EXPECT_EQ(final_state, whole_state) << "trial " << trial;
  }
}

// With the recurrent bias -zp * rowsum(W_h) (kTypical, kWide), a zero state's int8 operand (all
// zp) adds nothing: a stateful call after a reset equals a stateless call.
TEST(RnnKernel, ResetThenStatefulEqualsStateless) {
  std::mt19937_64 rng(8);
  for (int trial = 0; trial < 40; ++trial) {
    RandomRnn rnn;
    make_random_rnn(rnn, rng, {2, 6, 5, 4}, trial % 2 == 0, trial % 3 == 0 ? Regime::kWide : Regime::kTypical,
                    (trial / 2) % 2 == 0 ? QLSTM_RNN_TANH : QLSTM_RNN_RELU);
    rnn.params.output_steps = trial % 3;
    rnn.params.time_direction = (trial / 4) % 2;
    const Call stateless = run_rnn(rnn.params, rnn.input.data(), nullptr);
    std::vector<int16_t> state = random_rnn_state(rng, rnn.params.dims, false);
    qlstm_rnn_s8_context ctx = {nullptr, 0, state.data()};
    ASSERT_EQ(qlstm_rnn_s8_reset_state(&rnn.params, &ctx), QLSTM_OK);
    for (int16_t v : state) ASSERT_EQ(v, 0);
    const Call stateful = run_rnn(rnn.params, rnn.input.data(), &state);
    ASSERT_EQ(stateless.status, QLSTM_OK);
    ASSERT_EQ(stateful.status, QLSTM_OK);
    EXPECT_EQ(stateless.output, stateful.output) << "trial " << trial;
  }
}

// A stateless first step runs no recurrent matmul: changing the recurrent weights and biases
// leaves a one-step stateless call as it was; a stateful call from a zero state reads them.
TEST(RnnKernel, StatelessFirstStepReadsNoRecurrentWeights) {
  std::mt19937_64 rng(17);
  int stateful_changed = 0;
  for (int trial = 0; trial < 20; ++trial) {
    RandomRnn rnn;
    make_random_rnn(rnn, rng, {2, 1, 5, 6}, trial % 2 == 0, Regime::kTypical,
                    trial % 4 < 2 ? QLSTM_RNN_TANH : QLSTM_RNN_RELU);
    const Call before = run_rnn(rnn.params, rnn.input.data(), nullptr);
    ASSERT_EQ(before.status, QLSTM_OK);
    for (auto& w : rnn.gate.wh) w = static_cast<int8_t>(-w - 1);
    for (auto& b : rnn.gate.bh) b += 1 << 22;
    const Call changed = run_rnn(rnn.params, rnn.input.data(), nullptr);
    ASSERT_EQ(changed.status, QLSTM_OK);
    EXPECT_EQ(changed.output, before.output) << "trial " << trial;
    std::vector<int16_t> zero(12, 0);  // [B][H]
    const Call from_zero = run_rnn(rnn.params, rnn.input.data(), &zero);
    ASSERT_EQ(from_zero.status, QLSTM_OK);
    stateful_changed += from_zero.output != before.output ? 1 : 0;
  }
  EXPECT_GT(stateful_changed, 10);
}

TEST(RnnKernel, NoStepFinalOutputIsInitialState) {
  std::mt19937_64 rng(9);
  for (int32_t steps : {QLSTM_OUTPUT_FINAL, QLSTM_OUTPUT_FIRST}) {
    RandomRnn rnn;
    make_random_rnn(rnn, rng, {3, 0, 4, 5}, false, Regime::kTypical, QLSTM_RNN_TANH);
    qlstm_rnn_s8_params& p = rnn.params;
    p.output_steps = steps;
    p.output_width = 7;
    // Stateless: h = 0, so every written value is the zero point; the rest of each row untouched.
    const Call stateless = run_rnn(p, nullptr, nullptr);
    ASSERT_EQ(stateless.status, QLSTM_OK);
    for (size_t k = 0; k < stateless.output.size(); ++k) {
      EXPECT_EQ(stateless.output[k], k % 7 < 5 ? p.output_zero_point : kUntouched) << k;
    }
    // Stateful from a zero state: the same; from another state: its int8 form, the state untouched.
    std::vector<int16_t> zero(15, 0);
    EXPECT_EQ(run_rnn(p, nullptr, &zero).output, stateless.output);
    std::vector<int16_t> state = random_rnn_state(rng, p.dims, false), before = state;
    const Call carried = run_rnn(p, nullptr, &state);
    ASSERT_EQ(carried.status, QLSTM_OK);
    EXPECT_EQ(state, before);
    EXPECT_EQ(carried.output, naive_rnn::run(p, nullptr, &before, qlstm::kSigmoidTableU16, kUntouched));
    // Every step: nothing written, and no output buffer needed.
    p.output_steps = QLSTM_OUTPUT_ALL_STEPS;
    ScratchBuffer scratch(qlstm_rnn_s8_scratch_bytes(&p.dims));
    qlstm_rnn_s8_context ctx = {scratch.data(), scratch.bytes(), state.data()};
    EXPECT_EQ(qlstm_rnn_s8(&p, &ctx, nullptr, nullptr), QLSTM_OK);
    EXPECT_EQ(state, before);
  }
}

// QLSTM_OUTPUT_FIRST runs the first step processed alone: its row equals that step's row of an
// every-step call, and the state it writes back is that step's.
TEST(RnnKernel, FirstStepRunsOneStep) {
  std::mt19937_64 rng(10);
  for (int trial = 0; trial < 20; ++trial) {
    const bool time_major = trial % 2 == 0, reverse = (trial / 2) % 2 == 1;
    RandomRnn rnn;
    make_random_rnn(rnn, rng, {2, 6, 5, 4}, time_major, Regime::kTypical,
                    trial % 4 < 2 ? QLSTM_RNN_TANH : QLSTM_RNN_RELU);
    qlstm_rnn_s8_params& p = rnn.params;
    p.time_direction = reverse ? QLSTM_TIME_REVERSE : QLSTM_TIME_FORWARD;
    const std::vector<int16_t> start = random_rnn_state(rng, p.dims, false);
    const int32_t first = reverse ? 5 : 0;
    std::vector<int16_t> one_state = start;
    qlstm_rnn_s8_params one = p;
    one.dims.time_steps = 1;
    const std::vector<int8_t> x = slice_steps(rnn.input, time_major, 2, 6, 5, first, 1);
    const Call one_step = run_rnn(one, x.data(), &one_state);
    p.output_steps = QLSTM_OUTPUT_FIRST;
    std::vector<int16_t> state = start;
    const Call got = run_rnn(p, rnn.input.data(), &state);
    ASSERT_EQ(got.status, QLSTM_OK);
    EXPECT_EQ(got.output, one_step.output) << "trial " << trial;
    EXPECT_EQ(state, one_state) << "trial " << trial;
  }
}

// ---- Validation: each bad field gets its status and its name.

class RnnValidation : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(11);
    make_random_rnn(rnn_, rng, {2, 3, 5, 4}, true, Regime::kTypical, QLSTM_RNN_TANH);
    ASSERT_EQ(qlstm_rnn_s8_validate(&rnn_.params, nullptr), QLSTM_OK);
  }
  // The status and field of params changed by `change`; the call and the reset refuse them too.
  void expect_bad(const qlstm_rnn_s8_params& p, qlstm_status status, const std::string& field) {
    const char* name = nullptr;
    EXPECT_EQ(qlstm_rnn_s8_validate(&p, &name), status) << field;
    ASSERT_NE(name, nullptr) << field;
    EXPECT_EQ(std::string(name), field);
    std::vector<int16_t> state(8, 0);
    std::vector<int8_t> out(rnn_output_size(rnn_.params));
    ScratchBuffer scratch(qlstm_rnn_s8_scratch_bytes(&rnn_.params.dims));
    qlstm_rnn_s8_context ctx = {scratch.data(), scratch.bytes(), state.data()};
    EXPECT_EQ(qlstm_rnn_s8(&p, &ctx, rnn_.input.data(), out.data()), status) << field;
    EXPECT_EQ(qlstm_rnn_s8_reset_state(&p, &ctx), status) << field;
  }
  void expect_bad(void (*change)(qlstm_rnn_s8_params&), qlstm_status status, const std::string& field) {
    qlstm_rnn_s8_params p = rnn_.params;
    change(p);
    expect_bad(p, status, field);
  }
  RandomRnn rnn_;
};

TEST_F(RnnValidation, NullParams) {
  const char* name = nullptr;
  EXPECT_EQ(qlstm_rnn_s8_validate(nullptr, &name), QLSTM_ERROR_NULL_POINTER);
  EXPECT_STREQ(name, "params");
  EXPECT_EQ(qlstm_rnn_s8_validate(&rnn_.params, &name), QLSTM_OK);
  EXPECT_EQ(name, nullptr);
}

TEST_F(RnnValidation, DimsAndScratchQuery) {
  expect_bad([](qlstm_rnn_s8_params& p) { p.dims.batch = 0; }, QLSTM_ERROR_BAD_DIMS, "dims");
  expect_bad([](qlstm_rnn_s8_params& p) { p.dims.time_steps = -1; }, QLSTM_ERROR_BAD_DIMS, "dims");
  expect_bad([](qlstm_rnn_s8_params& p) { p.dims.input_size = 0; }, QLSTM_ERROR_BAD_DIMS, "dims");
  expect_bad([](qlstm_rnn_s8_params& p) { p.dims.hidden_size = 0; }, QLSTM_ERROR_BAD_DIMS, "dims");
  expect_bad([](qlstm_rnn_s8_params& p) { p.dims.time_steps = INT32_MAX; }, QLSTM_ERROR_BAD_DIMS, "dims");
  for (const qlstm_rnn_dims& bad : {qlstm_rnn_dims{0, 1, 1, 1}, qlstm_rnn_dims{1, -1, 1, 1}, qlstm_rnn_dims{1, 1, 0, 1},
                                    qlstm_rnn_dims{1, 1, 1, 0}, qlstm_rnn_dims{1, INT32_MAX, 2, 2},
                                    qlstm_rnn_dims{65536, 1, 1, 65536}}) {
    EXPECT_EQ(qlstm_rnn_s8_scratch_bytes(&bad), 0u);
  }
  EXPECT_EQ(qlstm_rnn_s8_scratch_bytes(nullptr), 0u);
  // Valid dims need scratch (a stateless call's int16 state at least), T = 0 included.
  for (const qlstm_rnn_dims& ok : {qlstm_rnn_dims{1, 0, 1, 1}, qlstm_rnn_dims{3, 5, 7, 9}}) {
    EXPECT_GE(qlstm_rnn_s8_scratch_bytes(&ok), sizeof(int16_t) * static_cast<size_t>(ok.batch * ok.hidden_size));
  }
}

TEST_F(RnnValidation, SequenceOptions) {
  expect_bad([](qlstm_rnn_s8_params& p) { p.layout = 2; }, QLSTM_ERROR_BAD_LAYOUT, "layout");
  expect_bad([](qlstm_rnn_s8_params& p) { p.time_direction = -1; }, QLSTM_ERROR_BAD_DIRECTION, "time_direction");
  expect_bad([](qlstm_rnn_s8_params& p) { p.time_direction = 2; }, QLSTM_ERROR_BAD_DIRECTION, "time_direction");
  expect_bad([](qlstm_rnn_s8_params& p) { p.output_steps = 3; }, QLSTM_ERROR_BAD_OUTPUT_STEPS, "output_steps");
  expect_bad([](qlstm_rnn_s8_params& p) { p.output_steps = -1; }, QLSTM_ERROR_BAD_OUTPUT_STEPS, "output_steps");
  expect_bad([](qlstm_rnn_s8_params& p) { p.output_width = 3; }, QLSTM_ERROR_BAD_OUTPUT_WIDTH, "output_width");
  expect_bad([](qlstm_rnn_s8_params& p) { p.output_width = -1; }, QLSTM_ERROR_BAD_OUTPUT_WIDTH, "output_width");
  expect_bad([](qlstm_rnn_s8_params& p) { p.output_width = INT32_MAX; }, QLSTM_ERROR_BAD_OUTPUT_WIDTH,
             "output_width");
}

TEST_F(RnnValidation, GatePointersNamed) {
  expect_bad([](qlstm_rnn_s8_params& p) { p.gate.input_weights = nullptr; }, QLSTM_ERROR_NULL_POINTER,
             "gate.input_weights");
  expect_bad([](qlstm_rnn_s8_params& p) { p.gate.input_effective_bias = nullptr; }, QLSTM_ERROR_NULL_POINTER,
             "gate.input_effective_bias");
  expect_bad([](qlstm_rnn_s8_params& p) { p.gate.hidden_weights = nullptr; }, QLSTM_ERROR_NULL_POINTER,
             "gate.hidden_weights");
  expect_bad([](qlstm_rnn_s8_params& p) { p.gate.hidden_effective_bias = nullptr; }, QLSTM_ERROR_NULL_POINTER,
             "gate.hidden_effective_bias");
}

TEST_F(RnnValidation, RequantizationsNamedPerField) {
  struct Field {
    qlstm_requant& (*of)(qlstm_rnn_s8_params&);
    const char* name;
  };
  const Field fields[] = {
      {[](qlstm_rnn_s8_params& p) -> qlstm_requant& { return p.gate.input_to_q3_12; }, "gate.input_to_q3_12"},
      {[](qlstm_rnn_s8_params& p) -> qlstm_requant& { return p.gate.hidden_to_q3_12; }, "gate.hidden_to_q3_12"},
      {[](qlstm_rnn_s8_params& p) -> qlstm_requant& { return p.hidden_to_output; }, "hidden_to_output"}};
  for (const Field& f : fields) {
    for (int32_t bad_shift : {QLSTM_SHIFT_MIN - 1, QLSTM_SHIFT_MAX + 1}) {
      qlstm_rnn_s8_params p = rnn_.params;
      f.of(p).shift = bad_shift;
      expect_bad(p, QLSTM_ERROR_BAD_SHIFT, std::string(f.name) + ".shift");
    }
    for (int32_t bad_multiplier : {-1, INT32_MIN}) {
      qlstm_rnn_s8_params p = rnn_.params;
      f.of(p).multiplier = bad_multiplier;
      expect_bad(p, QLSTM_ERROR_BAD_MULTIPLIER, std::string(f.name) + ".multiplier");
    }
  }
}

TEST_F(RnnValidation, ActivationAndZeroPoint) {
  expect_bad([](qlstm_rnn_s8_params& p) { p.activation = 2; }, QLSTM_ERROR_BAD_ACTIVATION, "activation");
  expect_bad([](qlstm_rnn_s8_params& p) { p.activation = -1; }, QLSTM_ERROR_BAD_ACTIVATION, "activation");
  expect_bad([](qlstm_rnn_s8_params& p) { p.output_zero_point = 128; }, QLSTM_ERROR_BAD_ZERO_POINT,
             "output_zero_point");
  expect_bad([](qlstm_rnn_s8_params& p) { p.output_zero_point = -129; }, QLSTM_ERROR_BAD_ZERO_POINT,
             "output_zero_point");
}

TEST_F(RnnValidation, AcceptedExtremesRun) {
  for (int32_t activation : {QLSTM_RNN_TANH, QLSTM_RNN_RELU}) {
    qlstm_rnn_s8_params p = rnn_.params;
    p.activation = activation;
    p.gate.input_to_q3_12 = {INT32_MAX, QLSTM_SHIFT_MAX};
    p.gate.hidden_to_q3_12 = {0, QLSTM_SHIFT_MIN};
    p.hidden_to_output = {INT32_MAX, QLSTM_SHIFT_MIN};
    p.output_zero_point = activation == QLSTM_RNN_TANH ? -128 : 127;
    p.output_width = 4;  // H: dense
    std::vector<int16_t> state(8, INT16_MIN), model_state = state;
    const Call got = run_rnn(p, rnn_.input.data(), &state);
    ASSERT_EQ(got.status, QLSTM_OK);
    EXPECT_EQ(got.output, naive_rnn::run(p, rnn_.input.data(), &model_state, qlstm::kSigmoidTableU16, kUntouched));
    EXPECT_EQ(state, model_state);
  }
}

TEST_F(RnnValidation, CallBuffersAndScratch) {
  qlstm_rnn_s8_params p = rnn_.params;
  const size_t need = qlstm_rnn_s8_scratch_bytes(&p.dims);
  ScratchBuffer scratch(need);
  std::vector<int8_t> out(rnn_output_size(p));
  const int8_t* x = rnn_.input.data();
  qlstm_rnn_s8_context ctx = {scratch.data(), need, nullptr};  // exactly the size asked for
  EXPECT_EQ(qlstm_rnn_s8(&p, nullptr, x, out.data()), QLSTM_ERROR_NULL_POINTER);
  EXPECT_EQ(qlstm_rnn_s8(&p, &ctx, nullptr, out.data()), QLSTM_ERROR_NULL_POINTER);
  EXPECT_EQ(qlstm_rnn_s8(&p, &ctx, x, nullptr), QLSTM_ERROR_NULL_POINTER);
  qlstm_rnn_s8_context no_scratch = {nullptr, need, nullptr};
  EXPECT_EQ(qlstm_rnn_s8(&p, &no_scratch, x, out.data()), QLSTM_ERROR_NULL_POINTER);
  qlstm_rnn_s8_context small = {scratch.data(), need - 1, nullptr};
  EXPECT_EQ(qlstm_rnn_s8(&p, &small, x, out.data()), QLSTM_ERROR_SCRATCH_TOO_SMALL);
  qlstm_rnn_s8_context misaligned = {static_cast<char*>(scratch.data()) + 2, scratch.bytes() - 2, nullptr};
  EXPECT_EQ(qlstm_rnn_s8(&p, &misaligned, x, out.data()), QLSTM_ERROR_SCRATCH_MISALIGNED);
  EXPECT_EQ(qlstm_rnn_s8(&p, &ctx, x, out.data()), QLSTM_OK);
  std::vector<int16_t> state(8, 1234);
  qlstm_rnn_s8_context stateful = {scratch.data(), need, state.data()};
  EXPECT_EQ(qlstm_rnn_s8(&p, &stateful, x, out.data()), QLSTM_OK);
  // T = 0: no input needed; the final state's row still needs an output.
  p.dims.time_steps = 0;
  p.output_steps = QLSTM_OUTPUT_FINAL;
  EXPECT_EQ(qlstm_rnn_s8(&p, &ctx, nullptr, out.data()), QLSTM_OK);
  EXPECT_EQ(qlstm_rnn_s8(&p, &ctx, nullptr, nullptr), QLSTM_ERROR_NULL_POINTER);
  // The reset needs a state to reset, and no scratch; it zeroes every [B][H] value.
  EXPECT_EQ(qlstm_rnn_s8_reset_state(&p, nullptr), QLSTM_ERROR_NULL_POINTER);
  EXPECT_EQ(qlstm_rnn_s8_reset_state(&p, &ctx), QLSTM_ERROR_NULL_POINTER);
  qlstm_rnn_s8_context state_only = {nullptr, 0, state.data()};
  EXPECT_EQ(qlstm_rnn_s8_reset_state(&p, &state_only), QLSTM_OK);
  EXPECT_EQ(state, std::vector<int16_t>(8, 0));
}

// ---- The conformance vectors (tests/vectors/make_rnn_vectors.py, its own Python model).

using nlohmann::json;

template <class T>
std::vector<T> ints(const json& j) {
  std::vector<T> v;
  for (const json& x : j) v.push_back(static_cast<T>(x.get<int64_t>()));
  return v;
}

qlstm_requant requant(const json& j) { return {j.at("multiplier").get<int32_t>(), j.at("shift").get<int32_t>()}; }

int32_t output_steps_of(const std::string& s) {
  if (s == "all") return QLSTM_OUTPUT_ALL_STEPS;
  if (s == "final") return QLSTM_OUTPUT_FINAL;
  EXPECT_EQ(s, "first");
  return QLSTM_OUTPUT_FIRST;
}

// One case's arrays, owned, and a parameter block pointing into them.
struct VectorCase {
  std::vector<int8_t> wx, wh, input, want;
  std::vector<int32_t> bx, bh;
  std::vector<int16_t> initial, want_final;  // empty: a stateless case
  bool stateful = false;
  qlstm_rnn_s8_params params{};

  explicit VectorCase(const json& c) {
    params.dims = {c.at("batch"), c.at("time_steps"), c.at("input_size"), c.at("hidden_size")};
    params.layout = c.at("time_major").get<bool>() ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR;
    const std::string act = c.at("activation"), direction = c.at("time_direction");
    EXPECT_TRUE(act == "tanh" || act == "relu") << act;
    EXPECT_TRUE(direction == "forward" || direction == "reverse") << direction;
    params.activation = act == "relu" ? QLSTM_RNN_RELU : QLSTM_RNN_TANH;
    params.time_direction = direction == "reverse" ? QLSTM_TIME_REVERSE : QLSTM_TIME_FORWARD;
    params.output_steps = output_steps_of(c.at("output_steps"));
    params.output_zero_point = c.at("output_zero_point");
    params.hidden_to_output = requant(c.at("hidden_to_output"));
    wx = ints<int8_t>(c.at("input_weights"));
    wh = ints<int8_t>(c.at("hidden_weights"));
    bx = ints<int32_t>(c.at("input_effective_bias"));
    bh = ints<int32_t>(c.at("hidden_effective_bias"));
    params.gate = {requant(c.at("input_to_q3_12")), wx.data(), bx.data(), requant(c.at("hidden_to_q3_12")),
                   wh.data(), bh.data()};
    input = ints<int8_t>(c.at("input"));
    want = ints<int8_t>(c.at("expected_output"));
    stateful = !c.at("initial_hidden").is_null();
    if (stateful) {
      initial = ints<int16_t>(c.at("initial_hidden"));
      want_final = ints<int16_t>(c.at("expected_final_hidden"));
    }
  }
};

// The case through one variant (nullptr: qlstm_rnn_s8): the output and the final state equal
// the file's. Returns false when this CPU lacks the variant.
bool check_vector_case(const VectorCase& vc, const qlstm::RnnS8Variant* v) {
  const qlstm_rnn_s8_params& p = vc.params;
  ScratchBuffer scratch(qlstm_rnn_s8_scratch_bytes(&p.dims));
  std::vector<int16_t> state = vc.initial;
  std::vector<int8_t> y(vc.want.size(), kUntouched);
  qlstm_rnn_s8_context ctx = {scratch.data(), scratch.bytes(), vc.stateful ? state.data() : nullptr};
  const qlstm_status st = v == nullptr ? qlstm_rnn_s8(&p, &ctx, vc.input.data(), y.data())
                                       : qlstm::run_rnn_s8(*v, &p, &ctx, vc.input.data(), y.data());
  if (st == QLSTM_ERROR_UNSUPPORTED && v != nullptr && v->is_supported != nullptr && !v->is_supported()) return false;
  const std::string name = v == nullptr ? "qlstm_rnn_s8" : v->name;
  EXPECT_EQ(st, QLSTM_OK) << name;
  EXPECT_EQ(y, vc.want) << name;
  EXPECT_EQ(state, vc.want_final) << name;
  return true;
}

TEST(RnnVectors, EveryCaseEqualsThePythonModelThroughEveryVariant) {
  const std::string path = std::string(QLSTM_TEST_VECTORS_DIR) + "/rnn_s8.json";
  std::ifstream f(path);
  ASSERT_TRUE(f) << path;
  const json doc = json::parse(f);
  ASSERT_EQ(doc.at("format"), "rnn-s8-kernel-vectors/1");
  size_t n = 0;
  const qlstm::RnnS8Variant* const* all = qlstm::rnn_s8_variants(&n);
  size_t cases = 0, relu = 0, stateful = 0, runs = 0;
  for (const json& c : doc.at("cases")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const VectorCase vc(c);
    ASSERT_EQ(vc.want.size(), rnn_output_size(vc.params));
    check_vector_case(vc, nullptr);
    for (size_t k = 0; k < n; ++k) runs += check_vector_case(vc, all[k]) ? 1 : 0;
    // The naive model agrees too (the C++ and the Python models of one spec).
    std::vector<int16_t> model_state = vc.initial;
    EXPECT_EQ(naive_rnn::run(vc.params, vc.input.data(), vc.stateful ? &model_state : nullptr,
                             qlstm::kSigmoidTableU16, kUntouched),
              vc.want);
    EXPECT_EQ(model_state, vc.want_final);
    ++cases;
    relu += vc.params.activation == QLSTM_RNN_RELU ? 1 : 0;
    stateful += vc.stateful ? 1 : 0;
  }
  EXPECT_EQ(cases, 126u);
  EXPECT_GT(relu, 0u);
  EXPECT_LT(relu, cases);
  EXPECT_GT(stateful, 0u);
  EXPECT_LT(stateful, cases);
  std::printf("RNN vectors: %zu cases, %zu variant runs\n", cases, runs);
}

}  // namespace
