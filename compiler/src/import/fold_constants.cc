#include "qlstm/compiler/import/fold_constants.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "const_tensor.h"
#include "fold_ops.h"
#include "onnx_model.h"

namespace qlstm {
namespace compiler {
namespace import {
namespace {

using Dims = std::vector<int64_t>;

bool default_domain(const onnx::NodeProto& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

// A Constant node's value: its tensor, or one of opset 12's scalar and list forms.
bool constant_node_value(const onnx::NodeProto& n, ConstTensor* out) {
  if (n.attribute_size() != 1) return false;
  const onnx::AttributeProto& a = n.attribute(0);
  if (a.name() == "value") return a.has_t() && decode(a.t(), out);
  *out = ConstTensor();
  if (a.name() == "value_float" || a.name() == "value_floats") {
    out->type = onnx::TensorProto::FLOAT;
    if (a.name() == "value_float") out->f = {a.f()};
    else out->f.assign(a.floats().begin(), a.floats().end());
  } else if (a.name() == "value_int" || a.name() == "value_ints") {
    out->type = onnx::TensorProto::INT64;
    if (a.name() == "value_int") out->i = {a.i()};
    else out->i.assign(a.ints().begin(), a.ints().end());
  } else {
    return false;
  }
  if (a.name() == "value_floats" || a.name() == "value_ints") out->dims = {out->size()};
  return out->size() <= kMaxFoldElements;
}

// A fully static shape from a ValueInfo (every dim a value); false otherwise.
bool static_dims(const onnx::ValueInfoProto& v, Dims* out) {
  if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return false;
  out->clear();
  for (const auto& d : v.type().tensor_type().shape().dim()) {
    if (!d.has_dim_value() || d.dim_value() < 0) return false;
    out->push_back(d.dim_value());
  }
  return true;
}

class Folder {
 public:
  Folder(onnx::ModelProto* model, int64_t opset, bool checked)
      : model_(model), g_(model->mutable_graph()), opset_(opset), checked_(checked) {
    for (const auto& t : g_->initializer()) {
      initializers_[t.name()] = &t;
      shapes_[t.name()] = Dims(t.dims().begin(), t.dims().end());
    }
    read_shapes(*g_);
  }

  void run() {
    std::vector<bool> folded(static_cast<size_t>(g_->node_size()), false);
    for (int k = 0; k < g_->node_size(); ++k) {
      const onnx::NodeProto& n = g_->node(k);
      if (!default_domain(n)) continue;
      if (n.op_type() == "Constant") {
        ConstTensor c;
        if (n.output_size() == 1 && constant_node_value(n, &c)) remember(n.output(0), std::move(c));
        continue;
      }
      folded[static_cast<size_t>(k)] = foldable_op(n.op_type()) && fold(n);
    }
    rewrite(folded);
  }

 private:
  void read_shapes(const onnx::GraphProto& g) {
    Dims d;
    for (const auto* list : {&g.input(), &g.value_info(), &g.output()}) {
      for (const auto& v : *list) {
        if (static_dims(v, &d)) shapes_.emplace(v.name(), d);
      }
    }
  }

  void remember(const std::string& name, ConstTensor c) {
    shapes_[name] = c.dims;
    values_[name] = std::move(c);
  }

  // The constant value of `name`, decoded once; null when it is not a readable constant.
  const ConstTensor* value(const std::string& name) {
    const auto it = values_.find(name);
    if (it != values_.end()) return &it->second;
    const auto init = initializers_.find(name);
    ConstTensor c;
    if (init == initializers_.end() || !decode(*init->second, &c)) return nullptr;
    return &(values_[name] = std::move(c));
  }

  // The static shape of `name`: declared, a constant's, or (once, when needed) ONNX's inference.
  const Dims* shape(const std::string& name) {
    auto it = shapes_.find(name);
    if (it == shapes_.end() && !inferred_) {
      inferred_ = true;
      infer_shapes();
      it = shapes_.find(name);
    }
    return it == shapes_.end() ? nullptr : &it->second;
  }

  // ONNX's shape inference where it runs (see with_inferred_shapes); a graph it refuses simply has
  // fewer static shapes.
  void infer_shapes() {
    with_inferred_shapes(model_, checked_, [this](const onnx::GraphProto& g) { read_shapes(g); });
  }

  bool fold(const onnx::NodeProto& n) {
    std::vector<ConstTensor> out;
    if (n.op_type() == "Shape") {
      // One input and one output (a damaged node may have more: left for the importer to name).
      const Dims* d = n.input_size() == 1 && n.output_size() == 1 ? shape(n.input(0)) : nullptr;
      out.emplace_back();
      if (d == nullptr || !evaluate_shape(n, *d, &out[0])) return false;
    } else {
      std::vector<const ConstTensor*> in;
      for (const auto& name : n.input()) {
        const ConstTensor* c = name.empty() ? nullptr : value(name);
        if (!name.empty() && c == nullptr) return false;  // not constant
        in.push_back(c);
      }
      if (!evaluate(n, opset_, in, &out) || static_cast<int>(out.size()) != n.output_size()) return false;
    }
    int64_t made = 0;
    for (const ConstTensor& c : out) made += c.size();
    if (created_elements_ + made > kMaxFoldTotal) return false;  // past the budget: left to the model
    created_elements_ += made;
    for (int k = 0; k < n.output_size(); ++k) {
      if (n.output(k).empty()) continue;
      created_.push_back(n.output(k));
      remember(n.output(k), std::move(out[static_cast<size_t>(k)]));
    }
    return true;
  }

  // Folded nodes removed; their outputs that a remaining node or the graph output reads become
  // initializers (the model's order of nodes otherwise unchanged).
  void rewrite(const std::vector<bool>& folded) {
    if (created_.empty()) return;
    onnx::GraphProto kept;
    std::set<std::string> read;
    for (int k = 0; k < g_->node_size(); ++k) {
      if (folded[static_cast<size_t>(k)]) continue;
      read.insert(g_->node(k).input().begin(), g_->node(k).input().end());
      *kept.add_node() = g_->node(k);
    }
    for (const auto& o : g_->output()) read.insert(o.name());
    g_->mutable_node()->Swap(kept.mutable_node());
    for (const auto& name : created_) {
      if (read.count(name)) encode(values_[name], name, g_->add_initializer());
    }
  }

  onnx::ModelProto* model_;
  onnx::GraphProto* g_;
  int64_t opset_;
  bool checked_;  // ONNX's inference may run (the model as read passed its checker)
  std::map<std::string, const onnx::TensorProto*> initializers_;
  std::map<std::string, ConstTensor> values_;
  std::map<std::string, Dims> shapes_;
  std::vector<std::string> created_;
  int64_t created_elements_ = 0;  // of every folded output so far (kMaxFoldTotal)
  bool inferred_ = false;
};

}  // namespace

void fold_constants(onnx::ModelProto* model, int64_t opset, bool checked) { Folder(model, opset, checked).run(); }

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
