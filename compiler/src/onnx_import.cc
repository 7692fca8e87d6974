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
  // The nodes reading `n`'s values (a Shape node reads only its shape: the exporter's zero state).
  std::vector<const onnx::NodeProto*> data_consumers(const std::string& n) const {
    std::vector<const onnx::NodeProto*> out;
    for (const auto* c : consumers(n)) {
      if (c->op_type() != "Shape") out.push_back(c);
    }
    return out;
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
bool apply_reshape_like(const Graph& g, const onnx::NodeProto& n, bool unbatched, int32_t directions, Labels* l) {
  const std::string& op = n.op_type();
  std::vector<int64_t> axes;
  if (!axes_of(g, n, &axes)) return false;
  const int64_t rank = static_cast<int64_t>(l->size());
  if (op == "Squeeze") {
    if (axes.size() != 1) return false;
    const int64_t a = axes[0] < 0 ? axes[0] + rank : axes[0];
    if (a < 0 || a >= rank) return false;
    const char dropped = (*l)[static_cast<size_t>(a)];
    if (!(dropped == 'D' && directions == 1) && !(unbatched && dropped == 'B')) return false;
    l->erase(static_cast<size_t>(a), 1);
    return true;
  }
  if (op == "Reshape") {
    // Only dropping the direction axis (one direction), or merging it into the features (two:
    // [.., 2, H] -> [.., 2H], forward first): the target has rank 3 and T, B, F keep their order.
    const size_t d = l->find('D');
    if (axes.size() != 3 || d == std::string::npos) return false;
    if (directions == 2 && (d + 1 >= l->size() || (*l)[d + 1] != 'F')) return false;
    l->erase(d, 1);
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
    for (double x : v) {
      // An axis is a small integer; anything else (huge, fractional, NaN) is not read as one.
      if (!(x >= -64.0 && x <= 64.0) || x != std::floor(x)) return false;
      axes->push_back(static_cast<int64_t>(x));
    }
  }
  return true;
}

// Follows the single-consumer chain of layout ops from `start` (with labels) to a graph output.
// Or to the X of another LSTM node (*next_lstm is then set).
bool follow_output(const Graph& g, std::string value, Labels labels, bool unbatched, int32_t directions,
                   std::string* graph_output, Labels* out_labels, const onnx::NodeProto** next_lstm,
                   std::vector<std::string>* problems) {
  *next_lstm = nullptr;
  for (int guard = 0; guard < 16; ++guard) {
    const auto next = g.data_consumers(value);
    if (next.size() == 1 && next[0]->op_type() == "LSTM" && !g.is_graph_output(value)) {
      if (next[0]->input_size() < 1 || next[0]->input(0) != value) {
        problems->push_back(node_label(*next[0]) + ": an LSTM output feeds an input other than X");
        return false;
      }
      *next_lstm = next[0];
      *out_labels = labels;
      return true;
    }
    if (g.is_graph_output(value)) {
      if (!g.data_consumers(value).empty()) {
        problems->push_back("graph: the LSTM output '" + value + "' is both a graph output and consumed");
        return false;
      }
      *graph_output = value;
      *out_labels = labels;
      return true;
    }
    const auto cs = g.data_consumers(value);
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
    else if (n.op_type() == "Squeeze" || n.op_type() == "Reshape") ok = apply_reshape_like(g, n, unbatched, directions, &labels);
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

namespace {

// One LSTM node, checked and read.
struct NodeInfo {
  const onnx::NodeProto* node = nullptr;
  std::string label;
  int64_t hidden = -1, layout = 0, input_size = -1;
  int32_t directions = 1;
  bool reverse = false;  // one direction, walking time backwards (the kernel does so; no copy)
  std::vector<float> W, R, B;
};

bool present(const onnx::NodeProto& n, int k) { return n.input_size() > k && !n.input(k).empty(); }
bool used(const Graph& g, const onnx::NodeProto& n, int k) {
  return n.output_size() > k && !n.output(k).empty() &&
         (g.is_graph_output(n.output(k)) || !g.consumers(n.output(k)).empty());
}

// Attributes, inputs and weights of one node; false (with problems) when it cannot be read.
bool read_node(const Graph& g, const onnx::NodeProto& lstm, NodeInfo* info, std::vector<std::string>* problems) {
  const size_t before = problems->size();
  info->node = &lstm;
  info->label = node_label(lstm);
  const std::string& label = info->label;
  bool weights_readable = true;
  for (const auto& a : lstm.attribute()) {
    const std::string& an = a.name();
    if (an == "hidden_size") {
      info->hidden = a.i();
    } else if (an == "layout") {
      info->layout = a.i();
      if (info->layout != 0 && info->layout != 1) problems->push_back(label + ": layout " + std::to_string(info->layout) + " is invalid");
    } else if (an == "direction") {
      if (a.s() == "reverse") {
        info->reverse = true;
      } else if (a.s() == "bidirectional") {
        info->directions = 2;
      } else if (a.s() != "forward") {
        weights_readable = false;
        problems->push_back(label + ": direction '" + a.s() + "' is invalid (forward, reverse or bidirectional)");
      }
    } else if (an == "clip") {
      problems->push_back(label + ": attribute 'clip' is not supported (the kernel has no pre-activation clip)");
    } else if (an == "input_forget") {
      if (a.i() != 0) problems->push_back(label + ": attribute 'input_forget' = " + std::to_string(a.i()) + " is not supported (the kernel has independent input and forget gates)");
    } else if (an == "activations") {
      std::vector<std::string> acts(a.strings().begin(), a.strings().end());
      std::vector<std::string> want;
      for (int32_t d = 0; d < info->directions || d < static_cast<int32_t>(acts.size()) / 3; ++d) {
        want.insert(want.end(), {"Sigmoid", "Tanh", "Tanh"});
      }
      if (acts != want) {
        std::string s;
        for (const auto& x : acts) s += (s.empty() ? "" : ", ") + x;
        problems->push_back(label + ": activations " + s + " are not supported (only Sigmoid, Tanh, Tanh: the kernel's tables)");
      }
    } else if (an == "activation_alpha" || an == "activation_beta") {
      problems->push_back(label + ": attribute '" + an + "' is not supported (the kernel's activations have no parameters)");
    } else {
      problems->push_back(label + ": unknown attribute '" + an + "'");
    }
  }
  if (present(lstm, kSequenceLens)) problems->push_back(label + ": input sequence_lens is not supported (all sequences run to T)");
  if (present(lstm, kP)) problems->push_back(label + ": peephole weights (input P) are not supported (the kernel has no peephole path)");
  if (!present(lstm, kX) || !present(lstm, kW) || !present(lstm, kR)) {
    problems->push_back(label + ": inputs X, W and R are required");
    return false;
  }
  if (info->hidden < 1) problems->push_back(label + ": attribute hidden_size missing or < 1");
  // Shapes: W [D][4H][I] fixes I; R [D][4H][H]; B [D][8H].
  const int64_t D = info->directions, H = info->hidden;
  const onnx::TensorProto* w = constant_tensor(g, lstm.input(kW));
  if (w != nullptr && w->dims_size() == 3) info->input_size = w->dims(2);
  if (weights_readable && w != nullptr && (w->dims_size() != 3 || info->input_size < 1)) {
    problems->push_back(label + ": W must have shape [num_directions, 4*hidden_size, input_size]");
  }
  if (!weights_readable) {
    // reported above
  } else if (H >= 1 && info->input_size >= 1) {
    read_weight(g, lstm, kW, "W", {D, 4 * H, info->input_size}, &info->W, problems);
    read_weight(g, lstm, kR, "R", {D, 4 * H, H}, &info->R, problems);
    if (present(lstm, kB)) read_weight(g, lstm, kB, "B", {D, 8 * H}, &info->B, problems);
  } else if (w == nullptr) {
    read_weight(g, lstm, kW, "W", {}, &info->W, problems);
  }
  return problems->size() == before;
}

// One op's float LSTM: direction d of the node's weights.
FloatLstm node_op(const NodeInfo& n, int32_t d) {
  const int32_t I = static_cast<int32_t>(n.input_size), H = static_cast<int32_t>(n.hidden);
  FloatLstm f;
  f.input_size = I;
  f.hidden_size = H;
  f.reverse = n.directions == 2 ? d == 1 : n.reverse;
  const size_t w_size = static_cast<size_t>(4) * H * I, r_size = static_cast<size_t>(4) * H * H, b_size = static_cast<size_t>(8) * H;
  const std::vector<float> W(n.W.begin() + static_cast<ptrdiff_t>(d * w_size), n.W.begin() + static_cast<ptrdiff_t>((d + 1) * w_size));
  const std::vector<float> R(n.R.begin() + static_cast<ptrdiff_t>(d * r_size), n.R.begin() + static_cast<ptrdiff_t>((d + 1) * r_size));
  std::vector<float> B;
  if (!n.B.empty()) B.assign(n.B.begin() + static_cast<ptrdiff_t>(d * b_size), n.B.begin() + static_cast<ptrdiff_t>((d + 1) * b_size));
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
  return f;
}

// Where one node's initial_h or initial_c comes from.
struct StateOrigin {
  StateSource source = StateSource::kZero;
  std::vector<std::vector<float>> constant;  // kConstant: per direction, [H]
  std::string graph_input;                   // kInput
  int64_t first_row = 0;                     // kInput: the node's first row of the graph input
};

bool trace_state(const Graph& g, const NodeInfo& n, int k, StateOrigin* o, std::vector<std::string>* problems) {
  const char* what = k == kInitialH ? "initial_h" : "initial_c";
  if (!present(*n.node, k)) return true;
  const std::string& name = n.node->input(k);
  double v = 0;
  if (uniform_value(g, name, &v) && v == 0.0) return true;
  const int64_t D = n.directions, H = n.hidden;
  if (const onnx::TensorProto* t = constant_tensor(g, name)) {
    std::vector<double> vals;
    const std::vector<int64_t> dims(t->dims().begin(), t->dims().end());
    if (!tensor_values(*t, &vals) || dims.size() != 3 || dims[0] != D || dims[2] != H || dims[1] < 1) {
      problems->push_back(n.label + ": the constant " + what + " has shape " + join(dims) + ", expected [" +
                          std::to_string(D) + ", batch, " + std::to_string(H) + "]");
      return false;
    }
    o->source = StateSource::kConstant;
    for (int64_t d = 0; d < D; ++d) {
      const size_t base = static_cast<size_t>(d * dims[1] * H);
      o->constant.emplace_back(vals.begin() + static_cast<ptrdiff_t>(base), vals.begin() + static_cast<ptrdiff_t>(base + H));
      for (int64_t b = 1; b < dims[1]; ++b) {
        for (int64_t u = 0; u < H; ++u) {
          if (vals[base + static_cast<size_t>(b * H + u)] != vals[base + static_cast<size_t>(u)]) {
            problems->push_back(n.label + ": the constant " + what + " differs between batch rows (only a state "
                                "shared by every row can be compiled in; feed it as a graph input instead)");
            return false;
          }
        }
      }
    }
    return true;
  }
  // A graph input, or rows of one (Slice along axis 0, which torch emits per layer).
  std::string value = name;
  int64_t first = 0;
  for (int guard = 0; guard < 16; ++guard) {
    if (g.is_graph_input(value)) {
      o->source = StateSource::kInput;
      o->graph_input = value;
      o->first_row = first;
      return true;
    }
    const onnx::NodeProto* p = g.producer(value);
    if (p != nullptr && p->op_type() == "Identity" && p->input_size() == 1) {
      value = p->input(0);
      continue;
    }
    if (p != nullptr && p->op_type() == "Slice" && p->input_size() >= 3 && !p->input(0).empty()) {
      std::vector<double> starts, ends, axes = {0}, steps = {1};
      const onnx::TensorProto* st = constant_tensor(g, p->input(1));
      const onnx::TensorProto* en = constant_tensor(g, p->input(2));
      const onnx::TensorProto* ax = p->input_size() > 3 && !p->input(3).empty() ? constant_tensor(g, p->input(3)) : nullptr;
      const onnx::TensorProto* sp = p->input_size() > 4 && !p->input(4).empty() ? constant_tensor(g, p->input(4)) : nullptr;
      const bool ok = st && en && tensor_values(*st, &starts) && tensor_values(*en, &ends) &&
                      (p->input_size() <= 3 || p->input(3).empty() || (ax && tensor_values(*ax, &axes))) &&
                      (p->input_size() <= 4 || p->input(4).empty() || (sp && tensor_values(*sp, &steps)));
      if (ok && starts.size() == 1 && ends.size() == 1 && axes.size() == 1 && axes[0] == 0 && steps.size() == 1 &&
          steps[0] == 1 && starts[0] >= 0 && starts[0] <= (1 << 30) && starts[0] == std::floor(starts[0]) &&
          ends[0] - starts[0] >= static_cast<double>(D)) {
        first += static_cast<int64_t>(starts[0]);
        value = p->input(0);
        continue;
      }
      problems->push_back(node_label(*p) + ": " + what + " must be a run of rows along axis 0 of a graph input");
      return false;
    }
    break;
  }
  problems->push_back(n.label + ": " + what + " ('" + name + "') is neither a constant nor rows of a graph input");
  return false;
}

// The graph output Y_h / Y_c reach: directly (through Identity) for one node; one Concat along
// axis 0 of every node's, in layer order, for several.
bool trace_final_state(const Graph& g, const std::vector<NodeInfo>& nodes, int k, std::string* out,
                       std::vector<std::string>* problems) {
  const char* what = k == kYH ? "Y_h" : "Y_c";
  size_t count = 0;
  for (const NodeInfo& n : nodes) count += used(g, *n.node, k) ? 1 : 0;
  if (count == 0) return true;
  if (count != nodes.size()) {
    problems->push_back(std::string("graph: ") + what + " of only some LSTM layers is used (the final state is "
                        "an output of all layers or of none)");
    return false;
  }
  auto to_output = [&](std::string value) {
    for (int guard = 0; guard < 16; ++guard) {
      if (g.is_graph_output(value) && g.consumers(value).empty()) {
        *out = value;
        return true;
      }
      const auto cs = g.consumers(value);
      if (cs.size() != 1 || cs[0]->op_type() != "Identity" || cs[0]->output_size() < 1) break;
      value = cs[0]->output(0);
    }
    return false;
  };
  const std::string& first = nodes[0].node->output(k);
  if (nodes.size() == 1) {
    if (to_output(first)) return true;
    problems->push_back(nodes[0].label + ": output " + what + " is used other than as a graph output");
    return false;
  }
  const auto cs = g.consumers(first);
  bool ok = cs.size() == 1 && cs[0]->op_type() == "Concat" && cs[0]->input_size() == static_cast<int>(nodes.size());
  if (ok) {
    const onnx::AttributeProto* axis = attribute(*cs[0], "axis");
    ok = axis != nullptr && axis->i() == 0;
    for (size_t j = 0; ok && j < nodes.size(); ++j) {
      ok = cs[0]->input(static_cast<int>(j)) == nodes[j].node->output(k) &&
           g.consumers(nodes[j].node->output(k)).size() == 1;
    }
    ok = ok && cs[0]->output_size() >= 1 && to_output(cs[0]->output(0));
  }
  if (!ok) {
    problems->push_back(std::string("graph: the layers' ") + what + " must be concatenated along axis 0, in layer "
                        "order, into one graph output");
  }
  return ok;
}

}  // namespace

OnnxLstm import_onnx_bytes(const std::string& bytes, const std::string& origin) {
  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromString(bytes)) {
    throw FileError(origin + ": not a valid ONNX model (the protobuf does not parse)");
  }
  if (!model.has_graph()) throw FileError(origin + ": the ONNX model has no graph");
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
  for (const auto& n : g.proto().node()) {
    if (n.op_type() != "LSTM" && !kStructuralOps.count(n.op_type())) {
      problems.push_back(node_label(n) + ": op '" + n.op_type() +
                         "' is not supported (only LSTM nodes with layout ops around them)");
    }
  }
  std::map<const onnx::NodeProto*, NodeInfo> info;
  bool all_read = true;
  for (const auto* n : lstms) {
    NodeInfo ni;
    all_read = read_node(g, *n, &ni, &problems) && all_read;
    info[n] = std::move(ni);
  }
  if (lstms.empty() || !all_read) refuse(origin, problems);

  // The chain: each node's Y reaches the next node's X or the graph output through layout ops.
  Labels out_labels;
  bool chain_ok = true;
  // Is the model unbatched? Known from the first node's input path, needed on the output paths.
  const onnx::NodeProto* head = nullptr;
  for (const auto* n : lstms) {
    if (n->output_size() == 0 || n->output(kY).empty() || !used(g, *n, kY)) {
      problems.push_back(info[n].label + ": output Y is not used");
      chain_ok = false;
    }
  }
  if (!chain_ok) refuse(origin, problems);
  // A node whose X comes from a graph input through layout ops heads the chain.
  Labels in_labels;
  for (const auto* n : lstms) {
    const onnx::NodeProto* p = g.producer(n->input(kX));
    bool from_lstm = false;
    for (int guard = 0; p != nullptr && guard < 16; ++guard) {
      if (p->op_type() == "LSTM") {
        from_lstm = true;
        break;
      }
      p = p->input_size() > 0 && !p->input(0).empty() ? g.producer(p->input(0)) : nullptr;
    }
    if (!from_lstm) {
      if (head != nullptr) {
        problems.push_back("graph: " + info[head].label + " and " + info[n].label +
                           " both read the graph input (only a chain of LSTM layers is supported)");
        refuse(origin, problems);
      }
      head = n;
    }
  }
  if (head == nullptr) {
    problems.push_back("graph: no LSTM node reads the graph input");
    refuse(origin, problems);
  }
  const NodeInfo& h0 = info[head];
  const bool in_ok = follow_input(g, head->input(kX), h0.layout == 0 ? "TBF" : "BTF", &r.input_name, &in_labels, &problems);
  if (!in_ok) refuse(origin, problems);
  const bool unbatched = in_labels.find('B') == std::string::npos;
  std::vector<NodeInfo> chain;
  for (const onnx::NodeProto* n = head; n != nullptr && chain_ok;) {
    if (chain.size() > lstms.size()) break;
    const NodeInfo& ni = info[n];
    chain.push_back(ni);
    const onnx::NodeProto* nx = nullptr;
    Labels l;
    std::string graph_out;
    if (!follow_output(g, n->output(kY), ni.layout == 0 ? "TDBF" : "BTDF", unbatched, ni.directions, &graph_out, &l,
                       &nx, &problems)) {
      chain_ok = false;
      break;
    }
    if (nx == nullptr) {
      r.output_name = graph_out;
      out_labels = l;
      break;
    }
    const NodeInfo& nn = info[nx];
    const Labels want = nn.layout == 0 ? "TBF" : "BTF";
    if (l != want) {
      problems.push_back("graph: " + ni.label + "'s output reaches " + nn.label + " as " + l + ", expected " + want +
                         " (T time, B batch, F features; D directions must be merged into F)");
      chain_ok = false;
    } else if (nn.input_size != ni.directions * ni.hidden) {
      problems.push_back(nn.label + ": input_size " + std::to_string(nn.input_size) + " is not the output size " +
                         std::to_string(ni.directions * ni.hidden) + " of " + ni.label);
      chain_ok = false;
    } else if (nn.directions != ni.directions) {
      problems.push_back(nn.label + ": layers with different directions are not supported");
      chain_ok = false;
    }
    n = nx;
  }
  if (chain_ok && chain.size() != lstms.size()) {
    problems.push_back("graph: " + std::to_string(lstms.size()) + " LSTM nodes, of which " + std::to_string(chain.size()) +
                       " form a chain from the graph input to the output (only a chain of layers is supported)");
    chain_ok = false;
  }
  if (chain_ok) {
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
  if (!chain_ok || !problems.empty()) refuse(origin, problems);

  // Initial and final state.
  FloatProgram& prog = r.program;
  prog.directions = chain[0].directions;
  const int64_t op_count = static_cast<int64_t>(chain.size()) * prog.directions;
  for (int k : {kInitialH, kInitialC}) {
    std::vector<StateOrigin> origins(chain.size());
    bool ok = true;
    for (size_t j = 0; j < chain.size(); ++j) ok = trace_state(g, chain[j], k, &origins[j], &problems) && ok;
    if (!ok) continue;
    const char* what = k == kInitialH ? "initial_h" : "initial_c";
    StateSource src = origins[0].source;
    for (size_t j = 0; j < chain.size(); ++j) {
      if (origins[j].source != src) {
        problems.push_back(std::string("graph: ") + what + " of " + chain[j].label + " is " +
                           state_source_name(origins[j].source) + " but of " + chain[0].label + " " +
                           state_source_name(src) + " (all layers' must come from the same place)");
        ok = false;
        break;
      }
      if (src == StateSource::kInput) {
        const int64_t want = static_cast<int64_t>(j) * prog.directions;
        if (origins[j].graph_input != origins[0].graph_input || origins[j].first_row != want) {
          problems.push_back(chain[j].label + ": " + what + " must be rows [" + std::to_string(want) + ", " +
                             std::to_string(want + prog.directions) + ") of graph input '" + origins[0].graph_input +
                             "' ([layers x directions, batch, hidden] in layer order)");
          ok = false;
        }
      }
      if ((chain[j].layout != 0 || unbatched) && src != StateSource::kZero) {
        problems.push_back(chain[j].label + ": a given " + what + " is supported with layout 0 and a batched input only");
        ok = false;
      }
    }
    if (!ok) continue;
    if (src == StateSource::kInput) {
      for (const auto& i : g.proto().input()) {
        if (i.name() != origins[0].graph_input) continue;
        std::vector<int64_t> dims;
        for (const auto& d : i.type().tensor_type().shape().dim()) dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
        const int64_t H = chain[0].hidden;
        if (dims.size() != 3 || (dims[0] >= 0 && dims[0] != op_count) || (dims[2] >= 0 && dims[2] != H)) {
          problems.push_back("graph: input '" + i.name() + "' (" + what + ") has shape " + join(dims) + ", expected [" +
                             std::to_string(op_count) + ", batch, " + std::to_string(H) + "]");
        }
      }
    }
    (k == kInitialH ? prog.initial_hidden : prog.initial_cell) = src;
    (k == kInitialH ? r.initial_h_name : r.initial_c_name) = src == StateSource::kInput ? origins[0].graph_input : "";
    for (const StateOrigin& o : origins) {
      for (const auto& c : o.constant) (k == kInitialH ? prog.h0 : prog.c0).push_back(c);
    }
  }
  for (int k : {kYH, kYC}) {
    std::string out;
    if (!trace_final_state(g, chain, k, &out, &problems)) continue;
    if (!out.empty() && (chain[0].layout != 0 || unbatched)) {
      problems.push_back(chain[0].label + ": the final state as an output is supported with layout 0 and a batched input only");
    }
    (k == kYH ? prog.hidden_output : prog.cell_output) = !out.empty();
    (k == kYH ? r.h_n_name : r.c_n_name) = out;
  }
  if (!problems.empty()) refuse(origin, problems);

  for (const auto& i : g.proto().input()) {
    if (i.name() != r.input_name) continue;
    for (const auto& d : i.type().tensor_type().shape().dim()) {
      r.input_shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
    }
  }
  for (const NodeInfo& n : chain) {
    r.node_names.push_back(n.node->name());
    for (int32_t d = 0; d < n.directions; ++d) prog.ops.push_back(node_op(n, d));
  }
  try {
    prog.validate();
  } catch (const CompileError& e) {
    throw CompileError(origin + ": " + e.what());
  }
  return r;
}

OnnxLstm import_onnx(const std::string& path) { return import_onnx_bytes(read_file(path), path); }

}  // namespace compiler
}  // namespace qlstm
