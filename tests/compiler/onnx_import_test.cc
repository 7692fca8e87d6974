// ONNX import: every fixture of tests/onnx/make_onnx_fixtures.py is either imported with exactly
// the expected PyTorch-order weights and layout, or refused with its expected message; damaged
// files are refused cleanly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include <onnx/onnx_pb.h>

#include "qlstm/compiler/import/onnx_import.h"

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

std::string layer_name(const FloatLayer& l) {
  switch (l.kind) {
    case FloatLayerKind::kLinear: return "Linear";
    case FloatLayerKind::kSoftmax: return "Softmax";
    case FloatLayerKind::kLogSoftmax: return "LogSoftmax";
    case FloatLayerKind::kSelectStep: return l.step_count > 1 ? "select:" + std::to_string(l.step_count) : "select";
    case FloatLayerKind::kPoolTime: {
      std::string names;
      for (const PoolFn fn : l.pool_fns()) {
        names += (names.empty() ? "" : "+") + std::string(fn == PoolFn::kMean ? "mean" : fn == PoolFn::kMax ? "max"
                                                            : fn == PoolFn::kFirstStep ? "first"
                                                            : fn == PoolFn::kAttention ? "attention" : "last");
      }
      return names;
    }
    case FloatLayerKind::kFlattenTime: return "flatten";
    case FloatLayerKind::kEmbedding: return "embedding";
    case FloatLayerKind::kLayerNorm: return "LayerNorm";
    case FloatLayerKind::kActivation: return activation_fn_name(l.fn);
  }
  return "?";
}

std::vector<std::string> layer_names(const std::vector<FloatLayer>& layers) {
  std::vector<std::string> names;
  for (const FloatLayer& l : layers) names.push_back(layer_name(l));
  return names;
}

// The fixture input's shape, as the imported model reads it.
SequenceShape input_shape(const OnnxLstm& m, const nlohmann::json& e) {
  const std::vector<int64_t> xs = e["input_shape"].get<std::vector<int64_t>>();
  if (m.unbatched) return {1, static_cast<int32_t>(xs[0]), Layout::kBatchMajor};
  if (m.batch_first) return {static_cast<int32_t>(xs[0]), static_cast<int32_t>(xs[1]), Layout::kBatchMajor};
  return {static_cast<int32_t>(xs[1]), static_cast<int32_t>(xs[0]), Layout::kTimeMajor};
}

// max |got - torch's| over `want`, checked against torch's float32 rounding relative to its magnitude.
double expect_torch_agreement(const std::vector<float>& got, const nlohmann::json& want_json, const char* what) {
  const std::vector<float> want = want_json.get<std::vector<float>>();
  EXPECT_EQ(got.size(), want.size()) << what;
  if (got.size() != want.size()) return INFINITY;
  double scale = 1.0, worst = 0.0;
  for (float v : want) scale = std::max(scale, std::fabs(static_cast<double>(v)));
  for (size_t k = 0; k < want.size(); ++k) worst = std::max(worst, std::fabs(static_cast<double>(got[k]) - want[k]));
  constexpr double kFloatAgreement = 1e-5;
  EXPECT_LE(worst, kFloatAgreement * scale) << "max abs error of " << what << " vs torch";
  return worst;
}

// A whole model: its structure, and run_float_program of the imported program equals torch's
// float output on the fixture's input (and h0, for a model that reads one) to float precision.
// Returns the max abs error.
double check_whole_model(const OnnxLstm& m, const nlohmann::json& e, FloatProgramResult* result = nullptr) {
  const FloatProgram& p = m.program;
  EXPECT_EQ(layer_names(p.front), e["front"].get<std::vector<std::string>>());
  EXPECT_EQ(layer_names(p.head), e["head"].get<std::vector<std::string>>());
  EXPECT_EQ(p.lstm_output == LstmOutput::kFinalState ? "final_state" : "sequence", e["lstm_output"].get<std::string>());
  EXPECT_EQ(p.final_directions, e.value("final_directions", std::vector<int32_t>{}));
  EXPECT_EQ(p.residual, e.value("residual", std::vector<bool>{}));
  EXPECT_EQ(p.repeated, e.value("repeated", std::vector<bool>{}));
  std::vector<std::vector<std::string>> between;
  for (const auto& layers : p.between) between.push_back(layer_names(layers));
  EXPECT_EQ(between, e.value("between", std::vector<std::vector<std::string>>{}));
  EXPECT_EQ(m.batch_first, e["batch_first"].get<bool>());
  EXPECT_EQ(m.unbatched, e["unbatched"].get<bool>());
  EXPECT_EQ(m.opset, e["opset"].get<int64_t>());
  EXPECT_EQ(p.constant_state_batch(), e.value("state_batch", 0));
  // A head squeezed to [B, T] keeps its size-1 feature axis in the program, and says so.
  EXPECT_EQ(m.output_squeezes_features, e.value("output_squeezes_features", false));
  EXPECT_EQ(m.output_squeezes_batch, e.value("output_squeezes_batch", false));
  const std::vector<float> x = e["input"].get<std::vector<float>>();
  const std::vector<float> h0 = e.value("h0", std::vector<float>{});
  const SequenceShape shape = input_shape(m, e);
  EXPECT_EQ(x.size(), static_cast<size_t>(shape.batch) * shape.time_steps * p.input_size());
  if (x.size() != static_cast<size_t>(shape.batch) * shape.time_steps * p.input_size()) return INFINITY;
  const FloatProgramResult r = run_float_program(p, x.data(), shape, h0.empty() ? nullptr : h0.data());
  EXPECT_EQ(r.front_outputs.size(), p.front.size());
  EXPECT_EQ(r.head_outputs.size(), p.head.size());
  if (result != nullptr) *result = r;
  return expect_torch_agreement(r.output, e["output"], "the output");
}

