// Every kernel variant built into this binary and supported by this CPU, stage by stage and
// whole sequences, against the test's independent model with zero tolerance, over edge sizes
// (1, around powers of two, primes), both layouts, stateless and stateful, and three regimes of
// parameters (typical, wide, extreme). Non-reference variants are also compared with the
// reference; reverse and strided-output calls are compared with the reference, or must be
// declined with QLSTM_ERROR_NO_VARIANT when the variant's can_run says no. A variant this CPU
// lacks is skipped with a message naming it. This file is the drop-in contract for optimized
// variants.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "naive_lstm.h"
#include "qlstm/activation_s16.h"
#include "qlstm/kernels.h"
#include "random_lstm.h"
#include "scratch_buffer.h"

namespace {

using testing_support::make_random_lstm;
using testing_support::RandomLstm;
using testing_support::Regime;

std::vector<const qlstm::LstmS8Variant*> all_variants() {
  size_t n = 0;
  const qlstm::LstmS8Variant* const* all = qlstm::lstm_s8_variants(&n);
  return std::vector<const qlstm::LstmS8Variant*>(all, all + n);
}

bool declines(const qlstm::LstmS8Variant& v, const qlstm_lstm_s8_params& p) {
  return v.can_run != nullptr && !v.can_run(p);
}

// Calls a test compared, and calls the variant declined (each checked to return
// QLSTM_ERROR_NO_VARIANT), printed after the test.
struct Tally {
  int run = 0;
  int declined = 0;
};

// Every variant of the list; one this CPU lacks is skipped, by name.
class VariantTest : public ::testing::TestWithParam<const qlstm::LstmS8Variant*> {
 protected:
  void SetUp() override {
    const qlstm::LstmS8Variant& v = *GetParam();
    if (v.is_supported != nullptr && !v.is_supported()) {
      GTEST_SKIP() << "variant " << v.name << ": not supported on this CPU (is_supported() is false)";
    }
  }
  void TearDown() override {
    if (tally_.declined > 0) {
      std::printf("variant %s declined %d of %d calls (can_run): QLSTM_ERROR_NO_VARIANT, dispatch passes them on\n",
                  GetParam()->name, tally_.declined, tally_.declined + tally_.run);
    }
  }
  Tally tally_;
};

// Lane widths of the variants (4, 8, 16, 32 elements) minus one, equal and plus one, and large.
const int kEdgeSizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 257};
constexpr int kEdgeCount = sizeof(kEdgeSizes) / sizeof(kEdgeSizes[0]);

struct RunResult {
  qlstm_status status;
  std::vector<int8_t> out;
  naive::State state;
};

RunResult run_variant(const qlstm::LstmS8Variant& v, const qlstm_lstm_s8_params& p,
                      const int8_t* input, const naive::State* start) {
  RunResult r;
  const size_t BH = static_cast<size_t>(p.dims.batch) * static_cast<size_t>(p.dims.hidden_size);
  testing_support::ScratchBuffer scratch(p.dims);
  r.state.cell = start ? start->cell : std::vector<int16_t>(BH, 777);  // stateless must zero it
  r.state.hidden = start ? start->hidden : std::vector<int8_t>();
  r.out.assign(BH * static_cast<size_t>(p.dims.time_steps), 0x55);
  qlstm_lstm_s8_context ctx =
      scratch.context(r.state.cell.data(), start ? r.state.hidden.data() : nullptr);
  r.status = qlstm::run_lstm_s8(v, &p, &ctx, input, r.out.data());
  return r;
}

