// The 16x8 LSTM's parameters (derive_s16.h, docs/arithmetic.md §14).
#include "qlstm/compiler/lower/derive_s16.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>

#include "qlstm/activation_s16.h"
#include "qlstm/compiler/lower/derive_ops.h"
#include "qlstm/kernels.h"

namespace qlstm {
namespace compiler {
namespace {

constexpr double kInt16MaxValue = 32767.0;
constexpr double kLstmOutputBound = 1.0;  // |h| = |o tanh(c)| < 1
constexpr int32_t kInt16Min = -32768, kInt16Max = 32767;
constexpr int32_t kWeightQMax = 127;  // symmetric int8 weights use [-127, 127]
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
// |x| and |h| of a 16x8 matmul operand: at most 2^15.
constexpr int64_t kMaxAbsActivationS16 = 32768;
const double kGateScale = std::ldexp(1.0, -kQ3_12FractionalBits);       // Q3.12
const double kActivationScale = std::ldexp(1.0, -kQ0_15FractionalBits);  // Q0.15

std::string gate_label(int32_t g) { return std::string("gate '") + gate_name(g) + "'"; }

// A gate matmul's multiplier to Q3.12, within the 16x8 kernels' shift range.
qlstm_requant gate_multiplier(double real, const std::string& what) {
  const qlstm_requant q = quantize_multiplier(real, what);
  if (q.shift > QLSTM_S16_SHIFT_MAX) {
    std::ostringstream s;
    s << what << ": " << real << " needs shift " << q.shift << ", above the 16x8 limit " << QLSTM_S16_SHIFT_MAX;
    throw CompileError(s.str());
  }
  return q;
}

// |bias| + 2^15 * sum|w| of one row must stay below 2^31: the whole accumulator then fits int32,
// where CMSIS-NN's optimized 16x8 paths keep part of it (op-vectors FORMAT.md).
void check_row_range(int64_t bias, const int8_t* w, int32_t n, const std::string& label, const char* side,
                     int32_t row) {
  int64_t sum = 0;
  for (int32_t j = 0; j < n; ++j) sum += std::llabs(static_cast<int64_t>(w[j]));
  const int64_t bound = std::llabs(bias) + kMaxAbsActivationS16 * sum;
  if (bound > kInt32Max) {
    std::ostringstream s;
    s << label << ": " << side << " accumulator of row " << row << " can reach " << bound
      << ", beyond int32 (|bias| + 32768 * sum|w|), where the optimized 16x8 kernels stop agreeing";
    throw CompileError(s.str());
  }
}

void derive_gate_s16(const FloatGate& fg, int32_t I, int32_t H, double input_scale, double output_scale,
                     const WeightDecision& weights, const OperandStats& observed, int32_t g, DerivedGateS16* dg) {
  const std::string label = gate_label(g);
  dg->activation = g == QLSTM_GATE_CELL ? QLSTM_ACTIVATION_TANH : QLSTM_ACTIVATION_SIGMOID;
  dg->w_x_scale = quantize_weights(fg.w_x, weights.weight_method,
                                   weights.weight_clip_ratio[weight_block(g, false)], &dg->w_x);
  dg->w_h_scale = quantize_weights(fg.w_h, weights.weight_method,
                                   weights.weight_clip_ratio[weight_block(g, true)], &dg->w_h);
  const double bias_scale = input_scale * dg->w_x_scale;
  dg->input_effective_bias.resize(static_cast<size_t>(H));
  dg->hidden_effective_bias.assign(static_cast<size_t>(H), 0);
  for (int32_t r = 0; r < H; ++r) {
    const size_t row_x = static_cast<size_t>(r) * I, row_h = static_cast<size_t>(r) * H;
    double b = static_cast<double>(fg.bias_x[r]) + fg.bias_h[r];
    if (weights.bias_correction) {  // the expected matmul error of the int8 weights, (W - s W_q) . E[z]
      for (int32_t j = 0; j < I; ++j) b += (fg.w_x[row_x + j] - dg->w_x_scale * dg->w_x[row_x + j]) * observed.mean_x[j];
      for (int32_t j = 0; j < H; ++j) b += (fg.w_h[row_h + j] - dg->w_h_scale * dg->w_h[row_h + j]) * observed.mean_h[j];
    }
    const double bq = std::nearbyint(b / bias_scale);
    if (!(std::fabs(bq) <= static_cast<double>(kInt32Max))) {
      std::ostringstream s;
      s << label << ": bias[" << r << "] = " << b << " leaves int32 at its scale " << bias_scale
        << " (input scale x input weight scale)";
      throw CompileError(s.str());
    }
    dg->input_effective_bias[static_cast<size_t>(r)] = static_cast<int64_t>(bq);
    check_row_range(dg->input_effective_bias[static_cast<size_t>(r)], &dg->w_x[row_x], I, label, "input", r);
    check_row_range(0, &dg->w_h[row_h], H, label, "recurrent", r);
  }
  dg->input_to_q3_12 = gate_multiplier(input_scale * dg->w_x_scale / kGateScale, label + ": input-to-Q3.12 multiplier");
  dg->hidden_to_q3_12 =
      gate_multiplier(output_scale * dg->w_h_scale / kGateScale, label + ": recurrent-to-Q3.12 multiplier");
}

}  // namespace

double symmetric_s16_scale(double max_abs, const std::string& what) {
  if (!(max_abs > 0.0) || !std::isfinite(max_abs)) {
    std::ostringstream s;
    s << what << ": range " << max_abs << " is not positive and finite";
    throw CompileError(s.str());
  }
  return max_abs / kInt16MaxValue;
}

double s16_boundary_range(double max_abs, int32_t headroom_bits, bool lstm_output) {
  const double range = std::ldexp(max_abs, headroom_bits);
  return lstm_output ? std::min(range, kLstmOutputBound) : range;
}

DerivedLstmS16 derive_lstm_s16_params(const FloatLstm& lstm, double input_scale, double output_scale,
                                      const CellScaleChoice& cell, const WeightDecision& weights,
                                      const OperandStats& observed) {
  if (lstm.cell != CellKind::kLstm) {
    throw CompileError(std::string("a ") + cell_kind_name(lstm.cell) + " layer: no 16x8 kernel for it (16x8 is the LSTM's)");
  }
  if (lstm.gate_sigmoid.hard) throw CompileError("an LSTM with HardSigmoid gates: no 16x8 kernel for it (int8 only)");
  lstm.validate();
  check_derive_inputs(AffineQuant{input_scale, 0}, AffineQuant{output_scale, 0}, weights, observed, lstm.input_size,
                      lstm.hidden_size);
  if (weights.weight_rounding == WeightRounding::kAdaptive) {
    throw CompileError("weight_rounding adaptive: not derived for 16x8 yet; use nearest");
  }
  if (cell.power < kCellScalePowerMin || cell.power > kCellScalePowerMax) {
    throw CompileError("cell scale power " + std::to_string(cell.power) + " outside [-15, 2]");
  }
  if (weights.cell_clip < 0 || weights.cell_clip > static_cast<int32_t>(kInt16MaxValue)) {
    throw CompileError("cell clip " + std::to_string(weights.cell_clip) + " outside [0, 32767]");
  }
  DerivedLstmS16 d;
  d.input_size = lstm.input_size;
  d.hidden_size = lstm.hidden_size;
  d.input_scale = input_scale;
  d.output_scale = output_scale;
  d.cell = cell;
  d.cell_clip = weights.cell_clip;
  d.weights = weights;
  for (int32_t g = 0; g < QLSTM_GATE_COUNT; ++g) {
    derive_gate_s16(lstm.gates[static_cast<size_t>(g)], lstm.input_size, lstm.hidden_size, input_scale, output_scale,
                    weights, observed, g, &d.gates[static_cast<size_t>(g)]);
  }
  // The cell update and o * tanh(c) are the int8 LSTM's (§5, §6), the hidden's scale int16's.
  const double cell_scale = std::ldexp(1.0, cell.power);
  d.forget_times_cell_to_cell = quantize_multiplier(kActivationScale, "forget-times-cell multiplier");
  d.input_times_cell_gate_to_cell =
      quantize_multiplier(kActivationScale * kActivationScale / cell_scale, "input-times-cell-gate multiplier");
  d.output_times_tanh_cell_to_hidden =
      quantize_multiplier(kActivationScale * kActivationScale / output_scale, "output multiplier");
  if (d.output_times_tanh_cell_to_hidden.shift > 0) {  // o * tanh(c) < 2^30: a left shift could overflow
    throw CompileError("output: scale " + std::to_string(output_scale) +
                       " is too fine for the hidden state (needs a left shift)");
  }
  d.time_direction = lstm.reverse ? QLSTM_TIME_REVERSE : QLSTM_TIME_FORWARD;
  return d;
}

qlstm_lstm_s16_params DerivedLstmS16::kernel_params(int32_t batch, int32_t time_steps, Layout layout) const {
  qlstm_lstm_s16_params p{};
  p.dims = {batch, time_steps, input_size, hidden_size};
  p.layout = layout == Layout::kTimeMajor ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR;
  for (size_t g = 0; g < gates.size(); ++g) {
    const DerivedGateS16& dg = gates[g];
    p.gates[g] = {dg.input_to_q3_12, dg.w_x.data(), dg.input_effective_bias.data(),
                  dg.hidden_to_q3_12, dg.w_h.data(), dg.hidden_effective_bias.data(), dg.activation};
  }
  p.forget_times_cell_to_cell = forget_times_cell_to_cell;
  p.input_times_cell_gate_to_cell = input_times_cell_gate_to_cell;
  p.output_times_tanh_cell_to_hidden = output_times_tanh_cell_to_hidden;
  p.cell_scale_power = cell.power;
  p.cell_clip = cell_clip;
  p.time_direction = time_direction;
  p.output_steps = output_steps;
  return p;
}

DerivedFcS16 derive_fc_s16(const FloatLayer& linear, const FloatLayer* clamp, double input_scale,
                           double output_scale) {
  const std::string label = "layer '" + linear.node + "'";
  if (linear.kind != FloatLayerKind::kLinear) throw CompileError(label + ": not a Linear layer");
  if (clamp != nullptr && !folds_into_clamp(*clamp)) {
    throw CompileError("layer '" + clamp->node + "': only Relu and Clip fold into a fully connected op's clamp");
  }
  linear.validate();
  symmetric_s16_scale(input_scale * kInt16MaxValue, label + ": input");
  symmetric_s16_scale(output_scale * kInt16MaxValue, label + ": output");
  const int32_t I = linear.input_size, O = linear.output_size;
  DerivedFcS16 d;
  d.input_size = I;
  d.output_size = O;
  d.input_scale = input_scale;
  d.output_scale = output_scale;
  double max_w = 0;
  for (float w : linear.weight) max_w = std::max(max_w, std::fabs(static_cast<double>(w)));
  d.weight_scale = max_w > 0 ? max_w / kWeightQMax : 1.0;
  d.weights.resize(static_cast<size_t>(O) * static_cast<size_t>(I));
  for (size_t k = 0; k < d.weights.size(); ++k) {
    d.weights[k] = static_cast<int8_t>(
        std::clamp(std::nearbyint(linear.weight[k] / d.weight_scale), -double{kWeightQMax}, double{kWeightQMax}));
  }
  const double bias_scale = input_scale * d.weight_scale;
  d.bias.assign(static_cast<size_t>(O), 0);
  for (int32_t o = 0; o < O; ++o) {
    if (!linear.bias.empty()) {
      const double b = linear.bias[static_cast<size_t>(o)];
      const double bq = std::nearbyint(b / bias_scale);
      if (!(std::fabs(bq) <= static_cast<double>(kInt32Max))) {
        std::ostringstream s;
        s << label << ": bias[" << o << "] = " << b << " leaves int32 at its scale " << bias_scale
          << " (input scale x weight scale)";
        throw CompileError(s.str());
      }
      d.bias[static_cast<size_t>(o)] = static_cast<int64_t>(bq);
    }
    check_row_range(d.bias[static_cast<size_t>(o)], &d.weights[static_cast<size_t>(o) * I], I, label, "the", o);
  }
  d.to_output = gate_multiplier(bias_scale / output_scale, label + ": output multiplier");
  if (clamp != nullptr) {
    const Range r = clamp_range(*clamp);
    auto code = [&](double v) {
      return static_cast<int32_t>(std::clamp(std::nearbyint(std::clamp(v, -1e300, 1e300) / output_scale),
                                             double{kInt16Min}, double{kInt16Max}));
    };
    d.activation_min = code(r.lo);
    d.activation_max = code(r.hi);
    if (d.activation_min > d.activation_max) {
      throw CompileError("layer '" + clamp->node + "': the clamp range is empty at the output quantization");
    }
    d.fused_activation = fused_activation_name(*clamp);
  }
  return d;
}

qlstm_fc_s16_params DerivedFcS16::kernel_params(int32_t rows) const {
  qlstm_fc_s16_params p{};
  p.rows = rows;
  p.input_size = input_size;
  p.output_size = output_size;
  p.multiplier = to_output.multiplier;
  p.shift = to_output.shift;
  p.weights = weights.data();
  p.bias = bias.data();
  p.activation_min = activation_min;
  p.activation_max = activation_max;
  return p;
}

DerivedRequantize derive_requantize(int32_t row_size, int32_t input_type, const AffineQuant& input,
                                    int32_t output_type, const AffineQuant& output, const std::string& what) {
  DerivedRequantize d;
  d.row_size = row_size;
  d.input_type = input_type;
  d.output_type = output_type;
  d.input = input;
  d.output = output;
  for (const auto& [q, type, side] : {std::tuple{input, input_type, "input"}, std::tuple{output, output_type, "output"}}) {
    const int32_t lo = type == QLSTM_ELEMENT_S16 ? kInt16Min : -128, hi = type == QLSTM_ELEMENT_S16 ? kInt16Max : 127;
    if (!(q.scale > 0) || !std::isfinite(q.scale) || q.zero_point < lo || q.zero_point > hi) {
      throw CompileError(what + ": the " + side + " quantization is out of its type's range");
    }
  }
  d.to_output = quantize_multiplier(input.scale / output.scale, what + ": multiplier");
  const qlstm_requantize_params p = d.kernel_params(0);
  const char* field = nullptr;
  if (qlstm_requantize_validate(&p, &field) != QLSTM_OK) {
    throw CompileError(what + ": field '" + (field ? field : "?") + "' out of range");
  }
  return d;
}

qlstm_requantize_params DerivedRequantize::kernel_params(int32_t rows) const {
  return {rows, row_size, input_type, output_type, input.zero_point, output.zero_point, to_output};
}

namespace {
// Copies n values bytewise (a loaded block's arrays may sit unaligned in a file's bytes).
template <class T>
std::vector<T> copy_block_array(const T* from, int64_t n) {
  std::vector<T> v(static_cast<size_t>(std::max<int64_t>(n, 0)));
  if (!v.empty() && from != nullptr) std::memcpy(v.data(), from, v.size() * sizeof(T));
  return v;
}
}  // namespace

DerivedLstmS16 DerivedLstmS16::from_kernel_params(const qlstm_lstm_s16_params& p, double input_scale,
                                                  double output_scale) {
  DerivedLstmS16 d;
  d.input_size = p.dims.input_size;
  d.hidden_size = p.dims.hidden_size;
  d.input_scale = input_scale;
  d.output_scale = output_scale;
  const int64_t I = std::max(p.dims.input_size, 0), H = std::max(p.dims.hidden_size, 0);
  for (size_t g = 0; g < d.gates.size(); ++g) {
    const qlstm_gate_s16_params& pg = p.gates[g];
    DerivedGateS16& dg = d.gates[g];
    dg.input_to_q3_12 = pg.input_to_q3_12;
    dg.hidden_to_q3_12 = pg.hidden_to_q3_12;
    dg.w_x = copy_block_array(pg.input_weights, H * I);
    dg.w_h = copy_block_array(pg.hidden_weights, H * H);
    dg.input_effective_bias = copy_block_array(pg.input_effective_bias, H);
    dg.hidden_effective_bias = copy_block_array(pg.hidden_effective_bias, H);
    dg.activation = pg.activation;
  }
  d.forget_times_cell_to_cell = p.forget_times_cell_to_cell;
  d.input_times_cell_gate_to_cell = p.input_times_cell_gate_to_cell;
  d.output_times_tanh_cell_to_hidden = p.output_times_tanh_cell_to_hidden;
  d.cell.power = p.cell_scale_power;
  d.cell_clip = p.cell_clip;
  d.time_direction = p.time_direction;
  d.output_steps = p.output_steps;
  return d;
}

DerivedFcS16 DerivedFcS16::from_kernel_params(const qlstm_fc_s16_params& p, double input_scale, double output_scale) {
  DerivedFcS16 d;
  d.input_size = p.input_size;
  d.output_size = p.output_size;
  d.input_scale = input_scale;
  d.output_scale = output_scale;
  const int64_t I = std::max(p.input_size, 0), O = std::max(p.output_size, 0);
  d.weights = copy_block_array(p.weights, O * I);
  d.bias = copy_block_array(p.bias, O);
  d.to_output = {p.multiplier, p.shift};
  d.activation_min = p.activation_min;
  d.activation_max = p.activation_max;
  return d;
}

DerivedRequantize DerivedRequantize::from_kernel_params(const qlstm_requantize_params& p, const AffineQuant& input,
                                                        const AffineQuant& output) {
  for (const auto& [zero_point, q, field] : {std::tuple{p.input_zero_point, input, "input_zero_point"},
                                             std::tuple{p.output_zero_point, output, "output_zero_point"}}) {
    if (zero_point != q.zero_point) {
      throw CompileError(std::string(field) + " " + std::to_string(zero_point) + " is not the quantization's zero point " +
                         std::to_string(q.zero_point));
    }
  }
  DerivedRequantize d;
  d.row_size = p.row_size;
  d.input_type = p.input_type;
  d.output_type = p.output_type;
  d.input = input;
  d.output = output;
  d.to_output = p.to_output;
  return d;
}

// The exp table spans [-10, 0] of beta * x over 65535 steps of the scaled difference.
constexpr double kSoftmaxS16ExpTableRange = 10.0;
constexpr double kSoftmaxS16ScaledDiffSteps = 65535.0;

AffineQuant softmax_s16_output_quant() {
  return {std::ldexp(1.0, QLSTM_SOFTMAX_S16_OUTPUT_SCALE_LOG2), QLSTM_SOFTMAX_S16_OUTPUT_ZERO_POINT};
}

DerivedSoftmaxS16 derive_softmax_s16(int32_t row_size, double input_scale, double beta) {
  if (!(input_scale > 0) || !std::isfinite(input_scale)) throw CompileError("softmax_s16: the input scale must be positive");
  if (!(beta > 0) || !std::isfinite(beta)) throw CompileError("softmax_s16: beta must be positive and finite");
  if (row_size < 2 || row_size > QLSTM_SOFTMAX_S16_ROW_SIZE_MAX) {
    throw CompileError("softmax_s16: over " + std::to_string(row_size) + " values; the 16x8 softmax takes 2 to " +
                       std::to_string(QLSTM_SOFTMAX_S16_ROW_SIZE_MAX));
  }
  DerivedSoftmaxS16 d;
  d.row_size = row_size;
  d.input_scale = input_scale;
  d.beta = beta;
  const qlstm_requant q = quantize_multiplier(beta * input_scale / (kSoftmaxS16ExpTableRange / kSoftmaxS16ScaledDiffSteps),
                                              "softmax_s16: input multiplier");
  d.input_multiplier = q.multiplier;
  d.input_left_shift = q.shift;
  const qlstm_softmax_s16_params p = d.kernel_params(0);
  const char* field = nullptr;
  if (qlstm_softmax_s16_validate(&p, &field) != QLSTM_OK) {
    std::ostringstream s;
    s << "softmax_s16: field '" << (field ? field : "?") << "' out of range (beta x input scale = " << beta * input_scale
      << ")";
    throw CompileError(s.str());
  }
  return d;
}

qlstm_softmax_s16_params DerivedSoftmaxS16::kernel_params(int32_t rows) const {
  return {rows, row_size, input_multiplier, input_left_shift};
}

DerivedSoftmaxS16 DerivedSoftmaxS16::from_kernel_params(const qlstm_softmax_s16_params& p, double input_scale) {
  DerivedSoftmaxS16 d;
  d.row_size = p.row_size;
  d.input_scale = input_scale;
  d.input_multiplier = p.input_multiplier;
  d.input_left_shift = p.input_left_shift;
  // beta is not in the block: the one the multiplier stands for.
  d.beta = multiplier_value({p.input_multiplier, p.input_left_shift}) * (kSoftmaxS16ExpTableRange / kSoftmaxS16ScaledDiffSteps) /
           input_scale;
  return d;
}

}  // namespace compiler
}  // namespace qlstm
