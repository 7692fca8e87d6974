// Linear layers on the feature axis: Gemm, MatMul with constant weights, the Add of a constant
// after one (its bias), and an inference BatchNormalization folded into one.
#include <cmath>

#include "recognize/path_walker.h"

namespace qlstm {
namespace compiler {
namespace import {

bool PathWalker::linear_weights(const onnx::NodeProto& n, const std::string& w_name, bool transposed, double alpha,
                                FloatLayer* l, const PathState& s) {
  std::vector<double> w;
  std::vector<int64_t> dims;
  if (!constant_values(g_, w_name, &w, &dims)) {
    problem(&n, what_it_is(g_, n, c_.cell));
    return false;
  }
  // [K][N] (or [N][K] transposed): K inputs, N outputs.
  const int64_t K = dims.size() == 2 ? dims[transposed ? 1 : 0] : -1;
  const int64_t N = dims.size() == 2 ? dims[transposed ? 0 : 1] : -1;
  if (K != s.view.width || N < 1) {
    problem(&n, "a Linear whose weight has shape " + join(dims) + ", expected " +
                    (transposed ? "[outputs, " + std::to_string(s.view.width) + "]" : "[" + std::to_string(s.view.width) + ", outputs]"));
    return false;
  }
  l->kind = FloatLayerKind::kLinear;
  l->node = n.name().empty() ? n.output(0) : n.name();
  l->output_size = static_cast<int32_t>(N);
  l->weight.resize(static_cast<size_t>(N * K));
  for (int64_t o = 0; o < N; ++o) {
    for (int64_t i = 0; i < K; ++i) {
      const double v = transposed ? w[static_cast<size_t>(o * K + i)] : w[static_cast<size_t>(i * N + o)];
      l->weight[static_cast<size_t>(o * K + i)] = static_cast<float>(alpha * v);
    }
  }
  return true;
}

// A constant bias of `outputs` values ([N], [1, N], ... or a scalar broadcast).
bool PathWalker::bias_values(const onnx::NodeProto& n, const std::string& name, int32_t outputs, double beta,
                             std::vector<float>* bias) {
  std::vector<double> v;
  std::vector<int64_t> dims;
  bool ok = constant_values(g_, name, &v, &dims);
  for (size_t k = 0; ok && k + 1 < dims.size(); ++k) ok = dims[k] == 1;
  if (!ok || (v.size() != 1 && v.size() != static_cast<size_t>(outputs))) {
    problem(&n, "a bias that is not a constant of " + std::to_string(outputs) + " values (one per output): not supported");
    return false;
  }
  bias->resize(static_cast<size_t>(outputs), 0.0f);
  for (int32_t o = 0; o < outputs; ++o) {
    (*bias)[static_cast<size_t>(o)] += static_cast<float>(beta * v[v.size() == 1 ? 0 : static_cast<size_t>(o)]);
  }
  return true;
}

bool PathWalker::gemm(const onnx::NodeProto& n, PathState* s) {
  if (n.input_size() < 2 || int_attribute(n, "transA", 0) != 0) {
    problem(&n, what_it_is(g_, n, c_.cell));
    return false;
  }
  if (s->view.labels.size() != 2) {
    problem(&n, "a Gemm on a rank-" + std::to_string(s->view.labels.size()) + " tensor (Gemm takes a matrix)");
    return false;
  }
  if (!features_last(n, *s, "a Gemm")) return false;
  if (!resolve_flattened_steps(n, n.input(1), int_attribute(n, "transB", 0) != 0, s)) return false;
  FloatLayer l;
  if (!linear_weights(n, n.input(1), int_attribute(n, "transB", 0) != 0, float_attribute(n, "alpha", 1.0), &l, *s)) {
    return false;
  }
  if (n.input_size() > 2 && !n.input(2).empty() &&
      !bias_values(n, n.input(2), l.output_size, float_attribute(n, "beta", 1.0), &l.bias)) {
    return false;
  }
  add_layer(s, std::move(l), true);
  return true;
}

bool PathWalker::matmul(const onnx::NodeProto& n, PathState* s) {
  if (n.input_size() != 2 || !features_last(n, *s, "a MatMul")) return false;
  if (!resolve_flattened_steps(n, n.input(1), false, s)) return false;
  FloatLayer l;
  if (!linear_weights(n, n.input(1), false, 1.0, &l, *s)) return false;
  add_layer(s, std::move(l), true);
  return true;
}

// An Add of a constant to a Linear's output: its bias.
bool PathWalker::add_bias(const onnx::NodeProto& n, PathState* s) {
  const std::string other = other_input(n, s->value);
  if (other.empty() || !is_const(g_, other)) {
    problem(&n, other.empty() || n.input(0) == n.input(1)
                    ? what_it_is(g_, n, c_.cell)
                    : "an Add of two activations: only a residual connection is supported, a recurrent layer's "
                      "output plus that layer's own input (y2 + y1 with y2 = lstm2(y1)), right after the layer");
    return false;
  }
  if (!s->last_is_linear || s->layers.empty()) {
    problem(&n, "an Add of a constant that does not follow a Linear (only a Linear's bias is supported)");
    return false;
  }
  FloatLayer& l = s->layers.back();
  std::vector<float> extra;
  if (!bias_values(n, other, l.output_size, 1.0, &extra)) return false;
  if (l.bias.empty()) l.bias.assign(extra.size(), 0.0f);
  for (size_t o = 0; o < extra.size(); ++o) l.bias[o] += extra[o];
  return true;
}

// A Mul of the features by a constant, one value per feature or one for all (tf2onnx writes Keras'
// inference BatchNormalization as this Mul and an Add): folded into the Linear before it, or a
// diagonal Linear that the Linear after it takes in (as a BatchNormalization's); an Add after it
// is its bias.
bool PathWalker::scale_features(const onnx::NodeProto& n, PathState* s) {
  const std::string other = other_input(n, s->value);
  if (other.empty() || !is_const(g_, other)) {
    problem(&n, what_it_is(g_, n, c_.cell));
    return false;
  }
  if (!features_last(n, *s, "a Mul of the features by a constant")) return false;
  const size_t F = static_cast<size_t>(s->view.width);
  std::vector<double> v;
  std::vector<int64_t> dims;
  bool ok = constant_values(g_, other, &v, &dims) && dims.size() <= s->view.labels.size();
  for (size_t k = 0; ok && k + 1 < dims.size(); ++k) ok = dims[k] == 1;
  if (ok && v.size() == 1) v.assign(F, v.front());
  if (!ok || v.size() != F) {
    problem(&n, "a Mul by a constant that is not one value per feature (" + std::to_string(F) + ") or one for all");
    return false;
  }
  for (double x : v) {
    if (!std::isfinite(x)) {
      problem(&n, "a Mul by a constant that is not finite");
      return false;
    }
  }
  take_feature_affine(n, s, v, std::vector<double>(F, 0.0));
  return true;
}

// y = scale x + shift per feature: into the Linear before it (each output row scaled, its bias
// scaled and shifted), or a diagonal Linear that the Linear after it takes in (add_layer).
void PathWalker::take_feature_affine(const onnx::NodeProto& n, PathState* s, const std::vector<double>& scale,
                                     const std::vector<double>& shift) {
  const size_t F = scale.size();
  if (s->last_is_linear && !s->layers.empty() && s->layers.back().kind == FloatLayerKind::kLinear) {
    FloatLayer& lin = s->layers.back();
    const size_t I = static_cast<size_t>(lin.input_size);
    if (lin.bias.empty()) lin.bias.assign(F, 0.0f);
    for (size_t o = 0; o < F; ++o) {
      for (size_t i = 0; i < I; ++i) lin.weight[o * I + i] = static_cast<float>(lin.weight[o * I + i] * scale[o]);
      lin.bias[o] = static_cast<float>(lin.bias[o] * scale[o] + shift[o]);
    }
    return;
  }
  FloatLayer d;
  d.kind = FloatLayerKind::kLinear;
  d.node = n.name().empty() ? n.output(0) : n.name();
  d.output_size = static_cast<int32_t>(F);
  d.weight.assign(F * F, 0.0f);
  d.bias.resize(F);
  for (size_t i = 0; i < F; ++i) {
    d.weight[i * F + i] = static_cast<float>(scale[i]);
    d.bias[i] = static_cast<float>(shift[i]);
  }
  add_layer(s, std::move(d), true);
  s->last_is_batch_norm = true;
}

// An inference BatchNormalization over the features (BatchNorm1d on [B, F] or [B, F, T]): the
// per-feature affine y = scale (x - mean) / sqrt(var + eps) + bias, folded into the Linear before
// it or, failing that, the Linear after it; alone, a diagonal Linear (exact).
bool PathWalker::batch_norm(const onnx::NodeProto& n, PathState* s) {
  const Labels& l = s->view.labels;
  if (n.input_size() != 5 || int_attribute(n, "training_mode", 0) != 0 || n.output_size() != 1) {
    problem(&n, "a BatchNormalization in training mode (with its running statistics as outputs): export the "
                "model in eval mode (model.eval())");
    return false;
  }
  if (l.size() < 2 || l[1] != 'F' || data_axes(c_, l).find('D') != std::string::npos) {
    problem(&n, std::string("a BatchNormalization over the ") + (l.size() < 2 ? "size-1" : axis_name(l[1])) +
                    " axis (its input's axis 1), not the features: normalize the features (BatchNorm1d on [B, F] "
                    "or on [B, F, T])");
    return false;
  }
  const size_t F = static_cast<size_t>(s->view.width);
  std::vector<double> v[4];
  const char* names[4] = {"scale", "B", "mean", "var"};
  for (int k = 0; k < 4; ++k) {
    std::vector<int64_t> dims;
    if (!constant_values(g_, n.input(k + 1), &v[k], &dims) || v[k].size() != F) {
      problem(&n, std::string("a BatchNormalization whose ") + names[k] + " is not a constant of " +
                      std::to_string(F) + " values (one per feature)");
      return false;
    }
  }
  const double eps = float_attribute(n, "epsilon", 1e-5);
  std::vector<double> scale(F), shift(F);
  for (size_t i = 0; i < F; ++i) {
    if (!(v[3][i] + eps > 0)) {
      problem(&n, "a BatchNormalization whose var + epsilon is not positive at feature " + std::to_string(i));
      return false;
    }
    scale[i] = v[0][i] / std::sqrt(v[3][i] + eps);
    shift[i] = v[1][i] - v[2][i] * scale[i];
  }
  take_feature_affine(n, s, scale, shift);
  return true;
}

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
