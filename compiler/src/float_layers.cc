// INTERIM (branch i14-cc): the minimum float evaluation of the layers around the LSTM that the
// compiler back end needs before helper "onnx"'s float_layers.cc lands; on merge, take theirs.
#include "qlstm/compiler/float_layers.h"

#include <algorithm>
#include <cmath>

#include "qlstm/compiler/float_lstm.h"

namespace qlstm {
namespace compiler {

const char* activation_fn_name(ActivationFn f) {
  switch (f) {
    case ActivationFn::kRelu: return "relu";
    case ActivationFn::kClip: return "clip";
    case ActivationFn::kLeakyRelu: return "leaky_relu";
    case ActivationFn::kSigmoid: return "sigmoid";
    case ActivationFn::kTanh: return "tanh";
    case ActivationFn::kHardSigmoid: return "hard_sigmoid";
    case ActivationFn::kGelu: return "gelu";
    case ActivationFn::kSilu: return "silu";
    case ActivationFn::kHardSwish: return "hard_swish";
  }
  return "?";
}

void FloatLayer::validate() const {
  const std::string where = "node '" + node + "'";
  if (input_size < 1 || output_size < 1) throw CompileError(where + ": sizes must be positive");
  if (kind != FloatLayerKind::kLinear && input_size != output_size) {
    throw CompileError(where + ": input and output sizes differ");
  }
  if (kind == FloatLayerKind::kLinear) {
    if (weight.size() != static_cast<size_t>(input_size) * static_cast<size_t>(output_size)) {
      throw CompileError(where + ": weight needs output_size x input_size values");
    }
    if (!bias.empty() && bias.size() != static_cast<size_t>(output_size)) {
      throw CompileError(where + ": bias needs output_size values");
    }
    for (float v : weight) if (!std::isfinite(v)) throw CompileError(where + ": non-finite weight");
    for (float v : bias) if (!std::isfinite(v)) throw CompileError(where + ": non-finite bias");
  }
  if (kind == FloatLayerKind::kActivation && fn == ActivationFn::kClip && !(clip_min <= clip_max)) {
    throw CompileError(where + ": clip min exceeds max");
  }
  if (kind == FloatLayerKind::kSoftmax && (!(softmax_beta > 0) || !std::isfinite(softmax_beta))) {
    throw CompileError(where + ": softmax beta must be positive");
  }
}

double apply_activation(const FloatLayer& layer, double x) {
  switch (layer.fn) {
    case ActivationFn::kRelu: return std::max(x, 0.0);
    case ActivationFn::kClip: return std::clamp(x, layer.clip_min, layer.clip_max);
    case ActivationFn::kLeakyRelu: return x >= 0 ? x : layer.alpha * x;
    case ActivationFn::kSigmoid: return 1.0 / (1.0 + std::exp(-x));
    case ActivationFn::kTanh: return std::tanh(x);
    case ActivationFn::kHardSigmoid: return std::clamp(layer.alpha * x + layer.beta, 0.0, 1.0);
    case ActivationFn::kGelu: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case ActivationFn::kSilu: return x / (1.0 + std::exp(-x));
    case ActivationFn::kHardSwish: return x * std::clamp(x + 3.0, 0.0, 6.0) / 6.0;
  }
  return x;
}

std::vector<double> run_float_layer(const FloatLayer& layer, const std::vector<double>& x, size_t positions) {
  const size_t I = static_cast<size_t>(layer.input_size), O = static_cast<size_t>(layer.output_size);
  std::vector<double> y(positions * O);
  for (size_t p = 0; p < positions; ++p) {
    const double* in = x.data() + p * I;
    double* out = y.data() + p * O;
    switch (layer.kind) {
      case FloatLayerKind::kLinear:
        for (size_t o = 0; o < O; ++o) {
          double acc = layer.bias.empty() ? 0.0 : layer.bias[o];
          for (size_t i = 0; i < I; ++i) acc += static_cast<double>(layer.weight[o * I + i]) * in[i];
          out[o] = acc;
        }
        break;
      case FloatLayerKind::kActivation:
        for (size_t i = 0; i < I; ++i) out[i] = apply_activation(layer, in[i]);
        break;
      case FloatLayerKind::kSoftmax: {
        const double top = *std::max_element(in, in + I);
        double sum = 0;
        for (size_t i = 0; i < I; ++i) sum += out[i] = std::exp(layer.softmax_beta * (in[i] - top));
        for (size_t i = 0; i < I; ++i) out[i] /= sum;
        break;
      }
      case FloatLayerKind::kSelectStep:
        throw CompileError("node '" + layer.node + "': a step selection is not a per-position layer");
    }
  }
  return y;
}

}  // namespace compiler
}  // namespace qlstm
