#include "qlstm/compiler/onnx_import.h"

#include <onnx/onnx_pb.h>

#include "qlstm/compiler/file_io.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

namespace qlstm {
namespace compiler {
namespace {

// ONNX stacks the gates i, o, f, c. The one place that knows it: the ONNX block of each kernel gate.
constexpr int32_t kOnnxStackIndex[QLSTM_GATE_COUNT] = {
    /* QLSTM_GATE_FORGET */ 2, /* QLSTM_GATE_INPUT */ 0, /* QLSTM_GATE_CELL */ 3,
    /* QLSTM_GATE_OUTPUT */ 1};

// LSTM input and output positions (ONNX operator spec).
enum LstmInput { kX = 0, kW, kR, kB, kSequenceLens, kInitialH, kInitialC, kP };
enum LstmOutput { kY = 0, kYH, kYC };

// Ops that only move data (the layout around the LSTM) or build constants (the initial state).
const std::set<std::string> kStructuralOps = {
    "Constant", "ConstantOfShape", "Shape", "Gather", "Unsqueeze", "Squeeze", "Concat", "Expand",
    "Cast", "Reshape", "Transpose", "Identity", "Slice"};

std::string join(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]);
  return s + "]";
}

class Graph {
 public:
  explicit Graph(const onnx::GraphProto& g) : g_(g) {
    for (const auto& t : g.initializer()) initializers_[t.name()] = &t;
    for (int k = 0; k < g.node_size(); ++k) {
      for (const auto& out : g.node(k).output()) {
        if (!out.empty()) producer_[out] = k;
      }
      for (const auto& in : g.node(k).input()) {
        if (!in.empty()) consumers_[in].push_back(k);
      }
    }
    for (const auto& i : g.input()) inputs_.insert(i.name());
    for (const auto& o : g.output()) outputs_.insert(o.name());
  }
  const onnx::GraphProto& proto() const { return g_; }
  const onnx::TensorProto* initializer(const std::string& n) const {
    const auto it = initializers_.find(n);
    return it == initializers_.end() ? nullptr : it->second;
  }
  const onnx::NodeProto* producer(const std::string& n) const {
    const auto it = producer_.find(n);
    return it == producer_.end() ? nullptr : &g_.node(it->second);
  }
  std::vector<const onnx::NodeProto*> consumers(const std::string& n) const {
    std::vector<const onnx::NodeProto*> out;
    const auto it = consumers_.find(n);
    if (it != consumers_.end()) {
      for (int k : it->second) out.push_back(&g_.node(k));
    }
    return out;
  }
  bool is_graph_input(const std::string& n) const { return inputs_.count(n) && !initializer(n); }
  bool is_graph_output(const std::string& n) const { return outputs_.count(n) > 0; }

