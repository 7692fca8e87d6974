#include "qlstm/compiler/float/float_layers.h"

#include <algorithm>
#include <cmath>

#include "qlstm/compiler/float/float_lstm.h"

namespace qlstm {
namespace compiler {
namespace {

// GELU's tanh approximation (torch's approximate='tanh'): sqrt(2 / pi) and the cubic coefficient.
constexpr double kGeluTanhScale = 0.7978845608028654;
constexpr double kGeluTanhCubic = 0.044715;
// HardSwish's gate (ONNX HardSwish, torch hardswish): clamp(x / 6 + 1/2, 0, 1).
constexpr double kHardSwishSlope = 1.0 / 6.0;
constexpr double kHardSwishOffset = 0.5;

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

std::string layer_label(const FloatLayer& l) {
  const char* kind = "?";
  switch (l.kind) {
    case FloatLayerKind::kLinear: kind = "Linear"; break;
    case FloatLayerKind::kActivation: kind = activation_fn_name(l.fn); break;
    case FloatLayerKind::kSoftmax: kind = "Softmax"; break;
    case FloatLayerKind::kLogSoftmax: kind = "LogSoftmax"; break;
    case FloatLayerKind::kSelectStep: kind = "step selection"; break;
    case FloatLayerKind::kPoolTime:
      kind = l.pools.size() > 1                     ? "reductions over time, concatenated"
             : l.pool_fns()[0] == PoolFn::kMean      ? "mean over time"
             : l.pool_fns()[0] == PoolFn::kAttention ? "attention pooling over time"
                                                      : "max over time";
      break;
    case FloatLayerKind::kFlattenTime: kind = "flatten of every step"; break;
    case FloatLayerKind::kEmbedding: kind = "Embedding"; break;
    case FloatLayerKind::kLayerNorm: kind = "LayerNorm"; break;
  }
  return "layer '" + l.node + "' (" + kind + ")";
}

}  // namespace

std::vector<double> pool_over_time(const FloatLayer& layer, const std::vector<double>& x, int32_t T) {
  const size_t W = static_cast<size_t>(layer.input_size);
  if (layer.kind != FloatLayerKind::kPoolTime || T < 1 || x.size() != static_cast<size_t>(T) * W) {
    throw CompileError(layer_label(layer) + ": pools " + std::to_string(x.size()) + " values as " + std::to_string(T) +
                       " steps of " + std::to_string(W));
  }
  std::vector<double> out;
  for (const PoolFn fn : layer.pool_fns()) {
    if (fn == PoolFn::kAttention) {
      // Each step's score, their softmax over the steps, the steps' sum weighted by it.
      std::vector<double> score(static_cast<size_t>(T));
      for (size_t t = 0; t < static_cast<size_t>(T); ++t) {
        double s = layer.bias.empty() ? 0.0 : layer.bias[0];
        for (size_t i = 0; i < W; ++i) s += static_cast<double>(layer.weight[i]) * x[t * W + i];
        score[t] = s;
      }
      const double top = *std::max_element(score.begin(), score.end());
      double sum = 0.0;
      for (double& s : score) sum += s = std::exp(s - top);
      std::vector<double> y(W, 0.0);
      for (size_t t = 0; t < static_cast<size_t>(T); ++t) {
        for (size_t i = 0; i < W; ++i) y[i] += score[t] / sum * x[t * W + i];
      }
      out.insert(out.end(), y.begin(), y.end());
      continue;
    }
    if (fn == PoolFn::kFirstStep || fn == PoolFn::kLastStep) {
      const size_t t = fn == PoolFn::kFirstStep ? 0 : static_cast<size_t>(T) - 1;
      out.insert(out.end(), x.begin() + static_cast<ptrdiff_t>(t * W), x.begin() + static_cast<ptrdiff_t>((t + 1) * W));
      continue;
    }
    const bool mean = fn == PoolFn::kMean;
    std::vector<double> y(x.begin(), x.begin() + static_cast<ptrdiff_t>(W));
    for (size_t t = 1; t < static_cast<size_t>(T); ++t) {
      for (size_t i = 0; i < W; ++i) y[i] = mean ? y[i] + x[t * W + i] : std::max(y[i], x[t * W + i]);
    }
    if (mean) {
      for (double& v : y) v /= T;
    }
    out.insert(out.end(), y.begin(), y.end());
  }
  return out;
}

bool reads_whole_sequence(FloatLayerKind kind) {
  return kind == FloatLayerKind::kSelectStep || kind == FloatLayerKind::kPoolTime ||
         kind == FloatLayerKind::kFlattenTime;
}

const char* activation_fn_name(ActivationFn f) {
  switch (f) {
    case ActivationFn::kRelu: return "Relu";
    case ActivationFn::kClip: return "Clip";
    case ActivationFn::kLeakyRelu: return "LeakyRelu";
    case ActivationFn::kSigmoid: return "Sigmoid";
    case ActivationFn::kTanh: return "Tanh";
    case ActivationFn::kHardSigmoid: return "HardSigmoid";
    case ActivationFn::kGelu: return "Gelu";
    case ActivationFn::kSilu: return "SiLU";
    case ActivationFn::kHardSwish: return "HardSwish";
  }
  return "?";
}

void FloatLayer::validate() const {
  const std::string where = layer_label(*this);
  auto bad = [&](const std::string& why) { throw CompileError(where + ": " + why); };
  if (input_size < 1 || output_size < 1) {
    bad("input_size and output_size must be >= 1 (got " + std::to_string(input_size) + " and " +
        std::to_string(output_size) + ")");
  }
  if (groups < 1 || (groups > 1 && reads_whole_sequence(kind))) bad("groups must be >= 1 (1 for a layer reading a sequence)");
  if (kind == FloatLayerKind::kPoolTime && static_cast<int64_t>(pool_fns().size()) * input_size != output_size) {
    bad("output_size " + std::to_string(output_size) + " is not its " + std::to_string(pool_fns().size()) +
        " reductions x input_size " + std::to_string(input_size));
  }
  if (kind != FloatLayerKind::kLinear && kind != FloatLayerKind::kFlattenTime && kind != FloatLayerKind::kSelectStep &&
      kind != FloatLayerKind::kEmbedding && kind != FloatLayerKind::kPoolTime && input_size != output_size) {
    bad("input_size " + std::to_string(input_size) + " differs from output_size " + std::to_string(output_size));
  }
  auto finite = [&](const std::vector<float>& v, const char* what) {
    for (size_t k = 0; k < v.size(); ++k) {
      if (!std::isfinite(v[k])) bad(std::string(what) + "[" + std::to_string(k) + "] is not finite");
    }
  };
  switch (kind) {
    case FloatLayerKind::kLinear: {
      const size_t want = static_cast<size_t>(output_size) * static_cast<size_t>(input_size);
      if (weight.size() != want) {
        bad("weight has " + std::to_string(weight.size()) + " values, expected output_size x input_size = " +
            std::to_string(want));
      }
      if (!bias.empty() && bias.size() != static_cast<size_t>(output_size)) {
        bad("bias has " + std::to_string(bias.size()) + " values, expected output_size = " +
            std::to_string(output_size));
      }
      finite(weight, "weight");
      finite(bias, "bias");
      break;
    }
    case FloatLayerKind::kActivation:
      if (fn == ActivationFn::kClip) {
        // -inf / +inf stand for an absent bound; NaN is never a bound.
        if (std::isnan(clip_min) || std::isnan(clip_max) || clip_min > clip_max) {
          bad("clip bounds [" + std::to_string(clip_min) + ", " + std::to_string(clip_max) + "] are not an interval");
        }
      }
      if ((fn == ActivationFn::kLeakyRelu || fn == ActivationFn::kHardSigmoid) && !std::isfinite(alpha)) {
        bad("alpha is not finite");
      }
      if (fn == ActivationFn::kHardSigmoid && !std::isfinite(beta)) bad("beta is not finite");
      break;
    case FloatLayerKind::kSoftmax:
      if (!std::isfinite(softmax_beta) || !(softmax_beta > 0)) bad("softmax beta must be finite and positive");
      break;
    case FloatLayerKind::kLogSoftmax:
      break;
    case FloatLayerKind::kPoolTime:
      // A step is a part of a concatenation, never a pooling alone (that is a kSelectStep).
      if (pools.empty() && (pool == PoolFn::kFirstStep || pool == PoolFn::kLastStep)) bad("a step alone is a step selection");
      if (std::find(pools.begin(), pools.end(), PoolFn::kAttention) != pools.end()) {
        bad("attention pooling in a concatenation is not supported");
      }
      if (pool_fns()[0] == PoolFn::kAttention) {
        if (weight.size() != static_cast<size_t>(input_size) || bias.size() > 1) {
          bad("the attention's score needs input_size = " + std::to_string(input_size) + " weights and one bias or none");
        }
        finite(weight, "weight");
        finite(bias, "bias");
      }
      break;
    case FloatLayerKind::kSelectStep:
      if (step_count < 1 || static_cast<int64_t>(step_count) * input_size != output_size) {
        bad("output_size must be step_count x input_size");
      }
      if (step_count > 1 && step >= 0 && static_cast<int64_t>(step) + step_count > (int64_t{1} << 30)) bad("step range too long");
      if (step_count > 1 && step < 0 && -static_cast<int64_t>(step) < step_count) bad("the steps run past the last");
      break;
    case FloatLayerKind::kEmbedding:
      if (input_size != 1) bad("reads one token id per position (input_size 1), got " + std::to_string(input_size));
      if (weight.empty() || weight.size() % static_cast<size_t>(output_size) != 0 ||
          weight.size() / static_cast<size_t>(output_size) > static_cast<size_t>(kMaxEmbeddingRows)) {
        bad("the table has " + std::to_string(weight.size()) + " values: not 1 to " + std::to_string(kMaxEmbeddingRows) +
            " rows of " + std::to_string(output_size));
      }
      finite(weight, "table");
      break;
    case FloatLayerKind::kLayerNorm:
      if (weight.size() != static_cast<size_t>(input_size) || bias.size() != static_cast<size_t>(input_size)) {
        bad("gamma and beta need input_size = " + std::to_string(input_size) + " values each, got " +
            std::to_string(weight.size()) + " and " + std::to_string(bias.size()));
      }
      if (!std::isfinite(epsilon) || epsilon < 0) bad("epsilon " + std::to_string(epsilon) + " is not finite and >= 0");
      finite(weight, "gamma");
      finite(bias, "beta");
      break;
    case FloatLayerKind::kFlattenTime:
      if (flatten_steps < 1 || static_cast<int64_t>(flatten_steps) * input_size != output_size) {
        bad("output_size must be flatten_steps x input_size");
      }
      break;
  }
}

double apply_activation(const FloatLayer& layer, double x) {
  switch (layer.fn) {
    case ActivationFn::kRelu: return std::max(x, 0.0);
    case ActivationFn::kClip: return std::min(std::max(x, layer.clip_min), layer.clip_max);
    case ActivationFn::kLeakyRelu: return x < 0 ? layer.alpha * x : x;
    case ActivationFn::kSigmoid: return sigmoid(x);
    case ActivationFn::kTanh: return std::tanh(x);
    case ActivationFn::kHardSigmoid: return std::clamp(layer.alpha * x + layer.beta, 0.0, 1.0);
    case ActivationFn::kGelu:
      if (layer.gelu_tanh) return 0.5 * x * (1.0 + std::tanh(kGeluTanhScale * (x + kGeluTanhCubic * x * x * x)));
      return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case ActivationFn::kSilu: return x * sigmoid(x);
    case ActivationFn::kHardSwish: return x * std::clamp(kHardSwishSlope * x + kHardSwishOffset, 0.0, 1.0);
  }
  return x;
}

std::vector<double> run_float_layer(const FloatLayer& layer, const std::vector<double>& x, size_t positions) {
  const size_t I = static_cast<size_t>(layer.input_size), O = static_cast<size_t>(layer.output_size);
  if (x.size() != positions * I) {
    throw CompileError(layer_label(layer) + ": " + std::to_string(x.size()) + " input values, expected " +
                       std::to_string(positions) + " positions x " + std::to_string(I));
  }
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
        // Shifted by the maximum so exp never overflows; the result is the same.
        const double top = *std::max_element(in, in + I);
        double sum = 0.0;
        for (size_t i = 0; i < I; ++i) sum += out[i] = std::exp(layer.softmax_beta * (in[i] - top));
        for (size_t i = 0; i < I; ++i) out[i] /= sum;
        break;
      }
      case FloatLayerKind::kLogSoftmax: {
        const double top = *std::max_element(in, in + I);
        double sum = 0.0;
        for (size_t i = 0; i < I; ++i) sum += std::exp(in[i] - top);
        const double log_sum = std::log(sum);
        for (size_t i = 0; i < I; ++i) out[i] = in[i] - top - log_sum;
        break;
      }
      case FloatLayerKind::kEmbedding: {
        // Token ids are integers in [0, rows): anything else is the caller's error, named.
        const double id = in[0];
        const int32_t rows = layer.embedding_rows();
        if (!(id >= 0 && id < rows) || id != std::floor(id)) {
          throw CompileError(layer_label(layer) + ": token id " + std::to_string(id) + " at position " +
                             std::to_string(p) + " is not an integer in [0, " + std::to_string(rows) + ")");
        }
        std::copy_n(layer.weight.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(id) * O), O, out);
        break;
      }
      case FloatLayerKind::kLayerNorm: {
        double mean = 0.0;
        for (size_t i = 0; i < I; ++i) mean += in[i];
        mean /= static_cast<double>(I);
        double variance = 0.0;
        for (size_t i = 0; i < I; ++i) variance += (in[i] - mean) * (in[i] - mean);
        variance /= static_cast<double>(I);
        const double inv = 1.0 / std::sqrt(variance + layer.epsilon);
        // With epsilon 0 a constant row has no variance: its values are the mean, normalized to 0.
        for (size_t i = 0; i < I; ++i) {
          const double centred = in[i] - mean;
          out[i] = (centred == 0.0 ? 0.0 : centred * inv) * layer.weight[i] + layer.bias[i];
        }
        break;
      }
      case FloatLayerKind::kSelectStep:
      case FloatLayerKind::kPoolTime:
      case FloatLayerKind::kFlattenTime:
        throw CompileError(layer_label(layer) + ": reads a whole sequence; it is not a per-position layer");
    }
  }
  return y;
}

}  // namespace compiler
}  // namespace qlstm
