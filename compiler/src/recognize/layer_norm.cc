// A LayerNorm over the features (recognize/layer_norm.h), and the walks' use of it.
#include "recognize/layer_norm.h"

#include <cmath>

#include "recognize/path_walker.h"

namespace qlstm {
namespace compiler {
namespace import {

namespace {

constexpr double kDefaultEpsilon = 1e-5;  // ONNX's and torch's

// A reduction or normalization axis list of the last axis alone (rank: the value's axes).
bool last_axis_only(const std::vector<int64_t>& axes, size_t rank) {
  return axes.size() == 1 && (axes[0] == -1 || axes[0] == static_cast<int64_t>(rank) - 1);
}

// gamma or beta: a finite constant of F values (any leading size-1 axes) or one value for all.
bool feature_constant(const Graph& g, const onnx::NodeProto& n, const std::string& name, const char* what, int32_t F,
                      std::vector<float>* out, LayerNormMatch* m) {
  std::vector<double> v;
  std::vector<int64_t> dims;
  bool ok = constant_values(g, name, &v, &dims);
  for (size_t k = 0; ok && k + 1 < dims.size(); ++k) ok = dims[k] == 1;
  if (ok && v.size() == 1) v.assign(static_cast<size_t>(F), v.front());
  for (size_t k = 0; ok && k < v.size(); ++k) ok = std::isfinite(v[k]);
  if (!ok || v.size() != static_cast<size_t>(F)) {
    m->refused = &n;
    m->why = std::string("a LayerNorm whose ") + what + " is not a finite constant of " + std::to_string(F) +
             " values (one per feature)";
    return false;
  }
  out->assign(v.begin(), v.end());
  return true;
}

FloatLayer layer_norm(const onnx::NodeProto& first, double epsilon, int32_t F) {
  FloatLayer l;
  l.kind = FloatLayerKind::kLayerNorm;
  l.node = first.name().empty() ? first.output(0) : first.name();
  l.input_size = l.output_size = F;
  l.epsilon = epsilon;
  l.weight.assign(static_cast<size_t>(F), 1.0f);
  l.bias.assign(static_cast<size_t>(F), 0.0f);
  return l;
}

// An output of n other than Y that something reads.
bool reads_extra_output(const Graph& g, const onnx::NodeProto& n) {
  for (int k = 1; k < n.output_size(); ++k) {
    if (!n.output(k).empty() && (g.is_graph_output(n.output(k)) || !g.data_consumers(n.output(k)).empty())) return true;
  }
  return false;
}

}  // namespace

bool match_layer_normalization(const Graph& g, const onnx::NodeProto& n, const std::string& x, size_t rank,
                               int32_t F, LayerNormMatch* m) {
  *m = LayerNormMatch{};
  if (n.op_type() != "LayerNormalization" || n.input_size() < 1 || n.input(0) != x || n.output_size() < 1) return false;
  const int64_t axis = int_attribute(n, "axis", -1);
  if (!last_axis_only({axis}, rank)) {
    m->refused = &n;
    m->why = "a LayerNormalization over more than the last (feature) axis (axis " + std::to_string(axis) +
             "): normalize the features alone (nn.LayerNorm(F))";
    return true;
  }
  if (reads_extra_output(g, n)) {
    m->refused = &n;
    m->why = "a LayerNormalization whose Mean or InvStdDev output is read: only its Y is supported";
    return true;
  }
  m->layer = layer_norm(n, float_attribute(n, "epsilon", kDefaultEpsilon), F);
  if (n.input_size() < 2 || !feature_constant(g, n, n.input(1), "Scale (gamma)", F, &m->layer.weight, m)) {
    if (m->refused == nullptr) m->refused = &n, m->why = "a LayerNormalization without its Scale input";
    return true;
  }
  if (n.input_size() >= 3 && !n.input(2).empty() && !feature_constant(g, n, n.input(2), "B (beta)", F, &m->layer.bias, m)) {
    return true;
  }
  m->out = n.output(0);
  m->nodes = {&n};
  return true;
}

bool match_decomposed_layer_norm(const Graph& g, const std::string& x, size_t rank, int32_t F, LayerNormMatch* m) {
  *m = LayerNormMatch{};
  const auto cs = g.data_consumers(x);
  if (cs.size() != 2 || g.is_graph_output(x)) return false;
  auto mean_of = [&](const onnx::NodeProto* r) {
    std::vector<int64_t> axes;
    return r != nullptr && r->op_type() == "ReduceMean" && r->input_size() >= 1 && r->output_size() >= 1 &&
           int_attribute(*r, "keepdims", 1) == 1 && axes_of(g, *r, &axes) && last_axis_only(axes, rank);
  };
  for (int k = 0; k < 2; ++k) {
    const onnx::NodeProto* mean = cs[static_cast<size_t>(k)];
    const onnx::NodeProto* sub = cs[static_cast<size_t>(1 - k)];
    if (!mean_of(mean) || mean->input(0) != x || sub->op_type() != "Sub" || sub->input_size() != 2 ||
        sub->output_size() < 1 || sub->input(0) != x || sub->input(1) != mean->output(0) ||
        only_consumer(g, mean->output(0)) != sub) {
      continue;
    }
    // The centred value feeds the square and the Div.
    const std::string centred = sub->output(0);
    const auto readers = g.data_consumers(centred);
    if (readers.size() != 2 || g.is_graph_output(centred)) continue;
    const onnx::NodeProto* square = nullptr;
    const onnx::NodeProto* div = nullptr;
    for (const auto* r : readers) {
      if (r->output_size() < 1) continue;
      if (is_binary_with_const(g, r, "Pow", centred, 2.0) && r->input(0) == centred) square = r;
      if (r->op_type() == "Mul" && r->input_size() == 2 && r->input(0) == centred && r->input(1) == centred) square = r;
      if (r->op_type() == "Div" && r->input_size() == 2 && r->input(0) == centred) div = r;
    }
    if (square == nullptr || div == nullptr) continue;
    const onnx::NodeProto* variance = only_consumer(g, square->output(0));
    if (!mean_of(variance) || variance->input(0) != square->output(0)) continue;
    const onnx::NodeProto* add = only_consumer(g, variance->output(0));
    if (add == nullptr || add->op_type() != "Add" || add->input_size() != 2) continue;
    double epsilon = 0.0;
    const std::string eps_name = other_input(*add, variance->output(0));
    if (eps_name.empty() || !constant_scalar(g, eps_name, &epsilon) || !std::isfinite(epsilon) || epsilon < 0) continue;
    const onnx::NodeProto* root = only_consumer_of_type(g, add->output(0), "Sqrt");
    if (root == nullptr || only_consumer(g, root->output(0)) != div || div->input(1) != root->output(0)) continue;

    m->layer = layer_norm(*mean, epsilon, F);
    m->nodes = {mean, sub, square, variance, add, root, div};
    m->out = div->output(0);
    // gamma and beta (elementwise_affine): a Mul by a constant, then an Add of one.
    const onnx::NodeProto* mul = g.is_graph_output(m->out) ? nullptr : only_consumer_of_type(g, m->out, "Mul");
    if (mul != nullptr && is_const(g, other_input(*mul, m->out))) {
      if (!feature_constant(g, *mul, other_input(*mul, m->out), "gamma", F, &m->layer.weight, m)) return true;
      m->nodes.push_back(mul);
      m->out = mul->output(0);
      const onnx::NodeProto* bias = g.is_graph_output(m->out) ? nullptr : only_consumer_of_type(g, m->out, "Add");
      if (bias != nullptr && is_const(g, other_input(*bias, m->out))) {
        if (!feature_constant(g, *bias, other_input(*bias, m->out), "beta", F, &m->layer.bias, m)) return true;
        m->nodes.push_back(bias);
        m->out = bias->output(0);
      }
    }
    return true;
  }
  return false;
}

// ONNX LayerNormalization on the data path of the front or the head.
bool PathWalker::layer_normalization(const onnx::NodeProto& n, PathState* s) {
  if (!features_last(n, *s, "a LayerNorm")) return false;
  LayerNormMatch m;
  match_layer_normalization(g_, n, s->value, s->view.labels.size(), s->view.width, &m);
  if (m.refused != nullptr) {
    problem(m.refused, m.why);
    return false;
  }
  add_layer(s, std::move(m.layer), false);
  return true;
}

// torch's LayerNorm before opset 17 on the data path: x is read by the mean's ReduceMean and the Sub.
bool PathWalker::match_layer_norm(PathState* s) {
  if (!features_last_quiet(*s)) return false;
  LayerNormMatch m;
  if (!match_decomposed_layer_norm(g_, s->value, s->view.labels.size(), s->view.width, &m)) return false;
  for (const auto* n : m.nodes) used_->insert(n);
  if (m.refused != nullptr) {
    problem(m.refused, m.why);
    s->failed = true;  // the walk goes on past it, reporting only ops refused whatever their shape
  } else {
    add_layer(s, std::move(m.layer), false);
  }
  s->value = m.out;
  return true;
}

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
