// qlstm eval's accuracy figures (tools/qlstm/eval_metrics.h): labels, targets and units are read
// with errors that name the file and the problem; the scores count what they say.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "eval_metrics.h"
#include "qlstm/compiler/io/file_io.h"
#include "qlstm/compiler/io/npy.h"
#include "qlstm/compiler/program/program.h"

namespace {

using namespace qlstm::cli;
using qlstm::compiler::CompileError;
using qlstm::compiler::DType;
using qlstm::compiler::FileError;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("qlstm_eval_" + std::to_string(::getpid()) + "_" + name)).string();
}

std::string write_text(const std::string& name, const std::string& text) {
  const std::string p = temp_path(name);
  std::ofstream(p) << text;
  return p;
}

// The message of what f throws as E; fails the test if it throws nothing.
template <typename E, typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "nothing thrown";
  return "";
}

TEST(EvalMetrics, LabelsAreIntegersOnePerSequenceEachAClass) {
  const std::string p = temp_path("labels.npy");
  const std::vector<int64_t> v = {3, 0, 9, 1};
  qlstm::compiler::write_npy(p, DType::kInt64, {4}, v.data());
  EXPECT_EQ(read_labels(p, 4, 10), v);
  // A column [rows, 1] is the same.
  qlstm::compiler::write_npy(p, DType::kInt64, {4, 1}, v.data());
  EXPECT_EQ(read_labels(p, 4, 10), v);
  EXPECT_EQ(error_of<CompileError>([&] { read_labels(p, 5, 10); }), p + ": 4 labels for 5 sequences in --data");
  EXPECT_EQ(error_of<CompileError>([&] { read_labels(p, 4, 9); }),
            p + ": label [2] = 9 is not a class of the model's output (0 ... 8)");
  const std::vector<int32_t> negative = {0, -1};
  qlstm::compiler::write_npy(p, DType::kInt32, {2}, negative.data());
  EXPECT_EQ(error_of<CompileError>([&] { read_labels(p, 2, 10); }),
            p + ": label [1] = -1 is not a class of the model's output (0 ... 9)");
  qlstm::compiler::write_npy_float32(p, {4}, {3, 0, 9, 1});
  EXPECT_EQ(error_of<CompileError>([&] { read_labels(p, 4, 10); }),
            p + ": dtype <f4, expected integer class labels (int8, int16, int32 or int64)");
  qlstm::compiler::write_npy(p, DType::kInt64, {2, 2}, v.data());
  EXPECT_EQ(error_of<CompileError>([&] { read_labels(p, 2, 10); }),
            p + ": shape [2, 2], expected [2] (one class per sequence)");
  std::remove(p.c_str());
  EXPECT_NE(error_of<std::exception>([&] { read_labels(p, 4, 10); }).find(p), std::string::npos);
}

TEST(EvalMetrics, TargetsHaveTheOutputsShapeOrDropItsUnitAxis) {
  const std::string p = temp_path("targets.npy");
  const std::vector<float> v = {0.5f, -1.0f, 2.0f, 0.25f, 1.0f, 3.0f};
  qlstm::compiler::write_npy_float32(p, {2, 3, 1}, v);
  EXPECT_EQ(read_targets(p, {2, 3, 1}), v);
  qlstm::compiler::write_npy_float32(p, {2, 3}, v);
  EXPECT_EQ(read_targets(p, {2, 3, 1}), v);
  EXPECT_EQ(error_of<CompileError>([&] { read_targets(p, {3, 2, 1}); }),
            p + ": shape [2, 3], expected the model output's [3, 2, 1] or [3, 2]");
  EXPECT_EQ(error_of<CompileError>([&] { read_targets(p, {2, 3, 2}); }),
            p + ": shape [2, 3], expected the model output's [2, 3, 2]");
  const std::vector<int32_t> ints = {1, 2};
  qlstm::compiler::write_npy(p, DType::kInt32, {2}, ints.data());
  EXPECT_EQ(error_of<CompileError>([&] { read_targets(p, {2}); }), p + ": dtype <i4, expected float32 ('<f4')");
  qlstm::compiler::write_npy_float32(p, {2}, {1.0f, NAN});
  EXPECT_EQ(error_of<CompileError>([&] { read_targets(p, {2}); }), p + ": non-finite value at index 1");
  std::remove(p.c_str());
}

TEST(EvalMetrics, OutputUnitsComeFromTheJsonFileWithTheFieldNamed) {
  const OutputUnits u = read_output_units(
      write_text("u.json", R"({"other": 1, "output_units": {"name": "sunspots", "scale": 40.5, "offset": 49.75}})"));
  EXPECT_EQ(u.name, "sunspots");
  EXPECT_EQ(u.scale, 40.5);
  EXPECT_EQ(u.offset, 49.75);
  const OutputUnits plain = read_output_units(write_text("plain.json", R"({"output_units": {"scale": 2}})"));
  EXPECT_EQ(plain.name, "output units");
  EXPECT_EQ(plain.offset, 0.0);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"{", "not valid JSON"},
      {R"({"normalization": {"mean": 1, "std": 2}})", "no object 'output_units'"},
      {R"({"output_units": {"name": "x"}})", "missing key 'output_units.scale'"},
      {R"({"output_units": {"scale": "2"}})", "key 'output_units.scale': expected a finite number"},
      {R"({"output_units": {"scale": 0}})", "key 'output_units.scale': expected a positive number"},
      {R"({"output_units": {"scale": 1, "offset": null}})", "key 'output_units.offset': expected a finite number"},
      {R"({"output_units": {"scale": 1, "name": 3}})", "key 'output_units.name': expected a string"},
  };
  for (const auto& [text, want] : bad) {
    const std::string p = write_text("bad.json", text);
    const std::string e = error_of<FileError>([&] { read_output_units(p); });
    EXPECT_EQ(e.rfind(p + ": ", 0), 0u) << e;
    EXPECT_NE(e.find(want), std::string::npos) << text << " -> " << e;
  }
  EXPECT_EQ(error_of<FileError>([&] { read_output_units(temp_path("none.json")); }),
            temp_path("none.json") + ": cannot open file");
}

