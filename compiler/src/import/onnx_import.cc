#include "qlstm/compiler/import/onnx_import.h"

#include <onnx/onnx_pb.h>

#include "qlstm/compiler/io/file_io.h"
#include "qlstm/compiler/float/float_gru.h"
#include "qlstm/compiler/import/fold_constants.h"
#include "qlstm/compiler/import/refusals.h"
#include "qlstm/compiler/import/upgrade_opset.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace qlstm {
namespace compiler {
namespace {

// ONNX stacks the LSTM gates i, o, f, c. The one place that knows it: the ONNX block of each kernel gate.
constexpr int32_t kOnnxStackIndex[QLSTM_GATE_COUNT] = {
    /* QLSTM_GATE_FORGET */ 2, /* QLSTM_GATE_INPUT */ 0, /* QLSTM_GATE_CELL */ 3,
    /* QLSTM_GATE_OUTPUT */ 1};
// ONNX stacks the GRU gates z, r, h (update, reset, hidden); FloatGru's are reset, update, new.
constexpr int32_t kOnnxGruStackIndex[kGruGateCount] = {/* kGruReset */ 1, /* kGruUpdate */ 0, /* kGruNew */ 2};

// LSTM and GRU input and output positions (ONNX operator spec; a GRU's stop at initial_h and Y_h).
enum LstmInput { kX = 0, kW, kR, kB, kSequenceLens, kInitialH, kInitialC, kP };
enum LstmOutputIndex { kY = 0, kYH, kYC };

// What the importer needs to know of each recurrent op; everything else is shared.
struct CellSpec {
  CellKind cell;
  const char* op;              // its op_type
  int32_t gates;               // blocks stacked in W and R (B holds 2 x gates: Wb, then Rb)
  const int32_t* stack_index;  // the ONNX block of each FloatLstm gate
  int inputs, outputs;         // how many the operator has
  std::vector<std::string> activations;  // the default per direction: the kernel's only ones
};

const CellSpec kLstmSpec{CellKind::kLstm, "LSTM", QLSTM_GATE_COUNT, kOnnxStackIndex, kP + 1, kYC + 1,
                         {"Sigmoid", "Tanh", "Tanh"}};
const CellSpec kGruSpec{CellKind::kGru, "GRU", kGruGateCount, kOnnxGruStackIndex, kInitialH + 1, kYH + 1,
                        {"Sigmoid", "Tanh"}};

// The spec of an LSTM or GRU node; null for any other op.
const CellSpec* cell_spec(const onnx::NodeProto& n) {
  if (n.op_type() == "LSTM") return &kLstmSpec;
  if (n.op_type() == "GRU") return &kGruSpec;
  return nullptr;
}
bool recurrent(const onnx::NodeProto& n) { return cell_spec(n) != nullptr; }

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
      if (!reads_only_shape(*c)) out.push_back(c);
    }
    return out;
  }
  // A Shape node, or a layout op whose outputs only such nodes read: torch, exporting a second
  // nn.LSTM/GRU module with dynamic axes, builds its zero state from Shape of a Transpose of the
  // first module's output that nothing else reads (the second LSTM reads the value before it).
  bool reads_only_shape(const onnx::NodeProto& c, int depth = 0) const {
    if (c.op_type() == "Shape") return true;
    static const std::set<std::string> kLayout = {"Transpose", "Identity", "Squeeze", "Unsqueeze", "Reshape"};
    if (depth > 8 || !kLayout.count(c.op_type())) return false;
    bool read = false;
    for (const auto& out : c.output()) {
      if (out.empty()) continue;
      if (is_graph_output(out)) return false;
      for (const auto* r : consumers(out)) {
        if (!reads_only_shape(*r, depth + 1)) return false;
        read = true;
      }
    }
    return read;  // a dead end is not a shape read: the walks report it
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
// A Reshape's constant target read as a shape (0 copies the input's dim, -1 is inferred), not as axes.
bool reshape_target(const Graph& g, const onnx::NodeProto& n, std::vector<int64_t>* target);

// Whether a rank-3 Reshape `target` maps the labels `in` (with a 'D' axis) to `out` (without it):
// each entry copies the same axis (0), is inferred (-1, once), or is the features' width.
bool reshape_target_fits(const std::vector<int64_t>& target, const Labels& in, const Labels& out, int64_t width) {
  int inferred = 0;
  for (size_t j = 0; j < target.size(); ++j) {
    const bool copy = target[j] == 0 && j < in.size() && in[j] == out[j];
    const bool infer = target[j] == -1 && ++inferred == 1;
    const bool features = out[j] == 'F' && width > 0 && target[j] == width;
    const bool other = target[j] > 0 && out[j] != 'F';  // T or B: their sizes are not known here
    if (!copy && !infer && !features && !other) return false;
  }
  return true;
}

bool apply_reshape_like(const Graph& g, const onnx::NodeProto& n, bool unbatched, int32_t directions, Labels* l,
                        int64_t width = -1) {
  const std::string& op = n.op_type();
  std::vector<int64_t> axes;
  if (op == "Reshape" ? !reshape_target(g, n, &axes) : !axes_of(g, n, &axes)) return false;
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
    Labels out = *l;
    out.erase(d, 1);
    if (!reshape_target_fits(axes, *l, out, width < 0 ? -1 : width * directions)) return false;
    *l = out;
    return true;
  }
  return false;
}

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

