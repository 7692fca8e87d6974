// Every vanilla RNN variant built into this binary and supported by this CPU (kernels.h's
// RnnS8Variant) against the reference and the test's independent model (tests/support/
// naive_rnn.h) with zero tolerance: whole sequences over every input and hidden size from 1 to 33
// and larger ones (around 64 and 128, and 257), 1 to 5 batch rows, both layouts, forward and
// reverse, every step, the final state or the first step alone, dense and wider output rows,
// stateless and stateful, tanh and ReLU, three regimes of parameters (typical, wide, extreme:
// weights at the int8 ends, biases over all of int32, any multiplier and shift); then each stage
// against the reference's on strided rows and edge counts. A variant this CPU lacks returns
// QLSTM_ERROR_UNSUPPORTED when run explicitly and is skipped by name.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "naive_rnn.h"
#include "qlstm/activation_s16.h"
#include "qlstm/kernels.h"
#include "random_rnn.h"
#include "reference/rnn_s8_reference.h"
#include "scratch_buffer.h"

namespace {

using testing_support::make_random_rnn;
using testing_support::random_requant;
using testing_support::random_rnn_state;
using testing_support::RandomRnn;
using testing_support::Regime;
using testing_support::rnn_output_size;

constexpr int8_t kUntouched = 0x5a;  // what output positions the kernel does not write hold

std::vector<const qlstm::RnnS8Variant*> all_rnn_variants() {
  size_t n = 0;
  const qlstm::RnnS8Variant* const* all = qlstm::rnn_s8_variants(&n);
  return std::vector<const qlstm::RnnS8Variant*>(all, all + n);
}

// The sizes past 33: lane widths and chunk sizes times two and four, minus one, equal and plus
// one, and 257.
const int kLargeSizes[] = {63, 64, 65, 127, 128, 129, 257};

struct Call {
  qlstm_status status;
  std::vector<int8_t> output;
  std::vector<int16_t> state;  // the final state of a stateful call
};

// One call; start nullptr: stateless.
Call run(const qlstm::RnnS8Variant& v, const qlstm_rnn_s8_params& p, const int8_t* input,
         const std::vector<int16_t>* start) {
  testing_support::ScratchBuffer scratch(qlstm_rnn_s8_scratch_bytes(&p.dims));
  Call c;
  if (start != nullptr) c.state = *start;
  c.output.assign(rnn_output_size(p), kUntouched);
  qlstm_rnn_s8_context ctx = {scratch.data(), scratch.bytes(), start != nullptr ? c.state.data() : nullptr};
  c.status = qlstm::run_rnn_s8(v, &p, &ctx, input, c.output.data());
  return c;
}

struct Options {
  bool relu, time_major, reverse, one_step_out, wide_output, stateful;
};

// The options of case k: every combination over 64 consecutive cases.
Options options(int k) {
  return {k % 2 == 1, (k / 2) % 2 == 0, (k / 4) % 2 == 1, (k / 8) % 2 == 1, (k / 16) % 2 == 1, (k / 32) % 2 == 0};
}

const char* const kStepsNames[] = {"every-step", "final-state", "first-step"};

std::string describe(const qlstm::RnnS8Variant& v, const qlstm_rnn_s8_params& p, const Options& o, Regime regime) {
  return std::string(v.name) + " B=" + std::to_string(p.dims.batch) + " T=" + std::to_string(p.dims.time_steps) +
         " I=" + std::to_string(p.dims.input_size) + " H=" + std::to_string(p.dims.hidden_size) +
         (o.relu ? " relu" : " tanh") + (o.time_major ? " time-major" : " batch-major") +
         (o.reverse ? " reverse " : " forward ") + kStepsNames[p.output_steps] + " width " +
         std::to_string(p.output_width) + (o.stateful ? " stateful" : " stateless") + " regime " +
         std::to_string(static_cast<int>(regime));
}

class RnnVariantTest : public ::testing::TestWithParam<const qlstm::RnnS8Variant*> {
 protected:
  void SetUp() override {
    const qlstm::RnnS8Variant& v = *GetParam();
    if (v.is_supported != nullptr && !v.is_supported()) {
      std::mt19937_64 rng(1);
      RandomRnn rnn;
      make_random_rnn(rnn, rng, {1, 2, 3, 4}, false, Regime::kTypical, QLSTM_RNN_TANH);
      ASSERT_EQ(run(v, rnn.params, rnn.input.data(), nullptr).status, QLSTM_ERROR_UNSUPPORTED)
          << v.name << " run explicitly on a CPU that lacks it";
      GTEST_SKIP() << "RNN variant " << v.name << ": not supported on this CPU (is_supported() is false)";
    }
  }
  void TearDown() override {
    if (declined_ > 0) {
      std::printf("RNN variant %s declined %d of %d calls (can_run): QLSTM_ERROR_NO_VARIANT\n", GetParam()->name,
                  declined_, declined_ + compared_);
    }
  }