// An exported nn.GRU (or a hand-made ONNX GRU graph): every op a GRU, the program's structure
// and state, and run_float_program (given the fixture's h0 when the model reads one) equals
// torch's output, and its h_n when the model returns it.
void check_gru_model(const OnnxLstm& m, const nlohmann::json& e) {
  const FloatProgram& p = m.program;
  const nlohmann::json& want = e["program"];
  ASSERT_EQ(p.ops.size(), want["ops"].get<size_t>());
  EXPECT_EQ(p.directions, want["directions"].get<int>());
  for (size_t k = 0; k < p.ops.size(); ++k) {
    EXPECT_EQ(p.ops[k].cell, e["cell"] == "RNN" ? CellKind::kRnn : CellKind::kGru) << "op " << k;
    EXPECT_EQ(p.ops[k].relu, e.value("relu", false)) << "op " << k;
    EXPECT_EQ(p.ops[k].reverse, p.directions == 2 ? k % 2 == 1 : e.value("reverse", false)) << "op " << k;
  }
  EXPECT_EQ(state_source_name(p.initial_hidden), want["initial_h"].get<std::string>());
  EXPECT_EQ(p.initial_cell, StateSource::kZero);
  EXPECT_EQ(p.hidden_output, want["h_n"].get<bool>());
  EXPECT_FALSE(p.cell_output);
  EXPECT_EQ(m.initial_h_name.empty(), p.initial_hidden != StateSource::kInput);
  EXPECT_TRUE(m.initial_c_name.empty());
  EXPECT_EQ(m.h_n_name.empty(), !p.hidden_output);
  EXPECT_TRUE(m.c_n_name.empty());
  FloatProgramResult r;
  const double y_error = check_whole_model(m, e, &r);
  std::printf("%s: max |torch - run_float_program| output %.3g",
              ::testing::UnitTest::GetInstance()->current_test_info()->name(), y_error);
  if (e.contains("h_n")) std::printf(", h_n %.3g", expect_torch_agreement(r.h_n, e["h_n"], "h_n"));
  std::printf("\n");
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
  if (e.contains("errors")) {  // a whole model refused: every line of its refusal
    try {
      import_onnx(base + ".onnx");
      FAIL() << GetParam() << " was accepted; expected: " << e["errors"];
    } catch (const CompileError& err) {
      for (const auto& want : e["errors"]) {
        EXPECT_NE(std::string(err.what()).find(want.get<std::string>()), std::string::npos)
            << "message: " << err.what() << "\nexpected to contain: " << want;
      }
    }
    return;
  }
  const OnnxLstm m = import_onnx(base + ".onnx");
  if (e.contains("cell")) {
    check_gru_model(m, e);
    return;
  }
  if (e.contains("output")) {
    check_whole_model(m, e);
    return;
  }
  if (e.contains("program")) {  // stacked, bidirectional or stateful: its structure (weights: tests/e2e)
    const nlohmann::json& p = e["program"];
    EXPECT_EQ(m.program.ops.size(), p["ops"].get<size_t>());
    EXPECT_EQ(m.program.directions, p["directions"].get<int>());
    EXPECT_EQ(state_source_name(m.program.initial_hidden), p["initial_h"].get<std::string>());
    EXPECT_EQ(state_source_name(m.program.initial_cell), p["initial_c"].get<std::string>());
    EXPECT_EQ(m.program.hidden_output, p["h_n"].get<bool>());
    EXPECT_EQ(m.program.cell_output, p["c_n"].get<bool>());
    EXPECT_EQ(m.batch_first, p["batch_first"].get<bool>());
    EXPECT_EQ(layer_names(m.program.front), e.value("front", std::vector<std::string>{}));
    EXPECT_EQ(layer_names(m.program.head), e.value("head", std::vector<std::string>{}));
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

// Inputs fuzz_onnx once crashed on (tests/onnx/fuzz_regressions, each named for its damage): each
// is refused with a CompileError, without undefined behaviour (the sanitized build runs this too).
// gelu_tanh_square_without_output: a GELU-tanh pattern whose x * x node has no output, which the
// pattern matcher read as output(0).
TEST(OnnxImport, FuzzFindingsAreRefusedCleanly) {
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(QLSTM_ONNX_FUZZ_REGRESSIONS)) {
    if (e.path().extension() != ".onnx") continue;
    ++files;
    std::ifstream f(e.path(), std::ios::binary);
    std::stringstream bytes;
    bytes << f.rdbuf();
    try {
      import_onnx_bytes(bytes.str(), e.path().filename().string());
      ADD_FAILURE() << e.path() << ": accepted";
    } catch (const CompileError& err) {
      EXPECT_NE(std::string(err.what()).find(e.path().filename().string()), std::string::npos) << err.what();
    }
  }
  EXPECT_GE(files, 1u);
}

// torch 2.x writes IR version 9, which this ONNX library's checker refuses outright: a model whose
// tensors use no newer element type is read as the library's IR, and says so; one with a float8
// tensor (an IR 9 type) is not, and compiles or is refused as it would be otherwise.
TEST(OnnxImport, NewerIrVersionIsReadAsTheLibrarys) {
  onnx::ModelProto m;
  {
    std::ifstream f(std::string(QLSTM_ONNX_FIXTURES) + "/rnn_torch_tanh_stack2_state.onnx", std::ios::binary);
    ASSERT_TRUE(m.ParseFromIstream(&f));
  }
  m.set_ir_version(onnx::IR_VERSION + 1);
  const OnnxLstm r = import_onnx_bytes(m.SerializeAsString(), "ir9");
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0], "IR version " + std::to_string(onnx::IR_VERSION + 1) + " read as " +
                            std::to_string(onnx::IR_VERSION) +
                            ", this ONNX library's (no tensor has an element type it lacks)");
  EXPECT_EQ(r.program.ops.size(), 2u);
  constexpr int32_t kFloat8E4M3 = 17;  // IR 9's first new element type
  onnx::TensorProto* t = m.mutable_graph()->add_initializer();
  t->set_name("unused_float8");
  t->set_data_type(kFloat8E4M3);
  t->add_dims(1);
  t->set_raw_data(std::string(1, '\0'));
  try {
    const OnnxLstm kept = import_onnx_bytes(m.SerializeAsString(), "ir9_float8");
    EXPECT_TRUE(kept.notes.empty());
  } catch (const CompileError& e) {
    EXPECT_EQ(std::string(e.what()).find("read as"), std::string::npos) << e.what();
  }
}

