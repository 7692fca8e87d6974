#include "recognize/between_layers.h"

#include <cmath>

#include "import/recurrent_nodes.h"
#include "recognize/layer_norm.h"
#include "recognize/path_walker.h"
#include "recognize/residual.h"

namespace qlstm {
namespace compiler {
namespace import {
namespace {

// A constant of one value per feature (or one for all), broadcast along the feature axis `axis`
// of a rank-`rank` value: its dims all 1 but at most the one that lines up with that axis.
bool per_feature(const Graph& g, const std::string& name, int32_t width, size_t axis, size_t rank,
                 std::vector<double>* values) {
  std::vector<int64_t> dims;
  if (!constant_values(g, name, values, &dims) || dims.size() > rank) return false;
  for (size_t k = 0; k < dims.size(); ++k) {
    const size_t at = rank - dims.size() + k;  // numpy broadcasting aligns the last axes
    if (dims[k] != 1 && !(at == axis && dims[k] == width)) return false;
  }
  if (values->size() == 1) values->assign(static_cast<size_t>(width), values->front());
  return values->size() == static_cast<size_t>(width);
}

// n (on `value`, whose features are on axis `axis`) as y = scale * x + shift folded into *a.
bool take_affine(const Graph& g, const onnx::NodeProto& n, const std::string& value, const LayoutView& view,
                 FeatureAffine* a) {
  const size_t axis = view.labels.find('F'), rank = view.labels.size();
  if (axis == std::string::npos || view.labels.find('D') != std::string::npos || n.input_size() < 2) return false;
  const int32_t W = view.width;
  std::vector<double> v;
  if (n.op_type() == "Mul" || n.op_type() == "Add") {
    const int other = n.input(0) == value ? 1 : n.input(1) == value ? 0 : -1;
    if (other < 0 || !per_feature(g, n.input(other), W, axis, rank, &v)) return false;
  } else if (n.op_type() == "BatchNormalization") {
    // Its channel axis (1) must be the features; y = (x - mean) / sqrt(var + eps) * gamma + beta.
    std::vector<double> gamma, beta, mean, var;
    if (n.input_size() < 5 || n.input(0) != value || axis != 1 ||
        !per_feature(g, n.input(1), W, 0, 1, &gamma) || !per_feature(g, n.input(2), W, 0, 1, &beta) ||
        !per_feature(g, n.input(3), W, 0, 1, &mean) || !per_feature(g, n.input(4), W, 0, 1, &var)) {
      return false;
    }
    double eps = 1e-5;
    for (const auto& at : n.attribute()) {
      if (at.name() == "epsilon") eps = at.f();
    }
    v.resize(static_cast<size_t>(W));
    for (size_t i = 0; i < v.size(); ++i) {
      if (!(var[i] + eps > 0)) return false;  // not an affine: the walk names the node
      v[i] = gamma[i] / std::sqrt(var[i] + eps);
      if (!std::isfinite(v[i]) || !std::isfinite(beta[i] - mean[i] * v[i])) return false;
    }
    if (a->scale.empty()) a->scale.assign(static_cast<size_t>(W), 1.0), a->shift.assign(static_cast<size_t>(W), 0.0);
    for (size_t i = 0; i < v.size(); ++i) {
      a->scale[i] *= v[i];
      a->shift[i] = a->shift[i] * v[i] + beta[i] - mean[i] * v[i];
    }
    if (a->node.empty()) a->node = node_label(n);
    return true;
  } else {
    return false;
  }
  for (double x : v) {
    if (!std::isfinite(x)) return false;  // not an affine: the walk names the node
  }
  if (a->scale.empty()) a->scale.assign(static_cast<size_t>(W), 1.0), a->shift.assign(static_cast<size_t>(W), 0.0);
  for (size_t i = 0; i < v.size(); ++i) {
    if (n.op_type() == "Mul") {
      a->scale[i] *= v[i];
      a->shift[i] *= v[i];
    } else {
      a->shift[i] += v[i];
    }
  }
  if (a->node.empty()) a->node = node_label(n);
  return true;
}

// The ops that start a per-position layer between two recurrent layers (a Linear, an activation);
// the walk of the head's kind takes it with what follows up to the next layer.
bool starts_layer(const std::string& op) {
  static const std::set<std::string> kOps = {"Gemm", "MatMul", "Relu", "Sigmoid", "Tanh", "LeakyRelu",
                                             "HardSigmoid", "HardSwish", "Clip", "Gelu"};
  return kOps.count(op) != 0;
}

// The input of the next recurrent node along a path of single readers from `value`; empty when the
// path reaches a graph output or a branch first (the head's, then).
std::string next_recurrent_input(const Graph& g, std::string value) {
  for (int guard = 0; guard < 64; ++guard) {
    const std::vector<const onnx::NodeProto*> readers = g.data_consumers(value);
    if (readers.size() != 1 || readers.front()->output_size() < 1 || g.is_graph_output(value)) return "";
    if (recurrent(*readers.front())) return value;
    value = readers.front()->output(0);
  }
  return "";
}

}  // namespace

bool follow_output(const PathContext& c, std::string value, LayoutView* view, std::string* graph_output,
                   const onnx::NodeProto** next_lstm, bool* residual, std::vector<FloatLayer>* norms,
                   std::vector<const onnx::NodeProto*>* norm_nodes, FeatureAffine* affine,
                   std::vector<std::string>* problems) {
  const Graph& g = *c.g;
  *next_lstm = nullptr;
  *residual = false;
  norms->clear();
  norm_nodes->clear();
  FeatureAffine crossed;
  for (int guard = 0; guard < 32; ++guard) {
    record_view(c, value, *view);
    const auto next = path_consumers(c, value);
    // A LayerNorm over the features (its opset < 17 form reads the value twice).
    const bool features_last = !view->labels.empty() && view->labels.back() == 'F' &&
                               view->labels.find('D') == std::string::npos;
    LayerNormMatch ln;
    const size_t rank = view->labels.size();
    if (features_last && !g.is_graph_output(value) &&
        ((next.size() == 1 && match_layer_normalization(g, *next[0], value, rank, view->width, &ln)) ||
         match_decomposed_layer_norm(g, value, rank, view->width, &ln))) {
      if (ln.refused != nullptr) {
        problems->push_back(node_label(*ln.refused) + ": " + ln.why);
        return false;
      }
      if (!crossed.scale.empty()) {
        problems->push_back(node_label(*ln.nodes.front()) + ": a LayerNorm after a per-feature affine (" + crossed.node +
                            ") between two layers: not supported");
        return false;
      }
      norms->push_back(std::move(ln.layer));
      norm_nodes->insert(norm_nodes->end(), ln.nodes.begin(), ln.nodes.end());
      value = ln.out;
      continue;
    }
    if (next.size() == 1 && !g.is_graph_output(value)) {
      if (const ResidualAdd* r = residual_from(c, *next[0], value)) {
        std::string why = *residual ? "a second residual add after one layer" : "";
        if (why.empty()) same_axes_as_skip(c, *r, *view, &why);
        if (!why.empty()) {
          problems->push_back(node_label(*next[0]) + ": " + why);
          return false;
        }
        *residual = true;
        value = next[0]->output(0);
        continue;
      }
    }
    if (next.size() == 1 && recurrent(*next[0]) && !g.is_graph_output(value)) {
      if (next[0]->input_size() < 1 || next[0]->input(0) != value) {
        problems->push_back(node_label(*next[0]) + ": a recurrent layer's output feeds an input other than X");
        return false;
      }
      *next_lstm = next[0];
      *affine = std::move(crossed);
      return true;
    }
    if (g.is_graph_output(value)) {
      if (!next.empty()) {
        problems->push_back("graph: the LSTM output '" + value + "' is both a graph output and consumed");
        return false;
      }
      *graph_output = value;
      return true;
    }
    if (next.size() != 1) {
      problems->push_back("graph: the LSTM output sequence must reach one graph output through "
                          "layout ops only; '" + value + "' has " + std::to_string(next.size()) +
                          " consumers");
      return false;
    }
    const onnx::NodeProto& n = *next[0];
    if (n.output_size() < 1 || n.output(0).empty()) {
      problems->push_back(node_label(n) + ": has no output");
      return false;
    }
    if (!*residual && take_affine(g, n, value, *view, &crossed)) {  // the next layer takes it in
      value = n.output(0);
      continue;
    }
    const std::string stop = starts_layer(n.op_type()) ? next_recurrent_input(g, value) : std::string();
    if (!stop.empty()) {
      // Per-position layers up to the next layer (a Linear and its activation between two LSTMs).
      if (!crossed.scale.empty()) {
        problems->push_back(node_label(n) + ": a layer after a per-feature affine (" + crossed.node +
                            ") between two recurrent layers: not supported");
        return false;
      }
      PathState s;
      s.value = value;
      s.view = *view;
      std::string why;
      if (!walk_position_layers(c, stop, &s, norm_nodes, &why)) {
        problems->push_back(why);
        return false;
      }
      norms->insert(norms->end(), s.layers.begin(), s.layers.end());
      *view = s.view;
      value = stop;
      continue;
    }
    if (!kLayoutOps.count(n.op_type())) {
      // The head's, which names what the op is; where a layer follows, the chain stops here.
      problems->push_back(node_label(n) + ": neither a layout op nor a per-feature affine of constants");
      return false;
    }
    if (n.input_size() < 1 || n.input(0) != value) {
      problems->push_back(node_label(n) + ": reads the LSTM output as other than its data input");
      return false;
    }
    std::string why;
    if (!apply_layout_op(c, PathPart::kBetweenLayers, n, view, &why)) {
      problems->push_back(node_label(n) + ": " + why);
      return false;
    }
    value = n.output(0);
  }
  problems->push_back("graph: the LSTM output path is too long");
  return false;
}

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