// Follows the single-consumer chain of layout ops from `start` (with labels) to a graph output.
// Or to the X of another LSTM node (*next_lstm is then set).
bool follow_output(const Graph& g, std::string value, Labels labels, bool unbatched, int32_t directions,
                   std::string* graph_output, Labels* out_labels, const onnx::NodeProto** next_lstm,
                   std::vector<std::string>* problems, int64_t hidden = -1) {
  *next_lstm = nullptr;
  for (int guard = 0; guard < 16; ++guard) {
    const auto next = g.data_consumers(value);
    if (next.size() == 1 && recurrent(*next[0]) && !g.is_graph_output(value)) {
      if (next[0]->input_size() < 1 || next[0]->input(0) != value) {
        problems->push_back(node_label(*next[0]) + ": a recurrent layer's output feeds an input other than X");
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
    else if (n.op_type() == "Squeeze" || n.op_type() == "Reshape") ok = apply_reshape_like(g, n, unbatched, directions, &labels, hidden);
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

// Rows [block * H, (block + 1) * H) of a [G·H][cols] stack.
std::vector<float> block_rows(const std::vector<float>& stacked, int32_t block, int32_t H, int32_t cols) {
  const size_t n = static_cast<size_t>(H) * static_cast<size_t>(cols);
  return std::vector<float>(stacked.begin() + static_cast<ptrdiff_t>(block * n),
                            stacked.begin() + static_cast<ptrdiff_t>((block + 1) * n));
}

// ONNX requires the nodes in topological order with each value produced once. The walkers
// below follow producers and consumers, so a cycle or a value with two producers would send them
// round forever: such a graph is refused here, naming the first node that breaks the order.
// (A value defined nowhere is left to the checks that name what it should have been.)
bool check_topological(const onnx::GraphProto& g, std::vector<std::string>* problems) {
  std::set<std::string> known, produced;
  for (const auto& i : g.input()) known.insert(i.name());
  for (const auto& t : g.initializer()) known.insert(t.name());
  for (const auto& n : g.node()) produced.insert(n.output().begin(), n.output().end());
  for (const auto& n : g.node()) {
    for (const auto& in : n.input()) {
      if (!in.empty() && !known.count(in) && produced.count(in)) {
        problems->push_back(node_label(n) + ": input '" + in +
                            "' is the output of this node or of a later one "
                            "(ONNX requires the nodes in topological order)");
        return false;
      }
    }
    for (const auto& out : n.output()) {
      if (!out.empty() && !known.insert(out).second) {
        problems->push_back(node_label(n) + ": output '" + out +
                            "' is already a graph input, an initializer or an earlier node's output "
                            "(ONNX requires each value to be produced once)");
        return false;
      }
    }
  }
  return true;
}

[[noreturn]] void refuse(const std::string& origin, const std::vector<std::string>& problems) {
  std::string msg = origin + ": the model is outside what qlstm compiles:";
  for (const auto& p : problems) msg += "\n  " + p;
  throw CompileError(msg);
}

}  // namespace

namespace {

// The largest hidden or input size read from a model: 8H and 4H x I stay far inside int64 and
// every size the compiler derives fits its int32 fields.
constexpr int64_t kMaxLayerSize = int64_t{1} << 20;

// One LSTM or GRU node, checked and read.
struct NodeInfo {
  const onnx::NodeProto* node = nullptr;
  const CellSpec* spec = &kLstmSpec;
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

// The attributes only one of the cells has; false for an attribute neither has.
bool read_cell_attribute(const onnx::AttributeProto& a, const NodeInfo& info, int64_t* linear_before_reset,
                         std::vector<std::string>* problems) {
  const std::string& an = a.name();
  if (info.spec->cell == CellKind::kLstm && an == "input_forget") {
    if (a.i() != 0) problems->push_back(info.label + ": attribute 'input_forget' = " + std::to_string(a.i()) + " is not supported (the kernel has independent input and forget gates)");
    return true;
  }
  if (info.spec->cell == CellKind::kGru && an == "linear_before_reset") {
    *linear_before_reset = a.i();
    return true;
  }
  return false;
}

// Attributes, inputs and weights of one node; false (with problems) when it cannot be read.
bool read_node(const Graph& g, const onnx::NodeProto& lstm, NodeInfo* info, std::vector<std::string>* problems) {
  const size_t before = problems->size();
  info->node = &lstm;
  info->spec = cell_spec(lstm);
  info->label = node_label(lstm);
  const CellSpec& spec = *info->spec;
  const std::string& label = info->label;
  bool weights_readable = true;
  int64_t linear_before_reset = 0;  // ONNX's default
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
    } else if (an == "activations") {
      std::vector<std::string> acts(a.strings().begin(), a.strings().end());
      const int32_t per_direction = static_cast<int32_t>(spec.activations.size());
      std::vector<std::string> want;
      for (int32_t d = 0; d < info->directions || d < static_cast<int32_t>(acts.size()) / per_direction; ++d) {
        want.insert(want.end(), spec.activations.begin(), spec.activations.end());
      }
      if (acts != want) {
        std::string s, w;
        for (const auto& x : acts) s += (s.empty() ? "" : ", ") + x;
        for (const auto& x : spec.activations) w += (w.empty() ? "" : ", ") + x;
        problems->push_back(label + ": activations " + s + " are not supported (only " + w + ": the kernel's tables)");
      }
    } else if (an == "activation_alpha" || an == "activation_beta") {
      problems->push_back(label + ": attribute '" + an + "' is not supported (the kernel's activations have no parameters)");
    } else if (!read_cell_attribute(a, *info, &linear_before_reset, problems)) {
      problems->push_back(label + ": unknown attribute '" + an + "'");
    }
  }
  if (spec.cell == CellKind::kGru && linear_before_reset != 1) {
    problems->push_back(label + ": linear_before_reset = " + std::to_string(linear_before_reset) +
                        (attribute(lstm, "linear_before_reset") ? "" : " (the default: attribute absent)") +
                        " is not supported (the kernel computes PyTorch's new gate tanh(W_in x + b_in + r * (W_hn h + "
                        "b_hn)), which is linear_before_reset = 1, as torch.onnx.export writes nn.GRU)");
  }
  for (int k = spec.inputs; k < lstm.input_size(); ++k) {
    if (present(lstm, k)) problems->push_back(label + ": input " + std::to_string(k) + " ('" + lstm.input(k) + "') is not one of the " + std::to_string(spec.inputs) + " inputs of " + spec.op);
  }
  for (int k = spec.outputs; k < lstm.output_size(); ++k) {
    if (!lstm.output(k).empty()) problems->push_back(label + ": output " + std::to_string(k) + " ('" + lstm.output(k) + "') is not one of the " + std::to_string(spec.outputs) + " outputs of " + spec.op);
  }
  if (present(lstm, kSequenceLens)) problems->push_back(label + ": input sequence_lens is not supported (all sequences run to T)");
  if (spec.cell == CellKind::kLstm && present(lstm, kP)) problems->push_back(label + ": peephole weights (input P) are not supported (the kernel has no peephole path)");
  if (!present(lstm, kX) || !present(lstm, kW) || !present(lstm, kR)) {
    problems->push_back(label + ": inputs X, W and R are required");
    return false;
  }
  if (info->hidden < 1) problems->push_back(label + ": attribute hidden_size missing or < 1");
  // A damaged file may hold any int64: sizes are bounded before the shape arithmetic (8H, 4H x I)
  // and the compiler's int32 sizes use them.
  if (info->hidden > kMaxLayerSize) {
    problems->push_back(label + ": attribute hidden_size " + std::to_string(info->hidden) + " is above " +
                        std::to_string(kMaxLayerSize));
    info->hidden = -1;
  }
  // Shapes (G gates): W [D][G·H][I] fixes I; R [D][G·H][H]; B [D][2·G·H].
  const int64_t D = info->directions, H = info->hidden, G = spec.gates;
  const onnx::TensorProto* w = constant_tensor(g, lstm.input(kW));
  if (w != nullptr && w->dims_size() == 3) info->input_size = w->dims(2);
  if (weights_readable && w != nullptr && (w->dims_size() != 3 || info->input_size < 1)) {
    problems->push_back(label + ": W must have shape [num_directions, " + std::to_string(G) + "*hidden_size, input_size]");
  } else if (info->input_size > kMaxLayerSize) {
    problems->push_back(label + ": input_size " + std::to_string(info->input_size) + " (W's last axis) is above " +
                        std::to_string(kMaxLayerSize));
    info->input_size = -1;
  }
  if (!weights_readable) {
    // reported above
  } else if (H >= 1 && info->input_size >= 1) {
    read_weight(g, lstm, kW, "W", {D, G * H, info->input_size}, &info->W, problems);
    read_weight(g, lstm, kR, "R", {D, G * H, H}, &info->R, problems);
    if (present(lstm, kB)) read_weight(g, lstm, kB, "B", {D, 2 * G * H}, &info->B, problems);
  } else if (w == nullptr) {
    read_weight(g, lstm, kW, "W", {}, &info->W, problems);
  }
  return problems->size() == before;
}

// One op's float layer: direction d of the node's weights, gates from the ONNX stacking order.
FloatLstm node_op(const NodeInfo& n, int32_t d) {
  const int32_t I = static_cast<int32_t>(n.input_size), H = static_cast<int32_t>(n.hidden);
  const int32_t G = n.spec->gates;
  const size_t w_size = static_cast<size_t>(G) * H * I, r_size = static_cast<size_t>(G) * H * H,
               b_size = static_cast<size_t>(2 * G) * H;
  const std::vector<float> W(n.W.begin() + static_cast<ptrdiff_t>(d * w_size), n.W.begin() + static_cast<ptrdiff_t>((d + 1) * w_size));
  const std::vector<float> R(n.R.begin() + static_cast<ptrdiff_t>(d * r_size), n.R.begin() + static_cast<ptrdiff_t>((d + 1) * r_size));
  std::vector<float> B;
  if (!n.B.empty()) B.assign(n.B.begin() + static_cast<ptrdiff_t>(d * b_size), n.B.begin() + static_cast<ptrdiff_t>((d + 1) * b_size));
  std::array<FloatGate, QLSTM_GATE_COUNT> gates;
  for (int32_t gate = 0; gate < G; ++gate) {
    const int32_t blk = n.spec->stack_index[gate];
    FloatGate& fg = gates[static_cast<size_t>(gate)];
    fg.w_x = block_rows(W, blk, H, I);
    fg.w_h = block_rows(R, blk, H, H);
    if (B.empty()) {
      fg.bias_x.assign(static_cast<size_t>(H), 0.0f);
      fg.bias_h.assign(static_cast<size_t>(H), 0.0f);
    } else {
      fg.bias_x = block_rows(B, blk, H, 1);
      fg.bias_h = block_rows(B, G + blk, H, 1);  // Rb; a GRU's new gate applies it inside r * (...)
    }
  }
  const bool reverse = n.directions == 2 ? d == 1 : n.reverse;
  if (n.spec->cell == CellKind::kGru) {
    FloatGru gru;
    gru.input_size = I;
    gru.hidden_size = H;
    gru.reverse = reverse;
    std::copy(gates.begin(), gates.begin() + kGruGateCount, gru.gates.begin());
    return as_layer(gru);
  }
  FloatLstm f;
  f.input_size = I;
  f.hidden_size = H;
  f.reverse = reverse;
  f.gates = gates;
  return f;
}

// Where one node's initial_h or initial_c comes from.
struct StateOrigin {
  StateSource source = StateSource::kZero;
  std::vector<std::vector<float>> constant;  // kConstant: per direction, [H]
  std::string graph_input;                   // kInput
  int64_t first_row = 0;                     // kInput: the node's first row of the graph input
};

// The dims a state's value has when they are constant: a constant's, or those a ConstantOfShape of
// a constant shape builds (named in *from); false when they depend on the input.
bool constant_state_dims(const Graph& g, const std::string& name, std::vector<int64_t>* dims, std::string* from) {
  if (const onnx::TensorProto* t = constant_tensor(g, name)) {
    dims->assign(t->dims().begin(), t->dims().end());
    *from = "the constant";
    return true;
  }
  const onnx::NodeProto* p = g.producer(name);
  const onnx::TensorProto* shape = p != nullptr && p->op_type() == "ConstantOfShape" && p->input_size() >= 1
                                       ? constant_tensor(g, p->input(0))
                                       : nullptr;
  std::vector<double> v;
  if (shape == nullptr || !tensor_values(*shape, &v)) return false;
  dims->clear();
  constexpr double kLimit = double(int64_t{1} << 62);
  for (double x : v) dims->push_back(x >= -kLimit && x <= kLimit ? static_cast<int64_t>(x) : -1);
  *from = "the ConstantOfShape " + node_label(*p) + " that builds";
  return true;
}

bool trace_state(const Graph& g, const NodeInfo& n, int k, StateOrigin* o, std::vector<std::string>* problems,
                 int64_t batch) {
  const char* what = k == kInitialH ? "initial_h" : "initial_c";
  if (!present(*n.node, k)) return true;
  const std::string& name = n.node->input(k);
  double v = 0;
  if (uniform_value(g, name, &v) && v == 0.0) {
    // A zero state of a constant shape must still have ONNX's (a runtime refuses the file).
    std::vector<int64_t> dims;
    std::string from;
    const std::string bad = constant_state_dims(g, name, &dims, &from)
                                ? import::state_shape_problem(dims, n.directions, batch, n.hidden, n.layout)
                                : "";
    if (bad.empty()) return true;
    problems->push_back(n.label + ": " + from + " " + what + " ('" + name + "') " + bad);
    return false;
  }
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
    // One row shared by every batch row when they are equal; else every row (a learned
    // [L, B, H] state: the model fixes the batch).
    bool rows_equal = true;
    for (int64_t d = 0; d < D; ++d) {
      const size_t base = static_cast<size_t>(d * dims[1] * H);
      for (int64_t e = H; e < dims[1] * H; ++e) {
        rows_equal = rows_equal && vals[base + static_cast<size_t>(e)] == vals[base + static_cast<size_t>(e % H)];
      }
    }
    const int64_t kept = rows_equal ? H : dims[1] * H;
    for (int64_t d = 0; d < D; ++d) {
      const auto base = vals.begin() + static_cast<ptrdiff_t>(d * dims[1] * H);
      o->constant.emplace_back(base, base + static_cast<ptrdiff_t>(kept));
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
    problems->push_back(std::string("graph: ") + what + " of only some " + nodes[0].spec->op + " layers is used (the final state is "
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

// ------------------------------------------------------------------ the layers around the stack
// A walk along the data path: from the graph input to the first LSTM's X (the front), and from
// the last LSTM's output to the graph output (the head). Each node is a layout op (it moves
// size-1 axes, or the axes the layouts need), a step selection, or a per-position layer on the
// feature axis; anything else is refused with what it is.

// What the walk knows about the axes: their labels (Labels above, plus 't' one selected step and
// '1' an inserted axis, both of size 1) and sizes.
struct PathContext {
  const Graph* g = nullptr;
  const char* cell = "LSTM";  // the stack's op, for messages
  int64_t opset = 0;
  int32_t directions = 1;
  bool unbatched = false;
  int64_t time_size = -1, batch_size = -1;  // as declared by the graph input; -1 unknown
};

int64_t axis_size(const PathContext& c, char label, int64_t width) {
  switch (label) {
    case 'T': return c.time_size;
    case 'B': return c.unbatched ? 1 : c.batch_size;
    case 'F': return width;
    case 'D': return c.directions;
    default: return 1;
  }
}

// A size-1 axis that layout ops may drop, insert or move freely.
bool unit_axis(const PathContext& c, char label) {
  return label == '1' || label == 't' || (label == 'D' && c.directions == 1) || (label == 'B' && c.unbatched);
}

const char* axis_name(char label) {
  switch (label) {
    case 'T': return "time";
    case 'B': return "batch";
    case 'F': return "feature";
    case 'D': return "direction";
    case 't': return "selected step";
    default: return "size-1";
  }
}

// Labels without the size-1 axes: the order of the data.
Labels data_axes(const PathContext& c, const Labels& l) {
  Labels out;
  for (char a : l) {
    if (!unit_axis(c, a)) out.push_back(a);
  }
  return out;
}

struct PathState {
  std::string value;
  Labels labels;
  int32_t width = 0;               // elements on the feature axis
  std::vector<FloatLayer> layers;  // per-position layers, in order
  bool selected = false;           // a step selection was taken (kept apart: it commutes with them)
  FloatLayer select;
  bool last_is_linear = false;     // the value is a Linear's output (an Add of a constant is its bias)
  bool features_squeezed = false;  // a feature axis of width 1 was squeezed away
  std::string last_good;           // the last value reached without a problem
  bool failed = false;
};

std::string fmt(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// A constant's values and dims; false when `name` is not a readable constant.
bool constant_values(const Graph& g, const std::string& name, std::vector<double>* v, std::vector<int64_t>* dims = nullptr) {
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

// A constant read as a count, index or axis: an integer of sane magnitude (a damaged model may
// hold anything, and converting a huge double to int64 is undefined).
bool small_int(double v, int64_t* out) {
  constexpr double kLimit = double(int64_t{1} << 40);
  if (!(v >= -kLimit && v <= kLimit) || v != std::floor(v)) return false;
  *out = static_cast<int64_t>(v);
  return true;
}

bool near(double a, double b) { return std::fabs(a - b) <= 1e-6 * std::max(1.0, std::fabs(b)); }

bool is_const(const Graph& g, const std::string& name) { return constant_tensor(g, name) != nullptr; }

double float_attribute(const onnx::NodeProto& n, const char* name, double fallback) {
  const onnx::AttributeProto* a = attribute(n, name);
  return a == nullptr ? fallback : static_cast<double>(a->f());
}

int64_t int_attribute(const onnx::NodeProto& n, const char* name, int64_t fallback) {
  const onnx::AttributeProto* a = attribute(n, name);
  return a == nullptr ? fallback : a->i();
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

// What an op is, for a refusal of a node the walk cannot take (or that is not on its path).
std::string what_it_is(const Graph& g, const onnx::NodeProto& n, const char* cell) {
  const std::string& op = n.op_type();
  const std::string foreign = import::describe_foreign_node(n);
  if (!foreign.empty()) return foreign;
  if (op == "LayerNormalization" || op == "ReduceMean") {
    return "a LayerNorm (each vector normalized by its own mean and variance; torch exports it as "
           "LayerNormalization, or ReduceMean/Sub/Pow/Sqrt/Div before opset 17): not supported";
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
  if (op == "Softmax" || op == "LogSoftmax") {
    if (op == "LogSoftmax") return "a LogSoftmax: not supported (export a Softmax, or take the log on the host)";
    return "a Softmax not on the last (feature) axis: not supported";
  }
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
    "MatMul", "Add", "Mul", "Div", "Erf", "Softmax", "Relu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid",
    "HardSwish", "Clip", "Gelu"};

class PathWalker {
 public:
  PathWalker(const PathContext& c, bool front, std::vector<std::string>* problems, std::set<const onnx::NodeProto*>* used)
      : c_(c), g_(*c.g), front_(front), problems_(problems), used_(used) {}

  // Walks from s->value until the value `stop` (front: the first LSTM's X) or a graph output
  // (head: stop empty). False when a node was refused (every problem found is reported).
  bool walk(PathState* s, const std::string& stop) {
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
      const auto cs = g_.data_consumers(s->value);
      if (cs.empty()) {
        problem(nullptr, "'" + s->value + "' on the data path reaches no " + (stop.empty() ? "graph output" : c_.cell));
        return false;
      }
      if (cs.size() > 1 || g_.is_graph_output(s->value)) {
        if (s->failed) return false;  // reported already
        if (match_activation_pattern(s)) continue;
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

 private:
  void problem(const onnx::NodeProto* n, const std::string& why) {
    problems_->push_back((n ? node_label(*n) : std::string("graph")) + ": " + why);
  }

  // The value `n` reads on the data path must be its input `k`.
  bool reads_at(const onnx::NodeProto& n, const PathState& s, int k) {
    if (n.input_size() > k && n.input(k) == s.value) return true;
    problem(&n, what_it_is(g_, n, c_.cell));
    return false;
  }

  bool features_last(const onnx::NodeProto& n, const PathState& s, const char* what) {
    const Labels d = data_axes(c_, s.labels);
    if (d.find('D') != std::string::npos) {
      problem(&n, std::string(what) + " on the " + c_.cell + "'s output before its two directions are merged into the features");
      return false;
    }
    if (d.empty() || d.back() != 'F' || s.labels.back() != 'F') {
      problem(&n, std::string(what) + " on a tensor whose last axis is the " + axis_name(s.labels.back()) +
                      " axis, not the features: not supported");
      return false;
    }
    return true;
  }

  void add_layer(PathState* s, FloatLayer l, bool linear) {
    l.input_size = s->width;
    if (l.kind != FloatLayerKind::kLinear) l.output_size = s->width;
    s->width = l.output_size;
    s->layers.push_back(std::move(l));
    s->last_is_linear = linear;
  }

  FloatLayer activation(const onnx::NodeProto& n, ActivationFn fn) {
    FloatLayer l;
    l.kind = FloatLayerKind::kActivation;
    l.node = n.name().empty() ? n.output(0) : n.name();
    l.fn = fn;
    return l;
  }

  bool take(const onnx::NodeProto& n, PathState* s) {
    const std::string& op = n.op_type();
    if (op == "Identity") return reads_at(n, *s, 0);
    if (op == "Dropout") {
      // Eval mode: the identity (its mask output must be unused).
      if (!reads_at(n, *s, 0)) return false;
      if (n.output_size() > 1 && !n.output(1).empty() && !g_.consumers(n.output(1)).empty()) {
        problem(&n, "a Dropout whose mask is used: not supported");
        return false;
      }
      return true;
    }
    if (op == "Transpose") return reads_at(n, *s, 0) && transpose(n, s);
    if (op == "Squeeze") return reads_at(n, *s, 0) && squeeze(n, s);
    if (op == "Unsqueeze") return reads_at(n, *s, 0) && unsqueeze(n, s);
    if (op == "Flatten") return reads_at(n, *s, 0) && flatten(n, s);
    if (op == "Reshape") return reads_at(n, *s, 0) && reshape(n, s);
    if (op == "Gather") return reads_at(n, *s, 0) && gather(n, s);
    if (op == "Slice") return reads_at(n, *s, 0) && slice(n, s);
    if (op == "Gemm") return reads_at(n, *s, 0) && gemm(n, s);
    if (op == "MatMul") return reads_at(n, *s, 0) && matmul(n, s);
    if (op == "Add") return add_bias(n, s);
    if (op == "Softmax") return reads_at(n, *s, 0) && softmax(n, s);
    if (op.rfind("Reduce", 0) == 0 && reads_at(n, *s, 0)) {
      // Over time it is a pooling; over the features, a LayerNorm's mean (what_it_is).
      std::vector<int64_t> axes;
      std::string reduced;
      if (axes_of(g_, n, &axes)) {
        for (int64_t a : axes) {
          const int64_t k = a < 0 ? a + static_cast<int64_t>(s->labels.size()) : a;
          if (k >= 0 && k < static_cast<int64_t>(s->labels.size())) reduced.push_back(s->labels[static_cast<size_t>(k)]);
        }
      }
      const std::string over_time = import::describe_reduction_over_time(n, reduced);
      problem(&n, over_time.empty() ? what_it_is(g_, n, c_.cell) : over_time);
      return false;
    }
    static const std::map<std::string, ActivationFn> kUnary = {
        {"Relu", ActivationFn::kRelu},       {"Sigmoid", ActivationFn::kSigmoid},
        {"Tanh", ActivationFn::kTanh},       {"LeakyRelu", ActivationFn::kLeakyRelu},
        {"HardSigmoid", ActivationFn::kHardSigmoid}, {"HardSwish", ActivationFn::kHardSwish},
        {"Clip", ActivationFn::kClip},       {"Gelu", ActivationFn::kGelu}};
    const auto it = kUnary.find(op);
    if (it != kUnary.end()) {
      if (!reads_at(n, *s, 0)) return false;
      FloatLayer l = activation(n, it->second);
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
    problem(&n, what_it_is(g_, n, c_.cell));
    return false;
  }

  bool clip_bounds(const onnx::NodeProto& n, FloatLayer* l) {
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

  bool transpose(const onnx::NodeProto& n, PathState* s) {
    Labels l = s->labels;
    if (!apply_transpose(n, &l)) {
      problem(&n, "a Transpose whose perm does not fit the rank-" + std::to_string(s->labels.size()) + " input");
      return false;
    }
    const Labels d = data_axes(c_, l);
    if (!d.empty() && d.find('F') != std::string::npos && d.back() != 'F') {
      problem(&n, "a Transpose that moves the feature axis (" + s->labels + " -> " + l +
                      "): it mixes data between positions; not supported");
      return false;
    }
    s->labels = l;
    s->last_is_linear = false;
    return true;
  }

  bool squeeze(const onnx::NodeProto& n, PathState* s) {
    std::vector<int64_t> axes;
    if (!axes_of(*c_.g, n, &axes)) {
      problem(&n, "a Squeeze whose axes are not constant: not supported");
      return false;
    }
    const int64_t rank = static_cast<int64_t>(s->labels.size());
    std::vector<bool> drop(s->labels.size(), false);
    if (axes.empty()) {  // every size-1 axis
      for (size_t k = 0; k < s->labels.size(); ++k) {
        if (axis_size(c_, s->labels[k], s->width) == 1) {
          if (!unit_axis(c_, s->labels[k])) {
            problem(&n, std::string("a Squeeze without axes drops the ") + axis_name(s->labels[k]) +
                            " axis (its size is 1 here): name the axes to squeeze");
            return false;
          }
          drop[k] = true;
        }
      }
    }
    for (int64_t a : axes) {
      const int64_t k = a < 0 ? a + rank : a;
      if (k < 0 || k >= rank) {
        problem(&n, "a Squeeze of axis " + std::to_string(a) + " of a rank-" + std::to_string(rank) + " tensor");
        return false;
      }
      const char label = s->labels[static_cast<size_t>(k)];
      // A head's one value per position ([B, T, 1] -> [B, T], as a forecaster's .squeeze(-1)):
      // the output keeps the axis (the same values in the same order) and says so.
      const bool one_feature = label == 'F' && s->width == 1 && !front_;
      if (!unit_axis(c_, label) && !one_feature) {
        problem(&n, std::string("a Squeeze of the ") + axis_name(label) + " axis, which is not of size 1: not supported");
        return false;
      }
      s->features_squeezed = s->features_squeezed || one_feature;
      drop[static_cast<size_t>(k)] = true;
    }
    Labels l;
    for (size_t k = 0; k < s->labels.size(); ++k) {
      if (!drop[k]) l.push_back(s->labels[k]);
    }
    s->labels = l;
    s->last_is_linear = false;
    return true;
  }

  bool unsqueeze(const onnx::NodeProto& n, PathState* s) {
    std::vector<int64_t> axes;
    if (!axes_of(*c_.g, n, &axes) || axes.empty()) {
      problem(&n, "an Unsqueeze whose axes are not constant: not supported");
      return false;
    }
    const int64_t rank = static_cast<int64_t>(s->labels.size() + axes.size());
    std::vector<int64_t> at;
    for (int64_t a : axes) at.push_back(a < 0 ? a + rank : a);
    std::sort(at.begin(), at.end());
    Labels l = s->labels;
    for (int64_t a : at) {
      if (a < 0 || a > static_cast<int64_t>(l.size())) {
        problem(&n, "an Unsqueeze at axis " + std::to_string(a) + " out of range");
        return false;
      }
      l.insert(static_cast<size_t>(a), 1, '1');
    }
    s->labels = l;
    s->last_is_linear = false;
    return true;
  }

  bool flatten(const onnx::NodeProto& n, PathState* s) {
    const int64_t rank = static_cast<int64_t>(s->labels.size());
    int64_t axis = int_attribute(n, "axis", 1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis > rank) {
      problem(&n, "a Flatten at axis " + std::to_string(axis) + " of a rank-" + std::to_string(rank) + " tensor");
      return false;
    }
    const Labels left = data_axes(c_, s->labels.substr(0, static_cast<size_t>(axis)));
    const Labels right = data_axes(c_, s->labels.substr(static_cast<size_t>(axis)));
    if (left.size() > 1 || left.find('F') != std::string::npos || (right != "F" && right != "DF")) {
      problem(&n, "a Flatten that merges the " + s->labels + " axes into [" + left + "][" + right +
                      "]: it mixes positions with features; not supported");
      return false;
    }
    if (right == "DF") s->width *= c_.directions;
    s->labels = std::string(left.empty() ? "1" : left) + "F";
    s->last_is_linear = false;
    return true;
  }

  bool reshape(const onnx::NodeProto& n, PathState* s) {
    std::vector<double> target;
    if (n.input_size() < 2 || !constant_values(g_, n.input(1), &target)) {
      problem(&n, "a Reshape to a shape that is not constant: not supported (reshape with constant sizes, or use "
                  "Flatten/Squeeze)");
      return false;
    }
    const bool allowzero = int_attribute(n, "allowzero", 0) != 0;
    // The data axes (size-1 ones may come and go), matched in order against the target's sizes.
    std::vector<size_t> real;
    for (size_t k = 0; k < s->labels.size(); ++k) {
      if (!unit_axis(c_, s->labels[k])) real.push_back(k);
    }
    Labels out;
    int32_t width = s->width;
    size_t r = 0;
    bool ok = true;
    for (size_t j = 0; j < target.size() && ok; ++j) {
      int64_t t = 0;
      if (!small_int(target[j], &t)) {
        ok = false;
        break;
      }
      const bool copy = t == 0 && !allowzero;  // the input's size at the same index
      if (r < real.size()) {
        const char cur = s->labels[real[r]];
        const int64_t size = axis_size(c_, cur, width);
        const bool merge = cur == 'D' && r + 1 < real.size() && s->labels[real[r + 1]] == 'F' &&
                           ((t == -1 && j + 1 == target.size()) || t == c_.directions * width);
        if (merge) {
          out.push_back('F');
          width *= c_.directions;
          r += 2;
          continue;
        }
        const bool same = copy ? (j < s->labels.size() && s->labels[j] == cur) : (t == -1 || (size >= 0 && t == size));
        if (same) {
          out.push_back(cur);
          ++r;
          continue;
        }
      }
      if (t == 1 || (copy && j < s->labels.size() && unit_axis(c_, s->labels[j]))) {
        out.push_back('1');
        continue;
      }
      ok = false;
    }
    if (!ok || r != real.size()) {
      std::vector<int64_t> ts;
      for (double t : target) {
        int64_t v = 0;
        ts.push_back(small_int(t, &v) ? v : -2);
      }
      problem(&n, "a Reshape of the " + s->labels + " axes to " + join(ts) +
                      " that does not only add or drop size-1 axes or merge the directions into the features: "
                      "not supported");
      return false;
    }
    s->labels = out;
    s->width = width;
    s->last_is_linear = false;
    return true;
  }

  // One step of the time axis as the selection; false (reported) otherwise.
  bool select_step(const onnx::NodeProto& n, PathState* s, int64_t step, size_t axis, bool keep_axis) {
    if (front_) {
      problem(&n, std::string("a selection of one time step before the ") + c_.cell + ": not supported");
      return false;
    }
    if (s->selected) {
      problem(&n, "a second selection of one time step: not supported");
      return false;
    }
    constexpr int64_t kMaxStep = int64_t{1} << 30;
    if ((c_.time_size > 0 && (step >= c_.time_size || step < -c_.time_size)) || step >= kMaxStep || step < -kMaxStep) {
      problem(&n, "selects step " + std::to_string(step) + " of a " + std::to_string(c_.time_size) + "-step input");
      return false;
    }
    s->selected = true;
    s->select.kind = FloatLayerKind::kSelectStep;
    s->select.node = n.name().empty() ? n.output(0) : n.name();
    s->select.step = static_cast<int32_t>(step);
    if (keep_axis) {
      s->labels[axis] = 't';
    } else {
      s->labels.erase(axis, 1);
    }
    s->last_is_linear = false;
    return true;
  }

  bool gather(const onnx::NodeProto& n, PathState* s) {
    const int64_t rank = static_cast<int64_t>(s->labels.size());
    int64_t axis = int_attribute(n, "axis", 0);
    if (axis < 0) axis += rank;
    std::vector<double> idx;
    std::vector<int64_t> dims;
    int64_t k = 0;
    if (axis < 0 || axis >= rank || n.input_size() < 2 || !constant_values(g_, n.input(1), &idx, &dims) ||
        idx.size() != 1 || !small_int(idx[0], &k)) {
      problem(&n, "a Gather whose index is not one constant, or whose axis is out of range: not supported");
      return false;
    }
    const char label = s->labels[static_cast<size_t>(axis)];
    const bool keep = !dims.empty();
    if (label == 'T') return select_step(n, s, k, static_cast<size_t>(axis), keep);
    if (unit_axis(c_, label) && (k == 0 || k == -1)) {
      if (!keep) s->labels.erase(static_cast<size_t>(axis), 1);
      return true;
    }
    if (label == 'D') {
      problem(&n, std::string("a Gather of one direction of the bidirectional ") + c_.cell + "'s output: not supported (read both "
                  "directions, or h_n)");
    } else if (label == 'B') {
      problem(&n, "a Gather of one batch row: not supported");
    } else {
      problem(&n, "a Gather of one feature: not supported (select features with a Linear)");
    }
    return false;
  }

  bool slice(const onnx::NodeProto& n, PathState* s) {
    std::vector<double> starts, ends, axes, steps;
    const bool ok = n.input_size() >= 3 && constant_values(g_, n.input(1), &starts) &&
                    constant_values(g_, n.input(2), &ends) &&
                    (n.input_size() < 4 || n.input(3).empty() || constant_values(g_, n.input(3), &axes)) &&
                    (n.input_size() < 5 || n.input(4).empty() || constant_values(g_, n.input(4), &steps));
    if (!ok || starts.size() != 1 || ends.size() != 1 || axes.size() > 1 || steps.size() > 1 ||
        (!steps.empty() && steps[0] != 1)) {
      problem(&n, "a Slice that is not one constant range of one axis with step 1: not supported");
      return false;
    }
    const int64_t rank = static_cast<int64_t>(s->labels.size());
    int64_t axis = 0, b_int = 0;
    if ((!axes.empty() && !small_int(axes[0], &axis)) || !small_int(starts[0], &b_int)) axis = rank;  // refused below
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) {
      problem(&n, "a Slice of an axis out of range, or with a start that is not a small integer");
      return false;
    }
    const char label = s->labels[static_cast<size_t>(axis)];
    // Ends past the axis: torch writes INT64_MAX for "to the end".
    constexpr double kToTheEnd = 1u << 30;
    const double b = starts[0], e = ends[0];
    if (label == 'T') {
      const bool last = b == -1 && e >= kToTheEnd;
      if (last || (b >= 0 && e == b + 1) || (b < -1 && e == b + 1)) {
        return select_step(n, s, b_int, static_cast<size_t>(axis), true);
      }
      problem(&n, "a Slice of several time steps: not supported (a model reads every step, or one)");
      return false;
    }
    const int64_t size = axis_size(c_, label, s->width);
    if (b == 0 && (e >= kToTheEnd || (size >= 0 && e >= static_cast<double>(size)))) return true;  // all of it
    problem(&n, std::string("a Slice of part of the ") + axis_name(label) + " axis: not supported");
    return false;
  }

  bool linear_weights(const onnx::NodeProto& n, const std::string& w_name, bool transposed, double alpha,
                      FloatLayer* l, const PathState& s) {
    std::vector<double> w;
    std::vector<int64_t> dims;
    if (!constant_values(g_, w_name, &w, &dims)) {
      problem(&n, what_it_is(g_, n, c_.cell));
      return false;
    }
    // [K][N] (or [N][K] transposed): K inputs, N outputs.
    const int64_t K = dims.size() == 2 ? dims[transposed ? 1 : 0] : -1;
    const int64_t N = dims.size() == 2 ? dims[transposed ? 0 : 1] : -1;
    if (K != s.width || N < 1) {
      problem(&n, "a Linear whose weight has shape " + join(dims) + ", expected " +
                      (transposed ? "[outputs, " + std::to_string(s.width) + "]" : "[" + std::to_string(s.width) + ", outputs]"));
      return false;
    }
    l->kind = FloatLayerKind::kLinear;
    l->node = n.name().empty() ? n.output(0) : n.name();
    l->output_size = static_cast<int32_t>(N);
    l->weight.resize(static_cast<size_t>(N * K));
    for (int64_t o = 0; o < N; ++o) {
      for (int64_t i = 0; i < K; ++i) {
        const double v = transposed ? w[static_cast<size_t>(o * K + i)] : w[static_cast<size_t>(i * N + o)];
        l->weight[static_cast<size_t>(o * K + i)] = static_cast<float>(alpha * v);
      }
    }
    return true;
  }

  // A constant bias of `outputs` values ([N], [1, N], ... or a scalar broadcast).
  bool bias_values(const onnx::NodeProto& n, const std::string& name, int32_t outputs, double beta,
                   std::vector<float>* bias) {
    std::vector<double> v;
    std::vector<int64_t> dims;
    bool ok = constant_values(g_, name, &v, &dims);
    for (size_t k = 0; ok && k + 1 < dims.size(); ++k) ok = dims[k] == 1;
    if (!ok || (v.size() != 1 && v.size() != static_cast<size_t>(outputs))) {
      problem(&n, "a bias that is not a constant of " + std::to_string(outputs) + " values (one per output): not supported");
      return false;
    }
    bias->resize(static_cast<size_t>(outputs), 0.0f);
    for (int32_t o = 0; o < outputs; ++o) {
      (*bias)[static_cast<size_t>(o)] += static_cast<float>(beta * v[v.size() == 1 ? 0 : static_cast<size_t>(o)]);
    }
    return true;
  }

  bool gemm(const onnx::NodeProto& n, PathState* s) {
    if (n.input_size() < 2 || int_attribute(n, "transA", 0) != 0) {
      problem(&n, what_it_is(g_, n, c_.cell));
      return false;
    }
    if (s->labels.size() != 2) {
      problem(&n, "a Gemm on a rank-" + std::to_string(s->labels.size()) + " tensor (Gemm takes a matrix)");
      return false;
    }
    if (!features_last(n, *s, "a Gemm")) return false;
    FloatLayer l;
    if (!linear_weights(n, n.input(1), int_attribute(n, "transB", 0) != 0, float_attribute(n, "alpha", 1.0), &l, *s)) {
      return false;
    }
    if (n.input_size() > 2 && !n.input(2).empty() &&
        !bias_values(n, n.input(2), l.output_size, float_attribute(n, "beta", 1.0), &l.bias)) {
      return false;
    }
    add_layer(s, std::move(l), true);
    return true;
  }

  bool matmul(const onnx::NodeProto& n, PathState* s) {
    if (n.input_size() != 2 || !features_last(n, *s, "a MatMul")) return false;
    FloatLayer l;
    if (!linear_weights(n, n.input(1), false, 1.0, &l, *s)) return false;
    add_layer(s, std::move(l), true);
    return true;
  }

  // An Add of a constant to a Linear's output: its bias.
  bool add_bias(const onnx::NodeProto& n, PathState* s) {
    const std::string other = other_input(n, s->value);
    if (other.empty() || !is_const(g_, other)) {
      problem(&n, other.empty() || n.input(0) == n.input(1)
                      ? what_it_is(g_, n, c_.cell)
                      : "an Add of two activations (a residual or skip connection): not supported");
      return false;
    }
    if (!s->last_is_linear || s->layers.empty()) {
      problem(&n, "an Add of a constant that does not follow a Linear (only a Linear's bias is supported)");
      return false;
    }
    FloatLayer& l = s->layers.back();
    std::vector<float> extra;
    if (!bias_values(n, other, l.output_size, 1.0, &extra)) return false;
    if (l.bias.empty()) l.bias.assign(extra.size(), 0.0f);
    for (size_t o = 0; o < extra.size(); ++o) l.bias[o] += extra[o];
    return true;
  }

  bool softmax(const onnx::NodeProto& n, PathState* s) {
    const int64_t rank = static_cast<int64_t>(s->labels.size());
    // Opset 13 made the default axis -1 (before: 1, over the flattened trailing axes).
    int64_t axis = int_attribute(n, "axis", c_.opset >= 13 ? -1 : 1);
    if (axis < 0) axis += rank;
    if (axis != rank - 1 || s->labels.back() != 'F' || !features_last(n, *s, "a Softmax")) {
      if (axis >= 0 && axis < rank && axis != rank - 1) {
        problem(&n, std::string("a Softmax over axis ") + std::to_string(axis) + " (the " +
                        axis_name(s->labels[static_cast<size_t>(axis)]) +
                        " axis), not the last (feature) axis: not supported");
      }
      return false;
    }
    FloatLayer l;
    l.kind = FloatLayerKind::kSoftmax;
    l.node = n.name().empty() ? n.output(0) : n.name();
    add_layer(s, std::move(l), false);
    return true;
  }

  // The activations torch 1.13 exports as several nodes, recognized where the value branches:
  // SiLU x * Sigmoid(x); HardSwish (before opset 14) x * HardSigmoid(x); GELU as
  // x * (1 + Erf(x / sqrt 2)) * 0.5 or its tanh approximation.
  bool match_activation_pattern(PathState* s) {
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

  bool features_last_quiet(const PathState& s) const {
    const Labels d = data_axes(c_, s.labels);
    return !d.empty() && d.back() == 'F' && s.labels.back() == 'F' && d.find('D') == std::string::npos;
  }

  bool match_gated(const std::string& x, const std::vector<const onnx::NodeProto*>& cs, FloatLayer* l,
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

  bool match_gelu_erf(const std::string& x, const std::vector<const onnx::NodeProto*>& cs, FloatLayer* l,
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

  bool match_gelu_tanh(const std::string& x, const std::vector<const onnx::NodeProto*>& cs, FloatLayer* l,
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

  const PathContext& c_;
  const Graph& g_;
  bool front_;
  std::vector<std::string>* problems_;
  std::set<const onnx::NodeProto*>* used_;
};

// torch.ao.nn.quantizable.LSTM exports its cells unrolled (Linear "igates"/"hgates" per step).
const onnx::NodeProto* quantizable_lstm_node(const Graph& g) {
  for (const auto& n : g.proto().node()) {
    for (const auto& in : n.input()) {
      if (in.find("igates") != std::string::npos || in.find("hgates") != std::string::npos) return &n;
    }
  }
  return nullptr;
}

// A constant state whose batch rows differ (a learned [L, B, H] parameter) fixes the model's
// batch: every op's h0 and c0 then hold [B][H], the shared ones repeated for each row.
void share_state_rows(FloatProgram* p, const std::vector<int32_t>& hidden, int64_t declared_batch,
                      std::vector<std::string>* problems) {
  size_t rows = 0;  // of the per-row constants; 0: none
  for (const auto* s : {&p->h0, &p->c0}) {
    for (size_t k = 0; k < s->size() && k < hidden.size(); ++k) {
      const size_t n = (*s)[k].size() / static_cast<size_t>(hidden[k]);
      if (n <= 1) continue;
      if (rows != 0 && rows != n) {
        problems->push_back("graph: the constant initial states have " + std::to_string(rows) + " and " +
                            std::to_string(n) + " batch rows");
        return;
      }
      rows = n;
    }
  }
  if (rows == 0) return;
  if (declared_batch > 0 && static_cast<size_t>(declared_batch) != rows) {
    problems->push_back("graph: the constant initial state has " + std::to_string(rows) + " batch rows, but the input's "
                        "batch is " + std::to_string(declared_batch));
    return;
  }
  for (auto* s : {&p->h0, &p->c0}) {
    for (size_t k = 0; k < s->size() && k < hidden.size(); ++k) {
      std::vector<float>& v = (*s)[k];
      if (v.size() != static_cast<size_t>(hidden[k])) continue;
      const std::vector<float> row = v;
      for (size_t b = 1; b < rows; ++b) v.insert(v.end(), row.begin(), row.end());
    }
  }
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
                       " is too old (LSTM and GRU as supported need opset 7 or newer)");
  }
  std::vector<std::string> problems;
  if (!check_topological(model.graph(), &problems)) refuse(origin, problems);
  // The graph as the walks below read it: opset-9 Slices in their input form, constant
  // subgraphs (weights computed from initializers, static shapes) evaluated into initializers.
  import::upgrade_attribute_forms(&model, r.opset);
  import::fold_constants(&model, r.opset);
  const Graph g(model.graph());
  std::vector<const onnx::NodeProto*> lstms;
  for (const auto& n : g.proto().node()) {
    if (recurrent(n)) lstms.push_back(&n);
  }
  if (lstms.empty()) {
    if (const onnx::NodeProto* q = quantizable_lstm_node(g)) {
      problems.push_back(node_label(*q) + ": the graph has no LSTM node: it is a torch.ao.nn.quantizable.LSTM "
                         "exported cell by cell (its 'igates'/'hgates' Linear layers); export torch.nn.LSTM instead "
                         "(load the same weights into it: it exports one ONNX LSTM node per layer)");
    } else {
      for (const auto& n : g.proto().node()) {
        const std::string why = import::describe_foreign_node(n);
        if (!why.empty()) problems.push_back(node_label(n) + ": " + why);
      }
      if (problems.empty()) problems.push_back("graph: no LSTM or GRU node");
    }
    refuse(origin, problems);
  }
  std::map<const onnx::NodeProto*, NodeInfo> info;
  bool all_read = true;
  for (const auto* n : lstms) {
    NodeInfo ni;
    all_read = read_node(g, *n, &ni, &problems) && all_read;
    info[n] = std::move(ni);
  }
  if (!all_read) refuse(origin, problems);

  // A node whose X does not come from another LSTM heads the chain.
  const onnx::NodeProto* head = nullptr;
  for (const auto* n : lstms) {
    const onnx::NodeProto* p = g.producer(n->input(kX));
    bool from_lstm = false;
    for (int guard = 0; p != nullptr && guard < 16; ++guard) {
      if (recurrent(*p)) {
        from_lstm = true;
        break;
      }
      p = p->input_size() > 0 && !p->input(0).empty() ? g.producer(p->input(0)) : nullptr;
    }
    if (!from_lstm) {
      if (head != nullptr) {
        problems.push_back("graph: " + info[head].label + " and " + info[n].label +
                           " both read the graph input (only a chain of LSTM or GRU layers is supported)");
        refuse(origin, problems);
      }
      head = n;
    }
  }
  if (head == nullptr) {
    problems.push_back("graph: no LSTM or GRU node reads the graph input");
    refuse(origin, problems);
  }
  const NodeInfo& first = info[head];
  std::set<const onnx::NodeProto*> taken;

  // The model input: the one graph input the first LSTM's X is computed from.
  std::set<std::string> inputs_of_x;
  {
    std::vector<std::string> todo = {head->input(kX)};
    std::set<std::string> seen;
    while (!todo.empty() && seen.size() < 4096) {
      const std::string v = todo.back();
      todo.pop_back();
      if (v.empty() || !seen.insert(v).second) continue;
      if (g.is_graph_input(v)) inputs_of_x.insert(v);
      if (const onnx::NodeProto* p = g.producer(v)) todo.insert(todo.end(), p->input().begin(), p->input().end());
    }
  }
  if (inputs_of_x.size() != 1) {
    problems.push_back("graph: " + first.label + "'s input X is computed from " + std::to_string(inputs_of_x.size()) +
                       " graph inputs (expected one: the model's input sequence)");
    refuse(origin, problems);
  }
  r.input_name = *inputs_of_x.begin();
  for (const auto& i : g.proto().input()) {
    if (i.name() != r.input_name) continue;
    for (const auto& d : i.type().tensor_type().shape().dim()) r.input_shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
  }

  // The front: try the layouts the input's rank allows; the one that reaches X as the LSTM reads it wins.
  PathContext ctx;
  ctx.g = &g;
  ctx.opset = r.opset;
  ctx.cell = first.spec->op;
  ctx.directions = first.directions;
  const Labels want_x = first.layout == 0 ? "TBF" : "BTF";
  std::vector<Labels> candidates = r.input_shape.size() == 2 ? std::vector<Labels>{"TF"} : std::vector<Labels>{"BTF", "TBF"};
  Labels in_labels;
  PathState front;
  std::vector<std::string> front_problems;
  for (size_t c = 0; c < candidates.size(); ++c) {
    PathContext cc = ctx;
    const Labels& cand = candidates[c];
    cc.unbatched = cand == "TF";
    for (size_t k = 0; k < cand.size() && k < r.input_shape.size(); ++k) {
      if (cand[k] == 'T') cc.time_size = r.input_shape[k];
      if (cand[k] == 'B') cc.batch_size = r.input_shape[k];
    }
    PathState s;
    s.value = r.input_name;
    s.labels = cand;
    s.width = !r.input_shape.empty() && r.input_shape.back() > 0 ? static_cast<int32_t>(r.input_shape.back())
                                                                   : static_cast<int32_t>(first.input_size);
    std::vector<std::string> p;
    std::set<const onnx::NodeProto*> u;
    const bool walked = PathWalker(cc, true, &p, &u).walk(&s, head->input(kX));
    Labels at_x = s.labels;
    if (cc.unbatched) std::replace(at_x.begin(), at_x.end(), '1', 'B');
    if (walked && at_x != want_x) {
      p.push_back("graph: the input reaches " + first.label + " as " + s.labels + ", expected " + want_x +
                  " (T time, B batch, F features)");
    } else if (walked && s.width != first.input_size) {
      p.push_back("graph: " + first.label + " reads " + std::to_string(first.input_size) + " features, but its input has " +
                  std::to_string(s.width));
    }
    if (p.empty()) {
      in_labels = cand;
      front = std::move(s);
      ctx = cc;
      taken.insert(u.begin(), u.end());
      front_problems.clear();
      break;
    }
    if (c == 0) {
      front_problems = p;
      taken.insert(u.begin(), u.end());
    }
  }
  if (in_labels.empty()) {
    problems.insert(problems.end(), front_problems.begin(), front_problems.end());
    problems.push_back("what to do: from " + first.label + "'s input '" + head->input(kX) + "' on, the model may "
                       "compile alone: export it with that as the input and run the layers before it on the host");
    in_labels = candidates.back();
  }
  const bool unbatched = ctx.unbatched;
  r.unbatched = unbatched;
  r.batch_first = in_labels != "TBF";
  r.program.front = front.layers;

  // The chain: each node's Y reaches the next node's X through layout ops; the last node's Y (or
  // its h_n) feeds the head.
  std::vector<NodeInfo> chain;
  bool chain_ok = true;
  bool final_state = false;
  for (const onnx::NodeProto* n = head; n != nullptr;) {
    if (chain.size() > lstms.size()) break;
    const NodeInfo& ni = info[n];
    chain.push_back(ni);
    if (n->output_size() == 0 || n->output(kY).empty() || !used(g, *n, kY)) {
      final_state = true;  // Y unused: the head reads h_n
      break;
    }
    const onnx::NodeProto* nx = nullptr;
    Labels l;
    std::string graph_out;
    std::vector<std::string> link_problems;
    if (!follow_output(g, n->output(kY), ni.layout == 0 ? "TDBF" : "BTDF", unbatched, ni.directions, &graph_out, &l,
                       &nx, &link_problems, ni.hidden) ||
        nx == nullptr) {
      break;  // the head starts at this node's Y
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
    } else if (nn.spec != ni.spec) {
      problems.push_back(nn.label + ": a " + nn.spec->op + " layer on " + ni.label + " is not supported (a stack's "
                         "layers are all LSTM or all GRU: the state inputs and outputs are per stack)");
      chain_ok = false;
    }
    n = nx;
  }
  if (chain_ok && chain.size() != lstms.size()) {
    std::string off;
    for (const auto* n : lstms) {
      bool on = false;
      for (const NodeInfo& c : chain) on = on || c.node == n;
      if (!on) off += (off.empty() ? "" : ", ") + info[n].label + " (its X is '" + n->input(kX) + "')";
    }
    problems.push_back("graph: " + std::to_string(lstms.size()) + " LSTM/GRU nodes, of which " + std::to_string(chain.size()) +
                       " form a chain from the graph input to the output (only a chain of layers is supported); "
                       "off the chain: " + off);
    chain_ok = false;
  }
  if (!chain_ok) refuse(origin, problems);
  const NodeInfo& last = chain.back();
  const int32_t D = first.directions;

  // The head: from Y, or from the row h_n[-1] of the final state.
  FloatProgram& prog = r.program;
  PathState hs;
  bool head_ok = true;
  if (!final_state) {
    hs.value = last.node->output(kY);
    hs.labels = last.layout == 0 ? "TDBF" : "BTDF";
    hs.width = static_cast<int32_t>(last.hidden);
  } else {
    prog.lstm_output = LstmOutput::kFinalState;
    const std::string& yh = last.node->output_size() > kYH ? last.node->output(kYH) : std::string();
    std::string start = yh;
    if (yh.empty() || !used(g, *last.node, kYH)) {
      problems.push_back(last.label + ": neither its output Y nor its h_n is used (the model outputs nothing of it)");
      refuse(origin, problems);
    }
    if (chain.size() > 1) {
      // torch concatenates every layer's h_n along axis 0 before taking a row.
      const auto cs = g.consumers(chain[0].node->output(kYH));
      bool ok = cs.size() == 1 && cs[0]->op_type() == "Concat" && cs[0]->input_size() == static_cast<int>(chain.size()) &&
                attribute(*cs[0], "axis") != nullptr && attribute(*cs[0], "axis")->i() == 0 && cs[0]->output_size() >= 1;
      for (size_t j = 0; ok && j < chain.size(); ++j) ok = cs[0]->input(static_cast<int>(j)) == chain[j].node->output(kYH);
      if (!ok) {
        problems.push_back("graph: the layers' h_n must be concatenated along axis 0, in layer order, before the head "
                           "reads h_n[-1]");
        refuse(origin, problems);
      }
      taken.insert(cs[0]);
      start = cs[0]->output(0);
    }
    // An unbatched model's h_n [rows, 1, H] loses its batch axis first ([rows, H]).
    for (int guard = 0; guard < 4 && !g.is_graph_output(start); ++guard) {
      const onnx::NodeProto* sq = only_consumer(g, start);
      std::vector<int64_t> axes;
      const bool drops_batch = sq != nullptr && sq->op_type() == "Squeeze" && unbatched && axes_of(g, *sq, &axes) &&
                               axes == std::vector<int64_t>{1} && sq->output_size() >= 1;
      if (!drops_batch && !(sq != nullptr && sq->op_type() == "Identity" && sq->output_size() >= 1)) break;
      taken.insert(sq);
      start = sq->output(0);
    }
    const auto cs = g.data_consumers(start);
    const int64_t rows = static_cast<int64_t>(chain.size()) * D;
    double index = 0;
    const onnx::NodeProto* gather = cs.size() == 1 ? cs[0] : nullptr;
    const bool is_row = gather != nullptr && gather->op_type() == "Gather" && gather->input_size() == 2 &&
                        gather->input(0) == start && int_attribute(*gather, "axis", 0) == 0 &&
                        constant_scalar(g, gather->input(1), &index) && gather->output_size() >= 1;
    if (g.is_graph_output(start) || !is_row) {
      problems.push_back((gather ? node_label(*gather) : "graph") + std::string(": h_n is read other than as one row "
                         "h_n[-1] feeding the head (with Y unused, the head must read h_n[-1] only)"));
      refuse(origin, problems);
    }
    if (index != -1 && index != static_cast<double>(rows - 1)) {
      std::string advice = D == 2 ? " (for both directions of the last layer, read y[:, -1] (forward) and y[:, 0] "
                                    "(reverse) instead; or h_n[-1], the reverse direction)"
                                  : "";
      problems.push_back(node_label(*gather) + ": a Gather of h_n row " + fmt(index) +
                         ": only h_n[-1] (the last layer's final state) can feed the head" + advice);
      refuse(origin, problems);
    }
    taken.insert(gather);
    hs.value = gather->output(0);
    hs.labels = unbatched ? "F" : "BF";
    hs.width = static_cast<int32_t>(last.hidden);
  }
  std::vector<std::string> head_problems;
  head_ok = PathWalker(ctx, false, &head_problems, &taken).walk(&hs, "");
  if (head_ok && !front_problems.empty()) head_ok = false;  // the input's layout is unknown
  if (head_ok) {
    Labels want = final_state || hs.selected ? Labels("BF") : in_labels;
    if (unbatched) want.erase(std::remove(want.begin(), want.end(), 'B'), want.end());
    if (hs.features_squeezed) want.erase(std::remove(want.begin(), want.end(), 'F'), want.end());
    const Labels got = data_axes(ctx, hs.labels);
    if (got != want) {
      head_problems.push_back("graph: the output '" + hs.value + "' has axes " + hs.labels + ", expected " + want +
                              " (T time, B batch, F features, D directions, t/1 size 1): its layout is not the "
                              "input's, or the directions are not merged");
      head_ok = false;
    }
  }
  if (!head_problems.empty()) {
    problems.insert(problems.end(), head_problems.begin(), head_problems.end());
    problems.push_back("what to do: the model up to '" + hs.last_good + "' may compile alone: export it with that as "
                       "the output and run the rest on the host");
  }
  r.output_name = hs.value;
  r.output_squeezes_features = hs.features_squeezed;
  if (hs.selected) {
    hs.select.input_size = hs.select.output_size = D * static_cast<int32_t>(last.hidden);
    prog.head.push_back(hs.select);
  }
  prog.head.insert(prog.head.end(), hs.layers.begin(), hs.layers.end());

  // Anything else that computes is outside the scope.
  std::set<std::string> named;
  for (const auto& p : problems) named.insert(p.substr(0, p.find(": ")));
  for (const auto& n : g.proto().node()) {
    // Ops a walk takes in some forms are reported off its path only when no form is supported
    // (a product of two activations).
    const bool two_activations = (n.op_type() == "MatMul" || n.op_type() == "Gemm") && n.input_size() >= 2 &&
                                 !is_const(g, n.input(0)) && !is_const(g, n.input(1));
    if (recurrent(n) || taken.count(&n) || kStructuralOps.count(n.op_type()) ||
        (kPathOps.count(n.op_type()) && !two_activations)) {
      continue;
    }
    if (!named.count(node_label(n))) problems.push_back(node_label(n) + ": " + what_it_is(g, n, ctx.cell));
  }
  if (!problems.empty()) refuse(origin, problems);

  // Initial and final state.
  prog.directions = D;
  const int64_t op_count = static_cast<int64_t>(chain.size()) * prog.directions;
  for (int k : {kInitialH, kInitialC}) {
    std::vector<StateOrigin> origins(chain.size());
    bool ok = true;
    for (size_t j = 0; j < chain.size(); ++j) {
      ok = trace_state(g, chain[j], k, &origins[j], &problems, unbatched ? 1 : ctx.batch_size) && ok;
    }
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
  std::vector<int32_t> hidden_sizes;
  for (const NodeInfo& n : chain) hidden_sizes.insert(hidden_sizes.end(), static_cast<size_t>(n.directions), static_cast<int32_t>(n.hidden));
  share_state_rows(&prog, hidden_sizes, ctx.batch_size, &problems);
  for (int k : {kYH, kYC}) {
    if (k == kYH && final_state) continue;  // the head's, checked above
    std::string out;
    if (!trace_final_state(g, chain, k, &out, &problems)) continue;
    if (!out.empty() && (chain[0].layout != 0 || unbatched)) {
      problems.push_back(chain[0].label + ": the final state as an output is supported with layout 0 and a batched input only");
    }
    (k == kYH ? prog.hidden_output : prog.cell_output) = !out.empty();
    (k == kYH ? r.h_n_name : r.c_n_name) = out;
  }
  if (!problems.empty()) refuse(origin, problems);

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
