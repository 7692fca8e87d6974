#include "qlstm/compiler/lower/weight_rounding.h"

#include <cmath>

namespace qlstm {
namespace compiler {
namespace {

constexpr double kWeightQLimit = 127;
// A flip must lower the objective by more than this fraction of its own d^2 C_jj, so that
// rounding noise in g never flips a tie back and forth.
constexpr double kMinRelativeGain = 1e-12;

}  // namespace

double rounding_error(const double* w, const double* scale, const int8_t* q, const double* C, int32_t n) {
  std::vector<double> e(static_cast<size_t>(n));
  for (int32_t j = 0; j < n; ++j) e[j] = w[j] - scale[j] * q[j];
  double total = 0;
  for (int32_t i = 0; i < n; ++i) {
    const double* row = C + static_cast<size_t>(i) * n;
    double ci = 0;
    for (int32_t j = 0; j < n; ++j) ci += row[j] * e[j];
    total += e[i] * ci;
  }
  return total;
}

int64_t round_adaptive(const double* w, const double* scale, const double* C, int32_t n, int8_t* q,
                       int32_t max_sweeps) {
  const size_t N = static_cast<size_t>(n);
  // The other rounding of each weight (its own value: not flippable).
  std::vector<int8_t> other(N);
  std::vector<double> e(N), g(N, 0.0);
  for (size_t j = 0; j < N; ++j) {
    other[j] = q[j];
    e[j] = w[j] - scale[j] * q[j];
    const double v = w[j] / scale[j];
    if (!(v >= -kWeightQLimit && v <= kWeightQLimit)) continue;  // clipped: stays at the clip
    const double lo = std::floor(v), hi = std::ceil(v);
    if (q[j] == lo && hi != lo) other[j] = static_cast<int8_t>(hi);
    if (q[j] == hi && hi != lo) other[j] = static_cast<int8_t>(lo);
  }
  for (size_t i = 0; i < N; ++i) {
    const double* row = C + i * N;
    double s = 0;
    for (size_t j = 0; j < N; ++j) s += row[j] * e[j];
    g[i] = s;
  }
  int64_t flips = 0;
  for (int32_t sweep = 0; sweep < max_sweeps; ++sweep) {
    bool changed = false;
    for (size_t j = 0; j < N; ++j) {
      if (other[j] == q[j]) continue;
      const double d = -scale[j] * (other[j] - q[j]);  // the change of e_j
      const double own = d * d * C[j * N + j];
      if (2 * d * g[j] + own >= -kMinRelativeGain * own) continue;
      std::swap(q[j], other[j]);
      e[j] += d;
      const double* col = C + j * N;  // C is symmetric: row j is column j
      for (size_t i = 0; i < N; ++i) g[i] += d * col[i];
      ++flips;
      changed = true;
    }
    if (!changed) break;
  }
  return flips;
}

void accumulate_operand_moment(std::vector<double>& sum, int64_t& steps, const float* x,
                               const float* h_out, const float* h0, int32_t T, int32_t I, int32_t H,
                               bool reverse) {
  const size_t n = static_cast<size_t>(I) + static_cast<size_t>(H);
  if (sum.empty()) sum.assign(n * n, 0.0);
  if (sum.size() != n * n) {
    throw CompileError("operand_second_moment: the sum has " + std::to_string(sum.size()) +
                       " values, expected (I + H)^2 = " + std::to_string(n * n));
  }
  std::vector<double> z(n);
  for (int32_t t = 0; t < T; ++t) {
    const int32_t prev = reverse ? t + 1 : t - 1;
    const float* h = prev >= 0 && prev < T ? h_out + static_cast<size_t>(prev) * H : h0;
    for (int32_t j = 0; j < I; ++j) z[static_cast<size_t>(j)] = x[static_cast<size_t>(t) * I + j];
    for (int32_t j = 0; j < H; ++j) z[static_cast<size_t>(I + j)] = h ? h[j] : 0.0;
    // The upper triangle, mirrored below.
    for (size_t a = 0; a < n; ++a) {
      if (z[a] == 0) continue;
      double* row = sum.data() + a * n;
      for (size_t b = a; b < n; ++b) row[b] += z[a] * z[b];
    }
    ++steps;
  }
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = a + 1; b < n; ++b) sum[b * n + a] = sum[a * n + b];
  }
}

std::vector<double> operand_second_moment(const FloatLstm& lstm, const CalibrationSet& calibration) {
  const int32_t I = lstm.input_size, H = lstm.hidden_size;
  std::vector<double> sum;
  int64_t steps = 0;
  for (const CalibrationSequence& s : calibration.sequences) {
    const float* h0 = s.h0.empty() ? nullptr : s.h0.data();
    const FloatResult r = run_float(lstm, s.values.data(), {1, s.time_steps, Layout::kBatchMajor}, h0,
                                    s.c0.empty() ? nullptr : s.c0.data());
    accumulate_operand_moment(sum, steps, s.values.data(), r.output.data(), h0, s.time_steps, I, H,
                              lstm.reverse);
  }
  if (steps == 0) throw CompileError("operand_second_moment: the calibration set has no steps");
  for (double& v : sum) v /= static_cast<double>(steps);
  return sum;
}

}  // namespace compiler
}  // namespace qlstm
