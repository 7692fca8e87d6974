// qlstm eval's accuracy figures: labels, targets and units; saturation counts.
#include "eval_metrics.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include <nlohmann/json.hpp>

#include "qlstm/compiler/io/file_io.h"
#include "qlstm/compiler/io/npy.h"

namespace qlstm {
namespace cli {
namespace {

using compiler::CompileError;
using compiler::FileError;

constexpr double kHalfStep = 0.5;  // of a quantization step: what rounding moves a value at most

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s;
  for (int64_t d : shape) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return "[" + s + "]";
}

}  // namespace

OutputUnits read_output_units(const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(compiler::read_file(path));
  } catch (const nlohmann::json::parse_error& e) {
    throw FileError(path + ": not valid JSON (at byte " + std::to_string(e.byte) + ")");
  }
  return output_units_from_json(j, path);
}

OutputUnits output_units_from_json(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object() || !j.contains("output_units") || !j["output_units"].is_object()) {
    throw FileError(path + ": no object 'output_units' ({\"name\": ..., \"scale\": ..., \"offset\": ...}: an output "
                    "value v is v * scale + offset in those units)");
  }
  const nlohmann::json& u = j["output_units"];
  OutputUnits units;
  auto number = [&](const char* key, double* out) {
    if (!u.contains(key)) return false;
    if (!u[key].is_number() || !std::isfinite(u[key].get<double>())) {
      throw FileError(path + ": key 'output_units." + key + "': expected a finite number");
    }
    *out = u[key].get<double>();
    return true;
  };
  if (!number("scale", &units.scale)) throw FileError(path + ": missing key 'output_units.scale'");
  if (units.scale <= 0) throw FileError(path + ": key 'output_units.scale': expected a positive number");
  number("offset", &units.offset);
  if (u.contains("name")) {
    if (!u["name"].is_string()) throw FileError(path + ": key 'output_units.name': expected a string");
    units.name = u["name"].get<std::string>();
  }
  return units;
}

std::vector<int64_t> read_labels(const std::string& path, int64_t rows, int32_t classes) {
  return labels_from_array(compiler::read_npy(path), path, rows, classes);
}

std::vector<int64_t> labels_from_array(const compiler::NpyArray& a, const std::string& path, int64_t rows,
                                       int32_t classes) {
  if (a.dtype == compiler::DType::kFloat32 || a.dtype == compiler::DType::kFloat64) {
    throw CompileError(path + ": dtype " + compiler::dtype_name(a.dtype) +
                       ", expected integer class labels (int8, int16, int32 or int64)");
  }
  const bool column = a.shape.size() == 2 && a.shape[1] == 1;
  if (a.shape.size() != 1 && !column) {
    throw CompileError(path + ": shape " + shape_text(a.shape) + ", expected [" + std::to_string(rows) +
                       "] (one class per sequence)");
  }
  if (a.shape[0] != rows) {
    throw CompileError(path + ": " + std::to_string(a.shape[0]) + " labels for " + std::to_string(rows) +
                       " sequences in --data");
  }
  std::vector<int64_t> labels = a.as_integers(path);
  for (size_t k = 0; k < labels.size(); ++k) {
    if (labels[k] < 0 || labels[k] >= classes) {
      throw CompileError(path + ": label [" + std::to_string(k) + "] = " + std::to_string(labels[k]) +
                         " is not a class of the model's output (0 ... " + std::to_string(classes - 1) + ")");
    }
  }
  return labels;
}

std::vector<float> read_targets(const std::string& path, const std::vector<int64_t>& output_shape) {
  return targets_from_array(compiler::read_npy(path), path, output_shape);
}