  // One random call of the variant against the model and the reference, output and final state.
  void check(std::mt19937_64& rng, qlstm_rnn_dims dims, const Options& o, Regime regime) {
    const qlstm::RnnS8Variant& v = *GetParam();
    RandomRnn rnn;
    make_random_rnn(rnn, rng, dims, o.time_major, regime, o.relu ? QLSTM_RNN_RELU : QLSTM_RNN_TANH);
    if (regime == Regime::kExtreme && rng() % 2 == 0) testing_support::push_rnn_to_int8_ends(rnn, rng);
    qlstm_rnn_s8_params& p = rnn.params;
    p.time_direction = o.reverse ? QLSTM_TIME_REVERSE : QLSTM_TIME_FORWARD;
    // One row written: the final state, or the first step run alone (a reverse op's y[:, -1]).
    p.output_steps = !o.one_step_out ? QLSTM_OUTPUT_ALL_STEPS : rng() % 2 ? QLSTM_OUTPUT_FIRST : QLSTM_OUTPUT_FINAL;
    p.output_width = o.wide_output ? dims.hidden_size + 1 + static_cast<int32_t>(rng() % 7) : 0;
    const bool non_negative = o.relu && regime == Regime::kTypical;
    const std::vector<int16_t> start = random_rnn_state(rng, dims, non_negative);
    const std::vector<int16_t>* from = o.stateful ? &start : nullptr;
    const std::string what = describe(v, p, o, regime);

    const Call got = run(v, p, rnn.input.data(), from);
    if (v.can_run != nullptr && !v.can_run(p)) {
      ASSERT_EQ(got.status, QLSTM_ERROR_NO_VARIANT) << what;
      ++declined_;
      return;
    }
    ++compared_;
    ASSERT_EQ(got.status, QLSTM_OK) << what;
    std::vector<int16_t> model_state = start;
    const std::vector<int8_t> want = naive_rnn::run(p, rnn.input.data(), o.stateful ? &model_state : nullptr,
                                                    qlstm::kSigmoidTableU16, kUntouched);
    ASSERT_EQ(got.output, want) << what;
    if (o.stateful) {
      ASSERT_EQ(got.state, model_state) << what;
    }
    if (&v != &qlstm::kRnnS8ReferenceVariant) {
      const Call ref = run(qlstm::kRnnS8ReferenceVariant, p, rnn.input.data(), from);
      ASSERT_EQ(ref.status, QLSTM_OK) << what;
      ASSERT_EQ(got.output, ref.output) << what << " vs reference";
      ASSERT_EQ(got.state, ref.state) << what << " vs reference";
    }
  }