// hard_sigmoid: the sigmoid gates are HardSigmoid gates with random lines.
void check_case(const qlstm::LstmS8Variant& v, std::mt19937_64& rng, qlstm_lstm_dims dims,
                bool time_major, Regime regime, bool stateful, Tally* tally, bool hard_sigmoid = false) {
  RandomLstm l;
  make_random_lstm(l, rng, dims, time_major, regime);
  if (hard_sigmoid) testing_support::make_hard_sigmoid_gates(l, rng, regime);
  naive::State start;
  const size_t BH = static_cast<size_t>(dims.batch) * static_cast<size_t>(dims.hidden_size);
  if (stateful) {
    std::uniform_int_distribution<int> s8(-128, 127), s16(-32768, 32767);
    for (size_t k = 0; k < BH; ++k) {
      start.hidden.push_back(static_cast<int8_t>(s8(rng)));
      start.cell.push_back(static_cast<int16_t>(s16(rng)));
    }
  }
  naive::State expected_state = start;
  const auto expected = naive::run(l.params, l.input.data(), stateful ? &expected_state : nullptr,
                                   qlstm::kSigmoidTableU16);
  const RunResult got = run_variant(v, l.params, l.input.data(), stateful ? &start : nullptr);
  if (declines(v, l.params)) {  // dispatch passes the call on; an explicit run says why
    ASSERT_EQ(got.status, QLSTM_ERROR_NO_VARIANT) << v.name;
    ++tally->declined;
    return;
  }
  ++tally->run;
  const std::string what = std::string(v.name) + " B=" + std::to_string(dims.batch) +
                           " T=" + std::to_string(dims.time_steps) + " I=" +
                           std::to_string(dims.input_size) + " H=" + std::to_string(dims.hidden_size) +
                           (time_major ? " time-major" : " batch-major") +
                           (stateful ? " stateful" : " stateless") + " regime " +
                           std::to_string(static_cast<int>(regime)) + (hard_sigmoid ? " HardSigmoid" : "");
  ASSERT_EQ(got.status, QLSTM_OK) << what;
  ASSERT_EQ(got.out, expected) << what;
  if (stateful) {
    ASSERT_EQ(got.state.hidden, expected_state.hidden) << what;
    ASSERT_EQ(got.state.cell, expected_state.cell) << what;
  }
  if (&v != &qlstm::lstm_s8_reference_variant()) {
    const RunResult ref = run_variant(qlstm::lstm_s8_reference_variant(), l.params,
                                      l.input.data(), stateful ? &start : nullptr);
    ASSERT_EQ(got.out, ref.out) << what << " vs reference";
  }
}

TEST_P(VariantTest, SequencesOverEdgeInputSizes) {
  std::mt19937_64 rng(1000);
  for (int I : kEdgeSizes) {
    const int H = kEdgeSizes[rng() % kEdgeCount];
    for (Regime regime : {Regime::kTypical, Regime::kWide, Regime::kExtreme}) {
      const int B = 1 + static_cast<int>(rng() % 3);
      const int T = static_cast<int>(rng() % 4);
      check_case(*GetParam(), rng, {B, T, I, H}, rng() % 2 == 0, regime, rng() % 2 == 0, &tally_);
    }
  }
}

TEST_P(VariantTest, SequencesOverEdgeHiddenSizes) {
  std::mt19937_64 rng(2000);
  for (int H : kEdgeSizes) {
    const int I = kEdgeSizes[rng() % kEdgeCount];
    for (Regime regime : {Regime::kTypical, Regime::kWide, Regime::kExtreme}) {
      for (bool stateful : {false, true}) {
        const int B = 1 + static_cast<int>(rng() % 4);
        const int T = 1 + static_cast<int>(rng() % 3);
        check_case(*GetParam(), rng, {B, T, I, H}, rng() % 2 == 0, regime, stateful, &tally_);
      }
    }
  }
}

// HardSigmoid gates (docs/arithmetic.md §3.1): every edge size of I and of H, the three regimes,
// both layouts, stateless and stateful.
TEST_P(VariantTest, HardSigmoidGatesOverEdgeSizes) {
  std::mt19937_64 rng(2500);
  for (int k = 0; k < kEdgeCount; ++k) {
    for (Regime regime : {Regime::kTypical, Regime::kWide, Regime::kExtreme}) {
      const int I = kEdgeSizes[k], H = kEdgeSizes[rng() % kEdgeCount];
      const int B = 1 + static_cast<int>(rng() % 3), T = 1 + static_cast<int>(rng() % 4);
      check_case(*GetParam(), rng, {B, T, I, H}, rng() % 2 == 0, regime, rng() % 2 == 0, &tally_, true);
      check_case(*GetParam(), rng, {B, T, H, I}, rng() % 2 == 0, regime, rng() % 2 == 0, &tally_, true);
    }
  }
}

