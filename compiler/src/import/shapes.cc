#include "shapes.h"

#include <algorithm>
#include <limits>
#include <set>

#include "graph.h"
#include "onnx_model.h"

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
const std::set<std::string> kShapeArithmetic = {"Gather", "Unsqueeze", "Squeeze", "Concat", "Slice",
                                                 "Cast", "Identity", "Add", "Sub", "Mul", "Reshape",
                                                 "ReduceProd"};
// Ops whose output elements are all copies of input 0's elements.
const std::set<std::string> kElementPreserving = {"Expand", "Identity", "Cast", "Reshape", "Squeeze",
                                                   "Unsqueeze", "Transpose", "Tile", "Slice"};
// Nodes the pass never removes, even when nothing reads them: what the importer must name.
const std::set<std::string> kKept = {"LSTM", "GRU", "RNN", "Loop", "Scan", "If"};

constexpr size_t kMaxRank = 64;

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

// A shape tensor's elements as far as they are known (a number, a name or unknown each): a 1-D
// integer tensor, or a scalar.
struct ShapeValue {
  std::vector<Dim> dims;  // a number of any sign (a Reshape's -1), a name, or kUnknownElement
  bool scalar = false;
};
constexpr int64_t kUnknownElement = std::numeric_limits<int64_t>::min();
bool is_number(const Dim& d) { return d.symbol.empty() && d.value != kUnknownElement; }

class ShapePass {
 public:
  ShapePass(onnx::ModelProto* model, bool checked) : model_(model), checked_(checked), g_(*model->mutable_graph()) {}

  ShapeFacts run() {
    infer();
    for (const auto& n : g_.node()) read_before_.insert(n.input().begin(), n.input().end());
    {
      const Graph view(g_);  // read-only, dropped before the nodes change
      for (int k = 0; k < g_.node_size(); ++k) classify(view, g_.node(k));
    }
    rewrite_reshape_targets();
    remove_folded();
    return std::move(facts_);
  }

 private:
  // ONNX's inference where it runs (see with_inferred_shapes); otherwise the shapes the model
  // declares. The shape arithmetic is evaluated here, not by ONNX's data propagation.
  void infer() {
    if (!with_inferred_shapes(model_, checked_, [this](const onnx::GraphProto& g) { read_shapes(g); })) read_shapes(g_);
    // The names of the graph inputs' dynamic axes (not of an initializer listed as an input).
    std::set<std::string> initializers;
    for (const auto& t : g_.initializer()) initializers.insert(t.name());
    for (const auto& v : g_.input()) {
      if (initializers.count(v.name()) || !v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) continue;
      for (const auto& d : v.type().tensor_type().shape().dim()) {
        if (!d.has_dim_value() && d.has_dim_param()) facts_.input_axes.insert(d.dim_param());
      }
    }
  }

