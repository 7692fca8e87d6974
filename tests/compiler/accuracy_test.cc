// Accuracy against torch.nn.LSTM fp32 on the fixtures made by tests/accuracy/make_fixtures.py:
// the float reference, upstream's own cases, the saturating cell, a long sequence and trained
// models; qlstm's defaults against upstream's method on the same model and data.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "accuracy_fixture.h"
#include "qlstm/compiler/quantized_lstm.h"

namespace {

using namespace qlstm::compiler;
using testing_support::AccuracyFixture;
using testing_support::upstream_options;
using testing_support::load_accuracy_fixture;

AccuracyFixture fixture(const std::string& name) {
  return load_accuracy_fixture(QLSTM_ACCURACY_FIXTURES, name);
}

struct Score {
  double sqnr, max_err;
  int32_t power;
};
Score score(const AccuracyFixture& f, const CompileOptions& o) {
  const QuantizedLstm q = QuantizedLstm::compile(f.lstm, f.calibration(), o);
  const std::vector<float> y = q.run_float(f.test_x, f.test_shape());
  return {sqnr_db(f.test_y, y), max_abs_error(f.test_y, y), q.derived().cell.power};
}

const char* const kAll[] = {"upstream_small", "upstream_wide", "upstream_single_step",
                            "upstream_saturating", "long_memory", "random_large", "torch_reference",
                            "trained_kws", "trained_forecast", "trained_gesture"};

TEST(FloatReference, MatchesTorchOnEveryFixture) {
  for (const char* name : kAll) {
    const AccuracyFixture f = fixture(name);
    const bool with_state = !f.h0.empty();
    const FloatResult r = run_float(f.lstm, f.test_x.data(), f.test_shape(),
                                    with_state ? f.h0.data() : nullptr,
                                    with_state ? f.c0.data() : nullptr);
    // torch computes in fp32, the reference in double: agreement to fp32 rounding.
    EXPECT_LT(max_abs_error(f.test_y, r.output), 2e-5) << name;
    EXPECT_LT(max_abs_error(f.test_h_n, r.h_n), 2e-5) << name;
    EXPECT_LT(max_abs_error(f.test_c_n, r.c_n), 1e-4) << name;
  }
}

TEST(FloatReference, TimeMajorLayoutAgrees) {
  const AccuracyFixture f = fixture("torch_reference");
  const int32_t B = f.test_n, T = f.test_t, I = f.lstm.input_size, H = f.lstm.hidden_size;
  std::vector<float> x_tm(f.test_x.size());
  for (int32_t b = 0; b < B; ++b)
    for (int32_t t = 0; t < T; ++t)
      for (int32_t i = 0; i < I; ++i) x_tm[(t * B + b) * I + i] = f.test_x[(b * T + t) * I + i];
  const FloatResult r = run_float(f.lstm, x_tm.data(), {B, T, Layout::kTimeMajor}, f.h0.data(), f.c0.data());
  for (int32_t b = 0; b < B; ++b)
    for (int32_t t = 0; t < T; ++t)
      for (int32_t u = 0; u < H; ++u)
        ASSERT_NEAR(r.output[(t * B + b) * H + u], f.test_y[(b * T + t) * H + u], 2e-5);
}

TEST(Accuracy, UpstreamMethodReproducesItsPublishedFigures) {
  // The upstream figures quoted in the issue, on upstream's own cases, seed 0.
  EXPECT_NEAR(score(fixture("upstream_small"), upstream_options(fixture("upstream_small"))).sqnr, 39.3, 0.1);
  EXPECT_NEAR(score(fixture("upstream_wide"), upstream_options(fixture("upstream_wide"))).sqnr, 41.8, 0.15);
  EXPECT_NEAR(score(fixture("upstream_single_step"), upstream_options(fixture("upstream_single_step"))).sqnr, 53.0, 0.1);
}

TEST(Accuracy, UpstreamCasesAtLeastUpstreamFigures) {
  const std::pair<const char*, double> cases[] = {
      {"upstream_small", 39.3}, {"upstream_wide", 41.8}, {"upstream_single_step", 53.0}};
  for (const auto& [name, figure] : cases) {
    const AccuracyFixture f = fixture(name);
    const Score q = score(f, CompileOptions{});
    const Score up = score(f, upstream_options(f));
    EXPECT_GE(q.sqnr, figure - 0.05) << name;
    EXPECT_GE(q.sqnr, up.sqnr - 0.05) << name;
    std::printf("%s: qlstm %.2f dB, upstream method %.2f dB, upstream figure %.1f dB\n", name,
                q.sqnr, up.sqnr, figure);
  }
}

TEST(Accuracy, SaturatingCellWithCalibratedScale) {
  const AccuracyFixture f = fixture("upstream_saturating");
  const Score q = score(f, CompileOptions{});
  EXPECT_LE(q.max_err, 0.0024);
  EXPECT_GE(q.sqnr, 60.5 - 0.05);
  // A fixed P = -12 (range +-8) clips this cell (everything else as upstream).
  CompileOptions fixed = upstream_options(f);
  fixed.cell_scale = parse_cell_policy("fixed:-12");
  EXPECT_GT(score(f, fixed).max_err, 0.5);
  std::printf("saturating: qlstm max abs err %.4f (P=%d), SQNR %.2f dB\n", q.max_err, q.power, q.sqnr);
}

TEST(Accuracy, LongSequenceCalibratedBeatsSequenceBound) {
  const AccuracyFixture f = fixture("long_memory");
  ASSERT_EQ(f.test_t, 450);
  CompileOptions bound = CompileOptions{};
  bound.cell_scale = parse_cell_policy("sequence-bound:450");
  const Score calibrated = score(f, CompileOptions{});
  const Score sequence_bound = score(f, bound);
  EXPECT_EQ(sequence_bound.power, -6);
  EXPECT_LT(calibrated.power, sequence_bound.power);
  EXPECT_GT(calibrated.sqnr, sequence_bound.sqnr + 4.0);
  EXPECT_GT(calibrated.sqnr, score(f, upstream_options(f)).sqnr + 4.0);
  std::printf("long_memory: calibrated %.2f dB (P=%d), sequence-bound %.2f dB (P=%d)\n",
              calibrated.sqnr, calibrated.power, sequence_bound.sqnr, sequence_bound.power);
}

TEST(Accuracy, TrainedAndLargeModelsAtLeastUpstream) {
  for (const char* name : {"trained_kws", "trained_forecast", "trained_gesture", "random_large"}) {
    const AccuracyFixture f = fixture(name);
    const Score q = score(f, CompileOptions{});
    const Score up = score(f, upstream_options(f));
    EXPECT_GE(q.sqnr, up.sqnr) << name;
    EXPECT_GE(q.sqnr, 34.0) << name;
    std::printf("%s: qlstm %.2f dB (P=%d), upstream method %.2f dB (P=%d)\n", name, q.sqnr,
                q.power, up.sqnr, up.power);
  }
}

TEST(Accuracy, SearchGainsItsDocumentedFiguresOverItsUpstreamStart) {
  // docs/accuracy.md, "Choices of the search": the calibration score of upstream's choices (the
  // start) and of the search's result, to the 0.1 dB printed there. The search takes only strict
  // improvements, so final >= start holds by construction; what it must show is a gain, here at
  // least 0.5 dB on each of these models (documented: +3.4, +0.8 and +3.8 dB).
  struct Figures {
    const char* name;
    double start, final;
  };
  for (const Figures& d : {Figures{"upstream_small", 39.3, 42.7}, Figures{"trained_kws", 41.7, 42.5},
                           Figures{"long_memory", 40.8, 44.6}}) {
    const AccuracyFixture f = fixture(d.name);
    const QuantizedLstm q = QuantizedLstm::compile(f.lstm, f.calibration(), CompileOptions{});
    const CalibrationStats& c = q.calibration();
    EXPECT_EQ(c.tuning, Tuning::kSearch);
    EXPECT_GT(c.evaluations, 10);
    EXPECT_NEAR(c.start_sqnr_db, d.start, 0.05) << d.name;
    EXPECT_NEAR(c.final_sqnr_db, d.final, 0.05) << d.name;
    EXPECT_GT(c.final_sqnr_db, c.start_sqnr_db + 0.5) << d.name;
    std::printf("%s: search %.2f -> %.2f dB in %d evaluations\n", d.name, c.start_sqnr_db,
                c.final_sqnr_db, c.evaluations);
  }
}

}  // namespace