  int compared_ = 0, declined_ = 0;
};

int random_size(std::mt19937_64& rng) {
  constexpr int kSmallMax = 33;
  constexpr int kLargeCount = sizeof(kLargeSizes) / sizeof(kLargeSizes[0]);
  return rng() % 4 == 0 ? kLargeSizes[rng() % kLargeCount] : 1 + static_cast<int>(rng() % kSmallMax);
}

TEST_P(RnnVariantTest, EveryInputSizeTo33) {
  std::mt19937_64 rng(100);
  int k = 0;
  for (int I = 1; I <= 33; ++I) {
    for (Regime regime : {Regime::kTypical, Regime::kWide, Regime::kExtreme}) {
      const int B = 1 + static_cast<int>(rng() % 5), T = static_cast<int>(rng() % 4);
      check(rng, {B, T, I, random_size(rng)}, options(k++), regime);
    }
  }
}

TEST_P(RnnVariantTest, EveryHiddenSizeTo33) {
  std::mt19937_64 rng(200);
  int k = 0;
  for (int H = 1; H <= 33; ++H) {
    for (Regime regime : {Regime::kTypical, Regime::kWide, Regime::kExtreme}) {
      const int B = 1 + static_cast<int>(rng() % 5), T = 1 + static_cast<int>(rng() % 3);
      check(rng, {B, T, random_size(rng), H}, options(k++), regime);
    }
  }
}

// Every (I, H) pair up to 33: the lane tails of the input and the recurrent matmul together.
TEST_P(RnnVariantTest, EverySizePairTo33) {
  std::mt19937_64 rng(250);
  int k = 0;
  for (int I = 1; I <= 33; ++I) {
    for (int H = 1; H <= 33; ++H, ++k) {
      const int B = 1 + static_cast<int>(rng() % 5), T = static_cast<int>(rng() % 5);
      check(rng, {B, T, I, H}, options(static_cast<int>(rng() % 64)), static_cast<Regime>(k % 3));
    }
  }
}

TEST_P(RnnVariantTest, LargeSizes) {
  std::mt19937_64 rng(300);
  int k = 0;
  for (int H : kLargeSizes) {
    for (int I : {1, 17, 64, 257}) {
      const int B = 1 + static_cast<int>(rng() % 2), T = 1 + static_cast<int>(rng() % 2);
      // Random options: 28 cases would not reach the stateless half of options(k).
      check(rng, {B, T, I, H}, options(static_cast<int>(rng() % 64)), static_cast<Regime>(k % 3));
      ++k;
    }
  }
}

TEST_P(RnnVariantTest, LongerSequencesAndEveryOption) {
  std::mt19937_64 rng(400);
  for (int k = 0; k < 128; ++k) {
    const int B = 1 + static_cast<int>(rng() % 5), T = 8 + static_cast<int>(rng() % 20);
    const int I = 1 + static_cast<int>(rng() % 40), H = 1 + static_cast<int>(rng() % 40);
    check(rng, {B, T, I, H}, options(k), static_cast<Regime>(k % 3));
  }
}

// The gate stage on its own: strided rows of x and h (or no h: a stateless first step), the
// call's gate block (tanh, or ReLU as HardSigmoid's unit line); equal to the reference's and to
// the model's unit.
TEST_P(RnnVariantTest, GateStageWithStridesMatchesReferenceAndModel) {
  const qlstm::RnnS8Variant& v = *GetParam();
  std::mt19937_64 rng(500);
  for (int k = 0; k < 120; ++k) {
    const int I = random_size(rng), H = random_size(rng), B = 1 + k % 5;
    RandomRnn rnn;
    make_random_rnn(rnn, rng, {B, 1, I, H}, true, static_cast<Regime>(k % 3),
                    (k / 3) % 2 == 0 ? QLSTM_RNN_TANH : QLSTM_RNN_RELU);
    const ptrdiff_t xs = I + 3, hs = H + 5;  // strides wider than a row
    std::vector<int8_t> x(static_cast<size_t>(B * xs)), h(static_cast<size_t>(B * hs));
    for (auto& e : x) e = static_cast<int8_t>(rng());
    for (auto& e : h) e = static_cast<int8_t>(rng());
    const bool no_h = k % 4 == 3;
    const qlstm::GateArgs a = {B, I, H, x.data(), xs, no_h ? nullptr : h.data(), hs};
    const size_t BH = static_cast<size_t>(B * H);
    std::vector<int16_t> got(BH, -7), want(BH, 7);
    const qlstm_gate_s8_params block = qlstm::rnn_reference::gate_block(rnn.params);
    v.gate(block, a, got.data());
    qlstm::kRnnS8ReferenceVariant.gate(block, a, want.data());
    const std::string what = std::string(v.name) + " B=" + std::to_string(B) + " I=" + std::to_string(I) +
                             " H=" + std::to_string(H) + " case " + std::to_string(k);
    ASSERT_EQ(got, want) << what;
    for (int b = 0; b < B; ++b) {
      std::vector<naive::i64> xb(static_cast<size_t>(I)), hb(static_cast<size_t>(H));
      for (int j = 0; j < I; ++j) xb[static_cast<size_t>(j)] = x[static_cast<size_t>(b * xs + j)];
      for (int j = 0; j < H; ++j) hb[static_cast<size_t>(j)] = h[static_cast<size_t>(b * hs + j)];
      for (int r = 0; r < H; ++r) {
        ASSERT_EQ(got[static_cast<size_t>(b * H + r)],
                  naive_rnn::unit(rnn.params, xb, no_h ? nullptr : &hb, r, qlstm::kSigmoidTableU16))
            << what << " row " << b << " unit " << r;
      }
    }
  }
}

// The output stage over edge counts and all of int16, any requantization and zero point; it
// leaves the rest of each strided row alone.
TEST_P(RnnVariantTest, OutputStageMatchesReference) {
  const qlstm::RnnS8Variant& v = *GetParam();
  const qlstm::RnnS8Variant& ref = qlstm::kRnnS8ReferenceVariant;
  std::mt19937_64 rng(600);
  std::uniform_int_distribution<int32_t> s16(INT16_MIN, INT16_MAX), s8(INT8_MIN, INT8_MAX);
  for (int k = 0; k < 300; ++k) {
    const int n = k < 40 ? 1 + k : random_size(rng);
    const qlstm_requant q = k % 3 == 0 ? random_requant(rng, -9, -2) : random_requant(rng, -31, 31);
    const int rows = 1 + k % 3;
    const ptrdiff_t stride = n + 2;
    const int32_t zero_point = s8(rng);
    std::vector<int16_t> state(static_cast<size_t>(rows * n));
    for (auto& e : state) e = static_cast<int16_t>(s16(rng));
    std::vector<int8_t> y_got(static_cast<size_t>(rows * stride), kUntouched), y_want = y_got;
    v.output(q, zero_point, rows, n, state.data(), y_got.data(), stride);
    ref.output(q, zero_point, rows, n, state.data(), y_want.data(), stride);
    ASSERT_EQ(y_got, y_want) << v.name << " output n=" << n << " case " << k;
    for (int b = 0; b < rows; ++b) {
      for (int r = 0; r < n; ++r) {
        ASSERT_EQ(y_got[static_cast<size_t>(b * stride + r)],
                  naive_rnn::output(state[static_cast<size_t>(b * n + r)], q, zero_point))
            << v.name << " output n=" << n << " case " << k;
      }
      ASSERT_EQ(y_got[static_cast<size_t>(b * stride + n)], kUntouched) << "wrote past the row";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, RnnVariantTest, ::testing::ValuesIn(all_rnn_variants()),
                         [](const ::testing::TestParamInfo<const qlstm::RnnS8Variant*>& i) {
                           return std::string(i.param->name);
                         });

TEST(RnnVariantList, ReferenceIsLastAndEveryEntryHasItsStages) {
  size_t n = 0;
  const qlstm::RnnS8Variant* const* all = qlstm::rnn_s8_variants(&n);
  ASSERT_GE(n, 1u);
  EXPECT_EQ(all[n - 1], &qlstm::kRnnS8ReferenceVariant);
  EXPECT_EQ(all[n - 1]->can_run, nullptr) << "the reference runs every call";
  for (size_t k = 0; k < n; ++k) {
    EXPECT_NE(all[k]->gate, nullptr) << all[k]->name;
    EXPECT_NE(all[k]->output, nullptr) << all[k]->name;
  }
}

// Each RNN variant is its ISA's LSTM gate and GRU output stage: both lists have its name.
TEST(RnnVariantList, EachVariantSharesAnLstmAndAGruVariant) {
  size_t nrnn = 0, nlstm = 0, ngru = 0;
  const qlstm::RnnS8Variant* const* rnn = qlstm::rnn_s8_variants(&nrnn);
  const qlstm::LstmS8Variant* const* lstm = qlstm::lstm_s8_variants(&nlstm);
  const qlstm::GruS8Variant* const* gru = qlstm::gru_s8_variants(&ngru);
  for (size_t k = 0; k < nrnn; ++k) {
    bool in_lstm = false, in_gru = false;
    for (size_t j = 0; j < nlstm; ++j) in_lstm = in_lstm || std::string(lstm[j]->name) == rnn[k]->name;
    for (size_t j = 0; j < ngru; ++j) in_gru = in_gru || std::string(gru[j]->name) == rnn[k]->name;
    EXPECT_TRUE(in_lstm) << rnn[k]->name;
    EXPECT_TRUE(in_gru) << rnn[k]->name;
  }
}

// qlstm_rnn_s8 and run_rnn_s8_prechecked with no variant dispatch to a supported variant; all
// equal to the reference forced by run_rnn_s8.
TEST(RnnDispatch, DefaultEqualsTheReference) {
  std::mt19937_64 rng(700);
  for (int32_t act : {QLSTM_RNN_TANH, QLSTM_RNN_RELU}) {
    RandomRnn rnn;
    make_random_rnn(rnn, rng, {3, 5, 19, 37}, false, Regime::kTypical, act);
    const qlstm_rnn_s8_params& p = rnn.params;
    testing_support::ScratchBuffer scratch(qlstm_rnn_s8_scratch_bytes(&p.dims));
    const std::vector<int16_t> start = random_rnn_state(rng, p.dims, act == QLSTM_RNN_RELU);
    std::vector<int16_t> state[3] = {start, start, start};
    std::vector<int8_t> out[3];
    for (int r = 0; r < 3; ++r) {
      out[r].assign(rnn_output_size(p), kUntouched);
      qlstm_rnn_s8_context ctx = {scratch.data(), scratch.bytes(), state[r].data()};
      qlstm_status st = QLSTM_OK;
      if (r == 0) st = qlstm_rnn_s8(&p, &ctx, rnn.input.data(), out[r].data());
      if (r == 1) st = qlstm::run_rnn_s8_prechecked(nullptr, p, ctx, rnn.input.data(), out[r].data());
      if (r == 2) st = qlstm::run_rnn_s8(qlstm::kRnnS8ReferenceVariant, &p, &ctx, rnn.input.data(), out[r].data());
      ASSERT_EQ(st, QLSTM_OK) << r;
    }
    EXPECT_EQ(out[0], out[2]);
    EXPECT_EQ(out[1], out[2]);
    EXPECT_EQ(state[0], state[2]);
    EXPECT_EQ(state[1], state[2]);
  }
}

// run_rnn_s8 checks the call before the variant: an invalid call is refused with its own status
// by every variant, supported or not.
TEST(RnnDispatch, InvalidCallsAreRefusedByEveryVariant) {
  std::mt19937_64 rng(800);
  RandomRnn rnn;
  make_random_rnn(rnn, rng, {1, 2, 3, 4}, false, Regime::kTypical, QLSTM_RNN_TANH);
  qlstm_rnn_s8_params bad = rnn.params;
  bad.gate.hidden_weights = nullptr;
  qlstm_rnn_s8_params bad_activation = rnn.params;
  bad_activation.activation = 2;
  for (const qlstm::RnnS8Variant* v : all_rnn_variants()) {
    EXPECT_EQ(run(*v, bad, rnn.input.data(), nullptr).status, QLSTM_ERROR_NULL_POINTER) << v->name;
    EXPECT_EQ(run(*v, bad_activation, rnn.input.data(), nullptr).status, QLSTM_ERROR_BAD_ACTIVATION) << v->name;
    EXPECT_EQ(qlstm::run_rnn_s8(*v, &rnn.params, nullptr, rnn.input.data(), nullptr), QLSTM_ERROR_NULL_POINTER)
        << v->name;
  }
}

}  // namespace
