// Loads a fixture made by tests/accuracy/make_fixtures.py (model.json + .npy arrays, and
// model.onnx when the fixture is an ONNX graph) and compiles and runs it the way a user does.
#ifndef QLSTM_TESTS_ACCURACY_FIXTURE_H_
#define QLSTM_TESTS_ACCURACY_FIXTURE_H_

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "qlstm/compiler/compile.h"
#include "qlstm/compiler/io/file_io.h"
#include "qlstm/compiler/float/float_lstm.h"
#include "qlstm/compiler/io/npy.h"
#include "qlstm/compiler/import/onnx_import.h"
#include "qlstm/compiler/lower/compile_program.h"

namespace testing_support {

// The fixtures measured on held-out data (docs/accuracy.md), in the order of its tables.
inline const char* const kHeldOutFixtures[] = {
    "upstream_small", "upstream_wide",  "upstream_single_step", "upstream_saturating", "long_memory", "random_large",
    "trained_kws",    "trained_forecast", "trained_gesture",    "few_calib_4",         "few_calib_8", "few_calib_16",
    "longer_test",    "amplitude_120",  "hidden_1",             "onnx_seq_first"};

struct AccuracyFixture {
  std::string name;
  nlohmann::json meta;
  // The model's LSTM (for an ONNX fixture, the one op its import gives).
  qlstm::compiler::FloatLstm lstm;
  // An ONNX fixture: model.onnx's bytes, compiled through compile_model. Empty otherwise.
  std::string onnx_bytes;
  // Of calib_x, test_x and the outputs: "layout": "sequence_first" in model.json is kTimeMajor.
  qlstm::compiler::Layout layout = qlstm::compiler::Layout::kBatchMajor;
  std::vector<float> calib_x, test_x, test_y, test_h_n, test_c_n, h0, c0;
  // Upstream's cases: torch's outputs on calib_x (upstream's protocol); empty otherwise.
  std::vector<float> calib_y, calib_h_n, calib_c_n;
  int32_t calib_n = 0, calib_t = 0, test_n = 0, test_t = 0;