 private:
  const onnx::GraphProto& g_;
  std::map<std::string, const onnx::TensorProto*> initializers_;
  std::map<std::string, int> producer_;
  std::map<std::string, std::vector<int>> consumers_;
  std::set<std::string> inputs_, outputs_;
};

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

// Abstract evaluation of a constant subgraph: is every element of `name` the same known value,
// whatever the (possibly input-dependent) shape? That is all "zero initial state" needs.
bool uniform_value(const Graph& g, const std::string& name, double* value, int depth = 0) {
  if (depth > 64) return false;
  if (const onnx::TensorProto* t = g.initializer(name)) {
    std::vector<double> v;
    if (!tensor_values(*t, &v) || v.empty()) return false;
    for (double x : v) {
      if (x != v[0]) return false;
    }
    *value = v[0];
    return true;
  }
  const onnx::NodeProto* p = g.producer(name);
  if (p == nullptr) return false;  // a graph input: known only at run time
  const std::string& op = p->op_type();
  if (op == "Constant") {
    const onnx::AttributeProto* v = attribute(*p, "value");
    if (v == nullptr || !v->has_t()) return false;
    std::vector<double> vals;
    if (!tensor_values(v->t(), &vals) || vals.empty()) return false;
    for (double x : vals) {
      if (x != vals[0]) return false;
    }
    *value = vals[0];
    return true;
  }
  if (op == "ConstantOfShape") {
    const onnx::AttributeProto* v = attribute(*p, "value");
    if (v == nullptr) {
      *value = 0.0;  // the default fill
      return true;
    }
    std::vector<double> vals;
    if (!v->has_t() || !tensor_values(v->t(), &vals) || vals.size() != 1) return false;
    *value = vals[0];
    return true;
  }
  // Ops whose output elements are all copies of input 0's elements.
  static const std::set<std::string> kElementPreserving = {
      "Expand", "Identity", "Cast", "Reshape", "Squeeze", "Unsqueeze", "Transpose", "Tile", "Slice"};
  if (kElementPreserving.count(op) && p->input_size() >= 1) {
    return uniform_value(g, p->input(0), value, depth + 1);
  }
  return false;
}

// Axis labels of a tensor on the data path: 'T' time, 'B' batch, 'F' features, 'D' directions.
using Labels = std::string;

bool apply_transpose(const onnx::NodeProto& n, Labels* l) {
  const onnx::AttributeProto* perm = attribute(n, "perm");
  Labels out;
  if (perm == nullptr) {
    out.assign(l->rbegin(), l->rend());
  } else {
    if (perm->ints_size() != static_cast<int>(l->size())) return false;
    for (int64_t p : perm->ints()) {
      if (p < 0 || p >= static_cast<int64_t>(l->size())) return false;
      out.push_back((*l)[static_cast<size_t>(p)]);
    }
  }
  *l = out;
  return true;
}

// The constant axes of a Squeeze/Unsqueeze (attribute before opset 13, input since).
bool axes_of(const Graph& g, const onnx::NodeProto& n, std::vector<int64_t>* axes);

// Squeeze/Reshape may only drop the size-1 direction axis, or (for an unbatched model) the
// size-1 batch axis.
bool apply_reshape_like(const Graph& g, const onnx::NodeProto& n, bool unbatched, Labels* l) {
  const std::string& op = n.op_type();
  std::vector<int64_t> axes;
  if (!axes_of(g, n, &axes)) return false;
  const int64_t rank = static_cast<int64_t>(l->size());
  if (op == "Squeeze") {
    if (axes.size() != 1) return false;
    const int64_t a = axes[0] < 0 ? axes[0] + rank : axes[0];
    if (a < 0 || a >= rank) return false;
    const char dropped = (*l)[static_cast<size_t>(a)];
    if (dropped != 'D' && !(unbatched && dropped == 'B')) return false;
    l->erase(static_cast<size_t>(a), 1);
    return true;
  }
  if (op == "Reshape") {
    // Only dropping the direction axis: the target has rank 3 and the order of T, B, F is kept.
    if (axes.size() != 3 || l->find('D') == std::string::npos) return false;
    l->erase(l->find('D'), 1);
    return true;
  }
  return false;
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
    for (double x : v) axes->push_back(static_cast<int64_t>(x));
  }
  return true;
}

// Follows the single-consumer chain of layout ops from `start` (with labels) to a graph output.
bool follow_output(const Graph& g, std::string value, Labels labels, bool unbatched,
                   std::string* graph_output, Labels* out_labels, std::vector<std::string>* problems) {
  for (int guard = 0; guard < 16; ++guard) {
    if (g.is_graph_output(value)) {
      if (!g.consumers(value).empty()) {
        problems->push_back("graph: the LSTM output '" + value + "' is both a graph output and consumed");
        return false;
      }
      *graph_output = value;
      *out_labels = labels;
      return true;
    }
    const auto cs = g.consumers(value);
    if (cs.size() != 1) {
      problems->push_back("graph: the LSTM output sequence must reach one graph output through "
                          "layout ops only; '" + value + "' has " + std::to_string(cs.size()) +
                          " consumers");
      return false;
    }
    const onnx::NodeProto& n = *cs[0];
    if (n.output_size() < 1 || n.output(0).empty()) {
      problems->push_back(node_label(n) + ": has no output");
      return false;
    }
    bool ok = false;
    if (n.op_type() == "Transpose") ok = apply_transpose(n, &labels);
    else if (n.op_type() == "Identity") ok = true;
    else if (n.op_type() == "Squeeze" || n.op_type() == "Reshape") ok = apply_reshape_like(g, n, unbatched, &labels);
    if (!ok) {
      if (kStructuralOps.count(n.op_type())) {
        problems->push_back(node_label(n) + ": this layout change of the LSTM output is not supported");
      }  // any other op is reported as an unsupported compute op
      return false;
    }
    value = n.output(0);
  }
  problems->push_back("graph: the LSTM output path is too long");
  return false;
}

