// Activations on the feature axis: the single-node ones (Relu, Sigmoid, Tanh, LeakyRelu,
// HardSigmoid, HardSwish, Clip, Gelu), Softmax and LogSoftmax over the features, and the activations torch
// exports as several nodes (SiLU, HardSwish, both GELUs), recognized where the value branches.
#include "recognize/path_walker.h"

#include <cmath>
#include <limits>
#include <map>

namespace qlstm {
namespace compiler {
namespace import {

// The single-node activations, by op.
bool PathWalker::unary_activation_fn(const std::string& op, ActivationFn* fn) {
  static const std::map<std::string, ActivationFn> kUnary = {
      {"Relu", ActivationFn::kRelu},       {"Sigmoid", ActivationFn::kSigmoid},
      {"Tanh", ActivationFn::kTanh},       {"LeakyRelu", ActivationFn::kLeakyRelu},
      {"HardSigmoid", ActivationFn::kHardSigmoid}, {"HardSwish", ActivationFn::kHardSwish},
      {"Clip", ActivationFn::kClip},       {"Gelu", ActivationFn::kGelu}};
  const auto it = kUnary.find(op);
  if (it == kUnary.end()) return false;
  *fn = it->second;
  return true;
}

bool PathWalker::unary_activation(const onnx::NodeProto& n, ActivationFn fn, PathState* s) {
  const std::string& op = n.op_type();
  if (!reads_at(n, *s, 0)) return false;
  FloatLayer l = activation(n, fn);
  if (op == "LeakyRelu") l.alpha = float_attribute(n, "alpha", 0.01);
  if (op == "HardSigmoid") {
    l.alpha = float_attribute(n, "alpha", 0.2);
    l.beta = float_attribute(n, "beta", 0.5);
  }
  if (op == "Gelu") {
    const onnx::AttributeProto* a = attribute(n, "approximate");
    l.gelu_tanh = a != nullptr && a->s() == "tanh";
  }
  if (op == "Clip" && !clip_bounds(n, &l)) return false;
  add_layer(s, std::move(l), false);
  return true;
}

bool PathWalker::clip_bounds(const onnx::NodeProto& n, FloatLayer* l) {
  l->clip_min = -std::numeric_limits<double>::infinity();
  l->clip_max = std::numeric_limits<double>::infinity();
  if (c_.opset < 11) {  // bounds as attributes
    l->clip_min = float_attribute(n, "min", l->clip_min);
    l->clip_max = float_attribute(n, "max", l->clip_max);
    return true;
  }
  for (int k : {1, 2}) {
    if (n.input_size() <= k || n.input(k).empty()) continue;
    double v = 0;
    if (!constant_scalar(g_, n.input(k), &v)) {
      problem(&n, std::string("a Clip whose ") + (k == 1 ? "min" : "max") + " is not a constant scalar: not supported");
      return false;
    }
    (k == 1 ? l->clip_min : l->clip_max) = v;
  }
  return true;
}

bool PathWalker::softmax(const onnx::NodeProto& n, PathState* s) {
  const std::string& op = n.op_type();
  const int64_t rank = static_cast<int64_t>(s->view.labels.size());
  // Opset 13 made the default axis -1 (before: 1, over the flattened trailing axes).
  int64_t axis = int_attribute(n, "axis", c_.opset >= 13 ? -1 : 1);
  if (axis < 0) axis += rank;
  if (axis != rank - 1 || s->view.labels.back() != 'F' || !features_last(n, *s, ("a " + op).c_str())) {
    if (axis >= 0 && axis < rank && axis != rank - 1) {
      problem(&n, "a " + op + " over axis " + std::to_string(axis) + " (the " +
                      axis_name(s->view.labels[static_cast<size_t>(axis)]) +
                      " axis), not the last (feature) axis: not supported");
    }
    return false;
  }
  FloatLayer l;
  l.kind = op == "LogSoftmax" ? FloatLayerKind::kLogSoftmax : FloatLayerKind::kSoftmax;
  l.node = n.name().empty() ? n.output(0) : n.name();
  add_layer(s, std::move(l), false);
  return true;
}

// The activations torch 1.13 exports as several nodes, recognized where the value branches:
// SiLU x * Sigmoid(x); HardSwish (before opset 14) x * HardSigmoid(x); GELU as
// x * (1 + Erf(x / sqrt 2)) * 0.5 or its tanh approximation.
bool PathWalker::match_activation_pattern(PathState* s) {
  if (!features_last_quiet(*s)) return false;
  const std::string x = s->value;
  if (g_.is_graph_output(x)) return false;
  const auto cs = g_.data_consumers(x);
  std::vector<const onnx::NodeProto*> nodes;
  FloatLayer l;
  std::string out;
  if (match_gated(x, cs, &l, &out, &nodes) || match_gelu_erf(x, cs, &l, &out, &nodes) ||
      match_gelu_tanh(x, cs, &l, &out, &nodes)) {
    for (const auto* n : nodes) used_->insert(n);
    add_layer(s, std::move(l), false);
    s->value = out;
    return true;
  }
  return false;
}

bool PathWalker::features_last_quiet(const PathState& s) const {
  const Labels d = data_axes(c_, s.view.labels);
  return !d.empty() && d.back() == 'F' && s.view.labels.back() == 'F' && d.find('D') == std::string::npos;
}

bool PathWalker::match_gated(const std::string& x, const std::vector<const onnx::NodeProto*>& cs, FloatLayer* l,
                             std::string* out, std::vector<const onnx::NodeProto*>* nodes) {
  if (cs.size() != 2) return false;
  for (int k = 0; k < 2; ++k) {
    const onnx::NodeProto* gate = cs[static_cast<size_t>(k)];
    const onnx::NodeProto* mul = cs[static_cast<size_t>(1 - k)];
    if (gate->input_size() != 1 || gate->output_size() < 1 || mul->op_type() != "Mul") continue;
    const bool sig = gate->op_type() == "Sigmoid";
    constexpr double kHardSwishAlpha = 1.0 / 6.0, kHardSwishBeta = 0.5;
    const bool hard = gate->op_type() == "HardSigmoid" && near(float_attribute(*gate, "alpha", 0.2), kHardSwishAlpha) &&
                      near(float_attribute(*gate, "beta", 0.5), kHardSwishBeta);
    if ((!sig && !hard) || only_consumer(g_, gate->output(0)) != mul || other_input(*mul, x) != gate->output(0)) {
      continue;
    }
    *l = activation(*gate, sig ? ActivationFn::kSilu : ActivationFn::kHardSwish);
    *out = mul->output(0);
    *nodes = {gate, mul};
    return true;
  }
  return false;
}

bool PathWalker::match_gelu_erf(const std::string& x, const std::vector<const onnx::NodeProto*>& cs, FloatLayer* l,
                                std::string* out, std::vector<const onnx::NodeProto*>* nodes) {
  if (cs.size() != 2) return false;
  const double kSqrt2 = std::sqrt(2.0);
  for (int k = 0; k < 2; ++k) {
    const onnx::NodeProto* div = cs[static_cast<size_t>(k)];
    const onnx::NodeProto* mul = cs[static_cast<size_t>(1 - k)];
    if (!is_binary_with_const(g_, div, "Div", x, kSqrt2) || div->input(0) != x) continue;
    const onnx::NodeProto* erf = only_consumer_of_type(g_, div->output(0), "Erf");
    if (erf == nullptr) continue;
    const onnx::NodeProto* add = only_consumer(g_, erf->output(0));
    if (!is_binary_with_const(g_, add, "Add", erf->output(0), 1.0)) continue;
    if (only_consumer(g_, add->output(0)) != mul || mul->op_type() != "Mul" || other_input(*mul, x) != add->output(0)) {
      continue;
    }
    const onnx::NodeProto* half = only_consumer(g_, mul->output(0));
    if (!is_binary_with_const(g_, half, "Mul", mul->output(0), 0.5)) continue;
    *l = activation(*div, ActivationFn::kGelu);
    *out = half->output(0);
    *nodes = {div, erf, add, mul, half};
    return true;
  }
  return false;
}

bool PathWalker::match_gelu_tanh(const std::string& x, const std::vector<const onnx::NodeProto*>& cs, FloatLayer* l,
                                 std::string* out, std::vector<const onnx::NodeProto*>* nodes) {
  // x*x, x*(x*x), x + c3*(x^3), x * (1 + tanh(c1*(...))): four distinct nodes read x.
  constexpr double kCubic = 0.044715, kScale = 0.7978845608028654;
  std::set<const onnx::NodeProto*> readers(cs.begin(), cs.end());
  const onnx::NodeProto* square = nullptr;
  for (const auto* n : readers) {
    if (n->op_type() == "Mul" && n->input_size() == 2 && n->input(0) == x && n->input(1) == x && n->output_size() >= 1) {
      square = n;
    }
  }
  if (readers.size() != 4 || square == nullptr) return false;
  const onnx::NodeProto* cube = only_consumer(g_, square->output(0));
  if (cube == nullptr || cube->op_type() != "Mul" || other_input(*cube, square->output(0)) != x) return false;
  const onnx::NodeProto* scaled = only_consumer(g_, cube->output(0));
  if (!is_binary_with_const(g_, scaled, "Mul", cube->output(0), kCubic)) return false;
  const onnx::NodeProto* inner = only_consumer(g_, scaled->output(0));
  if (inner == nullptr || inner->op_type() != "Add" || other_input(*inner, scaled->output(0)) != x) return false;
  const onnx::NodeProto* arg = only_consumer(g_, inner->output(0));
  if (!is_binary_with_const(g_, arg, "Mul", inner->output(0), kScale)) return false;
  const onnx::NodeProto* th = only_consumer_of_type(g_, arg->output(0), "Tanh");
  if (th == nullptr) return false;
  const onnx::NodeProto* one = only_consumer(g_, th->output(0));
  if (!is_binary_with_const(g_, one, "Add", th->output(0), 1.0)) return false;
  const onnx::NodeProto* mul = only_consumer(g_, one->output(0));
  if (mul == nullptr || mul->op_type() != "Mul" || other_input(*mul, one->output(0)) != x) return false;
  const onnx::NodeProto* half = only_consumer(g_, mul->output(0));
  if (!is_binary_with_const(g_, half, "Mul", mul->output(0), 0.5)) return false;
  if (!readers.count(cube) || !readers.count(inner) || !readers.count(mul)) return false;
  *l = activation(*square, ActivationFn::kGelu);
  l->gelu_tanh = true;
  *out = half->output(0);
  *nodes = {square, cube, scaled, inner, arg, th, one, mul, half};
  return true;
}

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
