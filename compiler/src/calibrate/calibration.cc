#include "qlstm/compiler/calibrate/calibration.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <numeric>
#include <sstream>
#include <tuple>


namespace qlstm {
namespace compiler {

void check_tensor_shape(const SequenceShape& shape, size_t values, int32_t features, const char* what) {
  if (shape.batch < 1 || shape.time_steps < 0) {
    throw CompileError(std::string(what) + ": batch must be >= 1 and time steps >= 0");
  }
  const size_t want = static_cast<size_t>(shape.batch) * static_cast<size_t>(shape.time_steps) *
                      static_cast<size_t>(features);
  if (values != want) {
    throw CompileError(std::string(what) + ": " + std::to_string(values) + " values, expected " +
                       std::to_string(want) + " (B=" + std::to_string(shape.batch) +
                       " T=" + std::to_string(shape.time_steps) + " x " +
                       std::to_string(features) + ")");
  }
}

void CalibrationSet::add_batch(const std::vector<float>& x, const SequenceShape& shape,
                               int32_t input_size) {
  check_tensor_shape(shape, x.size(), input_size, "calibration batch");
  const size_t I = static_cast<size_t>(input_size);
  for (int32_t b = 0; b < shape.batch; ++b) {
    CalibrationSequence s;
    s.time_steps = shape.time_steps;
    s.values.resize(static_cast<size_t>(shape.time_steps) * I);
    for (int32_t t = 0; t < shape.time_steps; ++t) {
      const size_t row = shape.layout == Layout::kTimeMajor
                             ? static_cast<size_t>(t) * shape.batch + b
                             : static_cast<size_t>(b) * shape.time_steps + t;
      std::copy_n(x.begin() + static_cast<ptrdiff_t>(row * I), I,
                  s.values.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(t) * I));
    }
    sequences.push_back(std::move(s));
  }
}

std::vector<std::string> calibration_warnings(const CalibrationSet& calibration, int32_t input_size) {
  const size_t I = static_cast<size_t>(std::max(input_size, 0));
  std::vector<float> first(I);
  std::vector<bool> seen(I, false), varies(I, false);
  int64_t steps = 0;
  for (const CalibrationSequence& s : calibration.sequences) {
    const size_t n = std::min(s.values.size(), static_cast<size_t>(std::max(s.time_steps, 0)) * I);
    for (size_t v = 0; v < n; ++v) {
      const size_t f = v % I;
      if (!seen[f]) {
        seen[f] = true;
        first[f] = s.values[v];
      } else if (!(s.values[v] == first[f])) {
        varies[f] = true;
      }
    }
    steps += static_cast<int64_t>(n / std::max<size_t>(I, 1));
  }
  if (steps == 0) return {};  // no data: compile's own error
  std::vector<std::string> warnings;
  for (size_t f = 0; f < I; ++f) {
    if (varies[f]) continue;
    std::ostringstream m;
    m << "calibration: input feature " << f << " is constant (" << first[f] << ") over all " << steps << " steps";
    warnings.push_back(m.str());
  }
  if (warnings.size() == I) {
    throw CompileError("calibration: no input feature varies over the calibration set (each of the " +
                       std::to_string(I) + " is constant over all " + std::to_string(steps) +
                       " steps): it says nothing about the input's range");
  }
  return warnings;
}

// Sequence k of a calibration set: [T][I] values, all finite (the message names where not).
void check_sequence(const CalibrationSequence& s, size_t k, int32_t I) {
  if (s.time_steps < 0 || s.values.size() != static_cast<size_t>(s.time_steps) * static_cast<size_t>(I)) {
    throw CompileError("calibration: sequence " + std::to_string(k) + " has " + std::to_string(s.values.size()) +
                       " values, expected " + std::to_string(s.time_steps) + " x " + std::to_string(I));
  }
  for (size_t v = 0; v < s.values.size(); ++v) {
    if (!std::isfinite(s.values[v])) {
      std::ostringstream m;
      m << "calibration: sequence " << k << " has a non-finite value (" << s.values[v] << ") at step "
        << v / static_cast<size_t>(I) << ", feature " << v % static_cast<size_t>(I);
      throw CompileError(m.str());
    }
  }
}

// Sequence k's float output: all finite.
void check_float_output(const std::vector<float>& output, size_t k) {
  for (float v : output) {
    if (!std::isfinite(v)) {
      throw CompileError("calibration: the float model produced a non-finite output on sequence " +
                         std::to_string(k));
    }
  }
}

FloatResult OpObservation::add(const FloatLstm& source, CalibrationSequence sequence, bool validation) {
  const size_t H = static_cast<size_t>(source.hidden_size);
  if (validation && !validation_begin) validation_begin = inputs.sequences.size();
  if (!validation && validation_begin) {
    throw CompileError("calibration: a calibration sequence after the validation sequences");
  }
  sum_h.resize(H, 0.0);
  double seq_cell_max = 0;
  std::vector<double> seq_sum_h(H, 0.0);
  for (double c : sequence.c0) seq_cell_max = std::max(seq_cell_max, std::fabs(c));  // the cell scale covers c0
  FloatResult r = compiler::run_float(
      source, sequence.values.data(), {1, sequence.time_steps, Layout::kBatchMajor},
      sequence.h0.empty() ? nullptr : sequence.h0.data(), sequence.c0.empty() ? nullptr : sequence.c0.data(),
      [&](const double* c, const double* h, int32_t n) {
        for (int32_t u = 0; u < n; ++u) {
          if (c != nullptr) seq_cell_max = std::max(seq_cell_max, std::fabs(c[u]));  // a GRU has no cell
          seq_sum_h[static_cast<size_t>(u)] += h[u];
          if (validation) continue;
          sum_h[static_cast<size_t>(u)] += h[u];
        }
      });
  if (!validation) cell_max_abs = std::max(cell_max_abs, seq_cell_max);
  sequence_cell_max_abs.push_back(seq_cell_max);
  sequence_sum_h.push_back(std::move(seq_sum_h));
  inputs.sequences.push_back(std::move(sequence));
  outputs.push_back(r.output);
  return r;
}

OpObservation observe_op(const FloatLstm& source, const CalibrationSet& calibration, const ProgressFn& progress) {
  const int32_t I = source.input_size, H = source.hidden_size;
  OpObservation observed;
  for (size_t k = 0; k < calibration.sequences.size(); ++k) {
    const CalibrationSequence& s = calibration.sequences[k];
    check_sequence(s, k, I);
    for (const std::vector<float>* st : {&s.h0, &s.c0}) {
      if (!st->empty() && st->size() != static_cast<size_t>(H)) {
        throw CompileError("calibration: sequence " + std::to_string(k) + " has an initial state of " +
                           std::to_string(st->size()) + " values, expected " + std::to_string(H));
      }
    }
    check_float_output(observed.add(source, s).output, k);
    if (progress) progress("calibrating", static_cast<int64_t>(k + 1), static_cast<int64_t>(calibration.sequences.size()));
  }
  return observed;
}

}  // namespace compiler
}  // namespace qlstm
