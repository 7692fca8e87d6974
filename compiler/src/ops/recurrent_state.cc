// What the recurrent kinds share of their state: the formats of h and c (op_kind.h, StateValue)
// and the check of a constant initial state against the model's sources.
#include <algorithm>
#include <cmath>
#include <cstdio>

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

nlohmann::json requant_json(const qlstm_requant& q) { return {{"multiplier", q.multiplier}, {"shift", q.shift}}; }

nlohmann::json cell_json(const CellScaleChoice& cell, int32_t clip) {
  return {{"scale_power", cell.power}, {"policy", cell_policy_name(cell.policy)},
          {"headroom", cell.headroom}, {"observed_max_abs", cell.observed_max_abs},
          {"clamped_to_min", cell.clamped_to_min}, {"clip", clip}};
}

nlohmann::json weights_json(const WeightDecision& o, int32_t gate_count) {
  nlohmann::json clips = nlohmann::json::array();
  for (int32_t b = 0; b < 2 * gate_count; ++b) clips.push_back(o.weight_clip_ratio[static_cast<size_t>(b)]);
  return {{"method", weight_method_name(o.weight_method)}, {"bias_correction", o.bias_correction},
          {"rounding", weight_rounding_name(o.weight_rounding)}, {"clip_ratio", clips}};
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

std::string cell_summary(const CellScaleChoice& cell, const char* tail) {
  char line[160];
  std::snprintf(line, sizeof line, "cell   2^%d (%s, observed max |c| %.4g)%s", cell.power, cell_policy_name(cell.policy),
                cell.observed_max_abs, tail);
  return line;
}

}  // namespace ops
}  // namespace compiler
}  // namespace qlstm
