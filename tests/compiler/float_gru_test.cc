// The float GRU against torch.nn.GRU (tests/compiler/gru/make_gru_reference.py): forward and
// reverse, from a given state, both layouts; and its refusals.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "qlstm/compiler/float/float_gru.h"
#include "qlstm/compiler/io/npy.h"
#include "qlstm/compiler/lower/compile_program.h"

namespace {

using namespace qlstm::compiler;

std::vector<float> load(const std::string& name) {
  return read_npy(std::string(QLSTM_GRU_REFERENCE) + "/" + name + ".npy").as_float(name);
}

constexpr int32_t kB = 3, kT = 9, kI = 5, kH = 7;

FloatGru reference_gru() {
  return FloatGru::from_torch(kI, kH, load("weight_ih"), load("weight_hh"), load("bias_ih"), load("bias_hh"));
}

TEST(FloatGru, MatchesTorchForwardAndReverse) {
  FloatGru gru = reference_gru();
  const std::vector<float> x = load("x"), h0 = load("h0");
  // torch computes in fp32, the reference in double: agreement to fp32 rounding.
  const FloatGruResult f = run_float_gru(gru, x.data(), {kB, kT, Layout::kBatchMajor}, h0.data());
  EXPECT_LT(max_abs_error(load("y"), f.output), 2e-6);
  EXPECT_LT(max_abs_error(load("h_n"), f.h_n), 2e-6);
  gru.reverse = true;
  const FloatGruResult r = run_float_gru(gru, x.data(), {kB, kT, Layout::kBatchMajor}, h0.data());
  EXPECT_LT(max_abs_error(load("y_rev"), r.output), 2e-6);
  EXPECT_LT(max_abs_error(load("h_n_rev"), r.h_n), 2e-6);
}

TEST(FloatGru, TimeMajorLayoutAgrees) {
  const FloatGru gru = reference_gru();
  const std::vector<float> x = load("x"), h0 = load("h0"), y = load("y");
  std::vector<float> x_tm(x.size());
  for (int32_t b = 0; b < kB; ++b)
    for (int32_t t = 0; t < kT; ++t)
      for (int32_t i = 0; i < kI; ++i) x_tm[(t * kB + b) * kI + i] = x[(b * kT + t) * kI + i];
  const FloatGruResult r = run_float_gru(gru, x_tm.data(), {kB, kT, Layout::kTimeMajor}, h0.data());
  for (int32_t b = 0; b < kB; ++b)
    for (int32_t t = 0; t < kT; ++t)
      for (int32_t u = 0; u < kH; ++u) ASSERT_NEAR(r.output[(t * kB + b) * kH + u], y[(b * kT + t) * kH + u], 2e-6);
}

TEST(FloatGru, VisitorSeesEveryStep) {
  const FloatGru gru = reference_gru();
  const std::vector<float> x = load("x"), h_n = load("h_n");
  int32_t steps = 0;
  std::vector<double> last(kH);
  run_float_gru(gru, x.data(), {1, kT, Layout::kBatchMajor}, load("h0").data(),
                [&](const double* cell, const double* hidden, int32_t n) {
                  EXPECT_EQ(cell, nullptr);
                  ASSERT_EQ(n, kH);
                  last.assign(hidden, hidden + n);
                  ++steps;
                });
  EXPECT_EQ(steps, kT);
  for (int32_t u = 0; u < kH; ++u) EXPECT_NEAR(last[u], h_n[u], 2e-6);  // batch row 0's h_n
}

TEST(FloatGru, RefusesWrongShapesAndNonFiniteValues) {
  const std::vector<float> w_ih = load("weight_ih"), w_hh = load("weight_hh"), b = load("bias_ih");
  try {
    FloatGru::from_torch(kI, kH, std::vector<float>(w_ih.begin(), w_ih.end() - 1), w_hh, b, b);
    FAIL();
  } catch (const CompileError& e) {
    EXPECT_EQ(std::string(e.what()), "GRU: weight_ih [3H][I] has 104 values, expected 105");
  }
  std::vector<float> bad = w_hh;
  bad[2 * kH * kH + 3] = std::numeric_limits<float>::infinity();  // the new gate, row 0, column 3
  try {
    FloatGru::from_torch(kI, kH, w_ih, bad, b, b);
    FAIL();
  } catch (const CompileError& e) {
    EXPECT_EQ(std::string(e.what()), "gate 'new': recurrent weight is not finite (inf) at [0][3]");
  }
  EXPECT_THROW(FloatGru::from_torch(0, kH, w_ih, w_hh, b, b), CompileError);
  // No bias at all is a GRU without bias.
  const FloatGru nobias = FloatGru::from_torch(kI, kH, w_ih, w_hh, {}, {});
  EXPECT_EQ(nobias.gates[kGruNew].bias_h, std::vector<float>(kH, 0.0f));
  EXPECT_STREQ(gru_gate_name(kGruUpdate), "update");
}

}  // namespace
