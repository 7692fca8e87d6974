#include "qlstm/compiler/calibrate/quantize.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "qlstm/compiler/float/float_lstm.h"

namespace qlstm {
namespace compiler {
namespace {

constexpr int32_t kQMin = -128;
constexpr int32_t kQMax = 127;
constexpr int32_t kLevels = kQMax - kQMin;  // 255 steps between the extreme codes
constexpr int32_t kHistogramBins = 2048;
constexpr int32_t kSearchSteps = 128;        // candidate positions of each edge
constexpr double kDegenerateScale = 1.0 / 65536.0;

struct Histogram {
  double lo = 0, hi = 0, width = 0;
  std::vector<double> counts;
  double center(int32_t k) const { return lo + (k + 0.5) * width; }
  double edge(int32_t k) const { return lo + k * width; }
};

Histogram make_histogram(const std::vector<float>& values) {
  Histogram h;
  const auto [mn, mx] = std::minmax_element(values.begin(), values.end());
  h.lo = *mn;
  h.hi = *mx;
  h.counts.assign(kHistogramBins, 0.0);
  h.width = (h.hi - h.lo) / kHistogramBins;
  if (h.width <= 0) return h;
  for (float v : values) {
    int32_t k = static_cast<int32_t>((v - h.lo) / h.width);
    h.counts[static_cast<size_t>(std::clamp(k, 0, kHistogramBins - 1))] += 1.0;
  }
  return h;
}

// Expected squared error of the affine quantizer for [lo, hi]: uniform rounding noise inside,
// the distance to the nearest representable edge outside.
double histogram_mse(const Histogram& h, double lo, double hi) {
  const AffineQuant q = affine_from_range(lo, hi);
  const double rep_lo = q.dequantize(kQMin), rep_hi = q.dequantize(kQMax);
  const double noise = q.scale * q.scale / 12.0;
  double err = 0.0;
  for (int32_t k = 0; k < kHistogramBins; ++k) {
    const double c = h.counts[static_cast<size_t>(k)];
    if (c == 0) continue;
    const double v = h.center(k);
    if (v < rep_lo) err += c * (v - rep_lo) * (v - rep_lo);
    else if (v > rep_hi) err += c * (v - rep_hi) * (v - rep_hi);
    else err += c * noise;
  }
  return err;
}

// KL(P || Q) for the bins [i, j) (TensorRT's entropy calibration, both edges searched): P is
// the slice with the outliers folded into its edge bins; Q is the slice *without* them, with each
// of the 255 quantization cells' mass spread evenly over the cell's non-empty bins. Clipping
// therefore costs what it moves into the edge bins.
double histogram_kl(const Histogram& h, int32_t i, int32_t j) {
  const int32_t n = j - i;
  std::vector<double> slice(h.counts.begin() + i, h.counts.begin() + j);
  std::vector<double> p = slice;
  for (int32_t k = 0; k < i; ++k) p.front() += h.counts[static_cast<size_t>(k)];
  for (int32_t k = j; k < kHistogramBins; ++k) p.back() += h.counts[static_cast<size_t>(k)];
  std::vector<double> q(static_cast<size_t>(n), 0.0);
  const double per_cell = static_cast<double>(n) / kLevels;
  for (int32_t cell = 0; cell < kLevels; ++cell) {
    const int32_t a = static_cast<int32_t>(std::floor(cell * per_cell));
    const int32_t b = std::min(n, std::max(a + 1, static_cast<int32_t>(std::floor((cell + 1) * per_cell))));
    double mass = 0;
    int32_t nonzero = 0;
    for (int32_t k = a; k < b; ++k) {
      mass += slice[static_cast<size_t>(k)];
      nonzero += p[static_cast<size_t>(k)] > 0;
    }
    for (int32_t k = a; k < b; ++k) {
      if (p[static_cast<size_t>(k)] > 0) q[static_cast<size_t>(k)] = mass / nonzero;
    }
  }
  double p_total = 0, q_total = 0;
  for (int32_t k = 0; k < n; ++k) {
    p_total += p[static_cast<size_t>(k)];
    q_total += q[static_cast<size_t>(k)];
  }
  constexpr double kFloor = 1e-12;  // an emptied bin: a large but finite penalty
  double kl = 0;
  for (int32_t k = 0; k < n; ++k) {
    const double pk = p[static_cast<size_t>(k)] / p_total;
    if (pk <= 0) continue;
    const double qk = std::max(q[static_cast<size_t>(k)] / q_total, kFloor);
    kl += pk * std::log(pk / qk);
  }
  return kl;
}

Range search_range(const std::vector<float>& values, bool kl) {
  const Histogram h = make_histogram(values);
  if (h.width <= 0) return {h.lo, h.hi};
  // Both edges on a grid of kSearchSteps positions; the range spans at least one bin per level.
  const int32_t step = std::max(1, kHistogramBins / kSearchSteps);
  double best = std::numeric_limits<double>::infinity();
  Range r{h.lo, h.hi};
  for (int32_t i = 0; i + kLevels <= kHistogramBins; i += step) {
    for (int32_t j = kHistogramBins; j >= i + kLevels; j -= step) {
      const double cost = kl ? histogram_kl(h, i, j) : histogram_mse(h, h.edge(i), h.edge(j));
      if (cost < best) {
        best = cost;
        r = {h.edge(i), h.edge(j)};
      }
    }
  }
  return r;
}

}  // namespace

qlstm_requant quantize_multiplier(double real, const std::string& what) {
  if (!std::isfinite(real) || real < 0) {
    std::ostringstream s;
    s << what << ": real multiplier " << real << " is negative or not finite";
    throw CompileError(s.str());
  }
  if (real == 0) return {0, 0};
  int exponent = 0;
  const double mantissa = std::frexp(real, &exponent);
  int64_t m = std::llround(mantissa * 2147483648.0);  // llround rounds half away from zero
  if (m == (int64_t{1} << 31)) {
    m /= 2;
    ++exponent;
  }
  if (exponent < QLSTM_SHIFT_MIN) return {0, 0};
  if (exponent > QLSTM_SHIFT_MAX) {
    std::ostringstream s;
    s << what << ": real multiplier " << real << " needs a left shift of " << exponent
      << ", more than the kernel's " << QLSTM_SHIFT_MAX;
    throw CompileError(s.str());
  }
  return {static_cast<int32_t>(m), exponent};
}

double multiplier_value(const qlstm_requant& q) {
  return std::ldexp(static_cast<double>(q.multiplier), q.shift - 31);
}

int8_t AffineQuant::quantize(double v) const {
  const double q = std::nearbyint(v / scale) + zero_point;
  return static_cast<int8_t>(std::clamp(q, static_cast<double>(kQMin), static_cast<double>(kQMax)));
}

AffineQuant affine_from_range(double lo, double hi) {
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  AffineQuant q;
  q.scale = hi > lo ? (hi - lo) / kLevels : kDegenerateScale;
  q.zero_point = static_cast<int32_t>(
      std::clamp(std::round(kQMin - lo / q.scale), static_cast<double>(kQMin),
                 static_cast<double>(kQMax)));
  return q;
}

const char* observer_name(ObserverKind kind) {
  switch (kind) {
    case ObserverKind::kMinMax: return "minmax";
    case ObserverKind::kPercentile: return "percentile";
    case ObserverKind::kHistogramMse: return "mse";
    case ObserverKind::kHistogramKl: return "kl";
  }
  return "?";
}

ObserverConfig parse_observer(const std::string& text) {
  ObserverConfig c;
  if (text == "minmax") c.kind = ObserverKind::kMinMax;
  else if (text == "mse") c.kind = ObserverKind::kHistogramMse;
  else if (text == "kl") c.kind = ObserverKind::kHistogramKl;
  else if (text.rfind("percentile", 0) == 0) {
    c.kind = ObserverKind::kPercentile;
    if (text.size() > 10) {
      if (text[10] != ':') throw CompileError("observer '" + text + "': expected percentile:P");
      try {
        size_t used = 0;
        c.percentile = std::stod(text.substr(11), &used);
        if (used != text.size() - 11) throw std::invalid_argument("trailing");
      } catch (const std::exception&) {
        throw CompileError("observer '" + text + "': P must be a number");
      }
      if (!(c.percentile > 50 && c.percentile <= 100)) {
        throw CompileError("observer '" + text + "': P must be in (50, 100]");
      }
    }
  } else {
    throw CompileError("unknown observer '" + text + "' (minmax, percentile[:P], mse, kl)");
  }
  return c;
}

Range choose_range(const std::vector<float>& values, const ObserverConfig& config) {
  if (values.empty()) throw CompileError("observer: no values observed");
  switch (config.kind) {
    case ObserverKind::kMinMax: {
      const auto [mn, mx] = std::minmax_element(values.begin(), values.end());
      return {*mn, *mx};
    }
    case ObserverKind::kPercentile: {
      std::vector<float> v = values;
      const double frac = config.percentile / 100.0;
      const size_t n = v.size();
      const size_t hi_k = std::min(n - 1, static_cast<size_t>(std::ceil(frac * (n - 1))));
      const size_t lo_k = (n - 1) - hi_k;
      std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(hi_k), v.end());
      const double hi = v[hi_k];
      std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(lo_k), v.end());
      return {v[lo_k], hi};
    }
    case ObserverKind::kHistogramMse: return search_range(values, false);
    case ObserverKind::kHistogramKl: return search_range(values, true);
  }
  return {};
}

double quantization_mse(const std::vector<float>& values, const AffineQuant& q) {
  double err = 0;
  for (float v : values) {
    const double d = v - q.dequantize(q.quantize(v));
    err += d * d;
  }
  return values.empty() ? 0.0 : err / static_cast<double>(values.size());
}

}  // namespace compiler
}  // namespace qlstm
