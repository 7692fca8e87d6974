// The int8 attention pooling (docs/arithmetic.md §22): against the float softmax-weighted mean of
// the same int8 scores and steps, exactly where the arithmetic is exact (one step, equal scores),
// the same in either layout and with the output over the sequence's memory, and its validation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "qlstm/attention_pool_s8.h"
#include "qlstm/lstm_s8.h"

namespace {

// arm_softmax_s8's scaling of a difference for an input scale (beta 1), as TFLite prepares it:
// 5 integer bits, multiplier and left shift, diff_min the largest difference the exp represents.
qlstm_attention_pool_s8_params params_for(double scores_scale, int32_t B, int32_t T, int32_t W, int32_t zp) {
  const double real = std::min(scores_scale * std::ldexp(1.0, 31 - 5), 2147483647.0);
  int exponent = 0;
  int64_t m = std::llround(std::frexp(real, &exponent) * 2147483648.0);
  if (m == (int64_t{1} << 31)) {
    m /= 2;
    ++exponent;
  }
  const double radius = std::floor(31.0 * std::ldexp(1.0, 26) / std::ldexp(1.0, exponent));
  return {B, T, QLSTM_LAYOUT_BATCH_MAJOR, W, static_cast<int32_t>(m), exponent, -static_cast<int32_t>(radius), zp};
}

// Every output is the float pooling (softmax over the dequantized scores, the weighted mean of
// the dequantized steps) at the sequence's quantization: within one step, and exact for all but a
// few near a rounding boundary.
TEST(AttentionPoolS8, WithinOneStepOfTheFloatPooling) {
  std::mt19937_64 rng(22);
  std::uniform_int_distribution<int> s8(-128, 127), steps(1, 60), width(1, 40), batch(1, 3);
  std::uniform_real_distribution<double> log_scale(std::log(0.01), std::log(0.5));
  size_t values = 0, exact = 0;
  for (int n = 0; n < 300; ++n) {
    const int32_t B = batch(rng), T = steps(rng), W = width(rng), zp = s8(rng) / 2;
    const double scale = std::exp(log_scale(rng));
    const qlstm_attention_pool_s8_params p = params_for(scale, B, T, W, zp);
    std::vector<int8_t> scores(static_cast<size_t>(B * T)), seq(static_cast<size_t>(B * T * W)), out(static_cast<size_t>(B * W));
    for (auto& v : scores) v = static_cast<int8_t>(n % 5 == 0 ? s8(rng) / 16 : s8(rng));
    for (auto& v : seq) v = static_cast<int8_t>(s8(rng));
    ASSERT_EQ(qlstm_attention_pool_s8(&p, scores.data(), seq.data(), out.data()), QLSTM_OK);
    for (int32_t b = 0; b < B; ++b) {
      const int8_t* s = scores.data() + b * T;
      const int top = *std::max_element(s, s + T);
      double sum = 0;
      for (int32_t t = 0; t < T; ++t) sum += std::exp(scale * (s[t] - top));
      for (int32_t f = 0; f < W; ++f) {
        double mean = 0;
        for (int32_t t = 0; t < T; ++t) mean += std::exp(scale * (s[t] - top)) / sum * (seq[static_cast<size_t>((b * T + t) * W + f)] - zp);
        const long want = std::clamp(std::lround(mean) + zp, -128L, 127L);
        const int got = out[static_cast<size_t>(b * W + f)];
        ++values;
        exact += got == want;
        ASSERT_LE(std::labs(got - want), 1) << "case " << n << " b " << b << " f " << f << ": float " << mean + zp;
      }
    }
  }
  std::printf("%zu values: %zu exact, the rest one step off\n", values, exact);
  EXPECT_GT(exact, values * 97 / 100);
}

// One step: its probability is exactly 1 and the output is the step. Equal scores: the mean.
TEST(AttentionPoolS8, OneStepIsTheStepAndEqualScoresTheMean) {
  const int32_t W = 5;
  std::vector<int8_t> seq = {-128, -3, 0, 77, 127}, out(W);
  const int8_t score = 42;
  const qlstm_attention_pool_s8_params one = params_for(0.1, 1, 1, W, -7);
  ASSERT_EQ(qlstm_attention_pool_s8(&one, &score, seq.data(), out.data()), QLSTM_OK);
  EXPECT_EQ(out, seq);
  // Four equal scores: each probability 1/4, exactly 2^13 in Q0.15.
  const std::vector<int8_t> scores(4, -5);
  std::vector<int8_t> steps = {10, 20, -30, 0, 5, 7, 11, 13, -1, -1, -1, -1, 100, 101, 102, 103, 0, 0, 0, 0};
  std::vector<int8_t> mean(W);
  const qlstm_attention_pool_s8_params four = params_for(0.2, 1, 4, W, 0);
  ASSERT_EQ(qlstm_attention_pool_s8(&four, scores.data(), steps.data(), mean.data()), QLSTM_OK);
  for (int32_t f = 0; f < W; ++f) {
    int32_t total = 0;
    for (int32_t t = 0; t < 4; ++t) total += steps[static_cast<size_t>(t * W + f)];
    // The mean of four, to nearest with ties away from zero.
    const int32_t want = total >= 0 ? (total + 2) / 4 : -((-total + 2) / 4);
    EXPECT_EQ(mean[static_cast<size_t>(f)], want) << f;
  }
}

// Time-major gives the batch-major result of the same sequences; an output over the sequence's
// own memory (from its start, as a program's plan may put it) gives the same rows.
TEST(AttentionPoolS8, LayoutsAgreeAndTheOutputMayOverwriteTheSequence) {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> s8(-128, 127);
  for (const int32_t T : {1, 2, 7, 33}) {
    for (const int32_t W : {1, 3, 16, 17, 40}) {
      const int32_t B = 3;
      qlstm_attention_pool_s8_params p = params_for(0.07, B, T, W, 3);
      std::vector<int8_t> scores(static_cast<size_t>(B * T)), seq(static_cast<size_t>(B * T * W));
      for (auto& v : scores) v = static_cast<int8_t>(s8(rng));
      for (auto& v : seq) v = static_cast<int8_t>(s8(rng));
      std::vector<int8_t> want(static_cast<size_t>(B * W));
      ASSERT_EQ(qlstm_attention_pool_s8(&p, scores.data(), seq.data(), want.data()), QLSTM_OK);
      std::vector<int8_t> scores_tm(scores.size()), seq_tm(seq.size()), got(want.size());
      for (int32_t b = 0; b < B; ++b) {
        for (int32_t t = 0; t < T; ++t) {
          scores_tm[static_cast<size_t>(t * B + b)] = scores[static_cast<size_t>(b * T + t)];
          std::memcpy(&seq_tm[static_cast<size_t>((t * B + b) * W)], &seq[static_cast<size_t>((b * T + t) * W)], static_cast<size_t>(W));
        }
      }
      p.layout = QLSTM_LAYOUT_TIME_MAJOR;
      ASSERT_EQ(qlstm_attention_pool_s8(&p, scores_tm.data(), seq_tm.data(), got.data()), QLSTM_OK);
      EXPECT_EQ(got, want) << "time-major T " << T << " W " << W;
      std::vector<int8_t> shared = seq_tm;
      ASSERT_EQ(qlstm_attention_pool_s8(&p, scores_tm.data(), shared.data(), shared.data()), QLSTM_OK);
      EXPECT_EQ(std::vector<int8_t>(shared.begin(), shared.begin() + B * W), want) << "time-major in place";
      p.layout = QLSTM_LAYOUT_BATCH_MAJOR;
      shared = seq;
      ASSERT_EQ(qlstm_attention_pool_s8(&p, scores.data(), shared.data(), shared.data()), QLSTM_OK);
      EXPECT_EQ(std::vector<int8_t>(shared.begin(), shared.begin() + B * W), want) << "batch-major in place";
    }
  }
}

TEST(AttentionPoolS8, ValidationNamesTheField) {
  const qlstm_attention_pool_s8_params good = params_for(0.1, 2, 3, 4, 0);
  const char* field = nullptr;
  ASSERT_EQ(qlstm_attention_pool_s8_validate(&good, &field), QLSTM_OK);
  struct Bad {
    void (*edit)(qlstm_attention_pool_s8_params&);
    qlstm_status status;
    const char* field;
  };
  const Bad bad[] = {
      {[](qlstm_attention_pool_s8_params& p) { p.batch = -1; }, QLSTM_ERROR_BAD_DIMS, "batch"},
      {[](qlstm_attention_pool_s8_params& p) { p.time_steps = 0; }, QLSTM_ERROR_BAD_DIMS, "time_steps"},
      {[](qlstm_attention_pool_s8_params& p) { p.time_steps = QLSTM_ATTENTION_POOL_S8_TIME_STEPS_MAX + 1; }, QLSTM_ERROR_BAD_DIMS, "time_steps"},
      {[](qlstm_attention_pool_s8_params& p) { p.layout = 2; }, QLSTM_ERROR_BAD_LAYOUT, "layout"},
      {[](qlstm_attention_pool_s8_params& p) { p.row_size = 0; }, QLSTM_ERROR_BAD_DIMS, "row_size"},
      {[](qlstm_attention_pool_s8_params& p) { p.batch = 1 << 20, p.row_size = 1 << 12; }, QLSTM_ERROR_BAD_DIMS, "batch"},
      {[](qlstm_attention_pool_s8_params& p) { p.input_multiplier = -1; }, QLSTM_ERROR_BAD_MULTIPLIER, "input_multiplier"},
      {[](qlstm_attention_pool_s8_params& p) { p.input_left_shift = 32; }, QLSTM_ERROR_BAD_SHIFT, "input_left_shift"},
      {[](qlstm_attention_pool_s8_params& p) { p.diff_min = 1; }, QLSTM_ERROR_BAD_DIFF_MIN, "diff_min"},
      {[](qlstm_attention_pool_s8_params& p) { p.zero_point = -129; }, QLSTM_ERROR_BAD_ZERO_POINT, "zero_point"},
  };
  for (const Bad& c : bad) {
    qlstm_attention_pool_s8_params p = good;
    c.edit(p);
    field = nullptr;
    EXPECT_EQ(qlstm_attention_pool_s8_validate(&p, &field), c.status) << c.field;
    EXPECT_STREQ(field, c.field);
  }
  int8_t x[24] = {};
  EXPECT_EQ(qlstm_attention_pool_s8(&good, nullptr, x, x), QLSTM_ERROR_NULL_POINTER);
  EXPECT_EQ(qlstm_attention_pool_s8_validate(nullptr, &field), QLSTM_ERROR_NULL_POINTER);
}

}  // namespace
