// The int8 GRU (docs/arithmetic.md §13): each elementwise stage of the reference exhaustively
// against the naive model, the kernel against the naive model with zero tolerance over edge
// shapes, layouts, directions and output steps, the state contract, and validation.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "naive_gru.h"
#include "qlstm/activation_s16.h"
#include "qlstm/gru_s8.h"
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
using testing_support::ScratchBuffer;

constexpr int32_t kS16Min = INT16_MIN, kS16Max = INT16_MAX;
constexpr int32_t kQ0_15Max = INT16_MAX;  // the largest gate output
constexpr int32_t kDifferenceMax = kS16Max - kS16Min;  // |h - n| <= 65535
constexpr int8_t kUntouched = 0x5a;  // what output positions the kernel does not write hold

// Requantizations for the elementwise sweeps: the standard one, converter-like random ones and
// any (positive shifts wrap, multiplier 0).
std::vector<qlstm_requant> elementwise_requants(std::mt19937_64& rng, qlstm_requant standard) {
  return {standard, random_requant(rng, -16, -12), random_requant(rng, -31, -20), random_requant(rng, 0, 4),
          random_requant(rng, 20, 31), {0, 0}};
}

// Values of an int16 quantity to sweep against an exhaustive one: the extremes, around 0, and
// random values.
std::vector<int32_t> s16_sweep(std::mt19937_64& rng, int random_count) {
  std::vector<int32_t> v = {kS16Min, kS16Min + 1, kS16Min + 2, -4097, -4096, -2, -1, 0, 1, 2, 4095, 4096,
                            kS16Max - 2, kS16Max - 1, kS16Max};
  std::uniform_int_distribution<int32_t> any(kS16Min, kS16Max);
  for (int k = 0; k < random_count; ++k) v.push_back(any(rng));
  return v;
}

TEST(GruStages, ResetProductEveryResetGateOutput) {
  std::mt19937_64 rng(1);
  const std::vector<int32_t> h_parts = s16_sweep(rng, 48);
  for (const qlstm_requant& q : elementwise_requants(rng, testing_support::kQ0_15ProductRequant)) {
    for (int32_t r = 0; r <= kQ0_15Max; ++r) {
      for (int32_t h_part : h_parts) {
        const int32_t got = qlstm::gru_reference::reset_product_q3_12(static_cast<int16_t>(r),
                                                                     static_cast<int16_t>(h_part), q);
        ASSERT_EQ(got, naive_gru::reset_product(r, h_part, q))
            << "r " << r << " h_part " << h_part << " m " << q.multiplier << " s " << q.shift;
      }
    }
  }
}

TEST(GruStages, NewGateEveryInputPart) {
  std::mt19937_64 rng(2);
  std::vector<int32_t> gated = s16_sweep(rng, 32);
  for (int32_t g : {INT32_MIN, INT32_MIN + 1, INT32_MAX - 1, INT32_MAX, -65536, 65536}) gated.push_back(g);
  for (int32_t x_part = kS16Min; x_part <= kS16Max; ++x_part) {
    for (int32_t g : gated) {
      ASSERT_EQ(qlstm::gru_reference::new_gate_q0_15(static_cast<int16_t>(x_part), g),
                naive_gru::new_gate(x_part, g, qlstm::kSigmoidTableU16))
          << "x_part " << x_part << " gated " << g;
    }
  }
}

// (h, n) pairs whose difference covers +-65535, 0 and random values.
std::vector<std::pair<int32_t, int32_t>> hidden_new_pairs(std::mt19937_64& rng) {
  std::vector<std::pair<int32_t, int32_t>> v = {{kS16Max, kS16Min}, {kS16Min, kS16Max}, {0, 0},
                                                {kS16Max, kS16Max}, {kS16Min, kS16Min}, {1, 0},
                                                {0, 1},             {kS16Max, 0},       {0, kS16Min}};
  std::uniform_int_distribution<int32_t> any(kS16Min, kS16Max);
  for (int k = 0; k < 40; ++k) v.emplace_back(any(rng), any(rng));
  return v;
}

