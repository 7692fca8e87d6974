#include "shapes.h"

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <set>

#include "graph.h"

namespace qlstm {
namespace compiler {
namespace import {

bool same_dim(const Dim& a, const Dim& b) {
  if (a.known() || b.known()) return a.value == b.value;
  return !a.symbol.empty() && a.symbol == b.symbol;
}

std::string dim_string(const Dim& d) { return d.known() ? std::to_string(d.value) : d.symbol.empty() ? "?" : d.symbol; }

std::string shape_string(const Shape& s) {
  std::string out = "[";
  for (size_t k = 0; k < s.size(); ++k) out += (k ? ", " : "") + dim_string(s[k]);
  return out + "]";
}

namespace {

// Ops that compute on shapes (the exporters' Shape -> Gather -> Unsqueeze -> Concat chains).
const std::set<std::string> kShapeArithmetic = {"Gather", "Unsqueeze", "Squeeze", "Concat", "Slice", "Cast",
                                                 "Reshape", "Identity", "Add", "Sub", "Mul", "Div"};
// Ops whose output elements are all copies of input 0's elements.
const std::set<std::string> kElementPreserving = {"Expand", "Identity", "Cast", "Reshape", "Squeeze",
                                                   "Unsqueeze", "Transpose", "Tile", "Slice"};
// Nodes the pass never removes, even when nothing reads them: what the importer must name.
const std::set<std::string> kKept = {"LSTM", "GRU", "RNN", "Loop", "Scan", "If"};

constexpr size_t kMaxRank = 64;
constexpr double kMaxDim = double(int64_t{1} << 62);

bool default_domain(const onnx::NodeProto& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

bool read_shape(const onnx::TypeProto& t, Shape* out) {
  if (!t.has_tensor_type() || !t.tensor_type().has_shape()) return false;
  out->clear();
  for (const auto& d : t.tensor_type().shape().dim()) {
    Dim dim;
    if (d.has_dim_value() && d.dim_value() >= 0) dim.value = d.dim_value();
    else if (d.has_dim_param()) dim.symbol = d.dim_param();
    out->push_back(dim);
  }
  return true;
}

bool fully_known(const Shape& s) {
  for (const Dim& d : s) {
    if (d.unknown()) return false;
  }
  return true;
}

class ShapePass {
 public:
  explicit ShapePass(onnx::ModelProto* model) : model_(model), g_(*model->mutable_graph()) {}

  ShapeFacts run() {
    infer();
    {
      const Graph view(g_);  // read-only, dropped before the rewrite
      for (int k = 0; k < g_.node_size(); ++k) classify(view, g_.node(k));
    }
    for (const auto& n : g_.node()) read_before_.insert(n.input().begin(), n.input().end());
    rewrite_reshape_targets();
    remove_folded();
    return std::move(facts_);
  }

 private:
  // ONNX's inference on a copy (the model keeps its own value_info), on a model ONNX's checker
  // passes (its inference assumes one: damaged attributes crash it); any other keeps the shapes it
  // declares.
  void infer() {
    onnx::ModelProto copy = *model_;
    try {
      onnx::checker::check_model(copy);
      onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(),
                                         onnx::ShapeInferenceOptions(false, 0, /*data_prop=*/true));
    } catch (const std::exception&) {
      copy = *model_;
    }
    const onnx::GraphProto& g = copy.graph();
    Shape s;
    for (const auto& t : g.initializer()) {
      s.clear();
      for (int64_t d : t.dims()) s.push_back(Dim{d, ""});
      facts_.shapes[t.name()] = s;
    }
    for (const auto* list : {&g.input(), &g.value_info(), &g.output()}) {
      for (const auto& v : *list) {
        if (read_shape(v.type(), &s)) facts_.shapes[v.name()] = s;
      }
    }
  }

  bool is_constant(const Graph& g, const std::string& name) const { return constant_tensor(g, name) != nullptr; }

  // Shape data (a value computed from Shape reads), or a uniform value, for each node's outputs.
  void classify(const Graph& g, const onnx::NodeProto& n) {
    if (!default_domain(n) || n.output_size() < 1 || n.output(0).empty()) return;
    const std::string& op = n.op_type();
    if (op == "Shape") {
      shape_data_.insert(n.output(0));
      return;
    }
    UniformValue u;
    std::vector<double> dims;
    const bool from_shape = n.input_size() >= 1 && shape_data_.count(n.input(0)) > 0;
    if (op == "ConstantOfShape") {
      const onnx::AttributeProto* v = attribute(n, "value");
      std::vector<double> fill;
      if (v != nullptr && (!v->has_t() || !tensor_values(v->t(), &fill) || fill.size() != 1)) return;
      u.value = v == nullptr ? 0.0 : fill[0];  // 0 is the default fill
      u.origin = node_label(n);
    } else if (kElementPreserving.count(op) && !from_shape && n.input_size() >= 1 && uniform_input(g, n, &u)) {
      for (int k = 1; k < n.input_size(); ++k) {
        const std::string& in = n.input(k);
        if (!in.empty() && !shape_data_.count(in) && !is_constant(g, in)) return;
      }
    } else {
      bool any_shape = false, all_known = n.input_size() > 0;
      for (const auto& in : n.input()) {
        if (in.empty()) continue;
        const bool shape = shape_data_.count(in) > 0;
        any_shape = any_shape || shape;
        all_known = all_known && (shape || is_constant(g, in));
      }
      if (kShapeArithmetic.count(op) && any_shape && all_known) shape_data_.insert(n.output(0));
      return;
    }
    bool have = false;
    if (const Shape* s = facts_.shape(n.output(0))) {
      u.shape = *s;
      have = true;
    } else if (op == "ConstantOfShape" && constant_values(g, n.input(0), &dims) && dims.size() <= kMaxRank) {
      for (double d : dims) u.shape.push_back(Dim{d >= 0 && d <= kMaxDim ? static_cast<int64_t>(d) : -1, ""});
      have = true;
    }
    u.shape_known = have && fully_known(u.shape);
    facts_.uniform[n.output(0)] = u;
  }

  // Input 0 is uniform: one found before, or a constant whose elements are all equal.
  bool uniform_input(const Graph& g, const onnx::NodeProto& n, UniformValue* u) const {
    if (const UniformValue* before = facts_.uniform_value(n.input(0))) {
      *u = *before;
      return true;
    }
    const onnx::TensorProto* t = constant_tensor(g, n.input(0));
    std::vector<double> v;
    if (t == nullptr || !tensor_values(*t, &v) || v.empty()) return false;
    for (double x : v) {
      if (x != v[0]) return false;
    }
    u->value = v[0];
    u->origin = "the constant '" + n.input(0) + "' expanded by " + node_label(n);
    return true;
  }

  // A Reshape reading a target computed from Shape gets a constant target: each axis of its
  // inferred output a number, 0 where it copies the input's axis at the same place, -1 for at
  // most one other (sizes that are zero or allowzero=1 keep the node as it is).
  void rewrite_reshape_targets() {
    for (auto& n : *g_.mutable_node()) {
      if (n.op_type() != "Reshape" || n.input_size() != 2 || !shape_data_.count(n.input(1))) continue;
      if (n.output_size() < 1 || int_attribute(n, "allowzero", 0) != 0) continue;
      const Shape* in = facts_.shape(n.input(0));
      const Shape* out = facts_.shape(n.output(0));
      if (in == nullptr || out == nullptr || !fully_known(*out)) continue;
      std::vector<int64_t> target;
      int unresolved = 0;
      for (size_t k = 0; k < out->size(); ++k) {
        const Dim& d = (*out)[k];
        if (d.known()) target.push_back(d.value);
        else if (k < in->size() && same_dim((*in)[k], d)) target.push_back(0);
        else target.push_back(-1), ++unresolved;
        if (d.value == 0) unresolved = 2;  // 0 would read as "copy"
      }
      if (unresolved > 1) continue;
      onnx::TensorProto* t = g_.add_initializer();
      t->set_name(unused_name(n.input(1) + "_target"));
      t->set_data_type(onnx::TensorProto::INT64);
      t->add_dims(static_cast<int64_t>(target.size()));
      for (int64_t v : target) t->add_int64_data(v);
      facts_.shapes[t->name()] = Shape{Dim{static_cast<int64_t>(target.size()), ""}};
      n.set_input(1, t->name());
    }
  }

  std::string unused_name(const std::string& base) const {
    std::set<std::string> names;
    for (const auto& t : g_.initializer()) names.insert(t.name());
    for (const auto& n : g_.node()) names.insert(n.output().begin(), n.output().end());
    for (const auto& i : g_.input()) names.insert(i.name());
    std::string name = base;
    for (int k = 1; names.count(name); ++k) name = base + "_" + std::to_string(k);
    return name;
  }

  // Removes the producers of uniform values of known shape (the value lives in ShapeFacts), then,
  // last to first, every node whose outputs were read and whose readers all left: the Shape
  // reads, the shape arithmetic and the layout ops only they read. A node nothing read before the
  // pass stays (the importer names dead ends).
  void remove_folded() {
    std::set<std::string> outputs;
    for (const auto& o : g_.output()) outputs.insert(o.name());
    const int count = g_.node_size();
    std::map<std::string, std::vector<int>> readers;
    for (int k = 0; k < count; ++k) {
      for (const auto& in : g_.node(k).input()) readers[in].push_back(k);
    }
    std::vector<bool> removed(static_cast<size_t>(count), false);
    for (int k = count - 1; k >= 0; --k) {
      const onnx::NodeProto& n = g_.node(k);
      if (!default_domain(n) || kKept.count(n.op_type())) continue;
      bool read = false, output = false, still_read = false, uniform = n.output_size() > 0;
      for (const auto& out : n.output()) {
        read = read || read_before_.count(out) > 0;
        output = output || outputs.count(out) > 0;
        const UniformValue* u = facts_.uniform_value(out);
        uniform = uniform && u != nullptr && u->shape_known;
        for (int r : readers[out]) still_read = still_read || !removed[static_cast<size_t>(r)];
      }
      removed[static_cast<size_t>(k)] = read && !output && (uniform || !still_read);
    }
    onnx::GraphProto kept;
    for (int k = 0; k < count; ++k) {
      if (!removed[static_cast<size_t>(k)]) *kept.add_node() = g_.node(k);
    }
    g_.mutable_node()->Swap(kept.mutable_node());
  }

  onnx::ModelProto* model_;
  onnx::GraphProto& g_;
  ShapeFacts facts_;
  std::set<std::string> shape_data_;
  std::set<std::string> read_before_;  // the values some node read before the rewrite
};

}  // namespace

ShapeFacts fold_shapes(onnx::ModelProto* model) { return ShapePass(model).run(); }

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