// A cycle or a value produced twice would send the importer's walks round forever (a fuzz
// finding): such graphs are refused, naming the node, before any walk starts.
TEST(OnnxImport, GraphsOutOfTopologicalOrderAreRefused) {
  onnx::ModelProto good;
  {
    std::ifstream f(std::string(QLSTM_ONNX_FIXTURES) + "/whole_classifier_opset17.onnx", std::ios::binary);
    ASSERT_TRUE(good.ParseFromIstream(&f));
  }
  ASSERT_GE(good.graph().node_size(), 3);
  const auto refusal = [](const onnx::ModelProto& m) {
    try {
      import_onnx_bytes(m.SerializeAsString(), "reordered");
    } catch (const CompileError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NO_THROW(import_onnx_bytes(good.SerializeAsString(), "good"));

  onnx::ModelProto reversed = good;
  auto* nodes = reversed.mutable_graph()->mutable_node();
  std::reverse(nodes->begin(), nodes->end());
  EXPECT_NE(refusal(reversed).find("topological order"), std::string::npos) << refusal(reversed);

  onnx::ModelProto self_loop = good;
  onnx::NodeProto* last = self_loop.mutable_graph()->mutable_node(self_loop.graph().node_size() - 1);
  last->set_input(0, last->output(0));
  const std::string why = refusal(self_loop);
  EXPECT_NE(why.find("(" + last->op_type() + "): input '" + last->output(0) + "' is the output of this node"),
            std::string::npos)
      << why;

  onnx::ModelProto twice = good;
  *twice.mutable_graph()->add_node() = good.graph().node(0);
  EXPECT_NE(refusal(twice).find("produced once"), std::string::npos) << refusal(twice);
}

TEST(OnnxImport, ExportedTorchModelsRecognizeTheirLayout) {
  EXPECT_FALSE(import_onnx(std::string(QLSTM_ONNX_FIXTURES) + "/torch_seq_first_opset13.onnx").batch_first);
  const OnnxLstm bf = import_onnx(std::string(QLSTM_ONNX_FIXTURES) + "/torch_batch_first_opset17.onnx");
  EXPECT_TRUE(bf.batch_first);
  EXPECT_EQ(bf.opset, 17);
  EXPECT_EQ(bf.input_shape, (std::vector<int64_t>{1, 4, 2}));
}

class DamagedModel : public ::testing::TestWithParam<std::string> {};

// An LSTM alone, whole models (the walk around the stack, the GELU subgraph) and GRU stacks.
INSTANTIATE_TEST_SUITE_P(Models, DamagedModel,
                         ::testing::Values("torch_batch_first_opset14", "whole_classifier_opset17",
                                           "whole_mlp_gelu_tanh", "whole_h_n_mlp_stacked", "gru_torch_bi2_state",
                                           "gru_torch_h_n_linear_stack2"));

TEST_P(DamagedModel, DamagedBytesAreRefusedNeverCrash) {
  const std::string path = std::string(QLSTM_ONNX_FIXTURES) + "/" + GetParam() + ".onnx";
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
