// Every GRU variant built into this binary and supported by this CPU (kernels.h's GruS8Variant)
// against the reference and the test's independent model (tests/support/naive_gru.h) with zero
// tolerance: whole sequences over every input and hidden size from 1 to 33 and larger ones
// (around 64 and 128, and 257: longer than the DSP variant's expanded operand), 1 to 5 batch
// rows, both layouts, forward and reverse, every step or only the final state, dense and wider
// output rows, stateless and stateful, three regimes of parameters (typical, wide, extreme:
// weights at the int8 ends, biases over all of int32, any multiplier and shift); then each stage
// against the reference's on strided rows and edge counts. A variant this CPU lacks returns
// QLSTM_ERROR_UNSUPPORTED when run explicitly and is skipped by name.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "naive_gru.h"
#include "qlstm/activation_s16.h"
#include "qlstm/kernels.h"
#include "random_gru.h"
#include "reference/gru_s8_reference.h"
#include "scratch_buffer.h"

namespace {

using testing_support::gru_output_size;
using testing_support::make_random_gru;
using testing_support::random_gru_state;
using testing_support::random_requant;
using testing_support::RandomGru;
using testing_support::Regime;

constexpr int8_t kUntouched = 0x5a;  // what output positions the kernel does not write hold

std::vector<const qlstm::GruS8Variant*> all_gru_variants() {
  size_t n = 0;
  const qlstm::GruS8Variant* const* all = qlstm::gru_s8_variants(&n);
  return std::vector<const qlstm::GruS8Variant*>(all, all + n);
}

// The sizes past 33: lane widths and chunk sizes (32 rows) times two and four, minus one, equal
// and plus one, and 257.
const int kLargeSizes[] = {63, 64, 65, 127, 128, 129, 257};

// Half of the weights and inputs at -128 or 127: the largest products, so that the sums wrap
// with the extreme regime's biases over all of int32.
void push_to_int8_ends(RandomGru& gru, std::mt19937_64& rng) {
  const auto push = [&rng](std::vector<int8_t>& v) {
    for (auto& e : v) {
      if (rng() % 2 == 0) e = rng() % 2 == 0 ? int8_t{127} : int8_t{-128};
    }
  };
  for (auto& g : gru.gates) {
    push(g.wx);
    push(g.wh);
  }
  push(gru.input);
}

struct Call {
  qlstm_status status;
  std::vector<int8_t> output;
  std::vector<int16_t> state;  // the final state of a stateful call
};

// One call; start nullptr: stateless.
Call run(const qlstm::GruS8Variant& v, const qlstm_gru_s8_params& p, const int8_t* input,
         const std::vector<int16_t>* start) {
  testing_support::ScratchBuffer scratch(qlstm_gru_s8_scratch_bytes(&p.dims));
  Call c;
  if (start != nullptr) c.state = *start;
  c.output.assign(gru_output_size(p), kUntouched);
  qlstm_gru_s8_context ctx = {scratch.data(), scratch.bytes(), start != nullptr ? c.state.data() : nullptr};
  c.status = qlstm::run_gru_s8(v, &p, &ctx, input, c.output.data());
  return c;
}

struct Options {
  bool time_major, reverse, final_only, wide_output, stateful;
};

std::string describe(const qlstm::GruS8Variant& v, const qlstm_gru_s8_params& p, const Options& o, Regime regime) {
  return std::string(v.name) + " B=" + std::to_string(p.dims.batch) + " T=" + std::to_string(p.dims.time_steps) +
         " I=" + std::to_string(p.dims.input_size) + " H=" + std::to_string(p.dims.hidden_size) +
         (o.time_major ? " time-major" : " batch-major") + (o.reverse ? " reverse" : " forward") +
         (o.final_only ? " final-state" : " every-step") + " width " + std::to_string(p.output_width) +
         (o.stateful ? " stateful" : " stateless") + " regime " + std::to_string(static_cast<int>(regime));
}

class GruVariantTest : public ::testing::TestWithParam<const qlstm::GruS8Variant*> {
 protected:
  void SetUp() override {
    const qlstm::GruS8Variant& v = *GetParam();
    if (v.is_supported != nullptr && !v.is_supported()) {
      std::mt19937_64 rng(1);
      RandomGru gru;
      make_random_gru(gru, rng, {1, 2, 3, 4}, false, Regime::kTypical);
      ASSERT_EQ(run(v, gru.params, gru.input.data(), nullptr).status, QLSTM_ERROR_UNSUPPORTED)
          << v.name << " run explicitly on a CPU that lacks it";
      GTEST_SKIP() << "GRU variant " << v.name << ": not supported on this CPU (is_supported() is false)";
    }
  }
  void TearDown() override {
    if (declined_ > 0) {
      std::printf("GRU variant %s declined %d of %d calls (can_run): QLSTM_ERROR_NO_VARIANT\n", GetParam()->name,
                  declined_, declined_ + compared_);
    }
  }

