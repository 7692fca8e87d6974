// The compiler's entry point (compile.h): from the ONNX bytes and calibration tensors to the
// compiled program and its report. The report's memory is program_memory's, its SQNR is finite,
// the model carries the report, the program is compile_program's (the entry point adds no
// quantization decision of its own) and calibration's float pass is the float program's output.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <algorithm>
#include <random>

#include "qlstm/compiler/compile.h"
#include "qlstm/compiler/io/file_io.h"
#include "normal_tensor.h"
#include "random_program.h"

namespace {

using namespace qlstm::compiler;

const std::string kFixtures = QLSTM_ONNX_FIXTURES;

// [T][B][I] (the fixtures are sequence-first, T = 5, I = 3), normal values from a fixed seed.
CalibrationTensor calibration(int32_t batch, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  CalibrationTensor t;
  t.shape = {batch, 5, Layout::kTimeMajor};
  t.values.resize(static_cast<size_t>(5) * batch * 3);
  for (float& v : t.values) v = n(rng);
  return t;
}

ModelCompileOptions fast(const std::string& name) {
  ModelCompileOptions o;
  o.name = name;
  o.model_origin = name + ".onnx";
  o.batch = 2;
  o.quantization.tuning = Tuning::kNone;
  return o;
}

TEST(CompileModel, ReportFromOnnxBytes) {
  const std::string bytes = read_file(kFixtures + "/torch_two_layers.onnx");
  const ModelCompileResult r = compile_model(bytes, {calibration(8, 1), calibration(4, 2)}, fast("two"));
  const CompiledModel& m = r.model;
  ASSERT_EQ(m.ops.size(), 2u);
  EXPECT_EQ(m.name, "two");
  EXPECT_EQ(r.stats.size(), m.ops.size());
  EXPECT_EQ(r.calibration_sequences, 12);
  EXPECT_EQ(r.max_time_steps, 5);  // declared by the ONNX input
  EXPECT_EQ(m.report_json, r.report.dump());

  const ProgramMemory mem = program_memory(m, 2, 5);
  const nlohmann::json& jm = r.report.at("memory");
  EXPECT_EQ(jm.at("flash_bytes").get<size_t>(), mem.flash_bytes());
  EXPECT_EQ(jm.at("weights_bytes").get<size_t>(), mem.weight_bytes);
  EXPECT_EQ(jm.at("bias_bytes").get<size_t>(), mem.bias_bytes);
  EXPECT_EQ(jm.at("ram_bytes").get<size_t>(), mem.ram_bytes());
  EXPECT_EQ(jm.at("scratch_bytes").get<size_t>(), mem.scratch_bytes);
  EXPECT_EQ(jm.at("state_bytes").get<size_t>(), mem.state_bytes());
  EXPECT_EQ(jm.at("activation_bytes").get<size_t>(), 2 * mem.activation_bytes);
  EXPECT_EQ(r.memory.ram_bytes(), mem.ram_bytes());

  const nlohmann::json& sqnr = r.report.at("calibration").at("sqnr_db");
  ASSERT_TRUE(sqnr.is_number()) << sqnr;
  EXPECT_TRUE(std::isfinite(sqnr.get<double>()));
  EXPECT_EQ(sqnr.get<double>(), r.sqnr_db);
  EXPECT_GT(r.sqnr_db, 10.0);
  EXPECT_EQ(r.report.at("max_time_steps"), 5);
  EXPECT_EQ(r.report.at("firmware_batch"), 2);
  // The upper layer's input is the lower layer's output buffer, and says so.
  EXPECT_EQ(r.report.at("ops").at(1).at("input_observer"), "the output of layer 0");
  EXPECT_EQ(m.ops[1].as<DerivedLstm>().input.scale, m.ops[0].as<DerivedLstm>().output.scale);
  EXPECT_EQ(m.ops[1].as<DerivedLstm>().input.zero_point, m.ops[0].as<DerivedLstm>().output.zero_point);

  // The program is compile_program's on the same sequences.
  const OnnxLstm onnx = import_onnx_bytes(bytes, "two");
  CalibrationSet set;
  for (const CalibrationTensor& t : {calibration(8, 1), calibration(4, 2)}) set.add_batch(t.values, t.shape, 3);
  const QuantizedProgram q = compile_program(onnx.program, set, fast("two").quantization);
  ASSERT_EQ(q.model.ops.size(), m.ops.size());
  // Calibration's float pass is the float program, bit for bit (the SQNR's reference).
  ASSERT_EQ(q.float_outputs.size(), set.sequences.size());
  for (size_t k = 0; k < set.sequences.size(); ++k) {
    const CalibrationSequence& s = set.sequences[k];
    EXPECT_EQ(q.float_outputs[k],
              run_float_program(onnx.program, s.values.data(), {1, s.time_steps, Layout::kBatchMajor}).output);
  }
  for (size_t k = 0; k < m.ops.size(); ++k) {
    EXPECT_EQ(q.model.ops[k].as<DerivedLstm>().output.scale, m.ops[k].as<DerivedLstm>().output.scale);
    EXPECT_EQ(q.model.ops[k].as<DerivedLstm>().cell.power, m.ops[k].as<DerivedLstm>().cell.power);
    for (size_t g = 0; g < m.ops[k].as<DerivedLstm>().gates.size(); ++g) {
      EXPECT_EQ(q.model.ops[k].as<DerivedLstm>().gates[g].w_x, m.ops[k].as<DerivedLstm>().gates[g].w_x);
      EXPECT_EQ(q.model.ops[k].as<DerivedLstm>().gates[g].w_h, m.ops[k].as<DerivedLstm>().gates[g].w_h);
      EXPECT_EQ(q.model.ops[k].as<DerivedLstm>().gates[g].input_effective_bias, m.ops[k].as<DerivedLstm>().gates[g].input_effective_bias);
    }
  }
}

TEST(CompileModel, BidirectionalSharesItsBoundaries) {
  const ModelCompileResult r =
      compile_model(read_file(kFixtures + "/torch_bidirectional.onnx"), {calibration(8, 3)}, fast("bi"));
  const nlohmann::json& ops = r.report.at("ops");
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].at("output_observer"), "minmax over both directions");
  EXPECT_EQ(ops[1].at("output_observer"), "minmax over both directions");
  EXPECT_EQ(ops[1].at("input_observer"), "the forward direction's choice (minmax)");
  EXPECT_EQ(ops[0].at("output"), ops[1].at("output"));
  EXPECT_EQ(ops[0].at("input"), ops[1].at("input"));
}