std::vector<float> targets_from_array(const compiler::NpyArray& a, const std::string& path,
                                      const std::vector<int64_t>& output_shape) {
  if (a.dtype != compiler::DType::kFloat32) {
    throw CompileError(path + ": dtype " + compiler::dtype_name(a.dtype) + ", expected float32 ('<f4')");
  }
  std::vector<int64_t> squeezed = output_shape;
  if (squeezed.size() > 1 && squeezed.back() == 1) squeezed.pop_back();
  if (a.shape != output_shape && a.shape != squeezed) {
    throw CompileError(path + ": shape " + shape_text(a.shape) + ", expected the model output's " +
                       shape_text(output_shape) + (squeezed != output_shape ? " or " + shape_text(squeezed) : ""));
  }
  std::vector<float> t = a.as_float(path);
  for (size_t k = 0; k < t.size(); ++k) {
    if (!std::isfinite(t[k])) throw CompileError(path + ": non-finite value at index " + std::to_string(k));
  }
  return t;
}

int32_t argmax(const float* row, int32_t n) {
  int32_t best = 0;
  for (int32_t k = 1; k < n; ++k) {
    if (row[k] > row[best]) best = k;
  }
  return best;
}

ClassifierScores score_classifier(const std::vector<float>& ref, const std::vector<float>& got, int32_t width,
                                  const std::vector<int64_t>& labels) {
  ClassifierScores s;
  s.rows = ref.size() / static_cast<size_t>(width);
  for (size_t r = 0; r < s.rows; ++r) {
    const int32_t f = argmax(ref.data() + r * static_cast<size_t>(width), width);
    const int32_t q = argmax(got.data() + r * static_cast<size_t>(width), width);
    s.agree += f == q;
    if (!labels.empty()) {
      s.float_correct += f == labels[r];
      s.int8_correct += q == labels[r];
    }
  }
  return s;
}

ForecastError forecast_error(const std::vector<float>& predicted, const std::vector<float>& targets,
                             const OutputUnits& units) {
  ForecastError e;
  for (size_t k = 0; k < predicted.size(); ++k) {
    const double d = (static_cast<double>(predicted[k]) - targets[k]) * units.scale;
    e.mae += std::fabs(d);
    e.rmse += d * d;
  }
  const double n = static_cast<double>(predicted.size());
  e.mae /= n;
  e.rmse = std::sqrt(e.rmse / n);
  return e;
}

std::vector<double> rms_error_per_step(const std::vector<float>& ref, const std::vector<float>& got, int32_t batch,
                                       int32_t time_steps, int32_t width, bool time_major) {
  std::vector<double> rms(static_cast<size_t>(time_steps), 0.0);
  const size_t B = static_cast<size_t>(batch), T = static_cast<size_t>(time_steps), W = static_cast<size_t>(width);
  for (size_t t = 0; t < T; ++t) {
    double e = 0;
    for (size_t b = 0; b < B; ++b) {
      const size_t row = time_major ? t * B + b : b * T + t;
      for (size_t u = 0; u < W; ++u) {
        const double d = static_cast<double>(ref[row * W + u]) - got[row * W + u];
        e += d * d;
      }
    }
    rms[t] = std::sqrt(e / static_cast<double>(B * W));
  }
  return rms;
}

void RangeCount::add(double v) {
  ++total;
  const double excess = v < lo ? lo - v : v > hi ? v - hi : 0.0;
  if (excess == 0.0) return;
  const double worst = furthest < lo ? lo - furthest : furthest > hi ? furthest - hi : 0.0;
  if (outside == 0 || excess > worst) furthest = v;
  ++outside;
}

RangeCount int8_range(const compiler::AffineQuant& q) {
  RangeCount r;
  r.lo = q.dequantize(std::numeric_limits<int8_t>::min()) - kHalfStep * q.scale;
  r.hi = q.dequantize(std::numeric_limits<int8_t>::max()) + kHalfStep * q.scale;
  return r;
}

RangeCount int16_range(const compiler::AffineQuant& q) {
  RangeCount r;
  r.lo = q.dequantize(std::numeric_limits<int16_t>::min()) - kHalfStep * q.scale;
  r.hi = q.dequantize(std::numeric_limits<int16_t>::max()) + kHalfStep * q.scale;
  return r;
}

RangeCount cell_range(int32_t power) {
  RangeCount r;
  r.hi = std::ldexp(std::numeric_limits<int16_t>::max() + kHalfStep, power);
  r.lo = -r.hi;
  return r;
}

}  // namespace cli
}  // namespace qlstm
