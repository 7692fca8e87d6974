// The derivation of the ops around the LSTM: FC, softmax, table, elementwise (compiler/src/lower/derive_ops.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "qlstm/compiler/lower/derive_ops.h"
#include "qlstm/compiler/float/float_lstm.h"
#include "qlstm/fully_connected_s8.h"

namespace qlstm {
namespace compiler {
namespace {

FloatLayer random_linear(int32_t I, int32_t O, uint32_t seed, double bias_scale = 0.5) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  FloatLayer l;
  l.kind = FloatLayerKind::kLinear;
  l.node = "fc";
  l.input_size = I;
  l.output_size = O;
  for (int32_t k = 0; k < I * O; ++k) l.weight.push_back(n(rng) * (1.0f + static_cast<float>(k % O)) / O);
  for (int32_t o = 0; o < O; ++o) l.bias.push_back(static_cast<float>(bias_scale * n(rng)));
  return l;
}

FloatLayer activation(ActivationFn fn) {
  FloatLayer l;
  l.kind = FloatLayerKind::kActivation;
  l.node = activation_fn_name(fn);
  l.input_size = l.output_size = 4;
  l.fn = fn;
  if (fn == ActivationFn::kLeakyRelu) l.alpha = 0.1;
  if (fn == ActivationFn::kHardSigmoid) l.alpha = 0.2, l.beta = 0.5;
  if (fn == ActivationFn::kClip) l.clip_min = -1.5, l.clip_max = 2.0;
  return l;
}

// Every output of the FC against the float Linear on the dequantized input: the error is at most
// half an output step (requantization) plus the weights' and the bias's rounding, each at most
// half its step, times the input.
void expect_fc_matches_float(const FloatLayer& lin, const DerivedFc& d, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> code(-128, 127);
  const int32_t rows = 16, I = lin.input_size, O = lin.output_size;
  std::vector<int8_t> x(static_cast<size_t>(rows * I)), y(static_cast<size_t>(rows * O));
  for (int8_t& v : x) v = static_cast<int8_t>(code(rng));
  const qlstm_fc_s8_params p = d.kernel_params(rows);
  ASSERT_EQ(qlstm_fc_s8(&p, x.data(), y.data()), QLSTM_OK);
  for (int32_t r = 0; r < rows; ++r) {
    for (int32_t o = 0; o < O; ++o) {
      const double s_w = d.weight_scales[d.per_channel ? static_cast<size_t>(o) : 0];
      double ref = lin.bias[static_cast<size_t>(o)], abs_x = 0;
      for (int32_t i = 0; i < I; ++i) {
        const double xi = d.input.dequantize(x[static_cast<size_t>(r * I + i)]);
        ref += lin.weight[static_cast<size_t>(o * I + i)] * xi;
        abs_x += std::fabs(xi);
      }
      const double lo = d.output.dequantize(d.activation_min), hi = d.output.dequantize(d.activation_max);
      ref = std::clamp(ref, lo, hi);
      const double bound = 0.5 * d.output.scale + 0.5 * s_w * abs_x + 0.5 * d.input.scale * s_w + 1e-9;
      EXPECT_LE(std::fabs(d.output.dequantize(y[static_cast<size_t>(r * O + o)]) - ref), bound)
          << "row " << r << " output " << o;
    }
  }
}

TEST(DeriveFc, PerChannelWeightsBiasAndMultipliers) {
  const FloatLayer lin = random_linear(12, 5, 1);
  const AffineQuant in{0.02, -7}, out{0.05, 3};
  const DerivedFc d = derive_fc(lin, nullptr, in, out);
  ASSERT_TRUE(d.per_channel);
  ASSERT_EQ(d.weight_scales.size(), 5u);
  for (int32_t o = 0; o < 5; ++o) {
    double max_abs = 0;
    for (int32_t i = 0; i < 12; ++i) max_abs = std::max(max_abs, std::fabs(double{lin.weight[static_cast<size_t>(o * 12 + i)]}));
    EXPECT_DOUBLE_EQ(d.weight_scales[static_cast<size_t>(o)], max_abs / 127);
    EXPECT_EQ(d.bias_q[static_cast<size_t>(o)],
              static_cast<int32_t>(std::nearbyint(lin.bias[static_cast<size_t>(o)] / (in.scale * d.weight_scales[static_cast<size_t>(o)]))));
    const qlstm_requant q{d.multipliers[static_cast<size_t>(o)], d.shifts[static_cast<size_t>(o)]};
    const double real = in.scale * d.weight_scales[static_cast<size_t>(o)] / out.scale;
    EXPECT_NEAR(multiplier_value(q) / real, 1.0, 1e-9);
  }
  std::vector<int32_t> eff(5);
  qlstm_fc_s8_effective_bias(d.weights.data(), d.bias_q.data(), in.zero_point, 12, 5, eff.data());
  EXPECT_EQ(d.effective_bias, eff);
  EXPECT_EQ(d.activation_min, -128);
  EXPECT_EQ(d.activation_max, 127);
  expect_fc_matches_float(lin, d, 2);
}

TEST(DeriveFc, PerTensorOption) {
  const FloatLayer lin = random_linear(7, 9, 3);
  const DerivedFc d = derive_fc(lin, nullptr, {0.03, 10}, {0.08, -20}, false);
  EXPECT_FALSE(d.per_channel);
  EXPECT_EQ(d.weight_scales.size(), 1u);
  EXPECT_EQ(d.multipliers.size(), 1u);
  EXPECT_EQ(d.kernel_params(1).per_channel, 0);
  expect_fc_matches_float(lin, d, 4);
}

TEST(DeriveFc, FoldsReluRelu6AndClipIntoTheClamp) {
  const FloatLayer lin = random_linear(6, 4, 5);
  const AffineQuant in{0.02, 0}, out{0.03, -100};
  FloatLayer relu = activation(ActivationFn::kRelu);
  DerivedFc d = derive_fc(lin, &relu, in, out);
  EXPECT_EQ(d.fused_activation, "relu");
  EXPECT_EQ(d.activation_min, out.zero_point);
  EXPECT_EQ(d.activation_max, 127);
  expect_fc_matches_float(lin, d, 6);
  FloatLayer relu6 = activation(ActivationFn::kClip);
  relu6.clip_min = 0;
  relu6.clip_max = 6;
  d = derive_fc(lin, &relu6, in, {6.0 / 255, -128});
  EXPECT_EQ(d.fused_activation, "relu6");
  EXPECT_EQ(d.activation_min, -128);
  EXPECT_EQ(d.activation_max, 127);
  FloatLayer clip = activation(ActivationFn::kClip);  // [-1.5, 2]
  d = derive_fc(lin, &clip, in, {0.05, 0});
  EXPECT_EQ(d.fused_activation, "clip");
  EXPECT_EQ(d.activation_min, -30);
  EXPECT_EQ(d.activation_max, 40);
  expect_fc_matches_float(lin, d, 7);
  const FloatLayer sigmoid = activation(ActivationFn::kSigmoid);
  EXPECT_THROW(derive_fc(lin, &sigmoid, in, out), CompileError);
}

// A trained classifier's dead units: rows an L2 decay left at 1e-33, or at zero, or a row 1e-9 of
// the others. Each row's weight scale has a floor (one weight step moves the output by 2^-20 of an
// output step), so those rows quantize to zeros and their biases stay exact, where a scale of
// 1e-33 / 127 overflowed int32 with the bias.
TEST(DeriveFc, NearZeroRowsQuantizeToZerosAndKeepTheirBias) {
  FloatLayer lin = random_linear(8, 5, 11);
  for (int32_t i = 0; i < 8; ++i) {
    lin.weight[static_cast<size_t>(1 * 8 + i)] = (i % 2 ? -1e-33f : 1e-33f);
    lin.weight[static_cast<size_t>(2 * 8 + i)] = 0.0f;
    lin.weight[static_cast<size_t>(3 * 8 + i)] *= 1e-9f;
  }
  lin.bias[1] = 0.3f;
  lin.bias[3] = -0.2f;
  const AffineQuant in{0.02, -7}, out{0.01, 3};
  const DerivedFc d = derive_fc(lin, nullptr, in, out);
  const double floor = std::ldexp(out.scale / in.scale, -20);
  for (int32_t o : {1, 3}) {
    EXPECT_DOUBLE_EQ(d.weight_scales[static_cast<size_t>(o)], floor) << "row " << o;
    for (int32_t i = 0; i < 8; ++i) EXPECT_EQ(d.weights[static_cast<size_t>(o * 8 + i)], 0) << "row " << o;
    const double step = in.scale * d.weight_scales[static_cast<size_t>(o)];
    EXPECT_LE(std::fabs(d.bias_q[static_cast<size_t>(o)] * step - lin.bias[static_cast<size_t>(o)]), step / 2);
  }
  for (int32_t o : {0, 4}) {  // the live rows keep their own scales
    double max_abs = 0;
    for (int32_t i = 0; i < 8; ++i) max_abs = std::max(max_abs, std::fabs(double{lin.weight[static_cast<size_t>(o * 8 + i)]}));
    EXPECT_DOUBLE_EQ(d.weight_scales[static_cast<size_t>(o)], max_abs / 127);
  }
  expect_fc_matches_float(lin, d, 12);
  // The same rows in one scale for the whole matrix: the live rows set it.
  const DerivedFc t = derive_fc(lin, nullptr, in, out, false);
  expect_fc_matches_float(lin, t, 13);
}

// A bias far beyond the output range (1e6 at an input step of 1e-4) takes a row scale that keeps
// it in 2^30 bias steps: the row saturates, as in float, instead of overflowing int32.
TEST(DeriveFc, AHugeBiasSaturatesItsRow) {
  FloatLayer lin = random_linear(4, 3, 8);
  lin.node = "/head/Gemm";
  lin.bias[1] = 1e6f;
  const DerivedFc d = derive_fc(lin, nullptr, {1e-4, 0}, {0.1, 0});
  EXPECT_LE(std::llabs(d.bias_q[1]), int64_t{1} << 30);
  std::vector<int8_t> x(4, 100), y(3);
  const qlstm_fc_s8_params p = d.kernel_params(1);
  ASSERT_EQ(qlstm_fc_s8(&p, x.data(), y.data()), QLSTM_OK);
  EXPECT_EQ(y[1], 127);
  expect_fc_matches_float(lin, d, 9);
}

TEST(DeriveFc, FromKernelParamsIsTheInverse) {
  const FloatLayer lin = random_linear(5, 3, 9);
  FloatLayer relu = activation(ActivationFn::kRelu);
  const DerivedFc d = derive_fc(lin, &relu, {0.02, 5}, {0.04, -60});
  const DerivedFc back = DerivedFc::from_kernel_params(d.kernel_params(3), d.input, d.output, d.weight_scales);
  EXPECT_EQ(back.input_size, d.input_size);
  EXPECT_EQ(back.output_size, d.output_size);
  EXPECT_EQ(back.per_channel, d.per_channel);
  EXPECT_EQ(back.weights, d.weights);
  EXPECT_EQ(back.bias_q, d.bias_q);
  EXPECT_EQ(back.effective_bias, d.effective_bias);
  EXPECT_EQ(back.multipliers, d.multipliers);
  EXPECT_EQ(back.shifts, d.shifts);
  EXPECT_EQ(back.weight_scales, d.weight_scales);
  EXPECT_EQ(back.activation_min, d.activation_min);
  EXPECT_EQ(back.activation_max, d.activation_max);
  EXPECT_EQ(back.fused_activation, "relu");
  EXPECT_THROW(DerivedFc::from_kernel_params(d.kernel_params(3), d.input, {0.04, 0}, d.weight_scales), CompileError);
}

// TFLite's int8 ADD and MUL preparation reproduces every case's parameters of the shared vectors
// from its scales and zero points, and each derived block passes the kernel's validation.
TEST(DeriveElementwise, EveryCaseOfTheSharedVectors) {
  for (const bool multiply : {false, true}) {
    const std::string path =
        std::string(QLSTM_SHARED_DIR) + "/op-vectors/elementwise_" + (multiply ? "mul" : "add") + "_s8.json";
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "skipped: " << path << " not found (no ../shared beside the project)";
    std::ifstream f(path);
    const nlohmann::json doc = nlohmann::json::parse(f);
    int cases = 0;
    for (const nlohmann::json& c : doc.at("cases")) {
      const AffineQuant in1{c.at("input1_scale").get<double>(), c.at("input1_zero_point").get<int32_t>()};
      const AffineQuant in2{c.at("input2_scale").get<double>(), c.at("input2_zero_point").get<int32_t>()};
      const AffineQuant out{c.at("output_scale").get<double>(), c.at("output_zero_point").get<int32_t>()};
      const int32_t size = c.at("size").get<int32_t>();
      const auto name = c.at("name").get<std::string>();
      if (multiply) {
        const qlstm_mul_s8_params p = derive_mul(size, in1, in2, out, name).kernel_params(1);
        EXPECT_EQ(p.output_multiplier, c.at("output_multiplier").get<int32_t>()) << name;
        EXPECT_EQ(p.output_shift, c.at("output_shift").get<int32_t>()) << name;
        EXPECT_EQ(p.input1_zero_point, in1.zero_point);
        EXPECT_EQ(qlstm_mul_s8_validate(&p, nullptr), QLSTM_OK) << name;
      } else {
        const qlstm_add_s8_params p = derive_add(size, in1, in2, out, name).kernel_params(1);
        EXPECT_EQ(p.left_shift, c.at("left_shift").get<int32_t>()) << name;
        EXPECT_EQ(p.input1_multiplier, c.at("input1_multiplier").get<int32_t>()) << name;
        EXPECT_EQ(p.input1_shift, c.at("input1_shift").get<int32_t>()) << name;
        EXPECT_EQ(p.input2_multiplier, c.at("input2_multiplier").get<int32_t>()) << name;
        EXPECT_EQ(p.input2_shift, c.at("input2_shift").get<int32_t>()) << name;
        EXPECT_EQ(p.output_multiplier, c.at("output_multiplier").get<int32_t>()) << name;
        EXPECT_EQ(p.output_shift, c.at("output_shift").get<int32_t>()) << name;
        EXPECT_EQ(qlstm_add_s8_validate(&p, nullptr), QLSTM_OK) << name;
      }
      ++cases;
    }
    EXPECT_EQ(cases, 120) << path;
  }
}

TEST(DeriveElementwise, RefusesBadQuantizationsNamingTheLayer) {
  const AffineQuant q{0.05, 3};
  EXPECT_NO_THROW(derive_add(4, q, q, q, "add"));
  const auto refused = [](const std::function<void()>& f, const std::string& what) {
    try {
      f();
      ADD_FAILURE() << "accepted: " << what;
    } catch (const CompileError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  refused([&] { derive_add(0, q, q, q, "node_add"); }, "node_add: over 0 values");
  refused([&] { derive_add(4, {0.0, 0}, q, q, "node_add"); }, "node_add: input 1");
  refused([&] { derive_mul(4, q, {0.05, 300}, q, "node_mul"); }, "node_mul: input 2");
  refused([&] { derive_mul(4, q, q, {-1.0, 0}, "node_mul"); }, "node_mul: output");
  // A product far above the output's range needs a left shift past the kernel's 31.
  refused([&] { derive_mul(4, {1e6, 0}, {1e6, 0}, {1e-6, 0}, "node_mul"); }, "node_mul: output multiplier");
}

TEST(DeriveSoftmax, EveryCaseOfTheSharedVectors) {
  const std::string path = std::string(QLSTM_SHARED_DIR) + "/op-vectors/softmax_s8.json";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "skipped: " << path << " not found (no ../shared beside the project)";
  std::ifstream f(path);
  const nlohmann::json doc = nlohmann::json::parse(f);
  ASSERT_EQ(doc.at("format"), "softmax-s8-vectors/1");
  int cases = 0;
  for (const nlohmann::json& c : doc.at("cases")) {
    const AffineQuant in{c.at("input_scale").get<double>(), 0};
    const DerivedSoftmax d = derive_softmax(c.at("row_size").get<int32_t>(), in, c.at("beta").get<double>());
    EXPECT_EQ(d.input_multiplier, c.at("multiplier").get<int32_t>()) << c.at("name");
    EXPECT_EQ(d.input_left_shift, c.at("shift").get<int32_t>()) << c.at("name");
    EXPECT_EQ(d.diff_min, c.at("diff_min").get<int32_t>()) << c.at("name");
    const DerivedSoftmax back = DerivedSoftmax::from_kernel_params(d.kernel_params(2), in);
    EXPECT_EQ(back.input_multiplier, d.input_multiplier);
    EXPECT_EQ(back.input_left_shift, d.input_left_shift);
    EXPECT_EQ(back.diff_min, d.diff_min);
    EXPECT_NEAR(back.beta / d.beta, 1.0, 1e-8) << c.at("name");
    ++cases;
  }
  EXPECT_GT(cases, 0);
}

TEST(DeriveSoftmax, OutputQuantAndRefusals) {
  EXPECT_EQ(softmax_output_quant().scale, 1.0 / 256);
  EXPECT_EQ(softmax_output_quant().zero_point, -128);
  EXPECT_THROW(derive_softmax(4, {1e-12, 0}, 1.0), CompileError);  // would need a right shift
  EXPECT_THROW(derive_softmax(4, {0.1, 0}, 0.0), CompileError);
  EXPECT_NO_THROW(derive_softmax(QLSTM_SOFTMAX_S8_ROW_SIZE_MAX, {0.1, 0}, 1.0));
  try {
    derive_softmax(QLSTM_SOFTMAX_S8_ROW_SIZE_MAX + 1, {0.1, 0}, 1.0);
    ADD_FAILURE() << "a row the kernel's int32 sum cannot hold was accepted";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("over 4096 values; the int8 softmax takes 1 to 4095"), std::string::npos)
        << e.what();
  }
}

// TFLite's own preparation of every case of the project's log-softmax vectors (its parameters,
// from the input scale), reproduced; and read back from a block.
TEST(DeriveLogSoftmax, EveryCaseOfTheVectorsAsTFLitePreparesThem) {
  std::ifstream f(std::string(QLSTM_TEST_VECTORS_DIR) + "/log_softmax_s8.json");
  ASSERT_TRUE(f.good());
  const nlohmann::json doc = nlohmann::json::parse(f);
  ASSERT_EQ(doc.at("format"), "log-softmax-s8-vectors/1");
  int cases = 0;
  for (const nlohmann::json& c : doc.at("cases")) {
    const AffineQuant in{c.at("input_scale").get<double>(), 0};
    const DerivedLogSoftmax d = derive_log_softmax(c.at("row_size").get<int32_t>(), in);
    EXPECT_EQ(d.input_multiplier, c.at("multiplier").get<int32_t>()) << c.at("name");
    EXPECT_EQ(d.input_left_shift, c.at("shift").get<int32_t>()) << c.at("name");
    EXPECT_EQ(d.reverse_multiplier, c.at("reverse_multiplier").get<int32_t>()) << c.at("name");
    EXPECT_EQ(d.reverse_shift, c.at("reverse_shift").get<int32_t>()) << c.at("name");
    EXPECT_EQ(d.diff_min, c.at("diff_min").get<int32_t>()) << c.at("name");
    const qlstm_log_softmax_s8_params p = d.kernel_params(2);
    EXPECT_EQ(qlstm_log_softmax_s8_validate(&p, nullptr), QLSTM_OK);
    const DerivedLogSoftmax back = DerivedLogSoftmax::from_kernel_params(p, in);
    EXPECT_EQ(back.kernel_params(2).reverse_multiplier, p.reverse_multiplier);
    EXPECT_EQ(back.kernel_params(2).reverse_shift, p.reverse_shift);
    EXPECT_EQ(back.kernel_params(2).diff_min, p.diff_min);
    ++cases;
  }
  EXPECT_EQ(cases, 123);
}

TEST(DeriveLogSoftmax, OutputQuantAndRefusals) {
  EXPECT_EQ(log_softmax_output_quant().scale, 1.0 / 16);
  EXPECT_EQ(log_softmax_output_quant().zero_point, 127);
  // A difference scaling of 1 or less (input scale 2^-26) has no reverse scaling below 1.
  try {
    derive_log_softmax(4, {std::ldexp(1.0, -26), 0});
    ADD_FAILURE() << "an input scale of 2^-26 was accepted";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("too small for the int8 log-softmax"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(derive_log_softmax(4, {std::ldexp(1.0, -25), 0}));
  EXPECT_THROW(derive_log_softmax(QLSTM_LOG_SOFTMAX_S8_ROW_SIZE_MAX + 1, {0.1, 0}), CompileError);
  EXPECT_THROW(derive_log_softmax(0, {0.1, 0}), CompileError);
}

TEST(DeriveTable, EveryFunctionWithinHalfAnOutputStepForAll256Inputs) {
  const ActivationFn fns[] = {ActivationFn::kRelu,        ActivationFn::kClip, ActivationFn::kLeakyRelu,
                              ActivationFn::kSigmoid,     ActivationFn::kTanh, ActivationFn::kHardSigmoid,
                              ActivationFn::kGelu,        ActivationFn::kSilu, ActivationFn::kHardSwish};
  const AffineQuant in{8.0 / 255, -3};
  std::vector<FloatLayer> layers;
  for (ActivationFn fn : fns) layers.push_back(activation(fn));
  layers.push_back(activation(ActivationFn::kGelu));
  layers.back().gelu_tanh = true;  // torch's approximate='tanh' form
  for (const FloatLayer& layer : layers) {
    const ActivationFn fn = layer.fn;
    // The output covers the function's range over the input's: no entry saturates.
    double lo = 0, hi = 0;
    for (int32_t x = -128; x <= 127; ++x) {
      lo = std::min(lo, apply_activation(layer, in.dequantize(x)));
      hi = std::max(hi, apply_activation(layer, in.dequantize(x)));
    }
    const AffineQuant out = affine_from_range(lo, hi);
    const DerivedTable t = derive_table(layer, 4, in, out);
    ASSERT_EQ(t.table.size(), 256u);
    EXPECT_EQ(t.function, activation_fn_name(fn));
    for (int32_t x = -128; x <= 127; ++x) {
      const double f = apply_activation(layer, in.dequantize(x));
      EXPECT_LE(std::fabs(out.dequantize(t.table[static_cast<size_t>(x + 128)]) - f), 0.5 * out.scale * (1 + 1e-12))
          << activation_fn_name(fn) << " at input " << x;
    }
    const DerivedTable back = DerivedTable::from_kernel_params(t.kernel_params(1), in, out);
    EXPECT_EQ(back.table, t.table);
    EXPECT_EQ(back.row_size, 4);
  }
}

}  // namespace
}  // namespace compiler
}  // namespace qlstm