TEST(CompileModel, WarnsBeforeCompiling) {
  CalibrationTensor t = calibration(4, 4);
  for (size_t k = 0; k < t.values.size(); k += 3) t.values[k] = 0.5f;  // feature 0 constant
  ModelCompileOptions o = fast("two");
  std::vector<std::string> seen;
  o.warn = [&](const std::string& w) { seen.push_back(w); };
  const ModelCompileResult r = compile_model(read_file(kFixtures + "/torch_two_layers.onnx"), {t}, o);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen, r.warnings);
  EXPECT_NE(seen[0].find("input feature 0 is constant"), std::string::npos) << seen[0];
  EXPECT_EQ(r.report.at("warnings"), seen);
}

// A head after h_n[-1] sees one value per calibration sequence: too few sequences are warned of,
// enough are not.
TEST(CompileModel, WarnsWhenAOneStepHeadHasFewSequences) {
  const OnnxLstm onnx = import_onnx_bytes(read_file(kFixtures + "/whole_h_n_mlp.onnx"), "h_n head");
  const int32_t T = declared_time_steps(onnx) > 0 ? declared_time_steps(onnx) : 8;
  auto warnings = [&](int32_t sequences) {
    CalibrationTensor t;
    t.shape = {sequences, T, onnx.batch_first ? Layout::kBatchMajor : Layout::kTimeMajor};
    std::mt19937_64 rng(9);
    std::normal_distribution<float> n(0.0f, 1.0f);
    t.values.resize(static_cast<size_t>(sequences) * T * onnx.program.input_size());
    for (float& v : t.values) v = n(rng);
    ModelCompileOptions o = fast("hn");
    o.quantization.tuning = Tuning::kNone;
    o.max_time_steps = T;
    return compile_model(onnx, {t}, o).warnings;
  };
  const std::vector<std::string> few = warnings(32);
  ASSERT_EQ(few.size(), 1u);
  EXPECT_NE(few[0].find("ranges comes from only 32 values; give at least 200 calibration sequences"),
            std::string::npos) << few[0];
  EXPECT_TRUE(warnings(static_cast<int32_t>(kOneStepHeadCalibrationSequences)).empty());
}