TEST_P(VariantTest, LongerSequencesAndBatches) {
  std::mt19937_64 rng(3000);
  for (int k = 0; k < 12; ++k) {
    const int B = 1 + static_cast<int>(rng() % 5);
    const int T = 8 + static_cast<int>(rng() % 30);
    const int I = 1 + static_cast<int>(rng() % 40);
    const int H = 1 + static_cast<int>(rng() % 40);
    check_case(*GetParam(), rng, {B, T, I, H}, k % 2 == 0, static_cast<Regime>(k % 3), k % 4 < 2, &tally_);
  }
}

// Reverse and strided-output calls (a bidirectional layer's two halves): bit for bit the
// reference's (tests/streaming/direction_test.cc checks the reference's directions), or declined.
TEST_P(VariantTest, ReverseAndStridedCallsMatchReference) {
  const qlstm::LstmS8Variant& v = *GetParam();
  if (&v == &qlstm::lstm_s8_reference_variant()) GTEST_SKIP() << "the reference is the expectation";
  std::mt19937_64 rng(6000);
  for (int k = 0; k < 40; ++k) {
    const int B = 1 + static_cast<int>(rng() % 3), T = static_cast<int>(rng() % 9);
    const int I = kEdgeSizes[rng() % kEdgeCount], H = kEdgeSizes[rng() % kEdgeCount];
    RandomLstm l;
    make_random_lstm(l, rng, {B, T, I, H}, k % 2 == 0, static_cast<Regime>(k % 3));
    l.params.time_direction = k % 4 < 2 ? QLSTM_TIME_REVERSE : QLSTM_TIME_FORWARD;
    l.params.output_width = k % 4 == 1 || k % 4 == 2 ? H + 1 + static_cast<int>(rng() % 7) : 0;
    const size_t out_bytes = static_cast<size_t>(B * T) * static_cast<size_t>(l.params.output_width > 0 ? l.params.output_width : H);
    const size_t BH = static_cast<size_t>(B * H);
    std::vector<int8_t> out[2];
    std::vector<int16_t> cell[2];
    std::vector<int8_t> hidden[2];
    qlstm_status st[2];
    for (int r = 0; r < 2; ++r) {  // 0: the variant, 1: the reference
      testing_support::ScratchBuffer scratch(l.params.dims);
      out[r].assign(out_bytes, 0x5a);
      cell[r].assign(BH, 1234);
      hidden[r].assign(BH, 7);
      qlstm_lstm_s8_context ctx = scratch.context(cell[r].data(), k % 3 == 0 ? hidden[r].data() : nullptr);
      st[r] = qlstm::run_lstm_s8(r == 0 ? v : qlstm::lstm_s8_reference_variant(), &l.params, &ctx,
                                 l.input.data(), out[r].data());
    }
    const std::string what = std::string(v.name) + " case " + std::to_string(k) +
                             (l.params.time_direction == QLSTM_TIME_REVERSE ? " reverse" : " forward") +
                             " output_width " + std::to_string(l.params.output_width);
    ASSERT_EQ(st[1], QLSTM_OK) << what;
    if (declines(v, l.params)) {
      ASSERT_EQ(st[0], QLSTM_ERROR_NO_VARIANT) << what;
      ++tally_.declined;
      continue;
    }
    ++tally_.run;
    ASSERT_EQ(st[0], QLSTM_OK) << what;
    ASSERT_EQ(out[0], out[1]) << what;
    ASSERT_EQ(cell[0], cell[1]) << what;
    ASSERT_EQ(hidden[0], hidden[1]) << what;
  }
}

