// 16x8 whole models (compile_model with CompileOptions::activations_s16; s16_program): the int8
// program's ops in their 16x8 form up to the first op without a 16x8 kernel, a requantization to
// int8 there; more accurate than int8 on data the compiler never saw; refusals name what has no
// 16x8 form yet.
#include <gtest/gtest.h>

#include <string>

#include "qlstm/compiler/compile.h"
#include "qlstm/compiler/file_io.h"
#include "normal_tensor.h"

namespace {

using namespace qlstm::compiler;

const std::string kFixtures = QLSTM_ONNX_FIXTURES;

ModelCompileOptions options(bool s16) {
  ModelCompileOptions o;
  o.name = "m";
  o.model_origin = "m.onnx";
  o.quantization.tuning = Tuning::kNone;
  o.quantization.activations_s16 = s16;
  return o;
}

// The compiled program against the float program on `test`, which calibration never saw.
double held_out_sqnr(const OnnxLstm& onnx, const CompiledModel& m, const CalibrationTensor& test) {
  const FloatProgramResult f = run_float_program(onnx.program, test.values.data(), test.shape);
  return sqnr_db(f.output, run_program_float(m, test.values, test.shape));
}

struct Case {
  const char* fixture;
  std::vector<int32_t> kinds;  // the 16x8 program's ops
  bool int16_output;
};

class CompileS16 : public ::testing::TestWithParam<Case> {};

TEST_P(CompileS16, WholeModelIsSixteenBitWhereItHasKernelsAndMoreAccurate) {
  const Case& c = GetParam();
  const OnnxLstm onnx = import_onnx(kFixtures + "/" + c.fixture + ".onnx");
  const std::vector<CalibrationTensor> calibration = {normal_tensor(onnx, 64, 5, 1)};
  const CalibrationTensor test = normal_tensor(onnx, 64, 5, 2);
  const ModelCompileResult s16 = compile_model(onnx, calibration, options(true));
  const ModelCompileResult s8 = compile_model(onnx, calibration, options(false));
  const CompiledModel& m = s16.model;
  EXPECT_NO_THROW(m.validate("16x8"));
  std::vector<int32_t> kinds;
  for (const ProgramOp& op : m.ops) kinds.push_back(op.kind);
  EXPECT_EQ(kinds, c.kinds);
  EXPECT_EQ(m.buffers.front().type, QLSTM_ELEMENT_S16);
  EXPECT_EQ(m.buffers.back().type, c.int16_output ? QLSTM_ELEMENT_S16 : QLSTM_ELEMENT_S8);
  EXPECT_FALSE(m.all_s8());
  EXPECT_TRUE(s8.model.all_s8());
  // The int8 ops after the requantization are the int8 program's own, at its quantization.
  if (!c.int16_output) {
    EXPECT_EQ(m.output_quant().scale, s8.model.output_quant().scale);
  }
  const double q16 = held_out_sqnr(onnx, m, test), q8 = held_out_sqnr(onnx, s8.model, test);
  RecordProperty("sqnr_s16_db", std::to_string(q16));
  RecordProperty("sqnr_s8_db", std::to_string(q8));
  // int16 outputs gain the most; an int8 softmax output keeps its own 1/256 steps.
  EXPECT_GT(q16, q8 + (c.int16_output ? 10.0 : 0.0)) << c.fixture << ": 16x8 " << q16 << " dB, int8 " << q8 << " dB";
  // The memory: activations and state in int16.
  EXPECT_GT(s16.memory.activation_bytes, s8.memory.activation_bytes);
  EXPECT_EQ(s16.report.at("activations").get<std::string>(), "int16");
  EXPECT_EQ(s8.report.at("activations").get<std::string>(), "int8");
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, CompileS16,
    ::testing::Values(
        Case{"torch_two_layers", {QLSTM_OP_LSTM_S16, QLSTM_OP_LSTM_S16}, true},
        // y[:, -1] of a forward LSTM: its last step alone, no selection op.
        Case{"whole_classifier_opset17",
             {QLSTM_OP_LSTM_S16, QLSTM_OP_FULLY_CONNECTED_S16, QLSTM_OP_REQUANTIZE, QLSTM_OP_SOFTMAX_S8}, false},
        Case{"whole_classifier_bidirectional_stacked",
             {QLSTM_OP_LSTM_S16, QLSTM_OP_LSTM_S16, QLSTM_OP_LSTM_S16, QLSTM_OP_LSTM_S16, QLSTM_OP_SELECT_STEP,
              QLSTM_OP_FULLY_CONNECTED_S16, QLSTM_OP_REQUANTIZE, QLSTM_OP_SOFTMAX_S8},
             false}),
    [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.fixture); });

// What has no 16x8 form yet is refused, naming it, before anything is derived.
TEST(CompileS16, RefusesWhatHasNoSixteenBitForm) {
  const auto refusal = [](const std::string& fixture) {
    const OnnxLstm onnx = import_onnx(kFixtures + "/" + fixture + ".onnx");
    try {
      compile_model(onnx, {normal_tensor(onnx, 8, 5, 1)}, options(true));
    } catch (const CompileError& e) {
      return std::string(e.what());
    }
    return std::string("compiled");
  };
  EXPECT_NE(refusal("gru_torch_last_linear").find("16x8: the model has a GRU layer"), std::string::npos)
      << refusal("gru_torch_last_linear");
  EXPECT_NE(refusal("torch_bi2_state").find("16x8: the model has an initial state"), std::string::npos)
      << refusal("torch_bi2_state");
}

}  // namespace