// Every whole-model ONNX fixture (the layers around the LSTM, from torch) compiles and its int8
// program tracks the float graph on held-out sequences: normal inputs, calibration on 512
// sequences, measured on 64 others. (The fixtures' weights are torch's random initialization.)
std::vector<std::string> whole_fixtures() {
  std::vector<std::string> names;
  for (const auto& f : std::filesystem::directory_iterator(kFixtures)) {
    const std::string name = f.path().filename().string();
    const std::string suffix = ".expect.json";
    if (name.rfind("whole_", 0) != 0 || name.size() < suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    std::ifstream in(f.path());
    const nlohmann::json e = nlohmann::json::parse(in);
    if (!e.contains("error") && !e.contains("errors")) names.push_back(name.substr(0, name.size() - suffix.size()));
  }
  std::sort(names.begin(), names.end());
  return names;
}

class WholeFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(WholeFixture, CompilesAndTracksTheFloatGraphOnHeldOutData) {
  const OnnxLstm onnx = import_onnx_bytes(read_file(kFixtures + "/" + GetParam() + ".onnx"), GetParam());
  const int32_t T = declared_time_steps(onnx) > 0 ? declared_time_steps(onnx) : 8;
  // A learned per-row state fixes the batch; otherwise sequences in batches of 16.
  const int32_t B = onnx.program.constant_state_batch() > 0 ? onnx.program.constant_state_batch() : 16;
  std::vector<CalibrationTensor> calib;
  for (uint64_t k = 0; k < 512 / static_cast<uint64_t>(B); ++k) calib.push_back(normal_tensor(onnx, B, T, 100 + k));
  ModelCompileOptions options = fast(GetParam());
  options.batch = B;
  options.max_time_steps = T;
  const ModelCompileResult r = compile_model(onnx, calib, options);
  r.model.validate("compiled");
  std::vector<float> want, got;
  for (uint64_t k = 0; k < 64 / static_cast<uint64_t>(B); ++k) {
    const CalibrationTensor t = normal_tensor(onnx, B, T, 1 + k);  // held out
    const std::vector<float> f = run_float_program(onnx.program, t.values.data(), t.shape).output;
    want.insert(want.end(), f.begin(), f.end());
    // The input quantized to its buffer (int8, or token ids as they are), the output dequantized.
    const std::vector<float> y = run_program_float(r.model, t.values, t.shape);
    got.insert(got.end(), y.begin(), y.end());
  }
  ASSERT_EQ(got.size(), want.size());
  const double sqnr = sqnr_db(want, got);
  std::printf("%s: %zu ops, SQNR %.1f dB\n", GetParam().c_str(), r.model.ops.size(), sqnr);
  EXPECT_GE(sqnr, 30.0);
}

INSTANTIATE_TEST_SUITE_P(Models, WholeFixture, ::testing::ValuesIn(whole_fixtures()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// A time-ordered calibration set: the first half quiet (amplitude 0.2), the second loud (2.0),
// as a file that covers a calm week then a stormy one. Sequence k of [steps][kInputs].
constexpr int32_t kInputs = 3, kHidden = 16, kSteps = 20, kSequences = 120, kBudgetSequences = 12;
CalibrationSequence ordered_sequence(int32_t k, std::mt19937_64& rng) {
  std::normal_distribution<float> n(0.0f, k < kSequences / 2 ? 0.2f : 2.0f);
  CalibrationSequence s;
  s.time_steps = kSteps;
  s.values.resize(static_cast<size_t>(kSteps) * kInputs);
  for (float& v : s.values) v = n(rng);
  return s;
}

TEST(Search, SamplesTheWholeCalibrationSetAtAnEvenStride) {
  std::mt19937_64 rng(7);
  const FloatLstm lstm = random_lstm(kInputs, kHidden, false, rng);
  CalibrationSet ordered;
  for (int32_t k = 0; k < kSequences; ++k) ordered.sequences.push_back(ordered_sequence(k, rng));
  CalibrationSet shuffled = ordered;
  std::shuffle(shuffled.sequences.begin(), shuffled.sequences.end(), std::mt19937_64(11));
  CompileOptions o;
  ASSERT_EQ(o.tuning, Tuning::kSearch);
  // A budget of exactly kBudgetSequences sequences (steps x 4H(I + H) MACs each).
  o.search_max_macs = int64_t{kBudgetSequences} * kSteps * 4 * kHidden * (kInputs + kHidden);

  const QuantizedLayer q = QuantizedLayer::compile(lstm, ordered, o);
  const std::vector<int64_t>& scored = q.calibration().scored_sequences;
  ASSERT_EQ(scored.size(), static_cast<size_t>(kBudgetSequences));
  EXPECT_EQ(q.calibration().scored_steps, int64_t{kBudgetSequences} * kSteps);
  EXPECT_EQ(scored.front(), 0);
  for (size_t j = 0; j < scored.size(); ++j) {
    EXPECT_EQ(scored[j], static_cast<int64_t>(j) * kSequences / kBudgetSequences);  // an even stride
  }
  const auto quiet = std::count_if(scored.begin(), scored.end(), [](int64_t k) { return k < kSequences / 2; });
  EXPECT_EQ(quiet, kBudgetSequences / 2);  // both halves, equally

  // Held out: new sequences of both kinds. A shuffled copy of the file gives a model as good.
  std::vector<float> x;
  for (int32_t k = 0; k < kSequences; k += kSequences / 20) {
    const CalibrationSequence s = ordered_sequence(k, rng);
    x.insert(x.end(), s.values.begin(), s.values.end());
  }
  const SequenceShape shape{20, kSteps, Layout::kBatchMajor};
  const std::vector<float> want = run_float(lstm, x.data(), shape).output;
  const double ordered_db = sqnr_db(want, q.run_float(x, shape));
  const double shuffled_db = sqnr_db(want, QuantizedLayer::compile(lstm, shuffled, o).run_float(x, shape));
  std::printf("held out: ordered %.2f dB, shuffled %.2f dB\n", ordered_db, shuffled_db);
  EXPECT_NEAR(ordered_db, shuffled_db, 1.0);
  EXPECT_GT(ordered_db, 30.0);

  // A budget below one sequence still scores one per fold: the first of each.
  o.search_max_macs = 1;
  std::vector<int64_t> firsts;
  for (int32_t f = 0; f < o.search_folds; ++f) firsts.push_back(int64_t{f} * kSequences / o.search_folds);
  EXPECT_EQ(QuantizedLayer::compile(lstm, ordered, o).calibration().scored_sequences, firsts);
}

// The options a user sets are kept: the search tunes only the others, and the report says which.
TEST(Search, KeepsTheChoicesTheUserFixed) {
  const std::string bytes = read_file(kFixtures + "/torch_two_layers.onnx");
  const std::vector<CalibrationTensor> calib = {calibration(8, 1), calibration(4, 2)};
  ModelCompileOptions open = fast("two");
  open.quantization.tuning = Tuning::kSearch;
  const ModelCompileResult searched = compile_model(bytes, calib, open);
  const std::vector<std::string> all = {"input_observer", "output_observer", "cell_headroom", "bias_correction",
                                        "weight_clips", "weight_rounding"};
  EXPECT_EQ(searched.stats[0].searched, all);
  EXPECT_TRUE(searched.stats[0].fixed_by_user.empty());
  EXPECT_EQ(searched.report.at("ops").at(0).at("search").at("searched"), nlohmann::json(all));

  ModelCompileOptions user = open;
  CompileOptions& q = user.quantization;
  q.output_observer = parse_observer("mse");
  q.cell_scale = parse_cell_policy("calibrated:3");
  q.weights.weight_method = parse_weight_method("mse");
  q.weights.bias_correction = true;
  q.user_fixed.output_observer = q.user_fixed.cell_headroom = q.user_fixed.weights = q.user_fixed.bias_correction = true;
  const ModelCompileResult r = compile_model(bytes, calib, user);
  const std::vector<std::string> fixed = {"output_observer", "cell_headroom", "bias_correction", "weight_clips"};
  for (size_t k = 0; k < 2; ++k) {
    const CalibrationStats& st = r.stats[k];
    const DerivedLstm& d = r.model.ops[k].as<DerivedLstm>();
    EXPECT_EQ(st.fixed_by_user, fixed) << k;
    // Layer 1's input is layer 0's output buffer: searched by neither.
    const std::vector<std::string> searched_here =
        k == 0 ? std::vector<std::string>{"input_observer", "weight_rounding"} : std::vector<std::string>{"weight_rounding"};
    EXPECT_EQ(st.searched, searched_here) << k;
    EXPECT_EQ(st.output_observer, "mse") << k;
    EXPECT_EQ(d.cell.headroom, 3.0) << k;
    EXPECT_TRUE(d.weights.bias_correction) << k;
    EXPECT_EQ(d.weights.weight_method, WeightScaleMethod::kMseClip) << k;
    for (double c : d.weights.weight_clip_ratio) EXPECT_EQ(c, 0.0) << k;  // no clip searched over mse
    EXPECT_LT(st.evaluations, searched.stats[k].evaluations) << k;
    const nlohmann::json& js = r.report.at("ops").at(k).at("search");
    EXPECT_EQ(js.at("fixed_by_user"), nlohmann::json(fixed)) << k;
    EXPECT_EQ(js.at("scored_sequences"), 12) << k;
    EXPECT_EQ(js.at("scored_steps"), 60) << k;
  }
}

// Options out of range are refused at the entry (validate_options), naming the option, before
// the calibration set is read: an empty one would otherwise be the first error.
TEST(CompileModel, RefusesOptionsOutOfRangeNamingThem) {
  const std::string bytes = read_file(kFixtures + "/torch_two_layers.onnx");
  const std::vector<std::pair<std::function<void(CompileOptions&)>, std::string>> cases = {
      {[](CompileOptions& o) { o.input_observer = {ObserverKind::kPercentile, 101}; }, "input_observer: percentile 101"},
      {[](CompileOptions& o) { o.cell_scale.headroom = 0.5; }, "cell_scale calibrated:0.5: headroom must be in [1, 64]"},
      {[](CompileOptions& o) { o.cell_scale = parse_cell_policy("fixed:-20"); }, "cell_scale fixed:-20: P must be in"},
      {[](CompileOptions& o) { o.weights.weight_clip_ratio[3] = 1.5; }, "weights.weight_clip_ratio[3]: 1.5"},
      {[](CompileOptions& o) { o.weights.cell_clip = 40000; }, "weights.cell_clip: 40000 outside [0, 32767]"},
      {[](CompileOptions& o) { o.s16_headroom_bits = 9; }, "int16_headroom (--int16-headroom): a boundary headroom of 9 bits, expected 0 to 8"},
      {[](CompileOptions& o) { o.search_folds = 1; }, "search_folds: 1, expected at least 2"},
      {[](CompileOptions& o) { o.s16_layers = {true}; }, "16x8: a choice for 1 layers, the model has 2"},
      {[](CompileOptions& o) { o.op_choices.resize(1); }, "op_choices: 1 decisions for 2 recurrent ops"},
  };
  for (const auto& [set, message] : cases) {
    ModelCompileOptions o = fast("two");
    set(o.quantization);
    try {
      compile_model(bytes, {}, o);
      ADD_FAILURE() << message << ": accepted";
    } catch (const CompileError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
}

// k-fold: the report's estimate for a one-op model is the search's held-out score of its result
// (the same folds, every sequence scored), and each fold's figure is the search's.
TEST(HeldOut, KFoldEstimateIsTheSearchsScoreOfItsResult) {
  const std::string bytes = read_file(kFixtures + "/torch_h_n_output.onnx");
  ModelCompileOptions o = fast("one");
  o.quantization.tuning = Tuning::kSearch;
  const ModelCompileResult r = compile_model(bytes, {calibration(12, 3)}, o);
  ASSERT_EQ(r.stats.size(), 1u);
  const CalibrationStats& st = r.stats[0];
  ASSERT_EQ(st.score_method, "k-fold");
  ASSERT_EQ(st.scored_sequences.size(), 12u);
  EXPECT_EQ(r.held_out.method, "k-fold");
  EXPECT_EQ(r.held_out.folds, 4);
  EXPECT_EQ(r.held_out.sequences, 12);
  EXPECT_NEAR(r.held_out.sqnr_db, st.final_sqnr_db, 1e-9);
  ASSERT_EQ(r.held_out.fold_sqnr_db.size(), st.fold_sqnr_db.size());
  for (size_t f = 0; f < st.fold_sqnr_db.size(); ++f) EXPECT_NEAR(r.held_out.fold_sqnr_db[f], st.fold_sqnr_db[f], 1e-9) << f;
  EXPECT_FALSE(r.held_out.caution.empty());  // 12 < kHeldOutReliableSequences
  const nlohmann::json& h = r.report.at("held_out");
  EXPECT_EQ(h.at("method"), "k-fold");
  EXPECT_NEAR(h.at("sqnr_db").get<double>(), r.held_out.sqnr_db, 1e-9);
  EXPECT_TRUE(h.contains("caution"));
}

// A validation set is scored, never observed: values far beyond the calibration range change no
// boundary, and the report measures on it.
TEST(HeldOut, ValidationSetIsNeverObserved) {
  const std::string bytes = read_file(kFixtures + "/torch_two_layers.onnx");
  ModelCompileOptions o = fast("two");
  o.quantization.tuning = Tuning::kSearch;
  o.quantization.user_fixed.input_observer = o.quantization.user_fixed.output_observer = true;
  const std::vector<CalibrationTensor> calib = {calibration(16, 1)};
  const ModelCompileResult plain = compile_model(bytes, calib, o);
  CalibrationTensor wild = calibration(8, 9);
  for (float& v : wild.values) v *= 10;
  o.validation = {wild};
  o.validation_files = {"wild.npy"};
  const ModelCompileResult r = compile_model(bytes, calib, o);
  for (size_t k = 0; k < r.model.buffers.size(); ++k) {
    EXPECT_EQ(r.model.buffers[k].quant.scale, plain.model.buffers[k].quant.scale) << k;
    EXPECT_EQ(r.model.buffers[k].quant.zero_point, plain.model.buffers[k].quant.zero_point) << k;
  }
  EXPECT_EQ(r.stats[0].score_method, "validation");
  EXPECT_EQ(r.held_out.method, "validation");
  EXPECT_EQ(r.held_out.sequences, 8);
  EXPECT_EQ(r.report.at("held_out").at("files"), nlohmann::json({"wild.npy"}));
  // The inputs saturate: the validation figure says so, below the k-fold one on calibration data.
  EXPECT_LT(r.held_out.sqnr_db, plain.held_out.sqnr_db);
  CalibrationTensor wrong = calibration(2, 4);
  wrong.values.pop_back();
  o.validation = {wrong};
  EXPECT_THROW(compile_model(bytes, calib, o), CompileError);
}

}  // namespace