// Walks back from the LSTM's X through layout ops to a graph input.
bool follow_input(const Graph& g, std::string value, Labels labels, std::string* graph_input,
                  Labels* in_labels, std::vector<std::string>* problems) {
  for (int guard = 0; guard < 16; ++guard) {
    if (g.is_graph_input(value)) {
      *graph_input = value;
      *in_labels = labels;
      return true;
    }
    const onnx::NodeProto* p = g.producer(value);
    if (p == nullptr) {
      problems->push_back("graph: the LSTM input X ('" + value + "') is not computed from a graph input");
      return false;
    }
    if ((p->op_type() == "Identity" || p->op_type() == "Transpose") &&
        (p->input_size() < 1 || p->input(0).empty())) {
      problems->push_back(node_label(*p) + ": has no input");
      return false;
    }
    if (p->op_type() == "Identity") {
      value = p->input(0);
      continue;
    }
    if (p->op_type() == "Transpose") {
      // labels are the output's; the input's are the inverse permutation.
      const onnx::AttributeProto* perm = attribute(*p, "perm");
      if (perm == nullptr || perm->ints_size() != static_cast<int>(labels.size())) {
        problems->push_back(node_label(*p) + ": this layout change of the LSTM input is not supported");
        return false;
      }
      Labels in(labels.size(), '?');
      for (int k = 0; k < perm->ints_size(); ++k) {
        const int64_t q = perm->ints(k);
        if (q < 0 || q >= static_cast<int64_t>(labels.size())) return false;
        in[static_cast<size_t>(q)] = labels[static_cast<size_t>(k)];
      }
      labels = in;
      value = p->input(0);
      continue;
    }
    if (p->op_type() == "Unsqueeze" && p->input_size() >= 1 && !p->input(0).empty()) {
      // An unbatched input [T, F]: the exporter inserted the batch axis.
      std::vector<int64_t> axes;
      const int64_t rank = static_cast<int64_t>(labels.size());
      if (axes_of(g, *p, &axes) && axes.size() == 1) {
        const int64_t a = axes[0] < 0 ? axes[0] + rank : axes[0];
        if (a >= 0 && a < rank && labels[static_cast<size_t>(a)] == 'B') {
          labels.erase(static_cast<size_t>(a), 1);
          value = p->input(0);
          continue;
        }
      }
    }
    if (kStructuralOps.count(p->op_type())) {
      problems->push_back(node_label(*p) + ": this layout change of the LSTM input is not supported");
    }  // other ops: reported as unsupported compute ops
    return false;
  }
  problems->push_back("graph: the LSTM input path is too long");
  return false;
}

bool read_weight(const Graph& g, const onnx::NodeProto& lstm, int index, const char* what,
                 const std::vector<int64_t>& shape, std::vector<float>* out,
                 std::vector<std::string>* problems) {
  const std::string& name = lstm.input(index);
  const onnx::TensorProto* t = constant_tensor(g, name);
  if (t == nullptr) {
    problems->push_back(node_label(lstm) + ": input " + what + " ('" + name +
                        "') is neither an initializer nor a constant");
    return false;
  }
  const std::vector<int64_t> dims(t->dims().begin(), t->dims().end());
  if (dims != shape) {
    problems->push_back(node_label(lstm) + ": " + what + " has shape " + join(dims) + ", expected " + join(shape));
    return false;
  }
  std::vector<double> v;
  if (!tensor_values(*t, &v) || (t->data_type() != onnx::TensorProto::FLOAT &&
                                  t->data_type() != onnx::TensorProto::DOUBLE)) {
    problems->push_back(node_label(lstm) + ": " + what + " is not a float tensor with consistent data");
    return false;
  }
  out->assign(v.begin(), v.end());
  return true;
}

// Rows [block * H, (block + 1) * H) of a [4H][cols] stack.
std::vector<float> block_rows(const std::vector<float>& stacked, int32_t block, int32_t H, int32_t cols) {
  const size_t n = static_cast<size_t>(H) * static_cast<size_t>(cols);
  return std::vector<float>(stacked.begin() + static_cast<ptrdiff_t>(block * n),
                            stacked.begin() + static_cast<ptrdiff_t>((block + 1) * n));
}

[[noreturn]] void refuse(const std::string& origin, const std::vector<std::string>& problems) {
  std::string msg = origin + ": the model is outside what qlstm compiles:";
  for (const auto& p : problems) msg += "\n  " + p;
  throw CompileError(msg);
}

}  // namespace