TEST(GruStages, UpdateEveryUpdateGateOutput) {
  std::mt19937_64 rng(3);
  const auto pairs = hidden_new_pairs(rng);
  ASSERT_EQ(pairs[0].first - pairs[0].second, kDifferenceMax);
  ASSERT_EQ(pairs[1].first - pairs[1].second, -kDifferenceMax);
  for (const qlstm_requant& q : elementwise_requants(rng, testing_support::kQ0_15ProductRequant)) {
    for (int32_t z = kS16Min; z <= kS16Max; ++z) {
      for (const auto& [h, n] : pairs) {
        ASSERT_EQ(qlstm::gru_reference::updated_hidden_q0_15(static_cast<int16_t>(z), static_cast<int16_t>(n),
                                                             static_cast<int16_t>(h), q),
                  naive_gru::update(z, n, h, q))
            << "z " << z << " n " << n << " h " << h << " m " << q.multiplier << " s " << q.shift;
      }
    }
  }
}

TEST(GruStages, UpdateEveryNewGateOutput) {
  std::mt19937_64 rng(4);
  const std::vector<int32_t> zs = s16_sweep(rng, 2), hs = s16_sweep(rng, 2);
  for (const qlstm_requant& q : elementwise_requants(rng, testing_support::kQ0_15ProductRequant)) {
    for (int32_t n = kS16Min; n <= kS16Max; ++n) {
      for (int32_t z : zs) {
        for (int32_t h : hs) {
          ASSERT_EQ(qlstm::gru_reference::updated_hidden_q0_15(static_cast<int16_t>(z), static_cast<int16_t>(n),
                                                               static_cast<int16_t>(h), q),
                    naive_gru::update(z, n, h, q))
              << "z " << z << " n " << n << " h " << h;
        }
      }
    }
  }
}

TEST(GruStages, UpdateWithStandardMultiplierInterpolates) {
  // z = 0 keeps n; with the standard QM(2^-15), h' - n = round(z (h - n) / 2^15).
  const qlstm_requant q = testing_support::kQ0_15ProductRequant;
  EXPECT_EQ(qlstm::gru_reference::updated_hidden_q0_15(0, 1234, -32768, q), 1234);
  EXPECT_EQ(qlstm::gru_reference::updated_hidden_q0_15(16384, 0, 2000, q), 1000);
  // The largest product: 32767 * 65535 / 2^15 = 65532.99997 rounds to 65533.
  EXPECT_EQ(qlstm::gru_reference::updated_hidden_q0_15(kQ0_15Max, kS16Min, kS16Max, q), kS16Min + 65533);
}

TEST(GruStages, OutputEveryHiddenState) {
  std::mt19937_64 rng(5);
  const qlstm_requant standard = {1 << 30, -7};  // QM(2^-15 / 2^-8)
  for (const qlstm_requant& q : elementwise_requants(rng, standard)) {
    for (int32_t zp : {-128, -1, 0, 17, 127}) {
      for (int32_t h = kS16Min; h <= kS16Max; ++h) {
        ASSERT_EQ(qlstm::gru_reference::hidden_to_output_s8(static_cast<int16_t>(h), q, zp),
                  naive_gru::output(h, q, zp))
            << "h " << h << " zp " << zp << " m " << q.multiplier << " s " << q.shift;
      }
    }
  }
  EXPECT_EQ(qlstm::gru_reference::hidden_to_output_s8(0, standard, -3), -3);  // a zero state is zp
}

// ---- The kernel.

struct Call {
  std::vector<int8_t> output;
  qlstm_status status;
};

// One call; state nullptr: stateless.
Call run_gru(const qlstm_gru_s8_params& p, const int8_t* input, std::vector<int16_t>* state) {
  ScratchBuffer scratch(qlstm_gru_s8_scratch_bytes(&p.dims));
  qlstm_gru_s8_context ctx = {scratch.data(), scratch.bytes(), state != nullptr ? state->data() : nullptr};
  Call c;
  c.output.assign(gru_output_size(p), kUntouched);
  c.status = qlstm_gru_s8(&p, &ctx, input, c.output.data());
  return c;
}

