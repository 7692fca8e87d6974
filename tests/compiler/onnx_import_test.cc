// ONNX import: every fixture of tests/onnx/make_onnx_fixtures.py is either imported with exactly
// the expected PyTorch-order weights and layout, or refused with its expected message; damaged
// files are refused cleanly.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "qlstm/compiler/onnx_import.h"

namespace {

namespace fs = std::filesystem;
using namespace qlstm::compiler;

std::vector<std::string> fixtures() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(QLSTM_ONNX_FIXTURES)) {
    if (e.path().extension() == ".onnx") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class OnnxFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxFixture, ImportsOrRefusesAsExpected) {
  const std::string base = std::string(QLSTM_ONNX_FIXTURES) + "/" + GetParam();
  std::ifstream in(base + ".expect.json");
  ASSERT_TRUE(in) << "no expectation for " << GetParam();
  const nlohmann::json e = nlohmann::json::parse(in);
  if (e.contains("error")) {
    try {
      import_onnx(base + ".onnx");
      FAIL() << GetParam() << " was accepted; expected: " << e["error"];
    } catch (const CompileError& err) {
      EXPECT_NE(std::string(err.what()).find(e["error"].get<std::string>()), std::string::npos)
          << "message: " << err.what() << "\nexpected to contain: " << e["error"];
    }
    return;
  }
  const OnnxLstm m = import_onnx(base + ".onnx");
  if (e.contains("program")) {  // stacked, bidirectional or stateful: its structure (weights: tests/e2e)
    const nlohmann::json& p = e["program"];
    EXPECT_EQ(m.program.ops.size(), p["ops"].get<size_t>());
    EXPECT_EQ(m.program.directions, p["directions"].get<int>());
    EXPECT_EQ(state_source_name(m.program.initial_hidden), p["initial_h"].get<std::string>());
    EXPECT_EQ(state_source_name(m.program.initial_cell), p["initial_c"].get<std::string>());
    EXPECT_EQ(m.program.hidden_output, p["h_n"].get<bool>());
    EXPECT_EQ(m.program.cell_output, p["c_n"].get<bool>());
    EXPECT_EQ(m.batch_first, p["batch_first"].get<bool>());
    for (size_t k = 0; k < m.program.ops.size(); ++k) {
      EXPECT_EQ(m.program.ops[k].reverse, m.program.directions == 2 && k % 2 == 1) << "op " << k;
    }
    return;
  }
  const int32_t I = e["input_size"], H = e["hidden_size"];
  EXPECT_EQ(m.program.ops[0].input_size, I);
  EXPECT_EQ(m.program.ops[0].hidden_size, H);
  EXPECT_EQ(m.batch_first, e["batch_first"].get<bool>());
  EXPECT_EQ(m.program.ops[0].reverse, e.value("reverse", false));
  EXPECT_FALSE(m.input_name.empty());
  EXPECT_FALSE(m.output_name.empty());
  const FloatLstm want = FloatLstm::from_torch(
      I, H, e["weight_ih"].get<std::vector<float>>(), e["weight_hh"].get<std::vector<float>>(),
      e["bias_ih"].get<std::vector<float>>(), e["bias_hh"].get<std::vector<float>>());
  for (int g = 0; g < QLSTM_GATE_COUNT; ++g) {
    EXPECT_EQ(m.program.ops[0].gates[g].w_x, want.gates[g].w_x) << "gate " << g;
    EXPECT_EQ(m.program.ops[0].gates[g].w_h, want.gates[g].w_h) << "gate " << g;
    EXPECT_EQ(m.program.ops[0].gates[g].bias_x, want.gates[g].bias_x) << "gate " << g;
    EXPECT_EQ(m.program.ops[0].gates[g].bias_h, want.gates[g].bias_h) << "gate " << g;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, OnnxFixture, ::testing::ValuesIn(fixtures()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

TEST(OnnxImport, ExportedTorchModelsRecognizeTheirLayout) {
  EXPECT_FALSE(import_onnx(std::string(QLSTM_ONNX_FIXTURES) + "/torch_seq_first_opset13.onnx").batch_first);
  const OnnxLstm bf = import_onnx(std::string(QLSTM_ONNX_FIXTURES) + "/torch_batch_first_opset17.onnx");
  EXPECT_TRUE(bf.batch_first);
  EXPECT_EQ(bf.opset, 17);
  EXPECT_EQ(bf.input_shape, (std::vector<int64_t>{1, 4, 2}));
}

TEST(OnnxImport, DamagedBytesAreRefusedNeverCrash) {
  const std::string path = std::string(QLSTM_ONNX_FIXTURES) + "/torch_batch_first_opset14.onnx";
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string good = ss.str();
  EXPECT_NO_THROW(import_onnx_bytes(good, "good"));
  int refused = 0;
  for (size_t n = 0; n < good.size(); n += 1 + n / 16) {
    try {
      import_onnx_bytes(good.substr(0, n), "truncated");
    } catch (const CompileError&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 0);
  std::mt19937_64 rng(3);
  for (int k = 0; k < 300; ++k) {
    std::string damaged = good;
    for (int j = 0; j < 4; ++j) damaged[rng() % damaged.size()] = static_cast<char>(rng());
    try {
      import_onnx_bytes(damaged, "damaged");
    } catch (const CompileError&) {
    }
    std::string random(64 + rng() % 512, '\0');
    for (auto& c : random) c = static_cast<char>(rng());
    try {
      import_onnx_bytes(random, "random");
    } catch (const CompileError&) {
    }
  }
  EXPECT_THROW(import_onnx_bytes("", "empty"), CompileError);
  EXPECT_THROW(import_onnx("/nonexistent/model.onnx"), CompileError);
}

}  // namespace
