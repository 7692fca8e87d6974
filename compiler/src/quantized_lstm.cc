#include "qlstm/compiler/quantized_lstm.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "qlstm/kernels.h"

namespace qlstm {
namespace compiler {
namespace {

struct alignas(QLSTM_SCRATCH_ALIGNMENT) ScratchBlock {
  unsigned char bytes[QLSTM_SCRATCH_ALIGNMENT];
};

void check_shape(const SequenceShape& shape, size_t values, int32_t features, const char* what) {
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

}  // namespace

void CalibrationSet::add_batch(const std::vector<float>& x, const SequenceShape& shape,
                               int32_t input_size) {
  check_shape(shape, x.size(), input_size, "calibration batch");
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

QuantizedLstm QuantizedLstm::compile(const FloatLstm& source, const CalibrationSet& calibration,
                                     const CompileOptions& options) {
  source.validate();
  const int32_t I = source.input_size;
  if (calibration.sequences.empty()) {
    throw CompileError("calibration: the calibration set is empty");
  }
  CalibrationStats stats;
  std::vector<float> inputs, outputs;
  double cell_max = 0;
  for (size_t k = 0; k < calibration.sequences.size(); ++k) {
    const CalibrationSequence& s = calibration.sequences[k];
    if (s.values.size() != static_cast<size_t>(s.time_steps) * static_cast<size_t>(I)) {
      throw CompileError("calibration: sequence " + std::to_string(k) + " has " +
                         std::to_string(s.values.size()) + " values, expected " +
                         std::to_string(s.time_steps) + " x " + std::to_string(I));
    }
    for (size_t v = 0; v < s.values.size(); ++v) {
      if (!std::isfinite(s.values[v])) {
        std::ostringstream m;
        m << "calibration: sequence " << k << " has a non-finite value (" << s.values[v]
          << ") at step " << v / static_cast<size_t>(I) << ", feature " << v % static_cast<size_t>(I);
        throw CompileError(m.str());
      }
    }
    inputs.insert(inputs.end(), s.values.begin(), s.values.end());
    const FloatResult r = compiler::run_float(
        source, s.values.data(), {1, s.time_steps, Layout::kBatchMajor}, nullptr, nullptr,
        [&](const double* c, const double*, int32_t H) {
          for (int32_t u = 0; u < H; ++u) cell_max = std::max(cell_max, std::fabs(c[u]));
        });
    outputs.insert(outputs.end(), r.output.begin(), r.output.end());
    stats.steps += s.time_steps;
  }
  stats.sequences = static_cast<int64_t>(calibration.sequences.size());
  if (inputs.empty()) throw CompileError("calibration: every sequence has zero time steps");
  for (float v : outputs) {
    if (!std::isfinite(v)) throw CompileError("calibration: the float model produced a non-finite output");
  }
  const auto [in_lo, in_hi] = std::minmax_element(inputs.begin(), inputs.end());
  const auto [out_lo, out_hi] = std::minmax_element(outputs.begin(), outputs.end());
  stats.input_observed = {*in_lo, *in_hi};
  stats.output_observed = {*out_lo, *out_hi};
  stats.input_range = choose_range(inputs, options.input_observer);
  stats.output_range = choose_range(outputs, options.output_observer);
  stats.cell_max_abs = cell_max;
  const AffineQuant in_q = affine_from_range(stats.input_range.lo, stats.input_range.hi);
  const AffineQuant out_q = affine_from_range(stats.output_range.lo, stats.output_range.hi);
  const CellScaleChoice cell = choose_cell_scale(options.cell_scale, cell_max);
  return QuantizedLstm(source, derive_params(source, in_q, out_q, cell, options.derive), stats);
}

QuantizedLstm::QuantizedLstm(FloatLstm source, DerivedLstm derived, CalibrationStats stats)
    : source_(std::move(source)), derived_(std::move(derived)), stats_(stats) {}

QuantizedLstm::State QuantizedLstm::initial_state(int32_t batch) const {
  const size_t n = static_cast<size_t>(batch) * static_cast<size_t>(derived_.hidden_size);
  return {std::vector<int8_t>(n, static_cast<int8_t>(derived_.output.zero_point)),
          std::vector<int16_t>(n, 0)};
}

std::vector<int8_t> QuantizedLstm::run_s8(const std::vector<int8_t>& x, const SequenceShape& shape,
                                          State* state) const {
  check_shape(shape, x.size(), derived_.input_size, "input");
  const qlstm_lstm_s8_params p = kernel_params(shape);
  const size_t BH = static_cast<size_t>(shape.batch) * static_cast<size_t>(derived_.hidden_size);
  if (state != nullptr && (state->hidden.size() != BH || state->cell.size() != BH)) {
    throw CompileError("state: hidden and cell must have B x H = " + std::to_string(BH) + " values");
  }
  std::vector<ScratchBlock> scratch(qlstm_lstm_s8_scratch_bytes(&p.dims) / sizeof(ScratchBlock) + 1);
  std::vector<int16_t> cell(BH, 0);
  std::vector<int8_t> y(BH * static_cast<size_t>(shape.time_steps));
  qlstm_lstm_s8_context ctx = {scratch.data(), scratch.size() * sizeof(ScratchBlock),
                               state ? state->cell.data() : cell.data(),
                               state ? state->hidden.data() : nullptr};
  const qlstm_status st = qlstm_lstm_s8(&p, &ctx, x.data(), y.data());
  if (st != QLSTM_OK) {
    const char* field = nullptr;
    qlstm_lstm_s8_validate(&p, &field);
    throw CompileError(std::string("kernel refused the parameters: ") + qlstm_status_string(st) +
                       (field ? std::string(" (") + field + ")" : std::string()));
  }
  return y;
}

std::vector<int8_t> QuantizedLstm::quantize_input(const std::vector<float>& x) const {
  std::vector<int8_t> q(x.size());
  for (size_t k = 0; k < x.size(); ++k) {
    if (!std::isfinite(x[k])) {
      throw CompileError("input: non-finite value at index " + std::to_string(k));
    }
    q[k] = derived_.input.quantize(x[k]);
  }
  return q;
}

std::vector<float> QuantizedLstm::dequantize_output(const std::vector<int8_t>& y) const {
  std::vector<float> f(y.size());
  for (size_t k = 0; k < y.size(); ++k) f[k] = static_cast<float>(derived_.output.dequantize(y[k]));
  return f;
}

std::vector<float> QuantizedLstm::run_float(const std::vector<float>& x,
                                            const SequenceShape& shape) const {
  return dequantize_output(run_s8(quantize_input(x), shape));
}

double sqnr_db(const std::vector<float>& reference, const std::vector<float>& test) {
  double signal = 0, noise = 0;
  for (size_t k = 0; k < reference.size(); ++k) {
    signal += static_cast<double>(reference[k]) * reference[k];
    const double d = static_cast<double>(reference[k]) - test[k];
    noise += d * d;
  }
  if (noise == 0) return std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(signal / noise);
}

double max_abs_error(const std::vector<float>& reference, const std::vector<float>& test) {
  double m = 0;
  for (size_t k = 0; k < reference.size(); ++k) {
    m = std::max(m, std::fabs(static_cast<double>(reference[k]) - test[k]));
  }
  return m;
}

}  // namespace compiler
}  // namespace qlstm