// QLSTM_OUTPUT_FIRST (a reverse op's y[:, -1]): the first step run alone writes [B][W] the values
// a whole call writes at that step (step 0 forward, T-1 reverse), for every variant; stateful
// calls start from the given state; T == 0 writes the initial state, as QLSTM_OUTPUT_FINAL does.
TEST_P(VariantTest, FirstStepAloneEqualsThatStepOfTheWholeCall) {
  const qlstm::LstmS8Variant& v = *GetParam();
  std::mt19937_64 rng(6100);
  for (int k = 0; k < 48; ++k) {
    const int B = 1 + static_cast<int>(rng() % 3), T = static_cast<int>(rng() % 7);
    const int I = kEdgeSizes[rng() % kEdgeCount], H = kEdgeSizes[rng() % kEdgeCount];
    RandomLstm l;
    const bool time_major = k % 2 == 0, stateful = k % 3 == 0;
    make_random_lstm(l, rng, {B, T, I, H}, time_major, static_cast<Regime>(k % 3));
    l.params.time_direction = k % 4 < 2 ? QLSTM_TIME_REVERSE : QLSTM_TIME_FORWARD;
    const int W = k % 5 == 1 ? H + 1 + static_cast<int>(rng() % 7) : H;
    l.params.output_width = W == H ? 0 : W;
    const size_t BH = static_cast<size_t>(B * H);
    std::vector<int8_t> h0(BH);
    std::vector<int16_t> c0(BH);
    for (auto& x : h0) x = static_cast<int8_t>(rng());
    for (auto& x : c0) x = static_cast<int16_t>(rng());
    auto call = [&](const qlstm::LstmS8Variant& with, int32_t output_steps, std::vector<int8_t>* out) {
      testing_support::ScratchBuffer scratch(l.params.dims);
      std::vector<int16_t> cell = stateful ? c0 : std::vector<int16_t>(BH, 99);
      std::vector<int8_t> hidden = h0;
      qlstm_lstm_s8_context ctx = scratch.context(cell.data(), stateful ? hidden.data() : nullptr);
      qlstm_lstm_s8_params p = l.params;
      p.output_steps = output_steps;
      return qlstm::run_lstm_s8(with, &p, &ctx, l.input.data(), out->data());
    };
    const size_t positions = static_cast<size_t>(B) * static_cast<size_t>(T > 0 ? T : 1);
    std::vector<int8_t> whole(positions * static_cast<size_t>(W), 0x5a), first(static_cast<size_t>(B * W), 0x5a);
    const std::string what = std::string(v.name) + " case " + std::to_string(k) + " B=" + std::to_string(B) +
                             " T=" + std::to_string(T) + " I=" + std::to_string(I) + " H=" + std::to_string(H) +
                             (l.params.time_direction == QLSTM_TIME_REVERSE ? " reverse" : " forward") +
                             (time_major ? " time-major" : " batch-major") + (stateful ? " stateful" : "");
    ASSERT_EQ(call(qlstm::lstm_s8_reference_variant(), T > 0 ? QLSTM_OUTPUT_ALL_STEPS : QLSTM_OUTPUT_FINAL, &whole),
              QLSTM_OK) << what;
    qlstm_lstm_s8_params first_params = l.params;
    first_params.output_steps = QLSTM_OUTPUT_FIRST;
    const qlstm_status st = call(v, QLSTM_OUTPUT_FIRST, &first);
    if (declines(v, first_params)) {
      ASSERT_EQ(st, QLSTM_ERROR_NO_VARIANT) << what;
      ++tally_.declined;
      continue;
    }
    ++tally_.run;
    ASSERT_EQ(st, QLSTM_OK) << what;
    const int t0 = l.params.time_direction == QLSTM_TIME_REVERSE ? T - 1 : 0;
    for (int b = 0; b < B; ++b) {
      for (int r = 0; r < W; ++r) {
        const size_t at = T == 0 ? static_cast<size_t>(b * W + r)
                          : time_major ? (static_cast<size_t>(t0) * B + b) * W + r
                                       : (static_cast<size_t>(b) * T + t0) * W + r;
        ASSERT_EQ(first[static_cast<size_t>(b * W + r)], whole[at]) << what << " row " << b << " element " << r;
      }
    }
  }
}

bool p_steps_all(const qlstm_lstm_s8_params& p) { return p.output_steps == QLSTM_OUTPUT_ALL_STEPS; }

