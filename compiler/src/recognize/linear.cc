// Linear layers on the feature axis: Gemm, MatMul with constant weights, and the Add of a
// constant after one (its bias).
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
                    : "an Add of two activations (a residual or skip connection): not supported");
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

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