  bool is_onnx() const { return !onnx_bytes.empty(); }
  qlstm::compiler::SequenceShape test_shape() const { return {test_n, test_t, layout}; }
  qlstm::compiler::SequenceShape calib_shape() const { return {calib_n, calib_t, layout}; }
  qlstm::compiler::CalibrationSet calibration() const {
    qlstm::compiler::CalibrationSet set;
    set.add_batch(calib_x, calib_shape(), lstm.input_size);
    return set;
  }
};

inline AccuracyFixture load_accuracy_fixture(const std::string& dir, const std::string& name) {
  using namespace qlstm::compiler;
  AccuracyFixture f;
  f.name = name;
  const std::string base = dir + "/" + name + "/";
  std::ifstream meta(base + "model.json");
  f.meta = nlohmann::json::parse(meta);
  const int32_t I = f.meta.at("input_size"), H = f.meta.at("hidden_size");
  auto floats = [&](const char* key) { return read_npy(base + key + ".npy").as_float(key); };
  if (f.meta.value("layout", "batch_first") == "sequence_first") f.layout = Layout::kTimeMajor;
  if (f.meta.contains("onnx")) {
    f.onnx_bytes = read_file(base + f.meta.at("onnx").get<std::string>());
    const OnnxLstm onnx = import_onnx_bytes(f.onnx_bytes, name);
    if (onnx.program.ops.size() != 1 || onnx.batch_first != (f.layout == Layout::kBatchMajor)) {
      throw std::runtime_error(name + ": model.onnx is not one LSTM in the layout model.json says");
    }
    f.lstm = onnx.program.ops.front();
  } else {
    f.lstm = FloatLstm::from_torch(I, H, floats("weight_ih"), floats("weight_hh"), floats("bias_ih"),
                                   floats("bias_hh"));
  }
  // [N, T, I], or [T, N, I] sequence-first.
  const size_t n_axis = f.layout == Layout::kTimeMajor ? 1 : 0;
  const auto calib = read_npy(base + "calib_x.npy");
  const auto test = read_npy(base + "test_x.npy");
  f.calib_n = static_cast<int32_t>(calib.shape.at(n_axis));
  f.calib_t = static_cast<int32_t>(calib.shape.at(1 - n_axis));
  f.test_n = static_cast<int32_t>(test.shape.at(n_axis));
  f.test_t = static_cast<int32_t>(test.shape.at(1 - n_axis));
  f.calib_x = calib.as_float("calib_x");
  f.test_x = test.as_float("test_x");
  f.test_y = floats("test_y");
  f.test_h_n = floats("test_h_n");
  f.test_c_n = floats("test_c_n");
  for (const auto& a : f.meta.at("arrays")) {
    if (a == "h0") f.h0 = floats("h0");
    if (a == "c0") f.c0 = floats("c0");
    if (a == "calib_y") f.calib_y = floats("calib_y");
    if (a == "calib_h_n") f.calib_h_n = floats("calib_h_n");
    if (a == "calib_c_n") f.calib_c_n = floats("calib_c_n");
  }
  return f;
}

// Upstream's own protocol, for reproducing its published figures only: the fixture with its
// calibration sequences as the test set (calibration = test). Not an accuracy measurement.
inline AccuracyFixture upstream_protocol(const AccuracyFixture& f) {
  if (f.calib_y.empty()) throw std::runtime_error(f.name + ": no calib_y (not one of upstream's cases)");
  AccuracyFixture p = f;
  p.name = f.name + " (upstream's protocol: calibration = test)";
  p.test_x = f.calib_x;
  p.test_y = f.calib_y;
  p.test_h_n = f.calib_h_n;
  p.test_c_n = f.calib_c_n;
  p.test_n = f.calib_n;
  p.test_t = f.calib_t;
  return p;
}

// Upstream's method (../shared/spec/aot-derivation.md): min/max boundaries from the calibration
// data, max|W| per gate block, and the upstream cell policy recorded in the fixture (2 bits of
// headroom over the calibrated max |c|, or the sequence bound). No search.
inline qlstm::compiler::CompileOptions upstream_options(const AccuracyFixture& f) {
  using namespace qlstm::compiler;
  CompileOptions o;
  o.tuning = Tuning::kNone;
  o.input_observer = parse_observer("minmax");
  o.output_observer = parse_observer("minmax");
  o.weights.weight_method = WeightScaleMethod::kMaxAbs;
  const std::string policy = f.meta.value("upstream_cell_policy", "calibrated-2bits");
  o.cell_scale = parse_cell_policy(policy == "calibrated-2bits" ? "calibrated:4" : policy);
  return o;
}

// A fixture compiled with some options and run, int8, on its test_x.
struct FixtureRun {
  std::vector<float> y;  // the dequantized int8 output, in the fixture's layout (as test_y)
  qlstm::compiler::DerivedLstm derived;  // the LSTM op's parameters
  qlstm::compiler::CalibrationStats stats;
  qlstm::compiler::HeldOutEstimate held_out;  // what the compile report states for new data
};

// As a user compiles the fixture: an ONNX fixture through the library's entry point
// (compile_model on model.onnx's bytes and calib_x, run with run_program_s8), any other through
// QuantizedLayer::compile and the kernel. Throws CompileError.
inline FixtureRun run_fixture(const AccuracyFixture& f, const qlstm::compiler::CompileOptions& options) {
  using namespace qlstm::compiler;
  FixtureRun run;
  if (!f.is_onnx() && !options.s16_layers.empty()) {  // a 16x8 program: compile_program's
    FloatProgram program;
    program.ops = {f.lstm};
    const QuantizedProgram q = compile_program(program, f.calibration(), options);
    run.y = run_program_float(q.model, f.test_x, f.test_shape());
    run.stats = q.stats.front();
    return run;
  }
  if (!f.is_onnx()) {
    const QuantizedLayer q = QuantizedLayer::compile(f.lstm, f.calibration(), options);
    run.y = q.run_float(f.test_x, f.test_shape());
    run.derived = q.derived();
    run.stats = q.calibration();
    // The report's held-out estimate, as compile_model makes it for this one-op program.
    FloatProgram program;
    program.ops = {f.lstm};
    QuantizedProgram compiled;
    compiled.stats = {run.stats};
    const CalibrationSet calibration = f.calibration();
    for (const CalibrationSequence& s : calibration.sequences) {
      compiled.float_outputs.push_back(run_float(f.lstm, s.values.data(), {1, s.time_steps, Layout::kBatchMajor}).output);
    }
    run.held_out = estimate_k_fold(program, calibration, options, compiled);
    return run;
  }
  ModelCompileOptions o;
  o.quantization = options;
  o.name = f.name;
  o.model_origin = f.name + "/model.onnx";
  const ModelCompileResult r = compile_model(f.onnx_bytes, {CalibrationTensor{f.calib_x, f.calib_shape()}}, o);
  run.y = run_program_float(r.model, f.test_x, f.test_shape());  // int8 or 16x8
  const ProgramOp& first = r.model.ops.front();
  if (first.holds<DerivedLstm>()) run.derived = first.as<DerivedLstm>();  // none in a 16x8 program
  run.stats = r.stats.front();
  run.held_out = r.held_out;
  return run;
}

}  // namespace testing_support

#endif  // QLSTM_TESTS_ACCURACY_FIXTURE_H_
