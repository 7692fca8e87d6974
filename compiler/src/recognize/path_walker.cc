#include "recognize/path_walker.h"

#include <cmath>

#include "recognize/residual.h"

#include "qlstm/compiler/import/refusals.h"

namespace qlstm {
namespace compiler {
namespace import {

const std::set<std::string> kStructuralOps = {
    "Constant", "ConstantOfShape", "Shape", "Gather", "Unsqueeze", "Squeeze", "Concat", "Expand",
    "Cast", "Reshape", "Transpose", "Identity", "Slice"};

// What an op is, for a refusal of a node the walk cannot take (or that is not on its path).
std::string what_it_is(const Graph& g, const onnx::NodeProto& n, const char* cell) {
  const std::string& op = n.op_type();
  const std::string foreign = import::describe_foreign_node(n);
  if (!foreign.empty()) return foreign;
  // A ReduceMean of the last axis alone is how torch exports a LayerNorm before opset 17.
  std::vector<int64_t> axes;
  const bool last_axis = op == "ReduceMean" && axes_of(g, n, &axes) && axes == std::vector<int64_t>{-1};
  if (op == "LayerNormalization" || last_axis) {
    return "a LayerNorm (each vector normalized by its own mean and variance; torch exports it as "
           "LayerNormalization, or ReduceMean/Sub/Pow/Sqrt/Div before opset 17) that is not over the features in "
           "front of the first recurrent layer or in the head: not supported here (between recurrent layers, over "
           "other axes, or in another form)";
  }
  if (op.rfind("Reduce", 0) == 0) {
    return "a reduction (" + op + ") off the data path's chain, or of axes other than time alone: not supported "
           "(a mean or a max over the time axis of the recurrent layer's output is)";
  }
  if (op == "MatMul" || op == "Gemm") {
    const bool b_const = n.input_size() >= 2 && is_const(g, n.input(1));
    const bool a_const = n.input_size() >= 1 && is_const(g, n.input(0));
    if (!a_const && !b_const) return "a product of two activations (as in attention), not a Linear with constant weights: not supported";
    if (a_const) return "a product with the activation as its right operand (it mixes positions, not features): not supported";
    if (op == "Gemm" && int_attribute(n, "transA", 0) != 0) return "a Gemm with transA = 1 (it mixes positions): not supported";
    return "a Linear (" + op + ") on a tensor whose last axis is not the features: not supported";
  }
  if (op == "Conv" || op == "ConvTranspose" || op == "ConvInteger") return "a convolution: not supported (only per-step Linear layers)";
  if (op == "Gather" && n.input_size() >= 1 && is_const(g, n.input(0))) {
    return "an embedding lookup (a Gather from a constant table): not supported; feed the embedded vectors as the input";
  }
  if (op == "Softmax" || op == "LogSoftmax") return "a " + op + " not on the last (feature) axis: not supported";
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    return "an elementwise " + op + " that is neither a Linear's bias nor part of a recognized activation: not supported";
  }
  if (op == "BatchNormalization" || op == "InstanceNormalization") return "a normalization (" + op + "): not supported";
  if (op == "Concat") return "a Concat on the data path (a branch or a skip connection): not supported";
  return "op '" + op + "' is not supported around the " + cell;
}

// The ops a walk takes (some only in some forms); past a refusal they are not reported again.
const std::set<std::string> kPathOps = {
    "Identity", "Dropout", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Reshape", "Gather", "Slice", "Gemm",
    "MatMul", "Add", "Mul", "Div", "Erf", "Softmax", "LogSoftmax", "Relu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid",
    "HardSwish", "Clip", "Gelu", "BatchNormalization", "LayerNormalization"};

// Walks from s->value until the value `stop` (front: the first LSTM's X) or a graph output
// (head: stop empty). False when a node was refused (every problem found is reported).
bool PathWalker::walk(PathState* s, const std::string& stop) {
  for (int guard = 0; guard < 256; ++guard) {
    if (!s->failed) s->last_good = s->value;
    if (!stop.empty() && s->value == stop) return !s->failed;
    if (stop.empty() && g_.is_graph_output(s->value)) {
      if (!g_.data_consumers(s->value).empty()) {
        problem(nullptr, "the output '" + s->value + "' is also read by other nodes (a branch)");
        return false;
      }
      return !s->failed;
    }
    record_view(c_, s->value, s->view);
    const auto cs = path_consumers(c_, s->value);
    if (cs.empty()) {
      problem(nullptr, "'" + s->value + "' on the data path reaches no " + (stop.empty() ? "graph output" : c_.cell));
      return false;
    }
    if (cs.size() > 1 || g_.is_graph_output(s->value)) {
      if (s->failed) return false;  // reported already
      if (match_activation_pattern(s) || match_layer_norm(s) || match_attention_pool(s) || match_unrolled_steps(s) ||
          match_pooled_concat(s)) {
        continue;
      }
      std::string names;
      for (const auto* n : cs) names += (names.empty() ? "" : ", ") + node_label(*n);
      problem(nullptr, "'" + s->value + "' is read by " + std::to_string(cs.size()) + " nodes (" + names +
                           "): a branch of the data path (only a chain of layers is supported)");
      return false;
    }
    const onnx::NodeProto& n = *cs[0];
    if (n.output_size() < 1 || n.output(0).empty()) {
      problem(&n, "has no output");
      return false;
    }
    used_->insert(&n);
    if (s->failed) {
      // Past a refused node the shapes are unknown: report only ops refused whatever their shape.
      if (!kPathOps.count(n.op_type())) problem(&n, what_it_is(g_, n, c_.cell));
    } else if (!take(n, s)) {
      s->failed = true;
    }
    if (n.output_size() != 1 && s->failed) return false;
    s->value = n.output(0);
  }
  problem(nullptr, "the data path is too long");
  return false;
}

bool walk_position_layers(const PathContext& c, const std::string& stop, PathState* s,
                          std::vector<const onnx::NodeProto*>* nodes, std::string* problem) {
  std::vector<std::string> problems;
  std::set<const onnx::NodeProto*> used;
  PathWalker walker(c, false, &problems, &used);
  if (!walker.walk(s, stop)) {
    *problem = problems.empty() ? "graph: a layer on the way to '" + stop + "' could not be read" : problems.front();
    return false;
  }
  if (s->selected || s->residual) {
    *problem = s->select.node + ": a step selection, pooling or residual add where only per-position layers may be";
    return false;
  }
  for (const FloatLayer& l : s->layers) {
    if (reads_whole_sequence(l.kind) || l.kind == FloatLayerKind::kEmbedding || l.groups != 1) {
      *problem = l.node + ": not a per-position layer on the features";
      return false;
    }
  }
  nodes->insert(nodes->end(), used.begin(), used.end());
  return true;
}

void PathWalker::problem(const onnx::NodeProto* n, const std::string& why) {
  problems_->push_back((n ? node_label(*n) : std::string("graph")) + ": " + why);
}

// The value `n` reads on the data path must be its input `k`.
bool PathWalker::reads_at(const onnx::NodeProto& n, const PathState& s, int k) {
  if (n.input_size() > k && n.input(k) == s.value) return true;
  problem(&n, what_it_is(g_, n, c_.cell));
  return false;
}

bool PathWalker::features_last(const onnx::NodeProto& n, const PathState& s, const char* what) {
  const Labels d = data_axes(c_, s.view.labels);
  if (d.find('D') != std::string::npos) {
    problem(&n, std::string(what) + " on the " + c_.cell + "'s output before its two directions are merged into the features");
    return false;
  }
  if (d.empty() || d.back() != 'F' || s.view.labels.back() != 'F') {
    problem(&n, std::string(what) + " on a tensor whose last axis is the " + axis_name(s.view.labels.back()) +
                    " axis, not the features: not supported");
    return false;
  }
  return true;
}

// The head's first layer reading the whole sequence (a pooling, a flatten): after nothing else
// that reads it, and before any per-step layer (the program runs it first), but per-step layers
// that commute with it (`commutes`: they run after it, with the same result).
bool PathWalker::read_whole_sequence(const onnx::NodeProto& n, PathState* s, FloatLayerKind kind, const std::string& what,
                                     const std::string& verb, bool commutes, const std::string& commuting) {
  if (s->selected) {
    problem(&n, what + " after a step selection, a pooling or a flatten over time: not supported");
    return false;
  }
  if (!s->layers.empty() && !commutes) {
    problem(&n, what + " after per-step layers (" + s->layers.front().node + "): not supported yet" +
                    (commuting.empty() ? "" : " (" + commuting + ")") + "; " + verb +
                    " the recurrent layer's output directly, then apply the layers");
    return false;
  }
  s->selected = true;
  s->select = FloatLayer{};
  s->select.kind = kind;
  s->select.node = n.name().empty() ? n.output(0) : n.name();
  s->last_is_linear = false;
  return true;
}

// The time axis merged into the features (LayoutRules::merge_time): the head's first layer, the
// model's steps then fixed (a Linear of T x H inputs reads them).
bool PathWalker::flatten_time(const onnx::NodeProto& n, PathState* s) {
  if (!read_whole_sequence(n, s, FloatLayerKind::kFlattenTime, "a flatten of every step", "flatten")) return false;
  s->select.flatten_steps = s->view.flattened_steps;  // -1 until the Linear tells (a dynamic time axis)
  s->last_is_linear = false;
  return true;
}

// A Linear of K inputs on a flattened sequence whose time axis is dynamic: K / the step width steps.
bool PathWalker::resolve_flattened_steps(const onnx::NodeProto& n, const std::string& w_name, bool transposed,
                                         PathState* s) {
  if (s->view.flattened_steps != -1) return true;
  std::vector<double> w;
  std::vector<int64_t> dims;
  const int64_t K = constant_values(g_, w_name, &w, &dims) && dims.size() == 2 ? dims[transposed ? 1 : 0] : -1;
  const int64_t step = s->view.step_width;
  if (K < step || step < 1 || K % step != 0 || K / step > (int64_t{1} << 20)) {
    problem(&n, "a Linear of " + std::to_string(K) + " inputs on every step of " + std::to_string(step) +
                    " values flattened: not a whole number of steps");
    return false;
  }
  s->view.flattened_steps = static_cast<int32_t>(K / step);
  s->view.width = static_cast<int32_t>(K);
  s->select.flatten_steps = s->view.flattened_steps;
  return true;
}

void PathWalker::add_layer(PathState* s, FloatLayer l, bool linear) {
  l.input_size = s->view.width;
  if (linear && s->last_is_batch_norm) {
    // A Linear after a BatchNorm takes its affine in: W' = W diag(scale), b' = b + W shift.
    const FloatLayer bn = std::move(s->layers.back());
    s->layers.pop_back();
    const size_t I = static_cast<size_t>(l.input_size), O = static_cast<size_t>(l.output_size);
    if (l.bias.empty()) l.bias.assign(O, 0.0f);
    for (size_t o = 0; o < O; ++o) {
      double b = l.bias[o];
      for (size_t i = 0; i < I; ++i) {
        b += static_cast<double>(l.weight[o * I + i]) * bn.bias[i];
        l.weight[o * I + i] = static_cast<float>(static_cast<double>(l.weight[o * I + i]) * bn.weight[i * I + i]);
      }
      l.bias[o] = static_cast<float>(b);
    }
  }
  s->last_is_batch_norm = false;
  if (s->selected && s->select.kind == FloatLayerKind::kSelectStep && !s->range_merged) l.groups = s->select.step_count;
  if (l.kind != FloatLayerKind::kLinear) l.output_size = s->view.width;
  s->view.width = l.output_size;
  s->layers.push_back(std::move(l));
  s->last_is_linear = linear;
}

FloatLayer PathWalker::activation(const onnx::NodeProto& n, ActivationFn fn) {
  FloatLayer l;
  l.kind = FloatLayerKind::kActivation;
  l.node = n.name().empty() ? n.output(0) : n.name();
  l.fn = fn;
  return l;
}

bool PathWalker::take(const onnx::NodeProto& n, PathState* s) {
  const std::string& op = n.op_type();
  if (s->ids) return embedding(n, s);
  if (kLayoutOps.count(op)) {
    if (!reads_at(n, *s, 0)) return false;
    std::string why;
    const bool flattened = s->view.flattened_steps != 0;
    if (!apply_layout_op(c_, front_ ? PathPart::kFront : PathPart::kHead, n, &s->view, &why)) {
      problem(&n, why);
      return false;
    }
    if (!flattened && s->view.flattened_steps != 0) {
      if (s->selected && s->select.kind == FloatLayerKind::kSelectStep && s->select.step_count > 1) {
        s->range_merged = true;  // the selected steps side by side: one row per batch row
      } else if (!flatten_time(n, s)) {
        return false;
      }
    }
    // A Linear's output through Identity or Dropout is still its output (an Add may be its bias).
    if (op != "Identity" && op != "Dropout") s->last_is_linear = false;
    return true;
  }
  if (op == "Gather") return reads_at(n, *s, 0) && gather(n, s);
  if (op == "Slice") return reads_at(n, *s, 0) && slice(n, s);
  if (op == "Gemm") return reads_at(n, *s, 0) && gemm(n, s);
  if (op == "MatMul") return reads_at(n, *s, 0) && matmul(n, s);
  if (op == "Add") {
    if (const ResidualAdd* r = residual_from(c_, n, s->value)) return residual(n, *r, s);
    return add_bias(n, s);
  }
  if (op == "BatchNormalization") return reads_at(n, *s, 0) && batch_norm(n, s);
  if (op == "Mul") return scale_features(n, s);
  if (op == "Softmax" || op == "LogSoftmax") return reads_at(n, *s, 0) && softmax(n, s);
  if (op == "LayerNormalization") return reads_at(n, *s, 0) && layer_normalization(n, s);
  if (op.rfind("Reduce", 0) == 0 && reads_at(n, *s, 0)) return reduction(n, s);
  ActivationFn fn = ActivationFn::kRelu;
  if (unary_activation_fn(op, &fn)) return unary_activation(n, fn, s);
  problem(&n, what_it_is(g_, n, c_.cell));
  return false;
}

// The token ids read by a Gather of a constant [V, E] float table along its rows (nn.Embedding):
// the front's first layer, a row of E features per id.
bool PathWalker::embedding(const onnx::NodeProto& n, PathState* s) {
  std::vector<double> table;
  std::vector<int64_t> dims;
  const bool gather = n.op_type() == "Gather" && n.input_size() == 2 && n.input(1) == s->value;
  const onnx::TensorProto* t = gather ? constant_tensor(g_, n.input(0)) : nullptr;
  const bool is_float = t != nullptr && (t->data_type() == onnx::TensorProto::FLOAT || t->data_type() == onnx::TensorProto::DOUBLE);
  if (!gather || !is_float || !constant_values(g_, n.input(0), &table, &dims) || dims.size() != 2 ||
      int_attribute(n, "axis", 0) != 0) {
    problem(&n, "reads the token ids (the model's integer input): only an embedding may, a Gather of the ids' rows from "
                "a constant float [V, E] table (nn.Embedding); what to do: feed the embedded vectors as the input, or "
                "look the ids up as torch's nn.Embedding does");
    return false;
  }
  if (dims[0] < 1 || dims[1] < 1 || dims[0] > kMaxEmbeddingRows || dims[1] > (int64_t{1} << 16)) {
    problem(&n, "an embedding table of " + std::to_string(dims[0]) + " x " + std::to_string(dims[1]) + ": not supported (1 to " +
                    std::to_string(kMaxEmbeddingRows) + " rows of 1 to 65536 values)");
    return false;
  }
  FloatLayer l;
  l.kind = FloatLayerKind::kEmbedding;
  l.node = n.name().empty() ? n.output(0) : n.name();
  l.output_size = static_cast<int32_t>(dims[1]);
  l.weight.assign(table.begin(), table.end());
  for (size_t k = 0; k < table.size(); ++k) {
    if (!std::isfinite(l.weight[k])) {
      problem(&n, "the embedding table's value " + std::to_string(k) + " is not finite in float32");
      return false;
    }
  }
  l.input_size = 1;
  s->ids = false;
  s->view.labels.push_back('F');
  s->view.width = l.output_size;
  s->layers.push_back(std::move(l));
  s->last_is_linear = false;
  return true;
}

// A residual Add right after the last layer (layout ops only between): its output plus its
// input, the last layer's residual connection; same axes as before.
bool PathWalker::residual(const onnx::NodeProto& n, const ResidualAdd& r, PathState* s) {
  std::string why;
  if (front_ || !s->layers.empty() || s->selected || s->residual) {
    problem(&n, "a residual add of a recurrent layer's output and input is supported right after the layer only "
                "(before any layer of the head)");
    return false;
  }
  if (!same_axes_as_skip(c_, r, s->view, &why)) {
    problem(&n, why);
    return false;
  }
  s->residual = true;
  return true;
}

namespace {

// Whether a per-step layer commutes with a pooling over time, pool(layer(y)) = layer(pool(y)): a
// Linear (an affine map) with the mean; a non-decreasing elementwise activation with the max.
bool commutes_with_pool(const FloatLayer& l, PoolFn fn) {
  if (l.groups != 1) return false;
  if (fn == PoolFn::kMean) return l.kind == FloatLayerKind::kLinear;
  if (fn != PoolFn::kMax || l.kind != FloatLayerKind::kActivation) return false;
  switch (l.fn) {
    case ActivationFn::kRelu:
    case ActivationFn::kClip:
    case ActivationFn::kSigmoid:
    case ActivationFn::kTanh:
      return true;
    case ActivationFn::kLeakyRelu:
    case ActivationFn::kHardSigmoid:
      return l.alpha >= 0.0;  // slope
    default:
      return false;  // GELU, SiLU, HardSwish dip below zero: not monotone
  }
}

}  // namespace

// A reduction: over time (alone) a mean or a max is a pooling over time, the head's first layer;
// over the features, a LayerNorm's mean (what_it_is).
bool PathWalker::reduction(const onnx::NodeProto& n, PathState* s) {
  std::vector<int64_t> axes;
  std::string reduced;
  size_t time_axis = 0;
  if (axes_of(g_, n, &axes)) {
    for (int64_t a : axes) {
      const int64_t k = a < 0 ? a + static_cast<int64_t>(s->view.labels.size()) : a;
      if (k >= 0 && k < static_cast<int64_t>(s->view.labels.size())) {
        reduced.push_back(s->view.labels[static_cast<size_t>(k)]);
        if (reduced.back() == 'T') time_axis = static_cast<size_t>(k);
      }
    }
  }
  const std::string& op = n.op_type();
  if (reduced == "T" && (op == "ReduceMean" || op == "ReduceMax") && !front_) {
    const PoolFn fn = op == "ReduceMax" ? PoolFn::kMax : PoolFn::kMean;
    bool commutes = true;
    for (const FloatLayer& l : s->layers) commutes = commutes && commutes_with_pool(l, fn);
    if (!read_whole_sequence(n, s, FloatLayerKind::kPoolTime, "a pooling over time", "pool", commutes,
                             "a mean after Linears alone, a max after non-decreasing activations alone are")) {
      return false;
    }
    s->select.pool = op == "ReduceMax" ? PoolFn::kMax : PoolFn::kMean;
    if (int_attribute(n, "keepdims", 1) != 0) {
      s->view.labels[time_axis] = 't';
    } else {
      s->view.labels.erase(time_axis, 1);
    }
    s->last_is_linear = false;
    return true;
  }
  const std::string over_time = import::describe_reduction_over_time(n, reduced);
  problem(&n, over_time.empty() ? what_it_is(g_, n, c_.cell) : over_time);
  return false;
}

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