  // One random call of the variant against the model and the reference, output and final state.
  void check(std::mt19937_64& rng, qlstm_gru_dims dims, const Options& o, Regime regime) {
    const qlstm::GruS8Variant& v = *GetParam();
    RandomGru gru;
    make_random_gru(gru, rng, dims, o.time_major, regime);
    if (regime == Regime::kExtreme && rng() % 2 == 0) push_to_int8_ends(gru, rng);
    qlstm_gru_s8_params& p = gru.params;
    p.time_direction = o.reverse ? QLSTM_TIME_REVERSE : QLSTM_TIME_FORWARD;
    // One step written: the final state, or the first step run alone (a reverse op's y[:, -1]).
    p.output_steps = !o.final_only ? QLSTM_OUTPUT_ALL_STEPS : rng() % 2 ? QLSTM_OUTPUT_FIRST : QLSTM_OUTPUT_FINAL;
    p.output_width = o.wide_output ? dims.hidden_size + 1 + static_cast<int32_t>(rng() % 7) : 0;
    const std::vector<int16_t> start = random_gru_state(rng, dims);
    const std::vector<int16_t>* from = o.stateful ? &start : nullptr;
    const std::string what = describe(v, p, o, regime);

    const Call got = run(v, p, gru.input.data(), from);
    if (v.can_run != nullptr && !v.can_run(p)) {
      ASSERT_EQ(got.status, QLSTM_ERROR_NO_VARIANT) << what;
      ++declined_;
      return;
    }
    ++compared_;
    ASSERT_EQ(got.status, QLSTM_OK) << what;
    std::vector<int16_t> model_state = start;
    const std::vector<int8_t> want = naive_gru::run(p, gru.input.data(), o.stateful ? &model_state : nullptr,
                                                    qlstm::kSigmoidTableU16, kUntouched);
    ASSERT_EQ(got.output, want) << what;
    if (o.stateful) {
      ASSERT_EQ(got.state, model_state) << what;
    }
    if (&v != &qlstm::kGruS8ReferenceVariant) {
      const Call ref = run(qlstm::kGruS8ReferenceVariant, p, gru.input.data(), from);
      ASSERT_EQ(ref.status, QLSTM_OK) << what;
      ASSERT_EQ(got.output, ref.output) << what << " vs reference";
      ASSERT_EQ(got.state, ref.state) << what << " vs reference";
    }
  }

  // The options of case k: every combination over 32 consecutive cases.
  static Options options(int k) {
    return {k % 2 == 0, (k / 2) % 2 == 1, (k / 4) % 2 == 1, (k / 8) % 2 == 1, (k / 16) % 2 == 0};
  }

