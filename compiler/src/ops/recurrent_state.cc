// What the recurrent kinds share of their state: the formats of h and c (op_kind.h, StateValue)
// and the check of a constant initial state against the model's sources.
#include <algorithm>
#include <cmath>

#include "qlstm/compiler/ops/op_helpers.h"

namespace qlstm {
namespace compiler {

namespace {
constexpr double kInt16Lowest = -32768.0, kInt16Highest = 32767.0;
}  // namespace

double StateValue::step() const {
  return format == kPowerOfTwoS16 ? std::ldexp(1.0, power) : quant.scale;
}

int8_t StateValue::quantize_s8(double v) const { return quant.quantize(v); }

int16_t StateValue::quantize_s16(double v) const {
  // ldexp by -power is exact where dividing by the scale might not be: the cell's own rounding.
  const double q = format == kPowerOfTwoS16 ? std::ldexp(v, -power) : v / quant.scale;
  return static_cast<int16_t>(std::clamp(std::nearbyint(q), kInt16Lowest, kInt16Highest));
}

double StateValue::dequantize(int32_t q) const {
  switch (format) {
    case kAffineS8: return quant.dequantize(q);
    case kScaledS16: return q * quant.scale;
    case kPowerOfTwoS16: return std::ldexp(static_cast<double>(q), power);
    case kAbsent: break;
  }
  return 0;
}

namespace ops {

bool state_matches_source(const CompiledModel& m, StateSource source, size_t n, size_t H) {
  const size_t rows = static_cast<size_t>(std::max(m.constant_state_batch(), 1));
  return (source == StateSource::kConstant) == (n != 0) && (n == 0 || n == H || n == rows * H);
}

StateValue affine_s8_state(const AffineQuant& q) {
  StateValue v;
  v.format = StateValue::kAffineS8;
  v.quant = q;
  return v;
}

StateValue scaled_s16_state(double scale, bool after_cell) {
  StateValue v;
  v.format = StateValue::kScaledS16;
  v.quant = {scale, 0};
  v.after_cell = after_cell;
  return v;
}

StateValue power_of_two_state(int32_t power) {
  StateValue v;
  v.format = StateValue::kPowerOfTwoS16;
  v.power = power;
  v.quant = {std::ldexp(1.0, power), 0};
  return v;
}

}  // namespace ops
}  // namespace compiler
}  // namespace qlstm
