// Quantization building blocks: multipliers, int8 affine parameters, range observers.
#ifndef QLSTM_COMPILER_QUANTIZE_H_
#define QLSTM_COMPILER_QUANTIZE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "qlstm/lstm_s8.h"

namespace qlstm {
namespace compiler {

// TFLite's QuantizeMultiplier in double: real ~= m * 2^(s - 31), m in [2^30, 2^31 - 1].
// frexp gives the mantissa in [0.5, 1); m = round-half-away(mantissa * 2^31), 2^31 folds to
// (2^30, s + 1); real == 0 or an exponent below -31 gives (0, 0), whose contribution is below
// half an LSB of any kernel accumulator. Throws CompileError naming `what` for a negative or
// non-finite real, or one too large for a shift of 31.
qlstm_requant quantize_multiplier(double real, const std::string& what);
// The real value a multiplier stands for: m * 2^(s - 31).
double multiplier_value(const qlstm_requant& q);

// int8 affine quantization: real = scale * (q - zero_point).
struct AffineQuant {
  double scale = 1.0;
  int32_t zero_point = 0;
  int8_t quantize(double v) const;
  double dequantize(int32_t q) const { return scale * (q - zero_point); }
};

// The affine parameters that map [lo, hi] (widened to include 0, so zero is exact) onto
// [-128, 127]: scale = (hi - lo) / 255, zero_point = round(-128 - lo / scale), clamped.
// A degenerate range (hi == lo == 0) gets scale 2^-16 so that the model still compiles.
AffineQuant affine_from_range(double lo, double hi);

// How a boundary range is chosen from observed values.
enum class ObserverKind {
  kMinMax,        // the observed extremes
  kPercentile,    // the [100 - p, p] percentiles (p = percentile)
  kHistogramMse,  // the range minimizing the mean squared quantization error
  kHistogramKl,   // the range minimizing KL(P || Q) of the histogram (TensorRT-style entropy)
};
struct ObserverConfig {
  ObserverKind kind = ObserverKind::kHistogramMse;
  double percentile = 99.99;
};
const char* observer_name(ObserverKind kind);
// Parses "minmax", "percentile[:P]", "mse", "kl"; throws CompileError otherwise.
ObserverConfig parse_observer(const std::string& text);

struct Range {
  double lo = 0.0;
  double hi = 0.0;
};
// Chooses the range from all observed values (which must be finite and non-empty).
Range choose_range(const std::vector<float>& values, const ObserverConfig& config);

// Mean squared error of quantizing `values` with `q` (for reports and tests).
double quantization_mse(const std::vector<float>& values, const AffineQuant& q);

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_QUANTIZE_H_