std::string describe(const qlstm_gru_s8_params& p, int regime, bool stateful) {
  return "B " + std::to_string(p.dims.batch) + " T " + std::to_string(p.dims.time_steps) + " I " +
         std::to_string(p.dims.input_size) + " H " + std::to_string(p.dims.hidden_size) + " layout " +
         std::to_string(p.layout) + " direction " + std::to_string(p.time_direction) + " steps " +
         std::to_string(p.output_steps) + " width " + std::to_string(p.output_width) + " regime " +
         std::to_string(regime) + (stateful ? " stateful" : " stateless");
}

TEST(GruKernel, MatchesNaiveModelOverEdgeShapes) {
  std::mt19937_64 rng(6);
  const int32_t sizes[] = {1, 2, 3, 7, 16, 33};
  const Regime regimes[] = {Regime::kTypical, Regime::kWide, Regime::kExtreme};
  int case_index = 0;
  for (int32_t I : sizes) {
    for (int32_t H : sizes) {
      for (int32_t B : {1, 3}) {
        for (int32_t T : {0, 1, 5}) {
          for (int variant = 0; variant < 8; ++variant, ++case_index) {
            const int regime = case_index % 3;
            RandomGru gru;
            make_random_gru(gru, rng, {B, T, I, H}, (variant & 1) != 0, regimes[regime]);
            qlstm_gru_s8_params& p = gru.params;
            p.time_direction = (variant & 2) != 0 ? QLSTM_TIME_REVERSE : QLSTM_TIME_FORWARD;
            p.output_steps = (variant & 4) != 0 ? QLSTM_OUTPUT_FINAL : QLSTM_OUTPUT_ALL_STEPS;
            p.output_width = case_index % 5 == 0 ? H + 3 : 0;
            const bool stateful = case_index % 2 == 0;
            std::vector<int16_t> state = random_gru_state(rng, p.dims), model_state = state;
            const Call got = run_gru(p, gru.input.data(), stateful ? &state : nullptr);
            ASSERT_EQ(got.status, QLSTM_OK) << describe(p, regime, stateful);
            const std::vector<int8_t> want = naive_gru::run(p, gru.input.data(), stateful ? &model_state : nullptr,
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

TEST(GruKernel, StreamedChunksEqualOneCall) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int32_t> size(1, 9), chunk(0, 4);
  for (int trial = 0; trial < 200; ++trial) {
    const int32_t B = 1 + trial % 3, T = 7 + trial % 5, I = size(rng), H = size(rng);
    const bool time_major = trial % 2 == 0, reverse = (trial / 2) % 2 == 1;
    RandomGru gru;
    make_random_gru(gru, rng, {B, T, I, H}, time_major, trial % 3 == 0 ? Regime::kExtreme : Regime::kTypical);
    qlstm_gru_s8_params& p = gru.params;
    p.time_direction = reverse ? QLSTM_TIME_REVERSE : QLSTM_TIME_FORWARD;
    const std::vector<int16_t> start = random_gru_state(rng, p.dims);
    std::vector<int16_t> whole_state = start;
    const Call whole = run_gru(p, gru.input.data(), &whole_state);
    ASSERT_EQ(whole.status, QLSTM_OK);

    // Chunks of random sizes (0 included), taken from the end for a reverse call.
    std::vector<int16_t> state = start;
    int32_t done = 0;
    while (done < T) {
      const int32_t count = std::min(chunk(rng), T - done);
      const int32_t t0 = reverse ? T - done - count : done;
      qlstm_gru_s8_params cp = p;
      cp.dims.time_steps = count;
      const std::vector<int8_t> x = slice_steps(gru.input, time_major, B, T, I, t0, count);
      const Call part = run_gru(cp, x.data(), &state);
      ASSERT_EQ(part.status, QLSTM_OK);
      ASSERT_EQ(part.output, slice_steps(whole.output, time_major, B, T, H, t0, count))
          << "trial " << trial << " steps " << t0 << "+" << count;
      done += count;
    }
    ASSERT_EQ(state, whole_state) << "trial " << trial;
  }
}

// With biases consistent as the compiler derives them (kTypical, kWide: gru_s8.h's reset contract).
TEST(GruKernel, ResetThenStatefulEqualsStateless) {
  std::mt19937_64 rng(8);
  for (int trial = 0; trial < 40; ++trial) {
    RandomGru gru;
    make_random_gru(gru, rng, {2, 6, 5, 4}, trial % 2 == 0, trial % 3 == 0 ? Regime::kWide : Regime::kTypical);
    gru.params.output_steps = trial % 4 < 2 ? QLSTM_OUTPUT_ALL_STEPS : QLSTM_OUTPUT_FINAL;
    const Call stateless = run_gru(gru.params, gru.input.data(), nullptr);
    std::vector<int16_t> state = random_gru_state(rng, gru.params.dims);
    qlstm_gru_s8_context ctx = {nullptr, 0, state.data()};
    ASSERT_EQ(qlstm_gru_s8_reset_state(&gru.params, &ctx), QLSTM_OK);
    for (int16_t v : state) ASSERT_EQ(v, 0);
    const Call stateful = run_gru(gru.params, gru.input.data(), &state);
    ASSERT_EQ(stateless.status, QLSTM_OK);
    ASSERT_EQ(stateful.status, QLSTM_OK);
    EXPECT_EQ(stateless.output, stateful.output) << "trial " << trial;
  }
}

// A stateless first step takes the new gate's recurrent accumulator from new_gate_zero_state_bias
// and runs no recurrent matmul: changing the recurrent weights leaves a one-step stateless call as
// it was, changing that field does not; a stateful call from a zero state reads the weights.
TEST(GruKernel, StatelessFirstStepUsesTheZeroStateBias) {
  std::mt19937_64 rng(17);
  int changed_by_bias = 0, stateful_changed_by_weights = 0;
  for (int trial = 0; trial < 20; ++trial) {
    RandomGru gru;
    make_random_gru(gru, rng, {2, 1, 5, 6}, trial % 2 == 0, Regime::kTypical);
    const Call before = run_gru(gru.params, gru.input.data(), nullptr);
    ASSERT_EQ(before.status, QLSTM_OK);
    for (testing_support::OwnedGate& g : gru.gates) {
      for (auto& w : g.wh) w = static_cast<int8_t>(-w - 1);
    }
    const Call new_weights = run_gru(gru.params, gru.input.data(), nullptr);
    ASSERT_EQ(new_weights.status, QLSTM_OK);
    EXPECT_EQ(new_weights.output, before.output) << "trial " << trial;
    std::vector<int16_t> zero(12, 0);  // [B][H]
    const Call from_zero = run_gru(gru.params, gru.input.data(), &zero);
    ASSERT_EQ(from_zero.status, QLSTM_OK);
    stateful_changed_by_weights += from_zero.output != before.output ? 1 : 0;
    for (auto& b : gru.new_gate_zero_state_bias) b += 1 << 22;
    const Call new_bias = run_gru(gru.params, gru.input.data(), nullptr);
    ASSERT_EQ(new_bias.status, QLSTM_OK);
    changed_by_bias += new_bias.output != before.output ? 1 : 0;
  }
  EXPECT_GT(changed_by_bias, 10);
  EXPECT_GT(stateful_changed_by_weights, 10);
}

TEST(GruKernel, NoStepFinalOutputIsInitialState) {
  std::mt19937_64 rng(9);
  RandomGru gru;
  make_random_gru(gru, rng, {3, 0, 4, 5}, false, Regime::kTypical);
  qlstm_gru_s8_params& p = gru.params;
  p.output_steps = QLSTM_OUTPUT_FINAL;
  p.output_width = 7;
  // Stateless: h = 0, so every written value is the zero point; the rest of each row untouched.
  const Call stateless = run_gru(p, nullptr, nullptr);
  ASSERT_EQ(stateless.status, QLSTM_OK);
  for (size_t k = 0; k < stateless.output.size(); ++k) {
    EXPECT_EQ(stateless.output[k], k % 7 < 5 ? p.output_zero_point : kUntouched) << k;
  }
  // Stateful from a zero state: the same; from another state: its h8, and the state untouched.
  std::vector<int16_t> zero(15, 0);
  EXPECT_EQ(run_gru(p, nullptr, &zero).output, stateless.output);
  std::vector<int16_t> state = random_gru_state(rng, p.dims), before = state;
  const Call carried = run_gru(p, nullptr, &state);
  ASSERT_EQ(carried.status, QLSTM_OK);
  EXPECT_EQ(state, before);
  EXPECT_EQ(carried.output, naive_gru::run(p, nullptr, &before, qlstm::kSigmoidTableU16, kUntouched));
  // Every step: nothing written, and no output buffer needed.
  p.output_steps = QLSTM_OUTPUT_ALL_STEPS;
  ScratchBuffer scratch(qlstm_gru_s8_scratch_bytes(&p.dims));
  qlstm_gru_s8_context ctx = {scratch.data(), scratch.bytes(), state.data()};
  EXPECT_EQ(qlstm_gru_s8(&p, &ctx, nullptr, nullptr), QLSTM_OK);
  EXPECT_EQ(state, before);
}

// ---- Validation: each bad field gets its status and its name.

class GruValidation : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(10);
    make_random_gru(gru_, rng, {2, 3, 5, 4}, true, Regime::kTypical);
    ASSERT_EQ(qlstm_gru_s8_validate(&gru_.params, nullptr), QLSTM_OK);
  }
  // The status and field of params changed by `change`.
  void expect_bad(void (*change)(qlstm_gru_s8_params&), qlstm_status status, const std::string& field) {
    qlstm_gru_s8_params p = gru_.params;
    change(p);
    const char* name = nullptr;
    EXPECT_EQ(qlstm_gru_s8_validate(&p, &name), status) << field;
    ASSERT_NE(name, nullptr) << field;
    EXPECT_EQ(std::string(name), field);
    // The call and the reset refuse the same parameters (with the valid call's buffers).
    std::vector<int16_t> state(8, 0);
    std::vector<int8_t> out(gru_output_size(gru_.params));
    ScratchBuffer scratch(qlstm_gru_s8_scratch_bytes(&gru_.params.dims));
    qlstm_gru_s8_context ctx = {scratch.data(), scratch.bytes(), state.data()};
    EXPECT_EQ(qlstm_gru_s8(&p, &ctx, gru_.input.data(), out.data()), status) << field;
    EXPECT_EQ(qlstm_gru_s8_reset_state(&p, &ctx), status) << field;
  }
  RandomGru gru_;
};

TEST_F(GruValidation, NullParams) {
  const char* name = nullptr;
  EXPECT_EQ(qlstm_gru_s8_validate(nullptr, &name), QLSTM_ERROR_NULL_POINTER);
  EXPECT_STREQ(name, "params");
  EXPECT_EQ(qlstm_gru_s8_validate(&gru_.params, &name), QLSTM_OK);
  EXPECT_EQ(name, nullptr);
}

TEST_F(GruValidation, Dims) {
  expect_bad([](qlstm_gru_s8_params& p) { p.dims.batch = 0; }, QLSTM_ERROR_BAD_DIMS, "dims");
  expect_bad([](qlstm_gru_s8_params& p) { p.dims.time_steps = -1; }, QLSTM_ERROR_BAD_DIMS, "dims");
  expect_bad([](qlstm_gru_s8_params& p) { p.dims.input_size = 0; }, QLSTM_ERROR_BAD_DIMS, "dims");
  expect_bad([](qlstm_gru_s8_params& p) { p.dims.hidden_size = 0; }, QLSTM_ERROR_BAD_DIMS, "dims");
  expect_bad([](qlstm_gru_s8_params& p) { p.dims.time_steps = INT32_MAX; }, QLSTM_ERROR_BAD_DIMS, "dims");
  const qlstm_gru_dims bad = {1, 1, 1, 0};
  EXPECT_EQ(qlstm_gru_s8_scratch_bytes(&bad), 0u);
  EXPECT_EQ(qlstm_gru_s8_scratch_bytes(nullptr), 0u);
}

TEST_F(GruValidation, SequenceOptions) {
  expect_bad([](qlstm_gru_s8_params& p) { p.layout = 2; }, QLSTM_ERROR_BAD_LAYOUT, "layout");
  expect_bad([](qlstm_gru_s8_params& p) { p.time_direction = -1; }, QLSTM_ERROR_BAD_DIRECTION, "time_direction");
  expect_bad([](qlstm_gru_s8_params& p) { p.output_steps = 3; }, QLSTM_ERROR_BAD_OUTPUT_STEPS, "output_steps");
  expect_bad([](qlstm_gru_s8_params& p) { p.output_width = 3; }, QLSTM_ERROR_BAD_OUTPUT_WIDTH, "output_width");
  expect_bad([](qlstm_gru_s8_params& p) { p.output_width = INT32_MAX; }, QLSTM_ERROR_BAD_OUTPUT_WIDTH,
             "output_width");
}

TEST_F(GruValidation, GatePointersNamedPerGate) {
  const char* const gates[] = {"reset", "update", "new"};
  for (int g = 0; g < QLSTM_GRU_GATE_COUNT; ++g) {
    const std::string prefix = std::string("gates[") + gates[g] + "].";
    for (int field = 0; field < 4; ++field) {
      qlstm_gru_s8_params p = gru_.params;
      qlstm_gru_gate_s8_params& gp = p.gates[g];
      const char* want = nullptr;
      switch (field) {
        case 0: gp.input_weights = nullptr; want = "input_weights"; break;
        case 1: gp.input_effective_bias = nullptr; want = "input_effective_bias"; break;
        case 2: gp.hidden_weights = nullptr; want = "hidden_weights"; break;
        default: gp.hidden_effective_bias = nullptr; want = "hidden_effective_bias"; break;
      }
      const char* name = nullptr;
      EXPECT_EQ(qlstm_gru_s8_validate(&p, &name), QLSTM_ERROR_NULL_POINTER);
      EXPECT_EQ(std::string(name), prefix + want);
    }
  }
}

TEST_F(GruValidation, RequantizationsNamedPerField) {
  const char* const gates[] = {"reset", "update", "new"};
  for (int g = 0; g < QLSTM_GRU_GATE_COUNT; ++g) {
    for (int side = 0; side < 2; ++side) {
      for (int32_t bad_shift : {QLSTM_SHIFT_MIN - 1, QLSTM_SHIFT_MAX + 1}) {
        qlstm_gru_s8_params p = gru_.params;
        qlstm_requant& q = side == 0 ? p.gates[g].input_to_q3_12 : p.gates[g].hidden_to_q3_12;
        const std::string base =
            std::string("gates[") + gates[g] + "]." + (side == 0 ? "input_to_q3_12" : "hidden_to_q3_12");
        const char* name = nullptr;
        q.shift = bad_shift;
        EXPECT_EQ(qlstm_gru_s8_validate(&p, &name), QLSTM_ERROR_BAD_SHIFT);
        EXPECT_EQ(std::string(name), base + ".shift");
        q.multiplier = -1;
        EXPECT_EQ(qlstm_gru_s8_validate(&p, &name), QLSTM_ERROR_BAD_MULTIPLIER);
        EXPECT_EQ(std::string(name), base + ".multiplier");
      }
    }
  }
  struct Elementwise {
    qlstm_requant qlstm_gru_s8_params::*member;
    const char* name;
  };
  const Elementwise elementwise[] = {
      {&qlstm_gru_s8_params::reset_times_hidden_to_q3_12, "reset_times_hidden_to_q3_12"},
      {&qlstm_gru_s8_params::update_times_difference_to_q0_15, "update_times_difference_to_q0_15"},
      {&qlstm_gru_s8_params::hidden_q0_15_to_output, "hidden_q0_15_to_output"}};
  for (const Elementwise& e : elementwise) {
    qlstm_gru_s8_params p = gru_.params;
    const char* name = nullptr;
    (p.*e.member).shift = QLSTM_SHIFT_MAX + 1;
    EXPECT_EQ(qlstm_gru_s8_validate(&p, &name), QLSTM_ERROR_BAD_SHIFT);
    EXPECT_EQ(std::string(name), std::string(e.name) + ".shift");
    (p.*e.member).multiplier = INT32_MIN;
    EXPECT_EQ(qlstm_gru_s8_validate(&p, &name), QLSTM_ERROR_BAD_MULTIPLIER);
    EXPECT_EQ(std::string(name), std::string(e.name) + ".multiplier");
  }
}

TEST_F(GruValidation, ZeroPoint) {
  expect_bad([](qlstm_gru_s8_params& p) { p.output_zero_point = 128; }, QLSTM_ERROR_BAD_ZERO_POINT,
             "output_zero_point");
  expect_bad([](qlstm_gru_s8_params& p) { p.output_zero_point = -129; }, QLSTM_ERROR_BAD_ZERO_POINT,
             "output_zero_point");
}

TEST_F(GruValidation, AcceptedExtremesRun) {
  qlstm_gru_s8_params p = gru_.params;
  p.gates[QLSTM_GRU_GATE_NEW].input_to_q3_12 = {INT32_MAX, QLSTM_SHIFT_MAX};
  p.gates[QLSTM_GRU_GATE_RESET].hidden_to_q3_12 = {0, QLSTM_SHIFT_MIN};
  p.reset_times_hidden_to_q3_12 = {INT32_MAX, QLSTM_SHIFT_MAX};
  p.update_times_difference_to_q0_15 = {INT32_MAX, QLSTM_SHIFT_MAX};
  p.hidden_q0_15_to_output = {INT32_MAX, QLSTM_SHIFT_MIN};
  p.output_zero_point = -128;
  std::vector<int16_t> state(8, INT16_MIN), model_state = state;
  const Call got = run_gru(p, gru_.input.data(), &state);
  ASSERT_EQ(got.status, QLSTM_OK);
  EXPECT_EQ(got.output, naive_gru::run(p, gru_.input.data(), &model_state, qlstm::kSigmoidTableU16, kUntouched));
  EXPECT_EQ(state, model_state);
}

TEST_F(GruValidation, CallBuffersAndScratch) {
  const qlstm_gru_s8_params& p = gru_.params;
  ScratchBuffer scratch(qlstm_gru_s8_scratch_bytes(&p.dims));
  ASSERT_GE(qlstm_gru_s8_scratch_bytes(&p.dims), 2u * 4u * 2u * 4u);  // four int16 [B][H] buffers at least
  std::vector<int8_t> out(gru_output_size(p));
  const int8_t* x = gru_.input.data();
  qlstm_gru_s8_context ctx = {scratch.data(), scratch.bytes(), nullptr};
  EXPECT_EQ(qlstm_gru_s8(&p, nullptr, x, out.data()), QLSTM_ERROR_NULL_POINTER);
  EXPECT_EQ(qlstm_gru_s8(&p, &ctx, nullptr, out.data()), QLSTM_ERROR_NULL_POINTER);
  EXPECT_EQ(qlstm_gru_s8(&p, &ctx, x, nullptr), QLSTM_ERROR_NULL_POINTER);
  qlstm_gru_s8_context no_scratch = {nullptr, scratch.bytes(), nullptr};
  EXPECT_EQ(qlstm_gru_s8(&p, &no_scratch, x, out.data()), QLSTM_ERROR_NULL_POINTER);
  qlstm_gru_s8_context small = {scratch.data(), qlstm_gru_s8_scratch_bytes(&p.dims) - 1, nullptr};
  EXPECT_EQ(qlstm_gru_s8(&p, &small, x, out.data()), QLSTM_ERROR_SCRATCH_TOO_SMALL);
  qlstm_gru_s8_context misaligned = {static_cast<char*>(scratch.data()) + 2, scratch.bytes() - 2, nullptr};
  EXPECT_EQ(qlstm_gru_s8(&p, &misaligned, x, out.data()), QLSTM_ERROR_SCRATCH_MISALIGNED);
  EXPECT_EQ(qlstm_gru_s8(&p, &ctx, x, out.data()), QLSTM_OK);
  // The reset needs a state to reset.
  EXPECT_EQ(qlstm_gru_s8_reset_state(&p, nullptr), QLSTM_ERROR_NULL_POINTER);
  EXPECT_EQ(qlstm_gru_s8_reset_state(&p, &ctx), QLSTM_ERROR_NULL_POINTER);
}

}  // namespace
