#include "qlstm/compiler/lower/derive.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "qlstm/activation_s16.h"
#include "qlstm/compiler/lower/weight_rounding.h"
#include "qlstm/kernels.h"

namespace qlstm {
namespace compiler {
namespace {

constexpr int32_t kWeightQMin = -128;
constexpr int32_t kWeightQMax = 127;
constexpr int32_t kInt16Max = 32767;
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
// Magnitude bound of an int8 activation (x or h) in a matmul: |x| <= 128.
constexpr int64_t kMaxAbsActivation = 128;
// Clip ratios searched by kMseClip, as a fraction of max|W|.
constexpr double kClipSearchLow = 0.5;
constexpr int32_t kClipSearchSteps = 200;

const double kGateScale = std::ldexp(1.0, -kQ3_12FractionalBits);       // Q3.12
const double kActivationScale = std::ldexp(1.0, -kQ0_15FractionalBits);  // Q0.15

std::string gate_label(int32_t g) { return std::string("gate '") + gate_name(g) + "'"; }

// Rounds a float bias to int32 at `scale`; `what` names the bias and `scale_what` its scale.
int32_t quantize_bias(double b, double scale, const std::string& label, const char* what, int32_t row,
                      const char* scale_what) {
  const double bq = std::nearbyint(b / scale);
  if (!(std::fabs(bq) <= static_cast<double>(kInt32Max))) {
    std::ostringstream s;
    s << label << ": " << what << "[" << row << "] = " << b << " overflows int32 at its scale " << scale << " ("
      << scale_what << ")";
    throw CompileError(s.str());
  }
  return static_cast<int32_t>(bq);
}

// bias_q - zero_point * rowsum(w), the zero point folded into the bias (docs/arithmetic.md §1).
int32_t effective_bias(int32_t bias_q, int32_t zero_point, const int8_t* w, int32_t n, const std::string& label,
                       const char* side, const char* zero_point_name, int32_t row) {
  int64_t rowsum = 0;
  for (int32_t j = 0; j < n; ++j) rowsum += w[j];
  const int64_t eff = static_cast<int64_t>(bias_q) - zero_point * rowsum;
  if (std::llabs(eff) > kInt32Max) {
    throw CompileError(label + ": " + side + " effective bias of row " + std::to_string(row) + " overflows int32 (bias plus " +
                       zero_point_name + " zero point times row sum)");
  }
  return static_cast<int32_t>(eff);
}

// Bias correction: adds (W - s W_q) . mean, one product at a time, to `b`.
void add_weight_error(double* b, const float* w, const int8_t* q, double scale, const double* mean, int32_t n) {
  for (int32_t j = 0; j < n; ++j) *b += (w[j] - scale * q[j]) * mean[j];
}

int8_t quantize_weight(double w, double scale) {
  return static_cast<int8_t>(std::clamp(std::nearbyint(w / scale), static_cast<double>(kWeightQMin),
                                        static_cast<double>(kWeightQMax)));
}

double weight_error(const std::vector<float>& w, double scale) {
  double err = 0;
  for (float v : w) {
    const double d = v - scale * quantize_weight(v, scale);
    err += d * d;
  }
  return err;
}

// Largest |accumulator| a row can reach: |bias| + 128 * sum |w| (int8 activations).
int64_t accumulator_bound(int32_t bias, const int8_t* w, int32_t n) {
  int64_t s = 0;
  for (int32_t j = 0; j < n; ++j) s += std::abs(static_cast<int32_t>(w[j]));
  return std::abs(static_cast<int64_t>(bias)) + kMaxAbsActivation * s;
}

void check_accumulators(const std::string& label, const char* side, const std::vector<int32_t>& bias,
                        const std::vector<int8_t>& w, int32_t cols, const qlstm_requant& q) {
  const int32_t left = std::max(q.shift, 0);
  for (size_t r = 0; r < bias.size(); ++r) {
    const int64_t bound = accumulator_bound(bias[r], w.data() + r * static_cast<size_t>(cols), cols);
    if ((bound << left) > kInt32Max) {
      std::ostringstream s;
      s << label << ": " << side << " accumulator of row " << r << " can reach " << bound
        << (left > 0 ? " before a left shift of " + std::to_string(left) : std::string())
        << ", beyond int32: the kernel would wrap. Reduce the bias or the weights' range, or "
           "widen the boundary scale";
      throw CompileError(s.str());
    }
  }
}

// Adaptive rounding of each row [w_x ; w_h] of a gate, from the nearest rounding in dg.
void round_gate_adaptive(const FloatGate& fg, size_t I, size_t H, const std::vector<double>& second_moment,
                         DerivedGate* dg) {
  const size_t n = I + H;
  std::vector<double> w(n), s(n);
  std::vector<int8_t> q(n);
  std::fill(s.begin(), s.begin() + static_cast<ptrdiff_t>(I), dg->w_x_scale);
  std::fill(s.begin() + static_cast<ptrdiff_t>(I), s.end(), dg->w_h_scale);
  for (size_t r = 0; r < H; ++r) {
    for (size_t j = 0; j < I; ++j) {
      w[j] = fg.w_x[r * I + j];
      q[j] = dg->w_x[r * I + j];
    }
    for (size_t j = 0; j < H; ++j) {
      w[I + j] = fg.w_h[r * H + j];
      q[I + j] = dg->w_h[r * H + j];
    }
    round_adaptive(w.data(), s.data(), second_moment.data(), static_cast<int32_t>(n), q.data());
    std::copy(q.begin(), q.begin() + static_cast<ptrdiff_t>(I), dg->w_x.begin() + static_cast<ptrdiff_t>(r * I));
    std::copy(q.begin() + static_cast<ptrdiff_t>(I), q.end(), dg->w_h.begin() + static_cast<ptrdiff_t>(r * H));
  }
}

// A choice between two enumerators (the first is 0), named `first` and `second`.
template <class E>
const char* two_way_name(E value, const char* first, const char* second) {
  return static_cast<int>(value) == 0 ? first : second;
}

template <class E>
E parse_two_way(const std::string& text, const char* what, const char* first, const char* second) {
  if (text == first) return static_cast<E>(0);
  if (text == second) return static_cast<E>(1);
  throw CompileError("unknown " + std::string(what) + " '" + text + "' (" + first + ", " + second + ")");
}

}  // namespace

const char* weight_method_name(WeightScaleMethod m) { return two_way_name(m, "maxabs", "mse"); }

WeightScaleMethod parse_weight_method(const std::string& text) {
  return parse_two_way<WeightScaleMethod>(text, "weight-scale method", "maxabs", "mse");
}

const char* weight_rounding_name(WeightRounding r) { return two_way_name(r, "nearest", "adaptive"); }

WeightRounding parse_weight_rounding(const std::string& text) {
  return parse_two_way<WeightRounding>(text, "weight rounding", "nearest", "adaptive");
}

const char* cell_policy_name(CellScalePolicy p) {
  switch (p) {
    case CellScalePolicy::kCalibrated: return "calibrated";
    case CellScalePolicy::kSequenceBound: return "sequence-bound";
    case CellScalePolicy::kFixed: return "fixed";
  }
  return "?";
}

CellScaleRequest parse_cell_policy(const std::string& text) {
  CellScaleRequest r;
  const size_t colon = text.find(':');
  const std::string head = text.substr(0, colon);
  const std::string arg = colon == std::string::npos ? "" : text.substr(colon + 1);
  auto number = [&](bool integer) {
    try {
      size_t used = 0;
      const double v = std::stod(arg, &used);
      if (used != arg.size() || (integer && v != std::floor(v))) throw std::invalid_argument("");
      return v;
    } catch (const std::exception&) {
      throw CompileError("cell scale policy '" + text + "': '" + arg + "' is not a " +
                         (integer ? "whole number" : "number"));
    }
  };
  if (head == "calibrated") {
    r.policy = CellScalePolicy::kCalibrated;
    if (!arg.empty()) r.headroom = number(false);
    if (!(r.headroom >= 1.0 && r.headroom <= 64.0)) {
      throw CompileError("cell scale policy '" + text + "': headroom must be in [1, 64]");
    }
  } else if (head == "sequence-bound" && !arg.empty()) {
    r.policy = CellScalePolicy::kSequenceBound;
    const double t = number(true);
    if (t < 1 || t > 1e9) throw CompileError("cell scale policy '" + text + "': T must be >= 1");
    r.sequence_length = static_cast<int32_t>(t);
  } else if (head == "fixed" && !arg.empty()) {
    r.policy = CellScalePolicy::kFixed;
    const double p = number(true);
    if (std::fabs(p) > 1000) throw CompileError("cell scale policy '" + text + "': P out of range");
    r.fixed_power = static_cast<int32_t>(p);
  } else {
    throw CompileError("unknown cell scale policy '" + text +
                       "' (calibrated[:HEADROOM], sequence-bound:T, fixed:P)");
  }
  return r;
}

CellScaleChoice choose_cell_scale(const CellScaleRequest& request, double observed_max_abs) {
  CellScaleChoice c;
  c.policy = request.policy;
  c.observed_max_abs = observed_max_abs;
  // The smallest P whose int16 range 32767 * 2^P covers `magnitude`.
  auto power_covering = [](double magnitude) {
    return static_cast<int32_t>(std::ceil(std::log2(magnitude / kInt16Max)));
  };
  switch (request.policy) {
    case CellScalePolicy::kFixed:
      c.power = request.fixed_power;
      if (c.power < kCellScalePowerMin || c.power > kCellScalePowerMax) {
        throw CompileError("cell scale fixed:" + std::to_string(c.power) + ": P must be in [" +
                           std::to_string(kCellScalePowerMin) + ", " +
                           std::to_string(kCellScalePowerMax) +
                           "] (P < -15 would overflow the int16 input-times-cell-gate term)");
      }
      return c;
    case CellScalePolicy::kSequenceBound:
      if (request.sequence_length < 1) {
        throw CompileError("cell scale sequence-bound: sequence length must be >= 1");
      }
      c.sequence_length = request.sequence_length;
      c.power = power_covering(static_cast<double>(request.sequence_length));
      break;
    case CellScalePolicy::kCalibrated:
      if (!std::isfinite(observed_max_abs) || observed_max_abs < 0) {
        throw CompileError("cell scale calibrated: observed max |c| is not finite");
      }
      c.headroom = request.headroom;
      c.power = observed_max_abs > 0 ? power_covering(observed_max_abs * request.headroom)
                                     : kCellScalePowerMin;
      break;
  }
  if (c.power < kCellScalePowerMin) {
    c.power = kCellScalePowerMin;
    c.clamped_to_min = true;
  }
  if (c.power > kCellScalePowerMax) {
    std::ostringstream s;
    s << "cell scale " << cell_policy_name(c.policy) << ": the cell range needs P = " << c.power
      << ", above the largest the kernel supports (" << kCellScalePowerMax << ", |c| <= "
      << kInt16Max * std::ldexp(1.0, kCellScalePowerMax) << ")";
    throw CompileError(s.str());
  }
  return c;
}

double quantize_weights(const std::vector<float>& w, WeightScaleMethod method, double clip_ratio,
                        std::vector<int8_t>* q) {
  double max_abs = 0;
  for (float v : w) max_abs = std::max(max_abs, std::fabs(static_cast<double>(v)));
  double scale = max_abs > 0 ? max_abs / kWeightQMax : 1.0;
  if (clip_ratio > 0 && max_abs > 0) {
    scale = max_abs * std::min(clip_ratio, 1.0) / kWeightQMax;
  } else if (method == WeightScaleMethod::kMseClip && max_abs > 0) {
    double best = weight_error(w, scale);
    for (int32_t k = 0; k < kClipSearchSteps; ++k) {
      const double ratio = kClipSearchLow + (1.0 - kClipSearchLow) * k / kClipSearchSteps;
      const double s = max_abs * ratio / kWeightQMax;
      const double err = weight_error(w, s);
      if (err < best) {
        best = err;
        scale = s;
      }
    }
  }
  q->resize(w.size());
  for (size_t k = 0; k < w.size(); ++k) (*q)[k] = quantize_weight(w[k], scale);
  return scale;
}

void check_derive_inputs(const AffineQuant& input, const AffineQuant& output, const WeightDecision& weights,
                         const OperandStats& observed, int32_t input_size, int32_t hidden_size) {
  if (!(input.scale > 0) || !std::isfinite(input.scale)) {
    throw CompileError("input: scale must be positive and finite");
  }
  if (!(output.scale > 0) || !std::isfinite(output.scale)) {
    throw CompileError("output: scale must be positive and finite");
  }
  if (weights.bias_correction && (observed.mean_x.size() != static_cast<size_t>(input_size) ||
                                  observed.mean_h.size() != static_cast<size_t>(hidden_size))) {
    throw CompileError("bias correction: needs the calibration means of x [I] and h [H]");
  }
}

void derive_gate(const FloatGate& fg, int32_t I, int32_t H, const AffineQuant& input, const AffineQuant& output,
                 const WeightDecision& weights, const OperandStats& observed, int32_t block_gate,
                 RecurrentBias recurrent_bias,
                 const std::vector<double>* rounding_moment, const std::string& label, DerivedGate* dg,
                 double pre_activation_scale) {
  dg->w_x_scale = quantize_weights(fg.w_x, weights.weight_method,
                                   weights.weight_clip_ratio[weight_block(block_gate, false)], &dg->w_x);
  dg->w_h_scale = quantize_weights(fg.w_h, weights.weight_method,
                                   weights.weight_clip_ratio[weight_block(block_gate, true)], &dg->w_h);
  if (rounding_moment) {
    round_gate_adaptive(fg, static_cast<size_t>(I), static_cast<size_t>(H), *rounding_moment, dg);
  }
  const bool folded = recurrent_bias == RecurrentBias::kFolded;
  const double input_bias_scale = input.scale * dg->w_x_scale;
  const double recurrent_bias_scale = output.scale * dg->w_h_scale;
  dg->bias_q.resize(static_cast<size_t>(H));
  dg->input_effective_bias.resize(static_cast<size_t>(H));
  dg->hidden_effective_bias.resize(static_cast<size_t>(H));
  for (int32_t r = 0; r < H; ++r) {
    const size_t row_x = static_cast<size_t>(r) * I, row_h = static_cast<size_t>(r) * H;
    double b = folded ? static_cast<double>(fg.bias_x[r]) + fg.bias_h[r] : static_cast<double>(fg.bias_x[r]);
    double b_recurrent = folded ? 0.0 : static_cast<double>(fg.bias_h[r]);
    if (weights.bias_correction) {
      add_weight_error(&b, &fg.w_x[row_x], &dg->w_x[row_x], dg->w_x_scale, observed.mean_x.data(), I);
      add_weight_error(folded ? &b : &b_recurrent, &fg.w_h[row_h], &dg->w_h[row_h], dg->w_h_scale,
                       observed.mean_h.data(), H);
    }
    dg->bias_q[r] = quantize_bias(b, input_bias_scale, label, folded ? "bias" : "input bias", r,
                                  "input scale x input weight scale");
    const int32_t recurrent_q =
        folded ? 0 : quantize_bias(b_recurrent, recurrent_bias_scale, label, "recurrent bias", r,
                                   "output scale x recurrent weight scale");
    dg->input_effective_bias[r] =
        effective_bias(dg->bias_q[r], input.zero_point, &dg->w_x[row_x], I, label, "input", "input", r);
    dg->hidden_effective_bias[r] =
        effective_bias(recurrent_q, output.zero_point, &dg->w_h[row_h], H, label, "recurrent", "output", r);
  }
  dg->input_to_q3_12 = quantize_multiplier(input.scale * dg->w_x_scale / pre_activation_scale,
                                           label + ": input-to-Q3.12 multiplier");
  dg->hidden_to_q3_12 = quantize_multiplier(output.scale * dg->w_h_scale / pre_activation_scale,
                                            label + ": recurrent-to-Q3.12 multiplier");
  check_accumulators(label, "input", dg->input_effective_bias, dg->w_x, I, dg->input_to_q3_12);
  check_accumulators(label, "recurrent", dg->hidden_effective_bias, dg->w_h, H, dg->hidden_to_q3_12);
}

DerivedLstm derive_params(const FloatLstm& lstm, const AffineQuant& input,
                          const AffineQuant& output, const CellScaleChoice& cell,
                          const WeightDecision& weights, const OperandStats& observed) {
  // Its gates are an LSTM's: a GRU layer (three gates, gates[3] empty) would be read past them.
  if (lstm.cell != CellKind::kLstm) {
    throw CompileError(std::string("a ") + cell_kind_name(lstm.cell) + " layer: the LSTM derivation cannot "
                       "derive it (derive_gru_params does)");
  }
  lstm.validate();
  check_derive_inputs(input, output, weights, observed, lstm.input_size, lstm.hidden_size);
  if (cell.power < kCellScalePowerMin || cell.power > kCellScalePowerMax) {
    throw CompileError("cell scale power " + std::to_string(cell.power) + " outside [-15, 2]");
  }
  if (weights.cell_clip < 0 || weights.cell_clip > kInt16Max) {
    throw CompileError("cell clip " + std::to_string(weights.cell_clip) + " outside [0, 32767]");
  }
  const int32_t I = lstm.input_size, H = lstm.hidden_size;
  DerivedLstm d = derived_layer<DerivedLstm>(I, H, input, output);
  d.cell = cell;
  d.cell_clip = weights.cell_clip;
  d.weights = weights;
  const size_t operands = static_cast<size_t>(I) + static_cast<size_t>(H);
  if (weights.weight_rounding == WeightRounding::kAdaptive &&
      observed.operand_second_moment.size() != operands * operands) {
    throw CompileError("adaptive weight rounding: operand_second_moment has " +
                       std::to_string(observed.operand_second_moment.size()) +
                       " values, expected (I + H)^2 = " + std::to_string(operands * operands));
  }
  // With bias correction the bias absorbs the mean error e . E[z]: what is left, and what the
  // rounding minimizes, is e^T (C - m m^T) e with m = [mean_x ; mean_h].
  std::vector<double> rounding_moment;
  if (weights.weight_rounding == WeightRounding::kAdaptive) {
    rounding_moment = observed.operand_second_moment;
    if (weights.bias_correction) {
      std::vector<double> m(observed.mean_x);
      m.insert(m.end(), observed.mean_h.begin(), observed.mean_h.end());
      for (size_t a = 0; a < operands; ++a) {
        for (size_t b = 0; b < operands; ++b) rounding_moment[a * operands + b] -= m[a] * m[b];
      }
    }
  }
  const bool adaptive = weights.weight_rounding == WeightRounding::kAdaptive;
  for (int32_t g = 0; g < QLSTM_GATE_COUNT; ++g) {
    DerivedGate& dg = d.gates[static_cast<size_t>(g)];
    const bool hard = g != QLSTM_GATE_CELL && lstm.gate_sigmoid.hard;
    dg.activation = g == QLSTM_GATE_CELL ? QLSTM_ACTIVATION_TANH
                    : hard               ? QLSTM_ACTIVATION_HARD_SIGMOID
                                         : QLSTM_ACTIVATION_SIGMOID;
    if (hard) dg.hard_sigmoid = hard_sigmoid_line(lstm.gate_sigmoid);
    derive_gate(lstm.gates[static_cast<size_t>(g)], I, H, input, output, weights, observed, g, RecurrentBias::kFolded,
                adaptive ? &rounding_moment : nullptr, gate_label(g), &dg);
  }
  const double cell_scale = std::ldexp(1.0, cell.power);
  d.forget_times_cell_to_cell = quantize_multiplier(kActivationScale, "forget-times-cell multiplier");
  d.input_times_cell_gate_to_cell = quantize_multiplier(
      kActivationScale * kActivationScale / cell_scale, "input-times-cell-gate multiplier");
  d.output_times_tanh_cell_to_hidden = quantize_multiplier(
      kActivationScale * kActivationScale / output.scale, "output multiplier");
  // o * tanh(c) < 2^30: a left shift would overflow the kernel's 32-bit pre-shift.
  if (d.output_times_tanh_cell_to_hidden.shift > 0) {
    throw CompileError("output: scale " + std::to_string(output.scale) +
                       " is too fine for the hidden state (needs a left shift)");
  }
  d.time_direction = lstm.reverse ? QLSTM_TIME_REVERSE : QLSTM_TIME_FORWARD;
  return d;
}

qlstm_hard_sigmoid_params hard_sigmoid_line(const GateSigmoid& sigmoid) {
  qlstm_hard_sigmoid_params line{};
  line.slope = quantize_multiplier(static_cast<double>(sigmoid.alpha) * kGateScale / kActivationScale,
                                   "HardSigmoid slope (8 alpha)");
  const double offset = std::nearbyint(static_cast<double>(sigmoid.beta) / kActivationScale);
  if (!(std::fabs(offset) <= static_cast<double>(kInt32Max))) {
    throw CompileError("HardSigmoid offset: beta " + std::to_string(sigmoid.beta) + " overflows int32 in Q0.15");
  }
  line.offset_q0_15 = static_cast<int32_t>(offset);
  return line;
}

void copy_kernel_gate_arrays(const int8_t* input_weights, const int32_t* input_effective_bias,
                             const int8_t* hidden_weights, const int32_t* hidden_effective_bias,
                             int32_t input_size, int32_t hidden_size, DerivedGate* dg) {
  const size_t I = static_cast<size_t>(std::max(input_size, 0));
  const size_t H = static_cast<size_t>(std::max(hidden_size, 0));
  // The arrays may sit unaligned in a file's bytes: copied bytewise.
  auto copy = [](auto& v, const void* from, size_t n) {
    v.resize(n);
    if (n > 0) std::memcpy(v.data(), from, n * sizeof(v[0]));
  };
  copy(dg->w_x, input_weights, H * I);
  copy(dg->input_effective_bias, input_effective_bias, H);
  copy(dg->w_h, hidden_weights, H * H);
  copy(dg->hidden_effective_bias, hidden_effective_bias, H);
}

void check_output_zero_point(int32_t output_zero_point, const AffineQuant& output) {
  if (output_zero_point != output.zero_point) {
    throw CompileError("output_zero_point " + std::to_string(output_zero_point) +
                       " is not the output quantization's zero point " + std::to_string(output.zero_point));
  }
}

qlstm_lstm_s8_params DerivedLstm::kernel_params(int32_t batch, int32_t time_steps,
                                                Layout layout) const {
  qlstm_lstm_s8_params p{};
  common_kernel_params(*this, batch, time_steps, layout, &p);
  for (size_t g = 0; g < gates.size(); ++g) {
    p.gates[g].activation = gates[g].activation;
    p.gates[g].hard_sigmoid = gates[g].hard_sigmoid;
  }
  p.forget_times_cell_to_cell = forget_times_cell_to_cell;
  p.input_times_cell_gate_to_cell = input_times_cell_gate_to_cell;
  p.output_times_tanh_cell_to_hidden = output_times_tanh_cell_to_hidden;
  p.cell_scale_power = cell.power;
  p.cell_clip = cell_clip;
  p.input_repeated = input_repeated;
  return p;
}

DerivedLstm DerivedLstm::from_kernel_params(const qlstm_lstm_s8_params& p, const AffineQuant& input,
                                            const AffineQuant& output) {
  DerivedLstm d = common_from_kernel_params<DerivedLstm>(p, input, output);
  for (size_t g = 0; g < d.gates.size(); ++g) {
    d.gates[g].activation = p.gates[g].activation;
    d.gates[g].hard_sigmoid = p.gates[g].hard_sigmoid;
  }
  d.forget_times_cell_to_cell = p.forget_times_cell_to_cell;
  d.input_times_cell_gate_to_cell = p.input_times_cell_gate_to_cell;
  d.output_times_tanh_cell_to_hidden = p.output_times_tanh_cell_to_hidden;
  d.cell.power = p.cell_scale_power;
  d.cell_clip = p.cell_clip;
  d.input_repeated = p.input_repeated;
  return d;
}

}  // namespace compiler
}  // namespace qlstm