// input_repeated (an autoencoder's decoder): one [B][I] step read at every step computes, for
// every variant, exactly what the independent model computes on the sequence of its T copies, in
// both layouts and directions, every step / final / first, strided outputs, stateless and
// stateful; the scratch is the call's (qlstm_lstm_s8_call_scratch_bytes), one byte less refused.
TEST_P(VariantTest, RepeatedInputEqualsTheSequenceOfItsCopies) {
  const qlstm::LstmS8Variant& v = *GetParam();
  std::mt19937_64 rng(6200);
  for (int k = 0; k < 60; ++k) {
    const int B = 1 + static_cast<int>(rng() % 3), T = static_cast<int>(rng() % 8);
    const int I = kEdgeSizes[rng() % kEdgeCount], H = kEdgeSizes[rng() % kEdgeCount];
    const bool time_major = k % 2 == 0, stateful = k % 3 == 0;
    RandomLstm l;
    make_random_lstm(l, rng, {B, T, I, H}, time_major, static_cast<Regime>(k % 3));
    if (k % 7 == 3) testing_support::make_hard_sigmoid_gates(l, rng, static_cast<Regime>(k % 3));
    l.params.time_direction = k % 4 < 2 ? QLSTM_TIME_REVERSE : QLSTM_TIME_FORWARD;
    const int32_t steps[] = {QLSTM_OUTPUT_ALL_STEPS, QLSTM_OUTPUT_FINAL, QLSTM_OUTPUT_FIRST};
    l.params.output_steps = steps[(k / 2) % 3];
    const int W = k % 5 == 1 ? H + 1 + static_cast<int>(rng() % 7) : H;
    l.params.output_width = W == H ? 0 : W;
    // The one step, and the sequence of its T copies in the call's layout.
    std::vector<int8_t> step(static_cast<size_t>(B) * static_cast<size_t>(I));
    for (auto& x : step) x = static_cast<int8_t>(rng());
    std::vector<int8_t> copies(static_cast<size_t>(B) * static_cast<size_t>(T) * static_cast<size_t>(I));
    for (int t = 0; t < T; ++t) {
      for (int b = 0; b < B; ++b) {
        const size_t at = time_major ? (static_cast<size_t>(t) * B + b) * I : (static_cast<size_t>(b) * T + t) * I;
        std::copy_n(step.begin() + static_cast<ptrdiff_t>(b) * I, I, copies.begin() + static_cast<ptrdiff_t>(at));
      }
    }
    const size_t BH = static_cast<size_t>(B * H);
    naive::State start;
    for (size_t j = 0; stateful && j < BH; ++j) {
      start.hidden.push_back(static_cast<int8_t>(rng()));
      start.cell.push_back(static_cast<int16_t>(rng()));
    }
    // The expectation: the reference on the copies (the independent model's too where it runs the
    // call: forward, dense, every step).
    naive::State expected_state = start;
    const size_t positions = static_cast<size_t>(B) * static_cast<size_t>(p_steps_all(l.params) ? T : 1);
    std::vector<int8_t> expected(positions * static_cast<size_t>(W), 0x5a);
    {
      testing_support::ScratchBuffer scratch(l.params.dims);
      std::vector<int16_t> cell = stateful ? start.cell : std::vector<int16_t>(BH, 99);
      qlstm_lstm_s8_context ctx = scratch.context(cell.data(), stateful ? expected_state.hidden.data() : nullptr);
      ASSERT_EQ(qlstm::run_lstm_s8(qlstm::lstm_s8_reference_variant(), &l.params, &ctx, copies.data(), expected.data()),
                QLSTM_OK);
      expected_state.cell = cell;
    }
    if (l.params.time_direction == QLSTM_TIME_FORWARD && W == H && p_steps_all(l.params)) {
      naive::State naive_state = start;
      ASSERT_EQ(naive::run(l.params, copies.data(), stateful ? &naive_state : nullptr, qlstm::kSigmoidTableU16), expected);
    }

    qlstm_lstm_s8_params p = l.params;
    p.input_repeated = 1;
    const size_t bytes = qlstm_lstm_s8_call_scratch_bytes(&p);
    ASSERT_GT(bytes, qlstm_lstm_s8_scratch_bytes(&p.dims));
    testing_support::ScratchBuffer scratch(bytes);
    std::vector<int16_t> cell = stateful ? start.cell : std::vector<int16_t>(BH, 777);
    std::vector<int8_t> hidden = start.hidden;
    std::vector<int8_t> out(expected.size(), 0x5a);
    qlstm_lstm_s8_context ctx = {scratch.data(), bytes - 1, cell.data(), stateful ? hidden.data() : nullptr};
    ASSERT_EQ(qlstm::run_lstm_s8(v, &p, &ctx, step.data(), out.data()), QLSTM_ERROR_SCRATCH_TOO_SMALL);
    ctx.scratch_bytes = bytes;
    const qlstm_status st = qlstm::run_lstm_s8(v, &p, &ctx, step.data(), out.data());
    const std::string what = std::string(v.name) + " case " + std::to_string(k) + " B=" + std::to_string(B) +
                             " T=" + std::to_string(T) + " I=" + std::to_string(I) + " H=" + std::to_string(H) +
                             " W=" + std::to_string(W) + " output_steps " + std::to_string(p.output_steps) +
                             (p.time_direction == QLSTM_TIME_REVERSE ? " reverse" : " forward") +
                             (time_major ? " time-major" : " batch-major") + (stateful ? " stateful" : "");
    if (declines(v, p)) {
      ASSERT_EQ(st, QLSTM_ERROR_NO_VARIANT) << what;
      ++tally_.declined;
      continue;
    }
    ++tally_.run;
    ASSERT_EQ(st, QLSTM_OK) << what;
    ASSERT_EQ(out, expected) << what;
    if (stateful) {
      ASSERT_EQ(hidden, expected_state.hidden) << what;
      ASSERT_EQ(cell, expected_state.cell) << what;
    }
  }
}

