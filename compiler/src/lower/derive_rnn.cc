// The vanilla RNN's parameters (derive_rnn.h, docs/arithmetic.md §23).
#include "qlstm/compiler/lower/derive_rnn.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "qlstm/compiler/float/float_rnn.h"

namespace qlstm {
namespace compiler {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr double kInt16Top = 32767.0;
constexpr double kInt8Max = 127.0;

// A ReLU RNN's int16 format: the power of two whose int16 range holds kRnnReluHeadroom times the
// largest value the int8 output represents.
int32_t relu_hidden_power(const AffineQuant& output) {
  const double top = (kInt8Max - output.zero_point) * output.scale;
  return static_cast<int32_t>(std::ceil(std::log2(kRnnReluHeadroom * top / kInt16Top)));
}

}  // namespace

const char* rnn_gate_name(int32_t gate) { return gate == 0 ? "hidden" : "?"; }

qlstm_rnn_s8_params DerivedRnn::kernel_params(int32_t batch, int32_t time_steps, Layout layout) const {
  qlstm_rnn_s8_params p{};
  common_kernel_params(*this, batch, time_steps, layout, &p);
  p.activation = activation;
  p.hidden_to_output = hidden_to_output;
  return p;
}

DerivedRnn DerivedRnn::from_kernel_params(const qlstm_rnn_s8_params& p, const AffineQuant& input,
                                          const AffineQuant& output) {
  DerivedRnn d = common_from_kernel_params<DerivedRnn>(p, input, output);
  d.activation = p.activation;
  d.hidden_to_output = p.hidden_to_output;
  if (p.activation == QLSTM_RNN_RELU) {
    // hidden_to_output = 2^hidden_power / s_y.
    const double real = std::ldexp(static_cast<double>(p.hidden_to_output.multiplier), p.hidden_to_output.shift - 31);
    const double power = std::log2(real * output.scale);
    if (!std::isfinite(power) || std::fabs(power - std::round(power)) > 1e-6) {
      throw CompileError("rnn.hidden_to_output: a ReLU RNN's hidden format must be a power of two (2^" +
                         std::to_string(power) + ")");
    }
    d.hidden_power = static_cast<int32_t>(std::round(power));
  }
  return d;
}

DerivedRnn derive_rnn_params(const FloatLstm& rnn, const AffineQuant& input, const AffineQuant& output,
                             const WeightDecision& weights, const OperandStats& observed) {
  if (rnn.cell != CellKind::kRnn) {
    throw CompileError(std::string("a ") + cell_kind_name(rnn.cell) + " layer: the RNN derivation cannot derive it");
  }
  rnn.validate();
  check_derive_inputs(input, output, weights, observed, rnn.input_size, rnn.hidden_size);
  if (weights.cell_clip != 0) {
    throw CompileError("cell_clip " + std::to_string(weights.cell_clip) + ": an RNN has no cell to clip");
  }
  if (weights.weight_rounding == WeightRounding::kAdaptive) {
    throw CompileError("weight_rounding adaptive: not supported for an RNN yet; use nearest");
  }
  const int32_t I = rnn.input_size, H = rnn.hidden_size;
  DerivedRnn d = derived_layer<DerivedRnn>(I, H, input, output);
  d.weights = weights;
  d.activation = rnn.relu ? QLSTM_RNN_RELU : QLSTM_RNN_TANH;
  d.hidden_power = rnn.relu ? relu_hidden_power(output) : kRnnTanhHiddenPower;
  // tanh: the pre-activation in Q3.12; ReLU: in the hidden state's own format (h = max(pre, 0)).
  const double pre_scale = rnn.relu ? std::ldexp(1.0, d.hidden_power) : kQ3_12Scale;
  derive_gate(rnn.gates[0], I, H, input, output, weights, observed, 0, RecurrentBias::kFolded, nullptr,
              std::string("gate '") + rnn_gate_name(0) + "'", &d.gates[0], pre_scale);
  d.hidden_to_output = quantize_multiplier(std::ldexp(1.0, d.hidden_power) / output.scale, "hidden-to-output multiplier");
  // The kernel shifts the int16 hidden left in 32 bits before the multiply (§2): it must not wrap.
  const int32_t left = std::max(d.hidden_to_output.shift, 0);
  if ((int64_t{1} << (15 + left)) > kInt32Max) {
    throw CompileError("output: scale " + std::to_string(output.scale) +
                       " is too fine for the RNN's int16 hidden state (hidden-to-output multiplier needs a left shift of " +
                       std::to_string(left) + ")");
  }
  d.time_direction = rnn.reverse ? QLSTM_TIME_REVERSE : QLSTM_TIME_FORWARD;
  return d;
}

}  // namespace compiler
}  // namespace qlstm
