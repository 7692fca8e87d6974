#include "graph.h"

#include <cmath>
#include <cstring>
#include <sstream>

namespace qlstm {
namespace compiler {
namespace import {

std::string join(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]);
  return s + "]";
}

std::string fmt(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::string node_label(const onnx::NodeProto& n) {
  return "node '" + (n.name().empty() ? (n.output_size() ? n.output(0) : std::string("?")) : n.name()) +
         "' (" + n.op_type() + ")";
}

const onnx::AttributeProto* attribute(const onnx::NodeProto& n, const char* name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

double float_attribute(const onnx::NodeProto& n, const char* name, double fallback) {
  const onnx::AttributeProto* a = attribute(n, name);
  return a == nullptr ? fallback : static_cast<double>(a->f());
}

int64_t int_attribute(const onnx::NodeProto& n, const char* name, int64_t fallback) {
  const onnx::AttributeProto* a = attribute(n, name);
  return a == nullptr ? fallback : a->i();
}

namespace {

// Elements from raw little-endian bytes or from the typed repeated field, as double.
template <typename Stored, typename Field>
bool typed_values(const std::string& raw, const Field& field, int64_t count, std::vector<double>* out) {
  if (!raw.empty()) {
    if (raw.size() != static_cast<size_t>(count) * sizeof(Stored)) return false;
    for (int64_t k = 0; k < count; ++k) {
      Stored v;
      std::memcpy(&v, raw.data() + k * sizeof(Stored), sizeof(Stored));
      out->push_back(static_cast<double>(v));
    }
    return true;
  }
  if (field.size() != count) return false;
  for (const auto& v : field) out->push_back(static_cast<double>(static_cast<Stored>(v)));
  return true;
}

}  // namespace

// Reads a float, double, int64 or int32 tensor; false for other types or inconsistent sizes.
bool tensor_values(const onnx::TensorProto& t, std::vector<double>* out) {
  int64_t count = 1;
  constexpr int64_t kMaxElements = int64_t{1} << 31;
  for (int64_t d : t.dims()) {
    if (d < 0 || d > kMaxElements) return false;
    count *= d;
    if (count > kMaxElements) return false;
  }
  out->clear();
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT: return typed_values<float>(t.raw_data(), t.float_data(), count, out);
    case onnx::TensorProto::DOUBLE: return typed_values<double>(t.raw_data(), t.double_data(), count, out);
    case onnx::TensorProto::INT64: return typed_values<int64_t>(t.raw_data(), t.int64_data(), count, out);
    case onnx::TensorProto::INT32: return typed_values<int32_t>(t.raw_data(), t.int32_data(), count, out);
    default: return false;
  }
}

// A constant tensor value: an initializer, or a Constant node's value (through Identity).
const onnx::TensorProto* constant_tensor(const Graph& g, const std::string& name) {
  if (const onnx::TensorProto* t = g.initializer(name)) return t;
  const onnx::NodeProto* p = g.producer(name);
  if (p == nullptr) return nullptr;
  if (p->op_type() == "Identity" && p->input_size() == 1 && !p->input(0).empty()) {
    return constant_tensor(g, p->input(0));
  }
  if (p->op_type() == "Constant") {
    const onnx::AttributeProto* v = attribute(*p, "value");
    if (v != nullptr && v->has_t()) return &v->t();
  }
  return nullptr;
}

bool is_const(const Graph& g, const std::string& name) { return constant_tensor(g, name) != nullptr; }

// A constant's values and dims; false when `name` is not a readable constant.
bool constant_values(const Graph& g, const std::string& name, std::vector<double>* v, std::vector<int64_t>* dims) {
  const onnx::TensorProto* t = constant_tensor(g, name);
  if (t == nullptr || !tensor_values(*t, v)) return false;
  if (dims) dims->assign(t->dims().begin(), t->dims().end());
  return true;
}

bool constant_scalar(const Graph& g, const std::string& name, double* x) {
  std::vector<double> v;
  if (!constant_values(g, name, &v) || v.size() != 1) return false;
  *x = v[0];
  return true;
}

bool uniform_value(const Graph& g, const std::string& name, double* value) {
  if (const UniformValue* u = g.uniform(name)) {
    *value = u->value;
    return true;
  }
  std::vector<double> v;
  if (!constant_values(g, name, &v) || v.empty()) return false;
  for (double x : v) {
    if (x != v[0]) return false;
  }
  *value = v[0];
  return true;
}

// A constant read as a count, index or axis: an integer of sane magnitude (a damaged model may
// hold anything, and converting a huge double to int64 is undefined).
bool small_int(double v, int64_t* out) {
  constexpr double kLimit = double(int64_t{1} << 40);
  if (!(v >= -kLimit && v <= kLimit) || v != std::floor(v)) return false;
  *out = static_cast<int64_t>(v);
  return true;
}

bool near(double a, double b) { return std::fabs(a - b) <= 1e-6 * std::max(1.0, std::fabs(b)); }

bool reshape_target(const Graph& g, const onnx::NodeProto& n, std::vector<int64_t>* target) {
  target->clear();
  const onnx::TensorProto* t = n.input_size() >= 2 ? constant_tensor(g, n.input(1)) : nullptr;
  std::vector<double> v;
  if (t == nullptr || !tensor_values(*t, &v)) return false;
  constexpr double kLimit = double(int64_t{1} << 40);
  for (double x : v) {
    if (!(x >= -1.0 && x <= kLimit) || x != std::floor(x)) return false;
    target->push_back(static_cast<int64_t>(x));
  }
  return true;
}

bool axes_of(const Graph& g, const onnx::NodeProto& n, std::vector<int64_t>* axes) {
  axes->clear();
  if (const onnx::AttributeProto* a = attribute(n, "axes")) {
    axes->assign(a->ints().begin(), a->ints().end());
    return true;
  }
  if (n.input_size() >= 2 && !n.input(1).empty()) {
    const onnx::TensorProto* t = constant_tensor(g, n.input(1));
    std::vector<double> v;
    if (t == nullptr || !tensor_values(*t, &v)) return false;
    for (double x : v) {
      // An axis is a small integer; anything else (huge, fractional, NaN) is not read as one.
      if (!(x >= -64.0 && x <= 64.0) || x != std::floor(x)) return false;
      axes->push_back(static_cast<int64_t>(x));
    }
  }
  return true;
}

// The other input of a two-input node, or "" when `name` is not one of them.
std::string other_input(const onnx::NodeProto& n, const std::string& name) {
  if (n.input_size() != 2) return "";
  if (n.input(0) == name) return n.input(1);
  if (n.input(1) == name) return n.input(0);
  return "";
}

// The one node reading `name`, or null; null too when that node has no output (the pattern
// matchers read output(0) of what they find).
const onnx::NodeProto* only_consumer(const Graph& g, const std::string& name) {
  const auto cs = g.data_consumers(name);
  return cs.size() == 1 && !g.is_graph_output(name) && cs[0]->output_size() >= 1 ? cs[0] : nullptr;
}

const onnx::NodeProto* only_consumer_of_type(const Graph& g, const std::string& name, const char* op) {
  const onnx::NodeProto* n = only_consumer(g, name);
  return n != nullptr && n->op_type() == op && n->output_size() >= 1 ? n : nullptr;
}

bool is_binary_with_const(const Graph& g, const onnx::NodeProto* n, const char* op, const std::string& x, double c) {
  if (n == nullptr || n->op_type() != op || n->output_size() < 1) return false;
  const std::string other = other_input(*n, x);
  double v = 0;
  return !other.empty() && constant_scalar(g, other, &v) && near(v, c);
}

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