// Stage contract: the gate reads strided rows and an optional recurrent input.
TEST_P(VariantTest, GateStageWithStridesMatchesModel) {
  if (GetParam()->gate == nullptr) GTEST_SKIP() << "a whole-sequence variant has no gate stage";
  std::mt19937_64 rng(4000);
  for (int k = 0; k < 40; ++k) {
    const int I = kEdgeSizes[k % kEdgeCount], H = kEdgeSizes[(k * 7) % kEdgeCount], B = 1 + k % 4;
    RandomLstm l;
    make_random_lstm(l, rng, {B, 1, I, H}, true, static_cast<Regime>(k % 3));
    if (k % 2 == 1) testing_support::make_hard_sigmoid_gates(l, rng, static_cast<Regime>(k % 3));
    const ptrdiff_t xs = I + 3, hs = H + 5;  // strides wider than a row
    std::vector<int8_t> x(static_cast<size_t>(B * xs)), h(static_cast<size_t>(B * hs));
    for (auto& v : x) v = static_cast<int8_t>(rng());
    for (auto& v : h) v = static_cast<int8_t>(rng());
    for (int g = 0; g < QLSTM_GATE_COUNT; ++g) {
      const qlstm_gate_s8_params& gp = l.params.gates[g];
      for (bool with_h : {false, true}) {
        std::vector<int16_t> out(static_cast<size_t>(B * H));
        const qlstm::GateArgs a = {B, I, H, x.data(), xs, with_h ? h.data() : nullptr, hs};
        GetParam()->gate(gp, a, out.data());
        for (int b = 0; b < B; ++b) {
          for (int r = 0; r < H; ++r) {
            naive::i64 ax = gp.input_effective_bias[r];
            for (int j = 0; j < I; ++j) ax += x[b * xs + j] * gp.input_weights[r * I + j];
            naive::i64 pre = naive::clamp(naive::requantize(naive::to_s32(ax), gp.input_to_q3_12.multiplier, gp.input_to_q3_12.shift), -32768, 32767);
            if (with_h) {
              naive::i64 ah = gp.hidden_effective_bias[r];
              for (int j = 0; j < H; ++j) ah += h[b * hs + j] * gp.hidden_weights[r * H + j];
              pre = naive::clamp(naive::to_s32(pre + naive::requantize(naive::to_s32(ah), gp.hidden_to_q3_12.multiplier, gp.hidden_to_q3_12.shift)), -32768, 32767);
            }
            const auto want = naive::gate_activation(pre, gp, qlstm::kSigmoidTableU16);
            ASSERT_EQ(out[b * H + r], want) << "gate " << g << " b=" << b << " r=" << r;
          }
        }
      }
    }
  }
}