OnnxLstm import_onnx_bytes(const std::string& bytes, const std::string& origin) {
  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromString(bytes)) {
    throw CompileError(origin + ": not a valid ONNX model (the protobuf does not parse)");
  }
  if (!model.has_graph()) throw CompileError(origin + ": the ONNX model has no graph");
  OnnxLstm r;
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") r.opset = o.version();
  }
  if (r.opset < 7) {
    throw CompileError(origin + ": default-domain opset " + std::to_string(r.opset) +
                       " is too old (LSTM as supported needs opset 7 or newer)");
  }
  const Graph g(model.graph());
  std::vector<std::string> problems;
  std::vector<const onnx::NodeProto*> lstms;
  for (const auto& n : g.proto().node()) {
    if (n.op_type() == "LSTM") lstms.push_back(&n);
  }
  if (lstms.empty()) problems.push_back("graph: no LSTM node");
  if (lstms.size() > 1) {
    std::string names;
    for (const auto* n : lstms) names += (names.empty() ? "'" : ", '") + n->name() + "'";
    problems.push_back("graph: " + std::to_string(lstms.size()) + " LSTM nodes (" + names +
                       "); stacked layers are not supported yet, only one LSTM");
  }
  for (const auto& n : g.proto().node()) {
    if (n.op_type() != "LSTM" && !kStructuralOps.count(n.op_type())) {
      problems.push_back(node_label(n) + ": op '" + n.op_type() +
                         "' is not supported (only one LSTM with layout ops around it)");
    }
  }
  if (lstms.size() != 1) refuse(origin, problems);
  const onnx::NodeProto& lstm = *lstms[0];
  r.node_name = lstm.name();
  const std::string label = node_label(lstm);

  int64_t hidden = -1, layout = 0;
  bool forward = true;   // one direction (forward or reverse): bidirectional doubles the weights' shapes
  bool reverse = false;  // time runs backwards (the kernel walks it so; no copy)
  for (const auto& a : lstm.attribute()) {
    const std::string& an = a.name();
    if (an == "hidden_size") {
      hidden = a.i();
    } else if (an == "layout") {
      layout = a.i();
      if (layout != 0 && layout != 1) problems.push_back(label + ": layout " + std::to_string(layout) + " is invalid");
    } else if (an == "direction") {
      if (a.s() == "reverse") {
        reverse = true;
      } else if (a.s() != "forward") {
        forward = false;
        problems.push_back(label + ": direction '" + a.s() + "' is not supported (forward or reverse only)");
      }
    } else if (an == "clip") {
      problems.push_back(label + ": attribute 'clip' is not supported (the kernel has no pre-activation clip)");
    } else if (an == "input_forget") {
      if (a.i() != 0) problems.push_back(label + ": attribute 'input_forget' = " + std::to_string(a.i()) + " is not supported");
    } else if (an == "activations") {
      std::vector<std::string> acts(a.strings().begin(), a.strings().end());
      if (acts != std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}) {
        std::string s;
        for (const auto& x : acts) s += (s.empty() ? "" : ", ") + x;
        problems.push_back(label + ": activations " + s + " are not supported (only Sigmoid, Tanh, Tanh)");
      }
    } else if (an == "activation_alpha" || an == "activation_beta") {
      problems.push_back(label + ": attribute '" + an + "' is not supported");
    } else {
      problems.push_back(label + ": unknown attribute '" + an + "'");
    }
  }
  auto present = [&](int k) { return lstm.input_size() > k && !lstm.input(k).empty(); };
  auto used = [&](int k) {
    return lstm.output_size() > k && !lstm.output(k).empty() &&
           (g.is_graph_output(lstm.output(k)) || !g.consumers(lstm.output(k)).empty());
  };
  if (present(kSequenceLens)) problems.push_back(label + ": input sequence_lens is not supported (all sequences run to T)");
  if (present(kP)) problems.push_back(label + ": peephole weights (input P) are not supported");
  for (int k : {kInitialH, kInitialC}) {
    if (!present(k)) continue;
    double v = 0;
    if (!uniform_value(g, lstm.input(k), &v) || v != 0.0) {
      problems.push_back(label + ": " + (k == kInitialH ? "initial_h" : "initial_c") +
                         " is not a constant zero (a given initial state is not supported yet)");
    }
  }
  if (used(kYH)) problems.push_back(label + ": output Y_h is used (final states as outputs are not supported yet)");
  if (used(kYC)) problems.push_back(label + ": output Y_c is used (final states as outputs are not supported yet)");
  if (!present(kX) || !present(kW) || !present(kR)) {
    problems.push_back(label + ": inputs X, W and R are required");
    refuse(origin, problems);
  }
  if (hidden < 1) problems.push_back(label + ": attribute hidden_size missing or < 1");

  // Shapes: W [1][4H][I] fixes I; R [1][4H][H]; B [1][8H].
  const onnx::TensorProto* w = constant_tensor(g, lstm.input(kW));
  int64_t input_size = -1;
  if (w != nullptr && w->dims_size() == 3) input_size = w->dims(2);
  if (forward && w != nullptr && (w->dims_size() != 3 || input_size < 1)) {
    problems.push_back(label + ": W must have shape [1, 4*hidden_size, input_size]");
  }
  std::vector<float> W, R, B;
  if (!forward) {
    // reported above
  } else if (hidden >= 1 && input_size >= 1) {
    read_weight(g, lstm, kW, "W", {1, 4 * hidden, input_size}, &W, &problems);
    read_weight(g, lstm, kR, "R", {1, 4 * hidden, hidden}, &R, &problems);
    if (present(kB)) read_weight(g, lstm, kB, "B", {1, 8 * hidden}, &B, &problems);
  } else if (w == nullptr) {
    read_weight(g, lstm, kW, "W", {}, &W, &problems);
  }

  // Data layout: X is [T][B][I] (layout 0) or [B][T][I] (layout 1).
  Labels in_labels, out_labels;
  const bool in_ok = follow_input(g, lstm.input(kX), layout == 0 ? "TBF" : "BTF", &r.input_name,
                                  &in_labels, &problems);
  const bool unbatched = in_ok && in_labels.find('B') == std::string::npos;
  const bool out_ok = in_ok && lstm.output_size() > 0 && !lstm.output(kY).empty() &&
                      follow_output(g, lstm.output(kY), layout == 0 ? "TDBF" : "BTDF", unbatched,
                                    &r.output_name, &out_labels, &problems);
  if (lstm.output_size() == 0 || lstm.output(kY).empty()) problems.push_back(label + ": output Y is not used");
  if (in_ok && out_ok) {
    out_labels.erase(std::remove(out_labels.begin(), out_labels.end(), 'D'), out_labels.end());
    if (unbatched) out_labels.erase(std::remove(out_labels.begin(), out_labels.end(), 'B'), out_labels.end());
    if ((in_labels != "TBF" && in_labels != "BTF" && in_labels != "TF") || in_labels != out_labels) {
      problems.push_back("graph: input layout " + in_labels + " and output layout " + out_labels +
                         " (T time, B batch, F features) are not both [T, B, F], [B, T, F] or [T, F]");
    }
    // An unbatched model is one sequence: [T, F] is laid out as batch-major with B = 1.
    r.batch_first = in_labels != "TBF";
    r.unbatched = unbatched;
  }
  if (!problems.empty()) refuse(origin, problems);

  for (const auto& i : g.proto().input()) {
    if (i.name() != r.input_name) continue;
    for (const auto& d : i.type().tensor_type().shape().dim()) {
      r.input_shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
    }
  }
  const int32_t I = static_cast<int32_t>(input_size), H = static_cast<int32_t>(hidden);
  FloatLstm& f = r.lstm;
  f.input_size = I;
  f.hidden_size = H;
  f.reverse = reverse;
  for (int32_t gate = 0; gate < QLSTM_GATE_COUNT; ++gate) {
    const int32_t blk = kOnnxStackIndex[gate];
    FloatGate& fg = f.gates[static_cast<size_t>(gate)];
    fg.w_x = block_rows(W, blk, H, I);
    fg.w_h = block_rows(R, blk, H, H);
    if (B.empty()) {
      fg.bias_x.assign(static_cast<size_t>(H), 0.0f);
      fg.bias_h.assign(static_cast<size_t>(H), 0.0f);
    } else {
      fg.bias_x = block_rows(B, blk, H, 1);
      fg.bias_h = block_rows(B, 4 + blk, H, 1);
    }
  }
  try {
    f.validate();
  } catch (const CompileError& e) {
    throw CompileError(origin + ": " + label + ": " + e.what());
  }
  return r;
}

OnnxLstm import_onnx(const std::string& path) { return import_onnx_bytes(read_file(path), path); }

}  // namespace compiler
}  // namespace qlstm
