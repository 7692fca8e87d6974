// The LSTM's output_steps = QLSTM_OUTPUT_FINAL: for every variant in lstm_s8_variants(), the
// [B][W] output equals the last processed step of the same call with every step written (step
// T-1 forward, step 0 reverse), in both layouts, stateless and stateful (with the same final
// state), with a strided output row; a variant that declines it says QLSTM_ERROR_NO_VARIANT.
// With T == 0 the output is the initial state. Validation names the new field.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "qlstm/kernels.h"
#include "random_lstm.h"
#include "scratch_buffer.h"

namespace {

using testing_support::make_random_lstm;
using testing_support::RandomLstm;
using testing_support::Regime;
using testing_support::ScratchBuffer;

std::vector<const qlstm::LstmS8Variant*> all_variants() {
  size_t n = 0;
  const qlstm::LstmS8Variant* const* all = qlstm::lstm_s8_variants(&n);
  return std::vector<const qlstm::LstmS8Variant*>(all, all + n);
}

struct Call {
  qlstm_status status;
  std::vector<int8_t> output, hidden;
  std::vector<int16_t> cell;
};

// One call of the variant; stateful when initial_hidden is not empty. The output starts as 0x5A
// everywhere, so that an element the call should not write shows.
Call run(const qlstm::LstmS8Variant& v, const qlstm_lstm_s8_params& p, const std::vector<int8_t>& input,
         const std::vector<int8_t>& initial_hidden, const std::vector<int16_t>& initial_cell) {
  const size_t B = static_cast<size_t>(p.dims.batch), T = static_cast<size_t>(p.dims.time_steps);
  const size_t H = static_cast<size_t>(p.dims.hidden_size);
  const size_t W = p.output_width > 0 ? static_cast<size_t>(p.output_width) : H;
  Call c{QLSTM_OK, std::vector<int8_t>(B * (p.output_steps == QLSTM_OUTPUT_FINAL ? 1 : T) * W, 0x5A),
         initial_hidden, initial_cell.empty() ? std::vector<int16_t>(B * H) : initial_cell};
  ScratchBuffer scratch(p.dims);
  qlstm_lstm_s8_context ctx = scratch.context(c.cell.data(), c.hidden.empty() ? nullptr : c.hidden.data());
  c.status = qlstm::run_lstm_s8(v, &p, &ctx, input.data(), c.output.data());
  return c;
}

// Position (b, t) of an every-step output of W-wide rows.
size_t position(const qlstm_lstm_s8_params& p, size_t b, size_t t) {
  const size_t B = static_cast<size_t>(p.dims.batch), T = static_cast<size_t>(p.dims.time_steps);
  return p.layout == QLSTM_LAYOUT_TIME_MAJOR ? t * B + b : b * T + t;
}

class LstmFinal : public ::testing::TestWithParam<const qlstm::LstmS8Variant*> {
 protected:
  void SetUp() override {
    const qlstm::LstmS8Variant& v = *GetParam();
    if (v.is_supported != nullptr && !v.is_supported()) {
      GTEST_SKIP() << "variant " << v.name << ": not supported on this CPU (is_supported() is false)";
    }
  }
};

TEST_P(LstmFinal, EqualsTheLastProcessedStepOfEveryStep) {
  const qlstm::LstmS8Variant& v = *GetParam();
  std::mt19937_64 rng(1414);
  int compared = 0, declined = 0;
  const int32_t sizes[][4] = {{1, 1, 1, 1}, {2, 5, 3, 4}, {3, 7, 9, 17}, {1, 16, 33, 8}, {4, 3, 5, 32}};
  for (const auto& s : sizes) {
    for (const Regime regime : {Regime::kTypical, Regime::kExtreme}) {
      for (const bool time_major : {false, true}) {
        for (const int32_t direction : {QLSTM_TIME_FORWARD, QLSTM_TIME_REVERSE}) {
          for (const int32_t extra_width : {0, 3}) {
            for (const bool stateful : {false, true}) {
              RandomLstm l;
              make_random_lstm(l, rng, {s[0], s[1], s[2], s[3]}, time_major, regime);
              qlstm_lstm_s8_params p = l.params;
              p.time_direction = direction;
              p.output_width = extra_width > 0 ? s[3] + extra_width : 0;
              const size_t B = static_cast<size_t>(s[0]), T = static_cast<size_t>(s[1]);
              const size_t H = static_cast<size_t>(s[3]), W = H + static_cast<size_t>(extra_width);
              std::vector<int8_t> h0;
              std::vector<int16_t> c0;
              if (stateful) {
                std::uniform_int_distribution<int> s8(-128, 127), s16(-32768, 32767);
                for (size_t k = 0; k < B * H; ++k) {
                  h0.push_back(static_cast<int8_t>(s8(rng)));
                  c0.push_back(static_cast<int16_t>(s16(rng)));
                }
              }
              const std::string what = std::string(v.name) + " B=" + std::to_string(B) + " T=" + std::to_string(T) +
                                       " H=" + std::to_string(H) + (time_major ? " time-major" : " batch-major") +
                                       (direction ? " reverse" : " forward") + " W=" + std::to_string(W) +
                                       (stateful ? " stateful" : " stateless");
              // Every step, by the reference: the specification.
              const Call all = run(qlstm::kLstmS8ReferenceVariant, p, l.input, h0, c0);
              ASSERT_EQ(all.status, QLSTM_OK) << what;
              p.output_steps = QLSTM_OUTPUT_FINAL;
              if (v.can_run != nullptr && !v.can_run(p)) {
                EXPECT_EQ(run(v, p, l.input, h0, c0).status, QLSTM_ERROR_NO_VARIANT) << what;
                ++declined;
                continue;
              }
              const Call final = run(v, p, l.input, h0, c0);
              ASSERT_EQ(final.status, QLSTM_OK) << what;
              const size_t last = direction == QLSTM_TIME_REVERSE ? 0 : T - 1;
              std::vector<int8_t> expected(B * W, 0x5A);
              for (size_t b = 0; b < B; ++b) {
                for (size_t r = 0; r < H; ++r) expected[b * W + r] = all.output[position(p, b, last) * W + r];
              }
              EXPECT_EQ(final.output, expected) << what;
              EXPECT_EQ(final.hidden, all.hidden) << what;
              EXPECT_EQ(final.cell, all.cell) << what;
              ++compared;
            }
          }
        }
      }
    }
  }
  std::printf("variant %s: %d final-state calls compared, %d declined (can_run)\n", v.name, compared, declined);
  EXPECT_GT(compared + declined, 0);
}

// T == 0: no step runs, the output is the initial state and a carried state is left as it was.
TEST_P(LstmFinal, NoStepsGiveTheInitialState) {
  const qlstm::LstmS8Variant& v = *GetParam();
  std::mt19937_64 rng(77);
  RandomLstm l;
  make_random_lstm(l, rng, {3, 0, 4, 5}, false, Regime::kTypical);
  qlstm_lstm_s8_params p = l.params;
  p.output_steps = QLSTM_OUTPUT_FINAL;
  if (v.can_run != nullptr && !v.can_run(p)) GTEST_SKIP() << "variant " << v.name << " declines final-state calls";
  const std::vector<int8_t> no_input;
  const Call stateless = run(v, p, no_input, {}, {});
  ASSERT_EQ(stateless.status, QLSTM_OK);
  EXPECT_EQ(stateless.output, std::vector<int8_t>(15, static_cast<int8_t>(p.output_zero_point)));
  std::vector<int8_t> h0(15);
  std::vector<int16_t> c0(15);
  for (size_t k = 0; k < 15; ++k) {
    h0[k] = static_cast<int8_t>(k * 17 - 100);
    c0[k] = static_cast<int16_t>(k * 999 - 7000);
  }
  const Call stateful = run(v, p, no_input, h0, c0);
  ASSERT_EQ(stateful.status, QLSTM_OK);
  EXPECT_EQ(stateful.output, h0);
  EXPECT_EQ(stateful.hidden, h0);
  EXPECT_EQ(stateful.cell, c0);
}

INSTANTIATE_TEST_SUITE_P(AllVariants, LstmFinal, ::testing::ValuesIn(all_variants()),
                         [](const ::testing::TestParamInfo<const qlstm::LstmS8Variant*>& info) {
                           return std::string(info.param->name);
                         });

TEST(LstmFinalValidation, NamesOutputStepsAndNeedsAnOutputAtZeroSteps) {
  std::mt19937_64 rng(5);
  RandomLstm l;
  make_random_lstm(l, rng, {2, 0, 3, 4}, false, Regime::kTypical);
  qlstm_lstm_s8_params p = l.params;
  const char* field = nullptr;
  for (const int32_t bad : {-1, 3, 100}) {  // 2 is QLSTM_OUTPUT_FIRST
    p.output_steps = bad;
    EXPECT_EQ(qlstm_lstm_s8_validate(&p, &field), QLSTM_ERROR_BAD_OUTPUT_STEPS) << bad;
    EXPECT_STREQ(field, "output_steps");
  }
  p.output_steps = QLSTM_OUTPUT_FINAL;
  ScratchBuffer scratch(p.dims);
  std::vector<int16_t> cell(8);
  qlstm_lstm_s8_context ctx = scratch.context(cell.data(), nullptr);
  // Every-step output at T == 0 may be NULL; the final state is written, so not with FINAL.
  EXPECT_EQ(qlstm_lstm_s8(&p, &ctx, nullptr, nullptr), QLSTM_ERROR_NULL_POINTER);
  p.output_steps = QLSTM_OUTPUT_ALL_STEPS;
  EXPECT_EQ(qlstm_lstm_s8(&p, &ctx, nullptr, nullptr), QLSTM_OK);
  // The output width is checked against B positions, not B x T.
  p.output_steps = QLSTM_OUTPUT_FINAL;
  p.dims.time_steps = 1 << 20;
  p.output_width = 1 << 10;
  EXPECT_EQ(qlstm_lstm_s8_validate(&p, &field), QLSTM_OK) << (field ? field : "");
  p.output_steps = QLSTM_OUTPUT_ALL_STEPS;
  EXPECT_EQ(qlstm_lstm_s8_validate(&p, &field), QLSTM_ERROR_BAD_OUTPUT_WIDTH);
  EXPECT_STREQ(field, "output_width");
}

}  // namespace