  void read_shapes(const onnx::GraphProto& g) {
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

  // A shape tensor's elements (a 1-D integer tensor, or a scalar), as far as they are known:
  // computed from Shape reads (shape_values_), or a constant.
  bool shape_value(const Graph& g, const std::string& name, ShapeValue* out) const {
    const auto it = shape_values_.find(name);
    if (it != shape_values_.end()) {
      *out = it->second;
      return true;
    }
    std::vector<double> v;
    std::vector<int64_t> dims;
    if (name.empty() || !constant_values(g, name, &v, &dims) || dims.size() > 1 || v.size() > kMaxRank) return false;
    *out = ShapeValue{{}, dims.empty()};
    for (double x : v) {
      int64_t i = 0;
      if (!small_int(x, &i)) return false;
      out->dims.push_back(Dim{i, ""});  // a negative number too: a Reshape's -1
    }
    return true;
  }

  // Output 0 of a shape-arithmetic node reading at least one Shape read, evaluated; false when
  // the node is not of the forms the exporters write (it then stays, for the importer to name).
  bool evaluate_shape_op(const Graph& g, const onnx::NodeProto& n, ShapeValue* out) const {
    const std::string& op = n.op_type();
    if (op == "Shape") {
      const Shape* in = n.input_size() == 1 ? facts_.shape(n.input(0)) : nullptr;
      if (in == nullptr) return false;
      const int64_t rank = static_cast<int64_t>(in->size());
      auto clamp_axis = [&](int64_t a) { return std::min(std::max(a < 0 ? a + rank : a, int64_t{0}), rank); };
      const int64_t start = clamp_axis(int_attribute(n, "start", 0)), end = clamp_axis(int_attribute(n, "end", rank));
      for (int64_t k = start; k < end; ++k) {
        const Dim& d = (*in)[static_cast<size_t>(k)];
        out->dims.push_back(d.unknown() ? Dim{kUnknownElement, ""} : d);
      }
      return true;
    }
    bool reads_shape = false;
    std::vector<ShapeValue> in(static_cast<size_t>(n.input_size()));
    for (int k = 0; k < n.input_size(); ++k) {
      reads_shape = reads_shape || shape_values_.count(n.input(k)) > 0;
      if (!shape_value(g, n.input(k), &in[static_cast<size_t>(k)]) && !(op == "Slice" && k > 0)) return false;
    }
    if (!reads_shape || in.empty()) return false;
    const ShapeValue& x = in[0];
    if (op == "Identity" || op == "Cast") {
      *out = x;
    } else if (op == "Gather") {
      if (x.scalar || in.size() != 2 || !axis_is_0(n, 1) || !gather(x, in[1], out)) return false;
    } else if (op == "Unsqueeze" || op == "Squeeze") {
      const bool unsqueeze = op == "Unsqueeze";
      std::vector<int64_t> axes;
      if (x.scalar != unsqueeze || !axes_of(g, n, &axes) || (unsqueeze ? axes.size() != 1 : axes.size() > 1)) return false;
      for (int64_t a : axes) {
        if (a != 0 && a != -1) return false;
      }
      if (!unsqueeze && x.dims.size() != 1) return false;
      *out = ShapeValue{x.dims, !unsqueeze};
    } else if (op == "Concat") {
      if (!axis_is_0(n, 1)) return false;
      for (const ShapeValue& v : in) {
        if (v.scalar) return false;
        out->dims.insert(out->dims.end(), v.dims.begin(), v.dims.end());
      }
    } else if (op == "Slice") {
      if (x.scalar || !slice(g, n, x, out)) return false;
    } else if (op == "Add" || op == "Sub" || op == "Mul") {
      if (in.size() != 2 || !elementwise(op, x, in[1], out)) return false;
    } else if (op == "ReduceProd") {
      // tf2onnx's Tensordot (a Keras Dense on a sequence) multiplies the sizes it merges.
      if (x.scalar || !reduce_prod(g, n, x, out)) return false;
    } else if (op == "Reshape") {
      // torch's dynamo exporter writes a product of sizes as a scalar, then Reshape(p, [-1]).
      if (in.size() != 2 || !reshape_shape_value(x, in[1], out)) return false;
    } else {
      return false;
    }
    return out->dims.size() <= kMaxRank;
  }

  static bool axis_is_0(const onnx::NodeProto& n, int64_t rank) {
    const int64_t axis = int_attribute(n, "axis", 0);
    return axis == 0 || axis == -rank;
  }

  static bool gather(const ShapeValue& x, const ShapeValue& indices, ShapeValue* out) {
    const int64_t size = static_cast<int64_t>(x.dims.size());
    for (const Dim& i : indices.dims) {
      if (!is_number(i) || i.value < -size || i.value >= size) return false;
      out->dims.push_back(x.dims[static_cast<size_t>(i.value < 0 ? i.value + size : i.value)]);
    }
    out->scalar = indices.scalar;
    return true;
  }

  // Slice along axis 0 with step 1 and constant bounds, as ONNX clamps them.
  bool slice(const Graph& g, const onnx::NodeProto& n, const ShapeValue& x, ShapeValue* out) const {
    ShapeValue starts, ends, axes, steps;
    if (n.input_size() < 3 || !shape_value(g, n.input(1), &starts) || !shape_value(g, n.input(2), &ends)) return false;
    if (starts.dims.size() != 1 || ends.dims.size() != 1 || !is_number(starts.dims[0]) || !is_number(ends.dims[0])) {
      return false;
    }
    if (n.input_size() > 3 && !n.input(3).empty() &&
        (!shape_value(g, n.input(3), &axes) || axes.dims.size() != 1 || (axes.dims[0].value != 0 && axes.dims[0].value != -1))) {
      return false;
    }
    if (n.input_size() > 4 && !n.input(4).empty() &&
        (!shape_value(g, n.input(4), &steps) || steps.dims.size() != 1 || steps.dims[0].value != 1)) {
      return false;
    }
    const int64_t size = static_cast<int64_t>(x.dims.size());
    auto bound = [&](int64_t v) { return std::min(std::max(v < 0 ? v + size : v, int64_t{0}), size); };
    const int64_t b = bound(starts.dims[0].value), e = bound(ends.dims[0].value);
    out->dims.assign(x.dims.begin() + b, x.dims.begin() + std::max(b, e));
    return true;
  }

  // The product of a 1-D shape value's elements (unknown unless all are numbers), over axis 0.
  static bool reduce_prod(const Graph& g, const onnx::NodeProto& n, const ShapeValue& x, ShapeValue* out) {
    std::vector<int64_t> axes;
    if (!axes_of(g, n, &axes) || axes.size() > 1 || (axes.size() == 1 && axes[0] != 0 && axes[0] != -1)) return false;
    if (int_attribute(n, "noop_with_empty_axes", 0) != 0 && axes.empty()) return false;
    constexpr int64_t kLimit = int64_t{1} << 30;  // products stay far from overflow
    Dim r{1, ""};
    for (const Dim& d : x.dims) {
      if (!is_number(d) || d.value < 0 || d.value >= kLimit || r.value >= kLimit) {
        r = Dim{kUnknownElement, ""};
        break;
      }
      r.value *= d.value;
    }
    const bool keep = int_attribute(n, "keepdims", 1) != 0;
    *out = ShapeValue{{r}, !keep};
    return true;
  }

  // A shape value of at most one element reshaped to a scalar ([]) or to one axis ([1] or [-1]).
  static bool reshape_shape_value(const ShapeValue& x, const ShapeValue& target, ShapeValue* out) {
    if (target.scalar || target.dims.size() > 1 || x.dims.size() != 1) return false;
    if (target.dims.size() == 1 && !(is_number(target.dims[0]) && (target.dims[0].value == 1 || target.dims[0].value == -1))) {
      return false;
    }
    *out = ShapeValue{x.dims, target.dims.empty()};
    return true;
  }

  // Numbers where both sides are numbers (a scalar broadcast), unknown otherwise.
  static bool elementwise(const std::string& op, const ShapeValue& a, const ShapeValue& b, ShapeValue* out) {
    const size_t size = std::max(a.dims.size(), b.dims.size());
    if ((a.dims.size() != size && a.dims.size() != 1) || (b.dims.size() != size && b.dims.size() != 1)) return false;
    out->scalar = a.scalar && b.scalar;
    for (size_t k = 0; k < size; ++k) {
      const Dim& x = a.dims[a.dims.size() == 1 ? 0 : k];
      const Dim& y = b.dims[b.dims.size() == 1 ? 0 : k];
      Dim r{kUnknownElement, ""};
      constexpr int64_t kLimit = int64_t{1} << 30;  // products stay far from overflow
      if (is_number(x) && is_number(y) && x.value > -kLimit && x.value < kLimit && y.value > -kLimit && y.value < kLimit) {
        r.value = op == "Add" ? x.value + y.value : op == "Sub" ? x.value - y.value : x.value * y.value;
      }
      out->dims.push_back(r);
    }
    return true;
  }

  // numpy's broadcast of two shapes; an axis it cannot tell is unknown.
  static Shape broadcast(const Shape& a, const Shape& b) {
    Shape out(std::max(a.size(), b.size()));
    for (size_t k = 0; k < out.size(); ++k) {
      const Dim* x = k < out.size() - a.size() ? nullptr : &a[k - (out.size() - a.size())];
      const Dim* y = k < out.size() - b.size() ? nullptr : &b[k - (out.size() - b.size())];
      if (x == nullptr || (x->value == 1 && y != nullptr)) out[k] = *y;
      else if (y == nullptr || y->value == 1 || same_dim(*x, *y)) out[k] = *x;
    }
    return out;
  }

  // A shape value as an axis list: its numbers >= 0 and its names (unknown for anything else).
  static Shape as_shape(const ShapeValue& v) {
    Shape s;
    for (const Dim& d : v.dims) s.push_back((is_number(d) && d.value >= 0) || !d.symbol.empty() ? d : Dim{});
    return s;
  }

  // A shape value, or a uniform value, for each node's outputs.
  void classify(const Graph& g, const onnx::NodeProto& n) {
    if (!default_domain(n) || n.output_size() < 1 || n.output(0).empty()) return;
    const std::string& op = n.op_type();
    ShapeValue sv;
    if (kShapeArithmetic.count(op) || op == "Shape") {
      if (evaluate_shape_op(g, n, &sv)) {
        shape_values_[n.output(0)] = sv;
        return;
      }
    }
    UniformValue u;
    bool have = false;
    const bool from_shape = n.input_size() >= 1 && shape_values_.count(n.input(0)) > 0;
    if (op == "ConstantOfShape") {
      const onnx::AttributeProto* v = attribute(n, "value");
      std::vector<double> fill;
      if (v != nullptr && (!v->has_t() || !tensor_values(v->t(), &fill) || fill.size() != 1)) return;
      u.value = v == nullptr ? 0.0 : fill[0];  // 0 is the default fill
      u.origin = node_label(n);
      if (n.input_size() == 1 && shape_value(g, n.input(0), &sv) && !sv.scalar) {
        u.shape = as_shape(sv);
        have = true;
      }
    } else if (kElementPreserving.count(op) && !from_shape && n.input_size() >= 1 && uniform_input(g, n, &u)) {
      for (int k = 1; k < n.input_size(); ++k) {
        if (!n.input(k).empty() && !shape_value(g, n.input(k), &sv)) return;
      }
      const Shape* in = uniform_shape(n.input(0));
      if (op == "Expand" && in != nullptr && n.input_size() == 2 && shape_value(g, n.input(1), &sv) && !sv.scalar) {
        u.shape = broadcast(*in, as_shape(sv));
        have = true;
      } else if ((op == "Identity" || op == "Cast") && in != nullptr) {
        u.shape = *in;
        have = true;
      }
    } else if (op == "Concat" && !from_shape && uniform_concat(g, n, &u)) {
      have = u.shape_known;
    } else {
      return;
    }
    if (!have) {
      if (const Shape* s = facts_.shape(n.output(0))) {
        u.shape = *s;
        have = true;
      } else {
        u.shape.clear();  // not the input's (uniform_of's), which this node may change
      }
    }
    u.shape_known = have && fully_known(u.shape);
    facts_.uniform[n.output(0)] = u;
  }

  // The shape of input 0 of a node making a uniform value: the uniform value's, or the constant's.
  const Shape* uniform_shape(const std::string& name) const {
    if (const UniformValue* u = facts_.uniform_value(name)) return u->shape_known ? &u->shape : nullptr;
    return facts_.shape(name);
  }

  // Input 0 is uniform: one found before, or a constant whose elements are all equal.
  bool uniform_input(const Graph& g, const onnx::NodeProto& n, UniformValue* u) const {
    return uniform_of(g, n.input(0), n, u);
  }
  bool uniform_of(const Graph& g, const std::string& name, const onnx::NodeProto& reader, UniformValue* u) const {
    if (const UniformValue* before = facts_.uniform_value(name)) {
      *u = *before;
      return true;
    }
    const onnx::TensorProto* t = name.empty() ? nullptr : constant_tensor(g, name);
    std::vector<double> v;
    if (t == nullptr || !tensor_values(*t, &v) || v.empty()) return false;
    for (double x : v) {
      if (x != v[0]) return false;
    }
    u->value = v[0];
    u->origin = "the constant '" + name + "' expanded by " + node_label(reader);
    u->shape.clear();
    for (int64_t d : t->dims()) u->shape.push_back(Dim{d, ""});
    u->shape_known = true;
    return true;
  }

  // Uniform values of one number joined by a Concat (tf2onnx's zero state of both directions):
  // that number, over the joined shape where every input's is known.
  bool uniform_concat(const Graph& g, const onnx::NodeProto& n, UniformValue* u) const {
    Shape joined;
    bool known = true;
    const int64_t axis_attr = int_attribute(n, "axis", 0);
    for (int k = 0; k < n.input_size(); ++k) {
      UniformValue v;
      if (!uniform_of(g, n.input(k), n, &v) || (k > 0 && v.value != u->value)) return false;
      if (k == 0) *u = v;
      const Shape* s = v.shape_known ? &v.shape : nullptr;
      const int64_t rank = s == nullptr ? 0 : static_cast<int64_t>(s->size());
      const int64_t axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
      if (s == nullptr || axis < 0 || axis >= rank || (k > 0 && s->size() != joined.size())) {
        known = false;
        continue;
      }
      if (k == 0) {
        joined = *s;
        continue;
      }
      for (int64_t j = 0; j < rank && known; ++j) {
        const Dim& a = joined[static_cast<size_t>(j)];
        const Dim& b = (*s)[static_cast<size_t>(j)];
        if (j == axis) known = a.known() && b.known();
        else known = same_dim(a, b);
      }
      if (known) joined[static_cast<size_t>(axis)].value += (*s)[static_cast<size_t>(axis)].value;
    }
    u->origin = "the values joined by " + node_label(n) + " (" + u->origin + ")";
    u->shape = known ? joined : Shape();
    u->shape_known = known;
    return n.input_size() > 0;
  }

  // A Reshape reading a target computed from Shape gets a constant target: its numbers as they
  // are (0 copies the input's axis, -1 is inferred), 0 for a name equal to the input's axis at the
  // same place, -1 for at most one other (allowzero=1 keeps the node as it is).
  void rewrite_reshape_targets() {
    std::vector<std::pair<int, std::vector<int64_t>>> targets;
    for (int k = 0; k < g_.node_size(); ++k) {
      const onnx::NodeProto& n = g_.node(k);
      if (n.op_type() != "Reshape" || n.input_size() != 2 || !shape_values_.count(n.input(1))) continue;
      if (int_attribute(n, "allowzero", 0) != 0) continue;
      const ShapeValue& t = shape_values_.at(n.input(1));
      const Shape* in = facts_.shape(n.input(0));
      std::vector<int64_t> target;
      int inferred = 0;
      for (size_t j = 0; j < t.dims.size(); ++j) {
        const Dim& d = t.dims[j];
        if (is_number(d) && d.value < -1) {
          inferred = 2;  // not a target: the node stays for the importer to name
        } else if (is_number(d)) {
          target.push_back(d.value);
          inferred += d.value == -1 ? 1 : 0;
        } else if (!d.symbol.empty() && in != nullptr && j < in->size() && same_dim((*in)[j], d)) {
          target.push_back(0);
        } else {
          target.push_back(-1);
          ++inferred;
        }
      }
      if (t.scalar || inferred > 1) continue;
      targets.emplace_back(k, target);
    }
    std::set<std::string> names = targets.empty() ? std::set<std::string>() : value_names(g_);
    for (const auto& [k, target] : targets) {
      onnx::NodeProto& n = *g_.mutable_node(k);
      onnx::TensorProto* t = g_.add_initializer();
      t->set_name(fresh_name(names, n.input(1) + "_target"));
      names.insert(t->name());
      t->set_data_type(onnx::TensorProto::INT64);
      t->add_dims(static_cast<int64_t>(target.size()));
      for (int64_t v : target) t->add_int64_data(v);
      facts_.shapes[t->name()] = Shape{Dim{static_cast<int64_t>(target.size()), ""}};
      n.set_input(1, t->name());
    }
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
  bool checked_;  // ONNX's inference may run (the model as read passed its checker)
  onnx::GraphProto& g_;
  ShapeFacts facts_;
  std::map<std::string, ShapeValue> shape_values_;  // the values computed from Shape reads
  std::set<std::string> read_before_;  // the values some node read before the rewrite
};

}  // namespace

ShapeFacts fold_shapes(onnx::ModelProto* model, bool checked) { return ShapePass(model, checked).run(); }

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
