// Loads a fixture made by tests/accuracy/make_fixtures.py (model.json + .npy arrays).
#ifndef QLSTM_TESTS_ACCURACY_FIXTURE_H_
#define QLSTM_TESTS_ACCURACY_FIXTURE_H_

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "qlstm/compiler/float_lstm.h"
#include "qlstm/compiler/npy.h"
#include "qlstm/compiler/quantized_lstm.h"

namespace testing_support {

struct AccuracyFixture {
  std::string name;
  nlohmann::json meta;
  qlstm::compiler::FloatLstm lstm;
  std::vector<float> calib_x, test_x, test_y, test_h_n, test_c_n, h0, c0;
  int32_t calib_n = 0, calib_t = 0, test_n = 0, test_t = 0;

  qlstm::compiler::SequenceShape test_shape() const {
    return {test_n, test_t, qlstm::compiler::Layout::kBatchMajor};
  }
  qlstm::compiler::CalibrationSet calibration() const {
    qlstm::compiler::CalibrationSet set;
    set.add_batch(calib_x, {calib_n, calib_t, qlstm::compiler::Layout::kBatchMajor},
                  lstm.input_size);
    return set;
  }
};

inline AccuracyFixture load_accuracy_fixture(const std::string& dir, const std::string& name) {
  using qlstm::compiler::read_npy;
  AccuracyFixture f;
  f.name = name;
  const std::string base = dir + "/" + name + "/";
  std::ifstream meta(base + "model.json");
  f.meta = nlohmann::json::parse(meta);
  const int32_t I = f.meta.at("input_size"), H = f.meta.at("hidden_size");
  auto floats = [&](const char* key) { return read_npy(base + key + ".npy").as_float(key); };
  f.lstm = qlstm::compiler::FloatLstm::from_torch(I, H, floats("weight_ih"), floats("weight_hh"),
                                                  floats("bias_ih"), floats("bias_hh"));
  const auto calib = read_npy(base + "calib_x.npy");
  const auto test = read_npy(base + "test_x.npy");
  f.calib_n = static_cast<int32_t>(calib.shape.at(0));
  f.calib_t = static_cast<int32_t>(calib.shape.at(1));
  f.test_n = static_cast<int32_t>(test.shape.at(0));
  f.test_t = static_cast<int32_t>(test.shape.at(1));
  f.calib_x = calib.as_float("calib_x");
  f.test_x = test.as_float("test_x");
  f.test_y = floats("test_y");
  f.test_h_n = floats("test_h_n");
  f.test_c_n = floats("test_c_n");
  for (const auto& a : f.meta.at("arrays")) {
    if (a == "h0") f.h0 = floats("h0");
    if (a == "c0") f.c0 = floats("c0");
  }
  return f;
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
  o.derive.weight_method = WeightScaleMethod::kMaxAbs;
  const std::string policy = f.meta.value("upstream_cell_policy", "calibrated-2bits");
  o.cell_scale = parse_cell_policy(policy == "calibrated-2bits" ? "calibrated:4" : policy);
  return o;
}

}  // namespace testing_support

#endif  // QLSTM_TESTS_ACCURACY_FIXTURE_H_