TEST(EvalMetrics, ClassifierScoresCountArgmaxAgreementAndHits) {
  // Three rows of three classes: float picks 2, 0, 1; int8 picks 2, 1, 1 (the tie in row 1 goes to
  // the first of the tied maxima, index 1).
  const std::vector<float> ref = {0.1f, 0.2f, 0.7f, 0.5f, 0.3f, 0.2f, 0.0f, 0.9f, 0.1f};
  const std::vector<float> got = {0.1f, 0.1f, 0.8f, 0.2f, 0.4f, 0.4f, 0.1f, 0.8f, 0.1f};
  const ClassifierScores s = score_classifier(ref, got, 3, {2, 1, 0});
  EXPECT_EQ(s.rows, 3u);
  EXPECT_EQ(s.agree, 2u);
  EXPECT_EQ(s.float_correct, 1u);  // row 0
  EXPECT_EQ(s.int8_correct, 2u);   // rows 0 and 1
  const ClassifierScores n = score_classifier(ref, got, 3, {});
  EXPECT_EQ(n.agree, 2u);
  EXPECT_EQ(n.float_correct + n.int8_correct, 0u);
}

TEST(EvalMetrics, ForecastErrorIsInTheUnitsScale) {
  OutputUnits u;
  u.scale = 10.0;
  u.offset = 1000.0;  // cancels in a difference
  const ForecastError e = forecast_error({1.0f, 2.0f, 3.5f, 0.0f}, {1.0f, 1.0f, 1.5f, 0.0f}, u);
  EXPECT_DOUBLE_EQ(e.mae, (0 + 10 + 20 + 0) / 4.0);
  EXPECT_DOUBLE_EQ(e.rmse, std::sqrt((0 + 100 + 400 + 0) / 4.0));
}

TEST(EvalMetrics, RmsErrorPerStepFollowsTheLayout) {
  // B = 2, T = 2, W = 1: the error is 1 at (b 0, t 1) and 3 at (b 1, t 1), 0 elsewhere.
  const std::vector<float> ref = {0, 0, 0, 0};
  const std::vector<float> batch_major = {0, 1, 0, 3};  // [B][T]
  const std::vector<float> time_major = {0, 0, 1, 3};   // [T][B]
  const std::vector<double> want = {0.0, std::sqrt((1.0 + 9.0) / 2)};
  EXPECT_EQ(rms_error_per_step(ref, batch_major, 2, 2, 1, false), want);
  EXPECT_EQ(rms_error_per_step(ref, time_major, 2, 2, 1, true), want);
}

TEST(EvalMetrics, RangeCountCountsValuesOutsideAndTheFurthest) {
  RangeCount r;
  r.lo = -1.0;
  r.hi = 2.0;
  EXPECT_EQ(r.fraction(), 0.0);  // nothing counted yet
  for (double v : {-1.0, 2.0, 0.0, 2.5, -3.0, -1.5}) r.add(v);  // the bounds themselves are inside
  EXPECT_EQ(r.total, 6u);
  EXPECT_EQ(r.outside, 3u);
  EXPECT_DOUBLE_EQ(r.fraction(), 0.5);
  EXPECT_EQ(r.furthest, -3.0);  // 2 below lo, further than 2.5's 0.5 above hi
  r.add(5.5);                   // 3.5 above hi: now the furthest
  EXPECT_EQ(r.furthest, 5.5);
}

TEST(EvalMetrics, Int8AndCellRangesAreWhatTheirFormsHoldWithoutClamping) {
  qlstm::compiler::AffineQuant q;
  q.scale = 0.5;
  q.zero_point = -28;
  // Half a step beyond the extreme codes: a value there rounds to -128 or 127 without a clamp.
  const RangeCount a = int8_range(q);
  EXPECT_DOUBLE_EQ(a.lo, 0.5 * (-128.5 + 28));
  EXPECT_DOUBLE_EQ(a.hi, 0.5 * (127.5 + 28));
  const RangeCount c = cell_range(-12);  // 2^-12: |c| <= 32767.5 / 4096 ~ 8
  EXPECT_DOUBLE_EQ(c.hi, 32767.5 / 4096.0);
  EXPECT_DOUBLE_EQ(c.lo, -c.hi);
  // Agrees with the quantizers: the bound is the last value that does not clamp.
  EXPECT_EQ(q.quantize(a.hi - 1e-9), 127);
  EXPECT_EQ(q.quantize(a.lo + 1e-9), -128);
  EXPECT_EQ(qlstm::compiler::quantize_cell(c.hi - 1e-9, -12), 32767);
}

}  // namespace