  int compared_ = 0, declined_ = 0;
};

int random_size(std::mt19937_64& rng) {
  constexpr int kSmallMax = 33;
  constexpr int kLargeCount = sizeof(kLargeSizes) / sizeof(kLargeSizes[0]);
  return rng() % 4 == 0 ? kLargeSizes[rng() % kLargeCount] : 1 + static_cast<int>(rng() % kSmallMax);
}

TEST_P(GruVariantTest, EveryInputSizeTo33) {
  std::mt19937_64 rng(100);
  int k = 0;
  for (int I = 1; I <= 33; ++I) {
    for (Regime regime : {Regime::kTypical, Regime::kWide, Regime::kExtreme}) {
      const int B = 1 + static_cast<int>(rng() % 5), T = static_cast<int>(rng() % 4);
      check(rng, {B, T, I, random_size(rng)}, options(k++), regime);
    }
  }
}

TEST_P(GruVariantTest, EveryHiddenSizeTo33) {
  std::mt19937_64 rng(200);
  int k = 0;
  for (int H = 1; H <= 33; ++H) {
    for (Regime regime : {Regime::kTypical, Regime::kWide, Regime::kExtreme}) {
      const int B = 1 + static_cast<int>(rng() % 5), T = 1 + static_cast<int>(rng() % 3);
      check(rng, {B, T, random_size(rng), H}, options(k++), regime);
    }
  }
}

TEST_P(GruVariantTest, LargeSizes) {
  std::mt19937_64 rng(300);
  int k = 0;
  for (int H : kLargeSizes) {
    for (int I : {1, 17, 64, 257}) {
      const int B = 1 + static_cast<int>(rng() % 2), T = 1 + static_cast<int>(rng() % 2);
      check(rng, {B, T, I, H}, options(k), static_cast<Regime>(k % 3));
      ++k;
    }
  }
}

TEST_P(GruVariantTest, LongerSequencesAndEveryOption) {
  std::mt19937_64 rng(400);
  for (int k = 0; k < 64; ++k) {
    const int B = 1 + static_cast<int>(rng() % 5), T = 8 + static_cast<int>(rng() % 20);
    const int I = 1 + static_cast<int>(rng() % 40), H = 1 + static_cast<int>(rng() % 40);
    check(rng, {B, T, I, H}, options(k), static_cast<Regime>(k % 3));
  }
}

// A repeated input (input_repeated: one [B][I] step read at every step, its three gates' input
// projection computed once per call) equals the reference and the independent model on the
// sequence of its T copies, over every option; a scratch one byte short of
// qlstm_gru_s8_call_scratch_bytes() is refused.
TEST_P(GruVariantTest, RepeatedInputEqualsTheSequenceOfItsCopies) {
  const qlstm::GruS8Variant& v = *GetParam();
  std::mt19937_64 rng(6300);
  for (int k = 0; k < 64; ++k) {
    const Options o = options(k);
    const qlstm_gru_dims dims = {1 + static_cast<int>(rng() % 3), static_cast<int>(rng() % 8), random_size(rng),
                                 random_size(rng)};
    const Regime regime = static_cast<Regime>(k % 3);
    RandomGru gru;
    make_random_gru(gru, rng, dims, o.time_major, regime);
    qlstm_gru_s8_params p = gru.params;
    p.time_direction = o.reverse ? QLSTM_TIME_REVERSE : QLSTM_TIME_FORWARD;
    p.output_steps = !o.final_only ? QLSTM_OUTPUT_ALL_STEPS : rng() % 2 ? QLSTM_OUTPUT_FIRST : QLSTM_OUTPUT_FINAL;
    p.output_width = o.wide_output ? dims.hidden_size + 1 + static_cast<int32_t>(rng() % 7) : 0;
    const int B = dims.batch, T = dims.time_steps, I = dims.input_size;
    std::vector<int8_t> step(static_cast<size_t>(B) * static_cast<size_t>(I));
    for (auto& x : step) x = static_cast<int8_t>(rng());
    std::vector<int8_t> copies(static_cast<size_t>(B) * static_cast<size_t>(T) * static_cast<size_t>(I));
    for (int t = 0; t < T; ++t) {
      for (int b = 0; b < B; ++b) {
        const size_t at = o.time_major ? (static_cast<size_t>(t) * B + b) * I : (static_cast<size_t>(b) * T + t) * I;
        std::copy_n(step.begin() + static_cast<ptrdiff_t>(b) * I, I, copies.begin() + static_cast<ptrdiff_t>(at));
      }
    }
    const std::vector<int16_t> start = random_gru_state(rng, dims);
    const std::vector<int16_t>* from = o.stateful ? &start : nullptr;
    const std::string what = describe(v, p, o, regime) + " repeated input";
    const Call want = run(qlstm::kGruS8ReferenceVariant, p, copies.data(), from);
    ASSERT_EQ(want.status, QLSTM_OK) << what;
    std::vector<int16_t> model_state = start;
    ASSERT_EQ(naive_gru::run(p, copies.data(), o.stateful ? &model_state : nullptr, qlstm::kSigmoidTableU16, kUntouched),
              want.output)
        << what << ": the reference against the model";

    p.input_repeated = 1;
    const size_t bytes = qlstm_gru_s8_call_scratch_bytes(&p);
    ASSERT_GT(bytes, qlstm_gru_s8_scratch_bytes(&p.dims)) << what;
    testing_support::ScratchBuffer scratch(bytes);
    Call got;
    if (o.stateful) got.state = start;
    got.output.assign(gru_output_size(p), kUntouched);
    qlstm_gru_s8_context ctx = {scratch.data(), bytes - 1, o.stateful ? got.state.data() : nullptr};
    ASSERT_EQ(qlstm::run_gru_s8(v, &p, &ctx, step.data(), got.output.data()), QLSTM_ERROR_SCRATCH_TOO_SMALL) << what;
    ctx.scratch_bytes = bytes;
    got.status = qlstm::run_gru_s8(v, &p, &ctx, step.data(), got.output.data());
    if (v.can_run != nullptr && !v.can_run(p)) {
      ASSERT_EQ(got.status, QLSTM_ERROR_NO_VARIANT) << what;
      ++declined_;
      continue;
    }
    ++compared_;
    ASSERT_EQ(got.status, QLSTM_OK) << what;
    ASSERT_EQ(got.output, want.output) << what;
    ASSERT_EQ(got.state, want.state) << what;
  }
  // input_repeated is 0 or 1.
  RandomGru gru;
  make_random_gru(gru, rng, {1, 2, 3, 4}, false, Regime::kTypical);
  gru.params.input_repeated = 2;
  const char* field = nullptr;
  EXPECT_EQ(qlstm_gru_s8_validate(&gru.params, &field), QLSTM_ERROR_BAD_INPUT_STEPS);
  EXPECT_STREQ(field, "input_repeated");
  EXPECT_EQ(qlstm_gru_s8_call_scratch_bytes(&gru.params), 0u);
}

// Stage contract: the gates read strided rows of x and h (or no h: a stateless first step, the
// recurrent accumulator of n its bias alone); r, z and n equal the reference's.
TEST_P(GruVariantTest, GateStagesWithStridesMatchReference) {
  const qlstm::GruS8Variant& v = *GetParam();
  const qlstm::GruS8Variant& ref = qlstm::kGruS8ReferenceVariant;
  std::mt19937_64 rng(500);
  for (int k = 0; k < 60; ++k) {
    const int I = random_size(rng), H = random_size(rng), B = 1 + k % 5;
    RandomGru gru;
    make_random_gru(gru, rng, {B, 1, I, H}, true, static_cast<Regime>(k % 3));
    const ptrdiff_t xs = I + 3, hs = H + 5;  // strides wider than a row
    std::vector<int8_t> x(static_cast<size_t>(B * xs)), h(static_cast<size_t>(B * hs));
    for (auto& e : x) e = static_cast<int8_t>(rng());
    for (auto& e : h) e = static_cast<int8_t>(rng());
    // Every fourth case without h.
    const qlstm::GateArgs a = {B, I, H, x.data(), xs, k % 4 == 3 ? nullptr : h.data(), hs};
    const size_t BH = static_cast<size_t>(B * H);
    const std::string what = std::string(v.name) + " B=" + std::to_string(B) + " I=" + std::to_string(I) +
                             " H=" + std::to_string(H) + " case " + std::to_string(k);
    for (int g : {QLSTM_GRU_GATE_RESET, QLSTM_GRU_GATE_UPDATE}) {
      std::vector<int16_t> got(BH, -7), want(BH, 7);
      const qlstm_gate_s8_params lstm_gate = qlstm::gru_reference::as_sigmoid_lstm_gate(gru.params.gates[g]);
      v.sigmoid_gate(lstm_gate, a, got.data());
      ref.sigmoid_gate(lstm_gate, a, want.data());
      ASSERT_EQ(got, want) << what << " gate " << g;
    }
    // n from any r in [0, 2^15 - 1].
    std::vector<int16_t> reset(BH);
    for (auto& e : reset) e = static_cast<int16_t>(rng() % 32768);
    std::vector<int16_t> got(BH, -7), want(BH, 7);
    v.new_gate(gru.params.gates[QLSTM_GRU_GATE_NEW], gru.params.reset_times_hidden_to_q3_12, a, reset.data(),
               got.data());
    ref.new_gate(gru.params.gates[QLSTM_GRU_GATE_NEW], gru.params.reset_times_hidden_to_q3_12, a, reset.data(),
                 want.data());
    ASSERT_EQ(got, want) << what << " new gate";
  }
}

// The elementwise stages over edge counts and all of int16, any requantization and zero point;
// the output stage leaves the rest of each strided row alone.
TEST_P(GruVariantTest, UpdateAndOutputStagesMatchReference) {
  const qlstm::GruS8Variant& v = *GetParam();
  const qlstm::GruS8Variant& ref = qlstm::kGruS8ReferenceVariant;
  std::mt19937_64 rng(600);
  std::uniform_int_distribution<int32_t> s16(INT16_MIN, INT16_MAX), s8(INT8_MIN, INT8_MAX);
  for (int k = 0; k < 300; ++k) {
    const int n = k < 40 ? 1 + k : random_size(rng);
    const qlstm_requant q = k % 3 == 0 ? testing_support::kQ0_15ProductRequant : random_requant(rng, -31, 31);
    std::vector<int16_t> z(static_cast<size_t>(n)), nn(static_cast<size_t>(n)), h(static_cast<size_t>(n));
    for (int e = 0; e < n; ++e) {
      z[e] = static_cast<int16_t>(k % 2 == 0 ? s16(rng) : rng() % 32768);  // any int16, or a gate's range
      nn[e] = static_cast<int16_t>(s16(rng));
      h[e] = static_cast<int16_t>(s16(rng));
    }
    std::vector<int16_t> got = h, want = h;
    v.update(q, n, z.data(), nn.data(), got.data());
    ref.update(q, n, z.data(), nn.data(), want.data());
    ASSERT_EQ(got, want) << v.name << " update n=" << n << " case " << k;

    const int rows = 1 + k % 3;
    const ptrdiff_t stride = n + 2;
    const int32_t zero_point = s8(rng);
    std::vector<int16_t> state(static_cast<size_t>(rows * n));
    for (auto& e : state) e = static_cast<int16_t>(s16(rng));
    std::vector<int8_t> y_got(static_cast<size_t>(rows * stride), kUntouched), y_want = y_got;
    v.output(q, zero_point, rows, n, state.data(), y_got.data(), stride);
    ref.output(q, zero_point, rows, n, state.data(), y_want.data(), stride);
    ASSERT_EQ(y_got, y_want) << v.name << " output n=" << n << " case " << k;
    for (int b = 0; b < rows; ++b) ASSERT_EQ(y_got[b * stride + n], kUntouched) << "wrote past the row";
  }
}

INSTANTIATE_TEST_SUITE_P(All, GruVariantTest, ::testing::ValuesIn(all_gru_variants()),
                         [](const ::testing::TestParamInfo<const qlstm::GruS8Variant*>& i) {
                           return std::string(i.param->name);
                         });

TEST(GruVariantList, ReferenceIsLastAndEveryEntryHasItsStages) {
  size_t n = 0;
  const qlstm::GruS8Variant* const* all = qlstm::gru_s8_variants(&n);
  ASSERT_GE(n, 1u);
  EXPECT_EQ(all[n - 1], &qlstm::kGruS8ReferenceVariant);
  EXPECT_EQ(all[n - 1]->can_run, nullptr) << "the reference runs every call";
  for (size_t k = 0; k < n; ++k) {
    EXPECT_NE(all[k]->sigmoid_gate, nullptr) << all[k]->name;
    EXPECT_NE(all[k]->new_gate, nullptr) << all[k]->name;
    EXPECT_NE(all[k]->update, nullptr) << all[k]->name;
    EXPECT_NE(all[k]->output, nullptr) << all[k]->name;
  }
}

// Each GRU variant has the name of an LSTM variant of this binary: the one whose dot products it
// shares.
TEST(GruVariantList, EachOptimizedVariantSharesAnLstmVariant) {
  size_t ngru = 0, nlstm = 0;
  const qlstm::GruS8Variant* const* gru = qlstm::gru_s8_variants(&ngru);
  const qlstm::LstmS8Variant* const* lstm = qlstm::lstm_s8_variants(&nlstm);
  for (size_t k = 0; k < ngru; ++k) {
    bool found = false;
    for (size_t j = 0; j < nlstm; ++j) found = found || std::string(lstm[j]->name) == gru[k]->name;
    EXPECT_TRUE(found) << gru[k]->name;
  }
}

// qlstm_gru_s8 runs the first variant this CPU supports (as run_gru_s8_prechecked with no
// variant), and run_gru_s8 with the reference forces the reference: all three equal.
TEST(GruDispatch, DefaultRunsTheBestSupportedVariant) {
  size_t n = 0;
  const qlstm::GruS8Variant* const* all = qlstm::gru_s8_variants(&n);
  std::mt19937_64 rng(700);
  RandomGru gru;
  make_random_gru(gru, rng, {3, 5, 19, 37}, false, Regime::kTypical);
  const qlstm::GruS8Variant* best = qlstm::select_gru_s8_variant(all, n, gru.params);
  ASSERT_NE(best, nullptr);
  for (size_t k = 0; all[k] != best; ++k) {
    EXPECT_FALSE(all[k]->is_supported == nullptr || all[k]->is_supported()) << all[k]->name << " was passed over";
  }
  std::printf("GRU dispatch on this CPU: %s\n", best->name);

  const qlstm_gru_s8_params& p = gru.params;
  testing_support::ScratchBuffer scratch(qlstm_gru_s8_scratch_bytes(&p.dims));
  const std::vector<int16_t> start = random_gru_state(rng, p.dims);
  std::vector<int16_t> state[3] = {start, start, start};
  std::vector<int8_t> out[3];
  for (int r = 0; r < 3; ++r) {
    out[r].assign(gru_output_size(p), kUntouched);
    qlstm_gru_s8_context ctx = {scratch.data(), scratch.bytes(), state[r].data()};
    qlstm_status st = QLSTM_OK;
    if (r == 0) st = qlstm_gru_s8(&p, &ctx, gru.input.data(), out[r].data());
    if (r == 1) st = qlstm::run_gru_s8_prechecked(nullptr, p, ctx, gru.input.data(), out[r].data());
    if (r == 2) st = qlstm::run_gru_s8(qlstm::kGruS8ReferenceVariant, &p, &ctx, gru.input.data(), out[r].data());
    ASSERT_EQ(st, QLSTM_OK) << r;
  }
  EXPECT_EQ(out[0], out[2]);
  EXPECT_EQ(out[1], out[2]);
  EXPECT_EQ(state[0], state[2]);
  EXPECT_EQ(state[1], state[2]);
}

// run_gru_s8 checks the call before the variant: an invalid call is refused with its own status
// by every variant.
TEST(GruDispatch, InvalidCallsAreRefusedByEveryVariant) {
  std::mt19937_64 rng(800);
  RandomGru gru;
  make_random_gru(gru, rng, {1, 2, 3, 4}, false, Regime::kTypical);
  qlstm_gru_s8_params bad = gru.params;
  bad.gates[QLSTM_GRU_GATE_NEW].hidden_weights = nullptr;
  for (const qlstm::GruS8Variant* v : all_gru_variants()) {
    EXPECT_EQ(run(*v, bad, gru.input.data(), nullptr).status, QLSTM_ERROR_NULL_POINTER) << v->name;
    EXPECT_EQ(qlstm::run_gru_s8(*v, &gru.params, nullptr, gru.input.data(), nullptr), QLSTM_ERROR_NULL_POINTER)
        << v->name;
  }
}

}  // namespace
