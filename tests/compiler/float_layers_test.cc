// The float semantics of the layers around the LSTM (float_layers.h) and the whole float program
// (front -> stack -> head) of program.h.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "qlstm/compiler/float/float_layers.h"
#include "qlstm/compiler/program/program.h"

namespace qlstm {
namespace compiler {
namespace {

FloatLayer activation(ActivationFn fn) {
  FloatLayer l;
  l.kind = FloatLayerKind::kActivation;
  l.node = "act";
  l.fn = fn;
  l.input_size = l.output_size = 3;
  return l;
}

FloatLayer linear(int32_t in, int32_t out, std::mt19937* rng, const std::string& node = "fc") {
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  FloatLayer l;
  l.node = node;
  l.input_size = in;
  l.output_size = out;
  for (int32_t k = 0; k < in * out; ++k) l.weight.push_back(u(*rng));
  for (int32_t k = 0; k < out; ++k) l.bias.push_back(u(*rng));
  return l;
}

FloatLstm lstm(int32_t I, int32_t H, std::mt19937* rng, bool reverse = false) {
  std::uniform_real_distribution<float> u(-0.4f, 0.4f);
  std::vector<float> wi(4 * H * I), wh(4 * H * H), bi(4 * H), bh(4 * H);
  for (auto* v : {&wi, &wh, &bi, &bh}) {
    for (float& x : *v) x = u(*rng);
  }
  FloatLstm l = FloatLstm::from_torch(I, H, wi, wh, bi, bh);
  l.reverse = reverse;
  return l;
}

TEST(FloatLayers, ActivationsFollowTheirDefinitions) {
  // Values of the closed forms at x = 1 (erf(1 / sqrt 2) = 0.6826894921370859).
  EXPECT_NEAR(apply_activation(activation(ActivationFn::kGelu), 1.0), 0.8413447460685429, 1e-15);
  FloatLayer gelu_tanh = activation(ActivationFn::kGelu);
  gelu_tanh.gelu_tanh = true;
  EXPECT_NEAR(apply_activation(gelu_tanh, 1.0), 0.8411919906082768, 1e-15);
  EXPECT_NEAR(apply_activation(activation(ActivationFn::kSigmoid), 0.0), 0.5, 0);
  EXPECT_NEAR(apply_activation(activation(ActivationFn::kSilu), 2.0), 2.0 / (1.0 + std::exp(-2.0)), 1e-15);
  EXPECT_EQ(apply_activation(activation(ActivationFn::kHardSwish), 1.0), 1.0 * (1.0 / 6.0 + 0.5));
  EXPECT_EQ(apply_activation(activation(ActivationFn::kHardSwish), -4.0), 0.0);
  EXPECT_EQ(apply_activation(activation(ActivationFn::kHardSwish), 4.0), 4.0);
  EXPECT_EQ(apply_activation(activation(ActivationFn::kRelu), -2.0), 0.0);
  EXPECT_EQ(apply_activation(activation(ActivationFn::kTanh), 0.5), std::tanh(0.5));
  FloatLayer leaky = activation(ActivationFn::kLeakyRelu);
  leaky.alpha = 0.1;
  EXPECT_EQ(apply_activation(leaky, -2.0), -0.2);
  EXPECT_EQ(apply_activation(leaky, 2.0), 2.0);
  FloatLayer hs = activation(ActivationFn::kHardSigmoid);
  hs.alpha = 0.2;
  hs.beta = 0.5;
  EXPECT_EQ(apply_activation(hs, 10.0), 1.0);
  EXPECT_EQ(apply_activation(hs, -10.0), 0.0);
  EXPECT_DOUBLE_EQ(apply_activation(hs, 1.0), 0.7);
  FloatLayer relu6 = activation(ActivationFn::kClip);
  relu6.clip_min = 0.0;
  relu6.clip_max = 6.0;
  EXPECT_EQ(apply_activation(relu6, 7.5), 6.0);
  EXPECT_EQ(apply_activation(relu6, -1.0), 0.0);
  relu6.clip_max = std::numeric_limits<double>::infinity();  // Clip with no max
  EXPECT_EQ(apply_activation(relu6, 7.5), 7.5);
  for (ActivationFn f : {ActivationFn::kRelu, ActivationFn::kClip, ActivationFn::kLeakyRelu, ActivationFn::kSigmoid,
                         ActivationFn::kTanh, ActivationFn::kHardSigmoid, ActivationFn::kGelu, ActivationFn::kSilu,
                         ActivationFn::kHardSwish}) {
    EXPECT_STRNE(activation_fn_name(f), "?");
  }
}

TEST(FloatLayers, LinearAndSoftmaxPerPosition) {
  FloatLayer fc;
  fc.node = "fc";
  fc.input_size = 2;
  fc.output_size = 3;
  fc.weight = {1, 2, 3, 4, -1, 0.5f};
  fc.bias = {0.5f, 0, -1};
  fc.validate();
  const std::vector<double> y = run_float_layer(fc, {1, 1, 2, -1}, 2);
  const std::vector<double> want = {3.5, 7, -1.5, 0.5, 2, -3.5};
  ASSERT_EQ(y.size(), want.size());
  for (size_t k = 0; k < y.size(); ++k) EXPECT_DOUBLE_EQ(y[k], want[k]) << k;

  FloatLayer sm;
  sm.kind = FloatLayerKind::kSoftmax;
  sm.node = "sm";
  sm.input_size = sm.output_size = 3;
  sm.validate();
  // Large logits: shifted by the maximum, no overflow; each position sums to one.
  const std::vector<double> p = run_float_layer(sm, {1000, 1001, 999, 0, 0, 0}, 2);
  EXPECT_NEAR(p[1] / p[0], std::exp(1.0), 1e-12);
  EXPECT_NEAR(p[0] + p[1] + p[2], 1.0, 1e-15);
  EXPECT_NEAR(p[3], 1.0 / 3.0, 1e-15);
}

TEST(FloatLayers, ValidateNamesTheLayerAndField) {
  FloatLayer fc;
  fc.node = "/head/Gemm";
  fc.input_size = 2;
  fc.output_size = 3;
  fc.weight = {1, 2, 3};
  try {
    fc.validate();
    FAIL() << "accepted a weight of the wrong size";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("'/head/Gemm' (Linear): weight has 3 values"), std::string::npos) << e.what();
  }
  fc.weight = {1, 2, 3, 4, 5, std::numeric_limits<float>::quiet_NaN()};
  EXPECT_THROW(fc.validate(), CompileError);
  FloatLayer clip = activation(ActivationFn::kClip);
  clip.clip_min = 1;
  clip.clip_max = 0;
  try {
    clip.validate();
    FAIL() << "accepted an empty clip interval";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("(Clip): clip bounds"), std::string::npos) << e.what();
  }
  FloatLayer act = activation(ActivationFn::kTanh);
  act.output_size = 4;
  EXPECT_THROW(act.validate(), CompileError);
}

// The program's head on the last step equals the per-step head's row at that step; h_n[-1] is
// the last op's final state; both layouts.
TEST(FloatProgram, FrontStackHeadAndStepSelection) {
  std::mt19937 rng(7);
  const int32_t B = 2, T = 5, F = 3, P = 4, H = 6, O = 3;
  FloatProgram per_step;
  per_step.front = {linear(F, P, &rng, "proj"), activation(ActivationFn::kTanh)};
  per_step.front[1].input_size = per_step.front[1].output_size = P;
  per_step.ops = {lstm(P, H, &rng), lstm(P, H, &rng, true)};
  per_step.directions = 2;
  per_step.head = {linear(2 * H, O, &rng, "out")};
  FloatLayer sm;
  sm.kind = FloatLayerKind::kSoftmax;
  sm.node = "sm";
  sm.input_size = sm.output_size = O;
  per_step.head.push_back(sm);
  per_step.validate();
  EXPECT_TRUE(per_step.sequence_output());

  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(B * T * F);
  for (float& v : x) v = u(rng);
  for (Layout layout : {Layout::kBatchMajor, Layout::kTimeMajor}) {
    const SequenceShape shape = {B, T, layout};
    const FloatProgramResult seq = run_float_program(per_step, x.data(), shape);
    ASSERT_EQ(seq.output.size(), static_cast<size_t>(B * T * O));
    EXPECT_EQ(seq.front_outputs.size(), 2u);
    EXPECT_EQ(seq.layer_outputs.size(), 1u);
    ASSERT_EQ(seq.head_outputs.size(), 2u);
    EXPECT_EQ(seq.head_outputs.back(), seq.output);

    for (int32_t step : {-1, 0, 2}) {
      FloatProgram last = per_step;
      FloatLayer sel;
      sel.kind = FloatLayerKind::kSelectStep;
      sel.node = "select";
      sel.input_size = sel.output_size = 2 * H;
      sel.step = step;
      last.head.insert(last.head.begin(), sel);
      last.validate();
      EXPECT_FALSE(last.sequence_output());
      const FloatProgramResult one = run_float_program(last, x.data(), shape);
      ASSERT_EQ(one.output.size(), static_cast<size_t>(B * O));
      const int32_t t = step >= 0 ? step : T + step;
      for (int32_t b = 0; b < B; ++b) {
        const size_t at = layout == Layout::kTimeMajor ? static_cast<size_t>(t * B + b) : static_cast<size_t>(b * T + t);
        for (int32_t o = 0; o < O; ++o) {
          EXPECT_NEAR(one.output[b * O + o], seq.output[at * O + o], 1e-7) << "step " << step << " b " << b;
        }
      }
    }
  }

  // h_n[-1] of a bidirectional stack: the reverse op's final state (H values per row).
  FloatProgram final_state = per_step;
  final_state.lstm_output = LstmOutput::kFinalState;
  final_state.head = {linear(H, O, &rng, "on_h_n")};
  final_state.validate();
  EXPECT_EQ(final_state.stack_output_size(), H);
  const FloatProgramResult r = run_float_program(final_state, x.data(), {B, T, Layout::kBatchMajor});
  const std::vector<double> h_last(r.h_n.begin() + B * H, r.h_n.end());
  const std::vector<double> want = run_float_layer(final_state.head[0], h_last, B);
  ASSERT_EQ(r.output.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) EXPECT_FLOAT_EQ(r.output[k], static_cast<float>(want[k]));
  // A head sized for the whole sequence does not fit h_n.
  final_state.head = {linear(2 * H, O, &rng, "wrong")};
  EXPECT_THROW(final_state.validate(), CompileError);
}

// A learned initial state whose rows differ: [ops][B][H] constants fix the batch.
TEST(FloatProgram, PerRowConstantInitialState) {
  std::mt19937 rng(3);
  const int32_t B = 2, T = 4, I = 2, H = 3;
  FloatProgram p;
  p.ops = {lstm(I, H, &rng)};
  p.initial_hidden = p.initial_cell = StateSource::kConstant;
  p.h0 = {{0.1f, -0.2f, 0.3f, 0.5f, 0.4f, -0.6f}};
  p.c0 = {{-0.3f, 0.2f, 0.1f, 0.0f, 0.7f, -0.1f}};
  p.validate();
  EXPECT_EQ(p.constant_state_batch(), B);
  std::vector<float> x(B * T * I, 0.25f);  // both rows read the same input
  const FloatProgramResult r = run_float_program(p, x.data(), {B, T, Layout::kBatchMajor});
  const FloatProgramResult given = run_float_program(p, x.data(), {B, T, Layout::kBatchMajor}, p.h0[0].data(),
                                                     p.c0[0].data());
  EXPECT_EQ(r.output, given.output);
  EXPECT_NE(r.h_n[0], r.h_n[H]);  // the rows differ only by their initial state
  EXPECT_THROW(run_float_program(p, x.data(), {1, T * 2, Layout::kBatchMajor}), CompileError);
  p.c0[0].pop_back();
  EXPECT_THROW(p.validate(), CompileError);
}

}  // namespace
}  // namespace compiler
}  // namespace qlstm
