// The integer parameters of the ops around the LSTM (docs/compiler.md, "Ops around the LSTM").
#include "qlstm/compiler/lower/derive_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "qlstm/compiler/float/float_lstm.h"
#include "qlstm/fully_connected_s8.h"
#include "qlstm/log_softmax_s8.h"
#include "qlstm/softmax_s8.h"

namespace qlstm {
namespace compiler {
namespace {

constexpr int32_t kInt8Min = -128, kInt8Max = 127;
constexpr int32_t kWeightQMax = 127;  // symmetric int8 weights use [-127, 127]
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
// Largest |x - zp_in| of an int8 input: the FC's accumulator bound uses it.
constexpr int64_t kMaxAbsCenteredInput = 255;
// The floor of an FC output row's weight scale (docs/arithmetic.md, "weight scale floor"): one
// weight step moves that row's output by at least 2^-20 of an output step, and the row's bias fits
// in 2^30 bias steps. A row of near-zero weights (a dead unit an L2 decay left at 1e-33) then
// quantizes to zeros, and its bias stays exact to far below an output step, instead of
// overflowing int32 at a scale of 1e-38.
constexpr int32_t kRowScaleFloorBits = 20;
constexpr double kBiasStepsMax = 1 << 30;
// TFLite Micro's int8 softmax: the scaled difference x_j - max is held with 5 integer bits in
// a 32-bit fixed-point number (31 value bits).
constexpr int32_t kSoftmaxScaledDiffIntegerBits = 5;
constexpr int32_t kSoftmaxTotalSignedBits = 31;

std::string layer_label(const FloatLayer& layer) { return "layer '" + layer.node + "'"; }

// Copies n values bytewise (a loaded block's arrays may sit unaligned in a file's bytes).
template <class T>
std::vector<T> copy_array(const T* from, size_t n) {
  std::vector<T> v(n);
  if (n > 0 && from != nullptr) std::memcpy(v.data(), from, n * sizeof(T));
  return v;
}

void check_quant(const AffineQuant& q, const std::string& what) {
  if (!(q.scale > 0) || !std::isfinite(q.scale)) throw CompileError(what + ": scale must be positive and finite");
  if (q.zero_point < kInt8Min || q.zero_point > kInt8Max) throw CompileError(what + ": zero point out of int8 range");
}

// An output value's int8 code, clamped (for the fused activation's bounds; +-inf saturate).
int32_t clamp_code(const AffineQuant& output, double v) {
  if (std::isnan(v)) return kInt8Min;
  return output.quantize(std::clamp(v, -1e300, 1e300));
}

}  // namespace

bool folds_into_clamp(const FloatLayer& layer) {
  return layer.kind == FloatLayerKind::kActivation && (layer.fn == ActivationFn::kRelu || layer.fn == ActivationFn::kClip);
}

std::string fused_activation_name(const FloatLayer& clamp) {
  const Range r = clamp_range(clamp);
  return clamp.fn == ActivationFn::kRelu ? "relu" : (r.lo == 0.0 && r.hi == 6.0) ? "relu6" : "clip";
}

Range clamp_range(const FloatLayer& layer) {
  const double inf = std::numeric_limits<double>::infinity();
  if (!folds_into_clamp(layer)) return {-inf, inf};
  if (layer.fn == ActivationFn::kRelu) return {0.0, inf};
  return {layer.clip_min, layer.clip_max};
}

DerivedFc derive_fc(const FloatLayer& linear, const FloatLayer* clamp, const AffineQuant& input,
                    const AffineQuant& output, bool per_channel) {
  if (linear.kind != FloatLayerKind::kLinear) throw CompileError(layer_label(linear) + ": not a Linear layer");
  if (clamp != nullptr && !folds_into_clamp(*clamp)) {
    throw CompileError(layer_label(*clamp) + ": only Relu and Clip fold into a fully connected op's clamp");
  }
  linear.validate();
  check_quant(input, layer_label(linear) + ": input");
  check_quant(output, layer_label(linear) + ": output");
  const int32_t I = linear.input_size, O = linear.output_size;
  DerivedFc d;
  d.input_size = I;
  d.output_size = O;
  d.input = input;
  d.output = output;
  d.per_channel = per_channel;
  // Symmetric scales: per output row max|W[o]| / 127, or one from the whole matrix. A row of
  // zeros takes the matrix's scale (its bias then keeps the same resolution as the others').
  double all_max = 0;
  std::vector<double> row_max(static_cast<size_t>(O), 0.0);
  for (int32_t o = 0; o < O; ++o) {
    for (int32_t i = 0; i < I; ++i) {
      const double w = std::fabs(static_cast<double>(linear.weight[static_cast<size_t>(o) * I + i]));
      row_max[static_cast<size_t>(o)] = std::max(row_max[static_cast<size_t>(o)], w);
    }
    all_max = std::max(all_max, row_max[static_cast<size_t>(o)]);
  }
  std::vector<double> floor(static_cast<size_t>(O));
  double all_floor = 0;
  for (int32_t o = 0; o < O; ++o) {
    const double b = linear.bias.empty() ? 0.0 : std::fabs(static_cast<double>(linear.bias[static_cast<size_t>(o)]));
    floor[static_cast<size_t>(o)] =
        std::max(std::ldexp(output.scale / input.scale, -kRowScaleFloorBits), b / (input.scale * kBiasStepsMax));
    all_floor = std::max(all_floor, floor[static_cast<size_t>(o)]);
  }
  const double tensor_scale = all_max > 0 ? std::max(all_max / kWeightQMax, all_floor) : 1.0;
  if (per_channel) {
    for (int32_t o = 0; o < O; ++o) {
      const double m = row_max[static_cast<size_t>(o)];
      d.weight_scales.push_back(m > 0 ? std::max(m / kWeightQMax, floor[static_cast<size_t>(o)]) : tensor_scale);
    }
  } else {
    d.weight_scales.push_back(tensor_scale);
  }
  auto scale_of = [&](int32_t o) { return d.weight_scales[per_channel ? static_cast<size_t>(o) : 0]; };
  d.weights.resize(static_cast<size_t>(O) * I);
  d.bias_q.assign(static_cast<size_t>(O), 0);
  for (int32_t o = 0; o < O; ++o) {
    const double s_w = scale_of(o);
    int64_t abs_rowsum = 0;
    for (int32_t i = 0; i < I; ++i) {
      const size_t k = static_cast<size_t>(o) * I + i;
      const double q = std::clamp(std::nearbyint(linear.weight[k] / s_w), -double{kWeightQMax}, double{kWeightQMax});
      d.weights[k] = static_cast<int8_t>(q);
      abs_rowsum += std::abs(static_cast<int32_t>(q));
    }
    const double bias_scale = input.scale * s_w;
    if (!linear.bias.empty()) {
      const double b = linear.bias[static_cast<size_t>(o)];
      const double bq = std::nearbyint(b / bias_scale);
      if (!(std::fabs(bq) <= static_cast<double>(kInt32Max))) {
        std::ostringstream s;
        s << layer_label(linear) << ": bias[" << o << "] = " << b << " overflows int32 at its scale " << bias_scale
          << " (input scale x weight scale of output " << o << ")";
        throw CompileError(s.str());
      }
      d.bias_q[static_cast<size_t>(o)] = static_cast<int32_t>(bq);
    }
    // The kernel's true accumulator, bias + sum (x - zp) w, must fit int32 (CMSIS-NN's does not
    // widen): otherwise it wraps and the output is garbage on the device as on the host.
    const int64_t bound = std::llabs(d.bias_q[static_cast<size_t>(o)]) + kMaxAbsCenteredInput * abs_rowsum;
    if (bound > kInt32Max) {
      throw CompileError(layer_label(linear) + ": the accumulator of output " + std::to_string(o) + " can reach " +
                         std::to_string(bound) + ", beyond int32 (the bias is too large for its scale)");
    }
  }
  d.effective_bias.resize(static_cast<size_t>(O));
  qlstm_fc_s8_effective_bias(d.weights.data(), d.bias_q.data(), input.zero_point, I, O, d.effective_bias.data());
  for (size_t q = 0; q < d.weight_scales.size(); ++q) {
    const qlstm_requant r = quantize_multiplier(input.scale * d.weight_scales[q] / output.scale,
                                                layer_label(linear) + ": output " + std::to_string(q) + " multiplier");
    d.multipliers.push_back(r.multiplier);
    d.shifts.push_back(r.shift);
  }
  if (clamp != nullptr) {
    const Range r = clamp_range(*clamp);
    d.activation_min = std::max(kInt8Min, clamp_code(output, r.lo));
    d.activation_max = std::min(kInt8Max, clamp_code(output, r.hi));
    if (d.activation_min > d.activation_max) {
      throw CompileError(layer_label(*clamp) + ": the clamp range is empty at the output quantization");
    }
    d.fused_activation = fused_activation_name(*clamp);
  }
  return d;
}

int32_t DerivedPool::input_width() const {
  return over_time() ? block.channels : block.input_height * block.input_width * block.channels;
}

int32_t DerivedPool::output_width() const {
  return over_time() ? block.channels : block.output_height * block.output_width * block.channels;
}

DerivedPool derive_pool_time(const FloatLayer& pool, const AffineQuant& quant, size_t part) {
  if (pool.kind != FloatLayerKind::kPoolTime) throw CompileError(layer_label(pool) + ": not a pooling over time");
  if (pool.input_size < 1) throw CompileError(layer_label(pool) + ": input_size must be >= 1");
  const std::vector<PoolFn> fns = pool.pool_fns();
  if (part >= fns.size() || fns[part] == PoolFn::kFirstStep || fns[part] == PoolFn::kLastStep ||
      fns[part] == PoolFn::kAttention) {
    throw CompileError(layer_label(pool) + ": part " + std::to_string(part) + " is not a mean or a max over time");
  }
  check_quant(quant, layer_label(pool) + ": input");
  DerivedPool d;
  d.block.kind = fns[part] == PoolFn::kMax ? QLSTM_POOL_MAX : QLSTM_POOL_AVERAGE;
  d.block.channels = pool.input_size;
  d.block.activation_min = kInt8Min;
  d.block.activation_max = kInt8Max;
  d.quant = quant;
  return d;
}

qlstm_fc_s8_params DerivedFc::kernel_params(int32_t rows) const {
  qlstm_fc_s8_params p{};
  p.rows = rows;
  p.input_size = input_size;
  p.output_size = output_size;
  p.per_channel = per_channel ? 1 : 0;
  p.multipliers = multipliers.data();
  p.shifts = shifts.data();
  p.weights = weights.data();
  p.effective_bias = effective_bias.data();
  p.output_zero_point = output.zero_point;
  p.activation_min = activation_min;
  p.activation_max = activation_max;
  return p;
}

DerivedFc DerivedFc::from_kernel_params(const qlstm_fc_s8_params& p, const AffineQuant& input,
                                        const AffineQuant& output, const std::vector<double>& weight_scales) {
  if (p.output_zero_point != output.zero_point) {
    throw CompileError("output_zero_point " + std::to_string(p.output_zero_point) +
                       " is not the output quantization's zero point " + std::to_string(output.zero_point));
  }
  DerivedFc d;
  d.input_size = p.input_size;
  d.output_size = p.output_size;
  d.input = input;
  d.output = output;
  d.per_channel = p.per_channel != 0;
  const size_t I = static_cast<size_t>(std::max(p.input_size, 0)), O = static_cast<size_t>(std::max(p.output_size, 0));
  const size_t requants = d.per_channel ? O : 1;
  d.multipliers = copy_array(p.multipliers, requants);
  d.shifts = copy_array(p.shifts, requants);
  d.weights = copy_array(p.weights, O * I);
  d.effective_bias = copy_array(p.effective_bias, O);
  d.weight_scales = weight_scales;
  // bias_q = effective_bias + zp_in * rowsum, modulo 2^32 as the effective bias was formed.
  d.bias_q.resize(O);
  for (size_t o = 0; o < O; ++o) {
    int64_t rowsum = 0;
    for (size_t i = 0; i < I; ++i) rowsum += d.weights[o * I + i];
    d.bias_q[o] = static_cast<int32_t>(static_cast<uint32_t>(
        static_cast<int64_t>(d.effective_bias[o]) + static_cast<int64_t>(input.zero_point) * rowsum));
  }
  d.activation_min = p.activation_min;
  d.activation_max = p.activation_max;
  // What the clamp says (the layer it came from is not in the block; a full range is no clamp).
  if (d.activation_min == output.zero_point && d.activation_min > kInt8Min && d.activation_max == kInt8Max) {
    d.fused_activation = "relu";
  } else if (d.activation_min != kInt8Min || d.activation_max != kInt8Max) {
    d.fused_activation = "clip";
  }
  return d;
}

AffineQuant softmax_output_quant() {
  return {std::ldexp(1.0, QLSTM_SOFTMAX_S8_OUTPUT_SCALE_LOG2), QLSTM_SOFTMAX_S8_OUTPUT_ZERO_POINT};
}

// TFLite's int8 softmax and log-softmax scaling: beta * s_in as a multiplier of the difference
// held with 5 integer bits, capped at the largest int32 (PreprocessSoftmaxScaling), and the
// largest difference the fixed-point exp sees, in input units: (2^5 - 1) * 2^(31 - 5) /
// 2^left_shift, floored (CalculateInputRadius); smaller differences contribute 0.
struct SoftmaxScaling {
  int32_t multiplier = 0, left_shift = 0, diff_min = 0;
};
SoftmaxScaling softmax_scaling(const char* op, const AffineQuant& input, double beta) {
  const double real = std::min(beta * input.scale * std::ldexp(1.0, kSoftmaxTotalSignedBits - kSoftmaxScaledDiffIntegerBits),
                               static_cast<double>(kInt32Max));
  const qlstm_requant q = quantize_multiplier(real, std::string(op) + ": input multiplier");
  if (q.multiplier == 0 || q.shift < 0) {
    std::ostringstream s;
    s << op << ": beta x input scale = " << beta * input.scale << " is too small for the int8 " << op
      << " (its multiplier needs a right shift)";
    throw CompileError(s.str());
  }
  const double radius = std::floor(((1 << kSoftmaxScaledDiffIntegerBits) - 1) *
                                   std::ldexp(1.0, kSoftmaxTotalSignedBits - kSoftmaxScaledDiffIntegerBits) /
                                   std::ldexp(1.0, q.shift));
  return {q.multiplier, q.shift, -static_cast<int32_t>(radius)};
}

DerivedSoftmax derive_softmax(int32_t row_size, const AffineQuant& input, double beta) {
  check_quant(input, "softmax: input");
  if (!(beta > 0) || !std::isfinite(beta)) throw CompileError("softmax: beta must be positive and finite");
  if (row_size < 1 || row_size > QLSTM_SOFTMAX_S8_ROW_SIZE_MAX) {
    // The kernel sums a row's exponentials in int32 (docs/arithmetic.md §11).
    throw CompileError("softmax: over " + std::to_string(row_size) + " values; the int8 softmax takes 1 to " +
                       std::to_string(QLSTM_SOFTMAX_S8_ROW_SIZE_MAX));
  }
  DerivedSoftmax d;
  d.row_size = row_size;
  d.input = input;
  d.beta = beta;
  const SoftmaxScaling sc = softmax_scaling("softmax", input, beta);
  d.input_multiplier = sc.multiplier;
  d.input_left_shift = sc.left_shift;
  d.diff_min = sc.diff_min;
  return d;
}

qlstm_softmax_s8_params DerivedSoftmax::kernel_params(int32_t rows) const {
  return {rows, row_size, input_multiplier, input_left_shift, diff_min};
}

DerivedSoftmax DerivedSoftmax::from_kernel_params(const qlstm_softmax_s8_params& p, const AffineQuant& input) {
  DerivedSoftmax d;
  d.row_size = p.row_size;
  d.input = input;
  d.input_multiplier = p.input_multiplier;
  d.input_left_shift = p.input_left_shift;
  d.diff_min = p.diff_min;
  // beta is not in the block: the one the multiplier stands for.
  d.beta = std::ldexp(static_cast<double>(p.input_multiplier),
                      p.input_left_shift - kSoftmaxTotalSignedBits -
                          (kSoftmaxTotalSignedBits - kSoftmaxScaledDiffIntegerBits)) /
           input.scale;
  return d;
}

AffineQuant log_softmax_output_quant() {
  return {std::ldexp(1.0, QLSTM_LOG_SOFTMAX_S8_OUTPUT_SCALE_LOG2), QLSTM_LOG_SOFTMAX_S8_OUTPUT_ZERO_POINT};
}

DerivedLogSoftmax derive_log_softmax(int32_t row_size, const AffineQuant& input) {
  check_quant(input, "log-softmax: input");
  if (row_size < 1 || row_size > QLSTM_LOG_SOFTMAX_S8_ROW_SIZE_MAX) {
    throw CompileError("log-softmax: over " + std::to_string(row_size) + " values; the int8 log-softmax takes 1 to " +
                       std::to_string(QLSTM_LOG_SOFTMAX_S8_ROW_SIZE_MAX));
  }
  DerivedLogSoftmax d;
  d.row_size = row_size;
  d.input = input;
  const SoftmaxScaling sc = softmax_scaling("log-softmax", input, 1.0);
  d.input_multiplier = sc.multiplier;
  d.input_left_shift = sc.left_shift;
  d.diff_min = sc.diff_min;
  // The inverse of the difference's scaling, 2^(31 - left_shift) / multiplier < 1
  // (QuantizeMultiplierSmallerThanOneExp): the multiplier's shift is a right shift.
  const double reverse = std::ldexp(1.0, kSoftmaxTotalSignedBits - d.input_left_shift) / d.input_multiplier;
  const qlstm_requant q = quantize_multiplier(reverse, "log-softmax: reverse multiplier");
  if (!(reverse < 1.0) || q.shift > 0) {
    std::ostringstream s;
    s << "log-softmax: input scale " << input.scale << " is too small for the int8 log-softmax (its difference scaling "
      << "must exceed 1)";
    throw CompileError(s.str());
  }
  d.reverse_multiplier = q.multiplier;
  d.reverse_shift = q.shift;
  return d;
}

qlstm_log_softmax_s8_params DerivedLogSoftmax::kernel_params(int32_t rows) const {
  return {rows, row_size, input_multiplier, input_left_shift, reverse_multiplier, reverse_shift, diff_min};
}

DerivedLogSoftmax DerivedLogSoftmax::from_kernel_params(const qlstm_log_softmax_s8_params& p, const AffineQuant& input) {
  DerivedLogSoftmax d;
  d.row_size = p.row_size;
  d.input = input;
  d.input_multiplier = p.input_multiplier;
  d.input_left_shift = p.input_left_shift;
  d.reverse_multiplier = p.reverse_multiplier;
  d.reverse_shift = p.reverse_shift;
  d.diff_min = p.diff_min;
  return d;
}

namespace {
// TFLite's int8 ADD: the operands are widened by 2^20 before their rescaling.
constexpr int32_t kAddLeftShift = 20;

// The operands' and the output's quantization and the row size of an elementwise op.
void check_elementwise(int32_t row_size, const AffineQuant& input1, const AffineQuant& input2,
                       const AffineQuant& output, const std::string& what) {
  if (row_size < 1) throw CompileError(what + ": over " + std::to_string(row_size) + " values per position");
  check_quant(input1, what + ": input 1");
  check_quant(input2, what + ": input 2");
  check_quant(output, what + ": output");
}

// The elementwise block's fields past the add's rescaling, as P (qlstm_add_s8_params or qlstm_mul_s8_params).
template <class P>
P elementwise_block(int32_t row_size, const AffineQuant& input1, const AffineQuant& input2, const AffineQuant& output,
                    const qlstm_requant& out) {
  P p{};
  p.shape = {0, row_size, 0, 0};
  p.input1_zero_point = input1.zero_point;
  p.input2_zero_point = input2.zero_point;
  p.output_multiplier = out.multiplier;
  p.output_shift = out.shift;
  p.output_zero_point = output.zero_point;
  p.activation_min = -128;
  p.activation_max = 127;
  return p;
}
}  // namespace

DerivedAdd derive_add(int32_t row_size, const AffineQuant& input1, const AffineQuant& input2, const AffineQuant& output,
                      const std::string& what) {
  check_elementwise(row_size, input1, input2, output, what);
  const double twice_max = 2 * std::max(input1.scale, input2.scale);
  const qlstm_requant q1 = quantize_multiplier(input1.scale / twice_max, what + ": input 1 multiplier");
  const qlstm_requant q2 = quantize_multiplier(input2.scale / twice_max, what + ": input 2 multiplier");
  const qlstm_requant qo =
      quantize_multiplier(twice_max / (std::ldexp(1.0, kAddLeftShift) * output.scale), what + ": output multiplier");
  DerivedAdd d;
  d.block = elementwise_block<qlstm_add_s8_params>(row_size, input1, input2, output, qo);
  d.block.left_shift = kAddLeftShift;
  d.block.input1_multiplier = q1.multiplier;
  d.block.input1_shift = q1.shift;
  d.block.input2_multiplier = q2.multiplier;
  d.block.input2_shift = q2.shift;
  d.input1 = input1;
  d.input2 = input2;
  d.output = output;
  return d;
}

DerivedMul derive_mul(int32_t row_size, const AffineQuant& input1, const AffineQuant& input2, const AffineQuant& output,
                      const std::string& what) {
  check_elementwise(row_size, input1, input2, output, what);
  const qlstm_requant qo =
      quantize_multiplier(input1.scale * input2.scale / output.scale, what + ": output multiplier");
  DerivedMul d;
  d.block = elementwise_block<qlstm_mul_s8_params>(row_size, input1, input2, output, qo);
  d.input1 = input1;
  d.input2 = input2;
  d.output = output;
  return d;
}

qlstm_add_s8_params DerivedAdd::kernel_params(int32_t rows) const {
  qlstm_add_s8_params p = block;
  p.shape.rows = rows;
  return p;
}

qlstm_mul_s8_params DerivedMul::kernel_params(int32_t rows) const {
  qlstm_mul_s8_params p = block;
  p.shape.rows = rows;
  return p;
}

DerivedTable derive_table(const FloatLayer& activation, int32_t row_size, const AffineQuant& input,
                          const AffineQuant& output) {
  if (activation.kind != FloatLayerKind::kActivation) {
    throw CompileError(layer_label(activation) + ": not an elementwise activation");
  }
  activation.validate();
  check_quant(input, layer_label(activation) + ": input");
  check_quant(output, layer_label(activation) + ": output");
  DerivedTable d;
  d.row_size = row_size;
  d.input = input;
  d.output = output;
  d.function = activation_fn_name(activation.fn);
  d.table.resize(QLSTM_TABLE_S8_ENTRIES);
  for (int32_t x = kInt8Min; x <= kInt8Max; ++x) {
    const double y = apply_activation(activation, input.dequantize(x));
    if (std::isnan(y)) {
      throw CompileError(layer_label(activation) + ": " + d.function + " is not a number at input " +
                         std::to_string(input.dequantize(x)));
    }
    d.table[static_cast<size_t>(x - kInt8Min)] = static_cast<int8_t>(clamp_code(output, y));
  }
  return d;
}

qlstm_table_s8_params DerivedTable::kernel_params(int32_t rows) const { return {rows, row_size, table.data()}; }

DerivedTable DerivedTable::from_kernel_params(const qlstm_table_s8_params& p, const AffineQuant& input,
                                              const AffineQuant& output) {
  DerivedTable d;
  d.row_size = p.row_size;
  d.input = input;
  d.output = output;
  d.table = copy_array(p.table, QLSTM_TABLE_S8_ENTRIES);
  return d;
}

DerivedEmbedding derive_embedding(const FloatLayer& embedding) {
  if (embedding.kind != FloatLayerKind::kEmbedding) throw CompileError(layer_label(embedding) + ": not an embedding");
  embedding.validate();
  const auto [lo, hi] = std::minmax_element(embedding.weight.begin(), embedding.weight.end());
  DerivedEmbedding d;
  d.table_rows = embedding.embedding_rows();
  d.row_size = embedding.output_size;
  d.output = affine_from_range(*lo, *hi);
  d.table.resize(embedding.weight.size());
  for (size_t k = 0; k < embedding.weight.size(); ++k) d.table[k] = d.output.quantize(embedding.weight[k]);
  return d;
}

AffineQuant token_id_quant() { return AffineQuant{1.0, 0}; }

qlstm_embedding_s8_params DerivedEmbedding::kernel_params(int32_t rows) const {
  return {rows, table_rows, row_size, table.data()};
}

DerivedEmbedding DerivedEmbedding::from_kernel_params(const qlstm_embedding_s8_params& p, const AffineQuant& output) {
  DerivedEmbedding d;
  d.table_rows = p.table_rows;
  d.row_size = p.row_size;
  d.output = output;
  d.table = copy_array(p.table, static_cast<size_t>(p.table_rows) * static_cast<size_t>(p.row_size));
  return d;
}

DerivedLayerNorm derive_layer_norm(const FloatLayer& l, const AffineQuant& input, const AffineQuant& output) {
  if (l.kind != FloatLayerKind::kLayerNorm) throw CompileError(layer_label(l) + ": not a LayerNorm");
  l.validate();
  check_quant(input, "LayerNorm: input");
  check_quant(output, "LayerNorm: output");
  const int32_t F = l.input_size;
  if (F > QLSTM_LAYER_NORM_S8_ROW_SIZE_MAX) {
    throw CompileError("LayerNorm: over " + std::to_string(F) + " features; the int8 LayerNorm takes 1 to " +
                       std::to_string(QLSTM_LAYER_NORM_S8_ROW_SIZE_MAX));
  }
  DerivedLayerNorm d;
  d.row_size = F;
  d.input = input;
  d.output = output;
  // epsilon / input_scale^2 x F^2: the variance's F^2 x steps^2 units.
  constexpr double kTermMax = 2147483647.0;
  const double eps_units = l.epsilon / (input.scale * input.scale) * static_cast<double>(F) * static_cast<double>(F);
  int32_t shift = 0;
  while (shift <= QLSTM_LAYER_NORM_S8_EPSILON_SHIFT_MAX && std::nearbyint(std::ldexp(eps_units, -shift)) > kTermMax) ++shift;
  if (!std::isfinite(eps_units) || shift > QLSTM_LAYER_NORM_S8_EPSILON_SHIFT_MAX) {
    std::ostringstream s;
    s << "LayerNorm: epsilon " << l.epsilon << " is " << eps_units / (static_cast<double>(F) * F)
      << " squared input steps (input scale " << input.scale << "), beyond the int8 LayerNorm's 2^"
      << 31 + QLSTM_LAYER_NORM_S8_EPSILON_SHIFT_MAX << " / F^2";
    throw CompileError(s.str());
  }
  d.epsilon_shift = shift;
  d.epsilon_term = static_cast<int32_t>(std::nearbyint(std::ldexp(eps_units, -shift)));
  // The largest output shift at which every gamma x 2^(S - 12) and beta x 2^S fits int32.
  constexpr int32_t kQ = QLSTM_LAYER_NORM_S8_NORMALIZED_FRACTION_BITS;
  double gmax = 0.0, bmax = 0.0;
  for (int32_t i = 0; i < F; ++i) {
    gmax = std::max(gmax, std::fabs(static_cast<double>(l.weight[static_cast<size_t>(i)])) / output.scale);
    bmax = std::max(bmax, std::fabs(static_cast<double>(l.bias[static_cast<size_t>(i)])) / output.scale);
  }
  int32_t S = QLSTM_LAYER_NORM_S8_OUTPUT_SHIFT_MAX;
  auto fits = [&](int32_t s) {
    return std::nearbyint(std::ldexp(gmax, s - kQ)) <= kTermMax && std::nearbyint(std::ldexp(bmax, s)) <= kTermMax;
  };
  while (S >= kQ && !fits(S)) --S;
  if (S < kQ) {
    std::ostringstream s;
    s << "LayerNorm: gamma up to " << gmax << " and beta up to " << bmax << " output steps (output scale " << output.scale
      << ") do not fit the int8 LayerNorm's int32 factors";
    throw CompileError(s.str());
  }
  d.output_shift = S;
  d.weights.resize(static_cast<size_t>(F));
  d.biases.resize(static_cast<size_t>(F));
  for (size_t i = 0; i < static_cast<size_t>(F); ++i) {
    d.weights[i] = static_cast<int32_t>(std::nearbyint(std::ldexp(static_cast<double>(l.weight[i]) / output.scale, S - kQ)));
    d.biases[i] = static_cast<int32_t>(std::nearbyint(std::ldexp(static_cast<double>(l.bias[i]) / output.scale, S)));
  }
  return d;
}

double DerivedLayerNorm::epsilon() const {
  const double F = static_cast<double>(row_size);
  return std::ldexp(static_cast<double>(epsilon_term), epsilon_shift) * input.scale * input.scale / (F * F);
}

qlstm_layer_norm_s8_params DerivedLayerNorm::kernel_params(int32_t rows) const {
  return {rows, row_size, epsilon_term, epsilon_shift, weights.data(), biases.data(), output_shift, output.zero_point};
}

DerivedLayerNorm DerivedLayerNorm::from_kernel_params(const qlstm_layer_norm_s8_params& p, const AffineQuant& input,
                                                      const AffineQuant& output) {
  DerivedLayerNorm d;
  d.row_size = p.row_size;
  d.input = input;
  d.output = output;
  d.epsilon_term = p.epsilon_term;
  d.epsilon_shift = p.epsilon_shift;
  d.output_shift = p.output_shift;
  d.weights = copy_array(p.weights, static_cast<size_t>(p.row_size));
  d.biases = copy_array(p.biases, static_cast<size_t>(p.row_size));
  return d;
}

DerivedAttentionPool derive_attention_pool(int32_t row_size, const AffineQuant& scores, const AffineQuant& sequence) {
  check_quant(scores, "attention pooling: scores");
  check_quant(sequence, "attention pooling: sequence");
  if (row_size < 1) throw CompileError("attention pooling: row_size must be >= 1");
  DerivedAttentionPool d;
  d.row_size = row_size;
  d.scores = scores;
  d.sequence = sequence;
  const SoftmaxScaling sc = softmax_scaling("attention pooling", scores, 1.0);
  d.input_multiplier = sc.multiplier;
  d.input_left_shift = sc.left_shift;
  d.diff_min = sc.diff_min;
  return d;
}

FloatLayer attention_score_layer(const FloatLayer& attention) {
  FloatLayer l;
  l.kind = FloatLayerKind::kLinear;
  l.node = attention.node;
  l.input_size = attention.input_size;
  l.output_size = 1;
  l.weight = attention.weight;
  l.bias = attention.bias;
  return l;
}

qlstm_attention_pool_s8_params DerivedAttentionPool::kernel_params(int32_t batch, int32_t time_steps, int32_t layout) const {
  return {batch, time_steps, layout, row_size, input_multiplier, input_left_shift, diff_min, sequence.zero_point};
}

DerivedAttentionPool DerivedAttentionPool::from_kernel_params(const qlstm_attention_pool_s8_params& p,
                                                              const AffineQuant& scores, const AffineQuant& sequence) {
  DerivedAttentionPool d;
  d.row_size = p.row_size;
  d.scores = scores;
  d.sequence = sequence;
  d.input_multiplier = p.input_multiplier;
  d.input_left_shift = p.input_left_shift;
  d.diff_min = p.diff_min;
  return d;
}

}  // namespace compiler
}  // namespace qlstm