TEST_P(VariantTest, CellAndHiddenStagesMatchModel) {
  if (GetParam()->cell_update == nullptr || GetParam()->hidden_update == nullptr) {
    GTEST_SKIP() << "a whole-sequence variant has no cell and hidden stages";
  }
  std::mt19937_64 rng(5000);
  std::uniform_int_distribution<int> s16(-32768, 32767);
  for (int k = 0; k < 200; ++k) {
    const int n = kEdgeSizes[k % kEdgeCount];
    std::vector<int16_t> f(n), i(n), g(n), c(n);
    for (int e = 0; e < n; ++e) {
      f[e] = static_cast<int16_t>(s16(rng));
      i[e] = static_cast<int16_t>(s16(rng));
      g[e] = static_cast<int16_t>(s16(rng));
      c[e] = static_cast<int16_t>(s16(rng));
    }
    const qlstm::CellUpdateParams cp = {testing_support::random_requant(rng, -31, 31),
                                        testing_support::random_requant(rng, -31, 31),
                                        -static_cast<int32_t>(rng() % 32768), static_cast<int32_t>(rng() % 32768)};
    std::vector<int16_t> c_got = c;
    GetParam()->cell_update(cp, n, f.data(), i.data(), g.data(), c_got.data());
    for (int e = 0; e < n; ++e) {
      const auto c1 = naive::clamp(naive::requantize(naive::i64{f[e]} * c[e], cp.forget_times_cell.multiplier, cp.forget_times_cell.shift), -32768, 32767);
      const auto c2 = naive::requantize(naive::i64{i[e]} * g[e], cp.input_times_cell_gate.multiplier, cp.input_times_cell_gate.shift);
      ASSERT_EQ(c_got[e], naive::clamp(naive::to_s32(c1 + c2), cp.clip_min, cp.clip_max)) << e;
    }
    const qlstm::HiddenUpdateParams hp = {testing_support::random_requant(rng, -31, 31),
                                          static_cast<int32_t>(rng() % 256) - 128,
                                          static_cast<int32_t>(rng() % 46) - 31};
    const int rows = 1 + k % 3;
    const ptrdiff_t stride = n + 2;
    std::vector<int16_t> o(static_cast<size_t>(rows * n)), cc(static_cast<size_t>(rows * n));
    for (auto& v : o) v = static_cast<int16_t>(s16(rng));
    for (auto& v : cc) v = static_cast<int16_t>(s16(rng));
    std::vector<int8_t> h(static_cast<size_t>(rows * stride), 0x11);
    GetParam()->hidden_update(hp, rows, n, o.data(), cc.data(), h.data(), stride);
    for (int b = 0; b < rows; ++b) {
      for (int e = 0; e < n; ++e) {
        const auto th = naive::activation(cc[b * n + e], hp.tanh_left_shift, true, qlstm::kSigmoidTableU16);
        const auto want = naive::clamp(naive::to_s32(naive::requantize(o[b * n + e] * th, hp.output_times_tanh_cell.multiplier, hp.output_times_tanh_cell.shift) + hp.output_zero_point), -128, 127);
        ASSERT_EQ(h[b * stride + e], want) << "b=" << b << " e=" << e;
      }
      ASSERT_EQ(h[b * stride + n], 0x11) << "wrote past the row";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, VariantTest, ::testing::ValuesIn(all_variants()),
                         [](const ::testing::TestParamInfo<const qlstm::LstmS8Variant*>& i) {
                           return std::string(i.param->name);
                         });

TEST(VariantList, ReferenceIsLastAndRunsEveryCall) {
  size_t n = 0;
  const qlstm::LstmS8Variant* const* all = qlstm::lstm_s8_variants(&n);
  ASSERT_GE(n, 1u);
  EXPECT_EQ(all[n - 1], &qlstm::lstm_s8_reference_variant());
  EXPECT_EQ(all[n - 1]->can_run, nullptr) << "the reference runs every call";
  for (size_t k = 0; k < n; ++k) {
    EXPECT_NE(all[k], &qlstm::lstm_s8_default_variant()) << "the dispatching entry is not a variant";
    // Either the whole sequence or all three stages.
    if (all[k]->sequence != nullptr) continue;
    EXPECT_NE(all[k]->gate, nullptr) << all[k]->name;
    EXPECT_NE(all[k]->cell_update, nullptr) << all[k]->name;
    EXPECT_NE(all[k]->hidden_update, nullptr) << all[k]->name;
  }
}

}  // namespace
