// A final hidden state repeated over time into the next recurrent layer (recognize/repeated_state.h).
#include "recognize/repeated_state.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <set>

#include "recognize/path_walker.h"

namespace qlstm {
namespace compiler {
namespace import {
namespace {

// The axes of the value the walk is at, one letter each: T time (of the node's Y), D directions
// (one), B batch, F features, 1 a unit axis, R the new time axis of the repetition.
using Axes = std::string;

// An axis index of rank `rank`, negative from the end; false outside it.
bool axis_index(int64_t axis, size_t rank, size_t* out) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return false;
  *out = static_cast<size_t>(axis < 0 ? axis + r : axis);
  return true;
}

// One element of a shape vector: a number (any, -1 too), or an axis's size as the shape pass has it.
struct Elem {
  bool number = false;
  int64_t value = 0;
  Dim dim;
  static Elem of(int64_t v) { return {true, v, Dim{}}; }
  Dim as_dim() const { return number ? (value >= 0 ? Dim{value, ""} : Dim{}) : dim; }
};

// Mul, Equal or Where of shape vectors, element by element (torch's expand writes
// Where(Equal(s, -1), 1, s)).
bool elementwise(const std::string& op, std::vector<std::vector<Elem>> ins, std::vector<Elem>* out) {
  // A single element stands for all (broadcast).
  size_t n = 0;
  for (const std::vector<Elem>& in : ins) n = std::max(n, in.size());
  for (std::vector<Elem>& in : ins) {
    if (in.size() == 1) in.assign(n, in.front());
    if (in.size() != n) return false;
  }
  if (ins.size() != (op == "Where" ? 3u : 2u)) return false;
  for (size_t k = 0; k < n; ++k) {
    const Elem& x = ins[0][k];
    const Elem& y = ins[1][k];
    if (op == "Mul") {
      constexpr int64_t kShapeLimit = int64_t{1} << 24;  // a size or a -1, never more: no overflow
      if (x.number && y.number && std::abs(x.value) < kShapeLimit && std::abs(y.value) < kShapeLimit) {
        out->push_back(Elem::of(x.value * y.value));
      } else if (x.number && x.value == 1) {
        out->push_back(y);
      } else if (y.number && y.value == 1) {
        out->push_back(x);
      } else {
        return false;
      }
    } else if (op == "Equal") {
      // An axis's size is never negative: it differs from any negative number.
      if (x.number && y.number) out->push_back(Elem::of(x.value == y.value ? 1 : 0));
      else if ((y.number && y.value < 0) || (x.number && x.value < 0)) out->push_back(Elem::of(0));
      else return false;
    } else {
      if (!x.number) return false;
      out->push_back(x.value != 0 ? y : ins[2][k]);
    }
  }
  return true;
}

// The elements of a shape vector computed from Shape reads (a repeat count, an expand target):
// numbers, or an input axis's size where the export is dynamic. Only the arithmetic torch and
// tf2onnx write for such vectors; false for anything else. *nodes gains the nodes computing it.
bool shape_vector(const Graph& g, const std::string& v, std::vector<Elem>* out,
                  std::vector<const onnx::NodeProto*>* nodes, int depth = 0) {
  out->clear();
  std::vector<double> c;
  if (const onnx::TensorProto* t = constant_tensor(g, v); t != nullptr && t->data_type() == onnx::TensorProto::BOOL) {
    // A folded comparison (torch's expand: Where(Equal(s, -1), 1, s)).
    if (t->has_raw_data()) {
      for (char b : t->raw_data()) out->push_back(Elem::of(b != 0 ? 1 : 0));
    } else {
      for (int32_t b : t->int32_data()) out->push_back(Elem::of(b != 0 ? 1 : 0));
    }
    return true;
  }
  if (constant_values(g, v, &c)) {
    for (double x : c) {
      int64_t n = 0;
      if (!small_int(x, &n)) return false;
      out->push_back(Elem::of(n));
    }
    return true;
  }
  const onnx::NodeProto* p = g.producer(v);
  if (p == nullptr || depth > 32 || p->input_size() < 1) return false;
  nodes->push_back(p);
  const std::string& op = p->op_type();
  std::vector<Elem> a;
  if (op == "Shape") {
    const Shape* s = g.shape(p->input(0));
    if (s == nullptr) return false;
    const int64_t rank = static_cast<int64_t>(s->size());
    int64_t start = int_attribute(*p, "start", 0), end = int_attribute(*p, "end", rank);
    start = std::max<int64_t>(0, start < 0 ? start + rank : start);
    end = std::min<int64_t>(rank, end < 0 ? end + rank : end);
    for (int64_t k = start; k < end; ++k) {
      const Dim& d = (*s)[static_cast<size_t>(k)];
      out->push_back(d.known() ? Elem::of(d.value) : Elem{false, 0, d});
    }
    return true;
  }
  if (op == "Identity" || op == "Cast" || op == "Squeeze" || op == "Unsqueeze" || op == "Reshape") {
    return shape_vector(g, p->input(0), out, nodes, depth + 1);
  }
  if (op == "Concat") {
    for (const std::string& in : p->input()) {
      if (!shape_vector(g, in, &a, nodes, depth + 1)) return false;
      out->insert(out->end(), a.begin(), a.end());
    }
    return true;
  }
  if (op == "Gather") {
    std::vector<double> idx;
    if (int_attribute(*p, "axis", 0) != 0 || p->input_size() < 2 || !constant_values(g, p->input(1), &idx) ||
        !shape_vector(g, p->input(0), &a, nodes, depth + 1)) {
      return false;
    }
    for (double x : idx) {
      int64_t k = 0;
      if (!small_int(x, &k)) return false;
      if (k < 0) k += static_cast<int64_t>(a.size());
      if (k < 0 || k >= static_cast<int64_t>(a.size())) return false;
      out->push_back(a[static_cast<size_t>(k)]);
    }
    return true;
  }
  if (op == "ConstantOfShape") {
    // Filled with its value (0 without one), as many as its shape holds.
    double fill = 0.0;
    std::vector<double> value;
    if (const onnx::AttributeProto* at = attribute(*p, "value")) {
      if (!tensor_values(at->t(), &value) || value.size() != 1) return false;
      fill = value[0];
    }
    int64_t n = 0, count = 1;
    if (!shape_vector(g, p->input(0), &a, nodes, depth + 1) || !small_int(fill, &n)) return false;
    for (const Elem& d : a) {
      if (!d.number || d.value < 0 || d.value > 64) return false;
      count *= d.value;
    }
    out->assign(static_cast<size_t>(count), Elem::of(n));
    return true;
  }
  if (op == "Mul" || op == "Equal" || op == "Where") {
    std::vector<std::vector<Elem>> ins;
    for (const std::string& in : p->input()) {
      if (!shape_vector(g, in, &a, nodes, depth + 1)) return false;
      ins.push_back(a);
    }
    return elementwise(op, std::move(ins), out);
  }
  return false;
}

class Walk {
 public:
  // selected: the walk starts at the final state (Y_h), not at the whole sequence Y.
  Walk(const Graph& g, const Dim& time, bool selected, RepeatedState* out)
      : g_(g), time_(time), out_(out), selected_(selected) {}

  // One node on the way: the axes after it, false (maybe with a problem) where it is not taken.
  bool take(const onnx::NodeProto& c, Axes* axes) {
    const std::string& op = c.op_type();
    if (op == "Identity" || op == "Dropout") return true;
    if (op == "Transpose") return transpose(c, axes);
    if (op == "Squeeze") return squeeze(c, axes);
    if (op == "Unsqueeze") return unsqueeze(c, axes);
    if (op == "Gather") return gather(c, axes);
    if (op == "Concat") return concat(c, axes);
    if (op == "Slice") return slice(c, axes);
    if (op == "Expand" || op == "Tile") return repeat(c, axes);
    return fail(c, "neither a layout op nor the repetition over time");
  }

  bool selected() const { return selected_; }
  // The values stacked with the final state by a Concat (torch's h_n of a stack: every layer's).
  const std::vector<std::string>& stacked() const { return stacked_; }
  bool repeated() const { return repeated_; }

 private:
  bool fail(const onnx::NodeProto& c, const std::string& why) {
    // Past the selection of the final state, the walk was recognized: name where it stops.
    if (selected_ || repeated_) out_->problem = node_label(c) + ": " + why;
    return false;
  }

  bool transpose(const onnx::NodeProto& c, Axes* axes) {
    const onnx::AttributeProto* perm = attribute(c, "perm");
    Axes moved;
    if (perm == nullptr) {
      moved.assign(axes->rbegin(), axes->rend());
    } else {
      if (static_cast<size_t>(perm->ints_size()) != axes->size()) return fail(c, "a permutation of another rank");
      for (int64_t p : perm->ints()) {
        size_t k = 0;
        if (!axis_index(p, axes->size(), &k)) return fail(c, "a permutation out of range");
        moved += (*axes)[k];
      }
    }
    *axes = moved;
    return true;
  }

  bool squeeze(const onnx::NodeProto& c, Axes* axes) {
    std::vector<int64_t> list;
    if (!axes_of(g_, c, &list)) return fail(c, "its axes are not constant");
    Axes kept;
    for (size_t k = 0; k < axes->size(); ++k) {
      const char a = (*axes)[k];
      bool listed = list.empty() && (a == 'D' || a == '1');
      for (int64_t x : list) {
        size_t at = 0;
        listed = listed || (axis_index(x, axes->size(), &at) && at == k);
      }
      if (listed && a != 'D' && a != '1') return fail(c, "removes an axis that is not of size 1");
      if (!listed) kept += a;
    }
    *axes = kept;
    return true;
  }

  bool unsqueeze(const onnx::NodeProto& c, Axes* axes) {
    std::vector<int64_t> list;
    if (!axes_of(g_, c, &list) || list.empty()) return fail(c, "its axes are not constant");
    const size_t rank = axes->size() + list.size();
    std::vector<size_t> at;
    for (int64_t x : list) {
      size_t k = 0;
      if (!axis_index(x, rank, &k)) return fail(c, "an axis out of range");
      at.push_back(k);
    }
    std::sort(at.begin(), at.end());
    for (size_t k : at) axes->insert(axes->begin() + static_cast<ptrdiff_t>(k), '1');
    return true;
  }

  // torch's h_n of a stack of layers: every layer's Y_h concatenated along the layers' axis, this
  // one's last; only h_n[-1] (the Gather below) selects it again.
  bool concat(const onnx::NodeProto& c, Axes* axes) {
    size_t k = 0;
    const std::string& value = c.input(c.input_size() - 1);
    if (!axis_index(int_attribute(c, "axis", 0), axes->size(), &k) || (*axes)[k] != 'D' || !stacked_.empty() ||
        c.input_size() < 2 || g_.producer(value) == nullptr || stacked_layers_ > 0) {
      return fail(c, "a concatenation other than the layers' final states");
    }
    for (int j = 0; j + 1 < c.input_size(); ++j) stacked_.push_back(c.input(j));
    stacked_layers_ = c.input_size();
    return true;
  }

  // An index read as a constant scalar (a Gather's), -1 when it is the last of the time axis.
  bool gather(const onnx::NodeProto& c, Axes* axes) {
    size_t k = 0;
    if (!axis_index(int_attribute(c, "axis", 0), axes->size(), &k)) return fail(c, "an axis out of range");
    std::vector<double> v;
    std::vector<int64_t> dims;
    if (c.input_size() < 2 || !constant_values(g_, c.input(1), &v, &dims) || v.size() != 1) {
      return fail(c, "its index is not one constant");
    }
    const char a = (*axes)[k];
    // The last step of the time axis, the one row of a layer's directions, or the last layer's of
    // a stack's.
    const bool last = v[0] == -1.0 || (a == 'D' && stacked_layers_ > 0 ? v[0] == stacked_layers_ - 1.0
                                                                        : a != 'T' && v[0] == 0.0);
    if ((a != 'T' && a != 'D' && a != '1') || !last) return fail(c, "selects other than the final state");
    if (a == 'T') selected_ = true;
    if (dims.empty()) {
      axes->erase(axes->begin() + static_cast<ptrdiff_t>(k));
    } else {
      (*axes)[k] = '1';
    }
    return true;
  }

  // y[:, -1:]: the last step of the time axis, kept as an axis of one.
  bool slice(const onnx::NodeProto& c, Axes* axes) {
    std::vector<double> starts, ends, list, steps;
    if (c.input_size() < 3 || !constant_values(g_, c.input(1), &starts) || !constant_values(g_, c.input(2), &ends) ||
        (c.input_size() > 3 && !c.input(3).empty() && !constant_values(g_, c.input(3), &list)) ||
        (c.input_size() > 4 && !c.input(4).empty() && !constant_values(g_, c.input(4), &steps))) {
      return fail(c, "its bounds are not constant");
    }
    for (size_t j = 0; j < starts.size() && j < ends.size(); ++j) {
      size_t k = 0;
      const int64_t axis = list.empty() ? static_cast<int64_t>(j) : static_cast<int64_t>(j < list.size() ? list[j] : 99);
      if (!axis_index(axis, axes->size(), &k)) return fail(c, "an axis out of range");
      const double step = j < steps.size() ? steps[j] : 1.0;
      const char a = (*axes)[k];
      const bool whole_unit = (a == 'D' || a == '1') && starts[j] == 0.0 && ends[j] >= 1.0 && step == 1.0;
      const bool last_step = a == 'T' && starts[j] == -1.0 && ends[j] >= 1e9 && step == 1.0;
      if (!whole_unit && !last_step) return fail(c, "a slice other than the last step");
      if (last_step) {
        selected_ = true;
        (*axes)[k] = '1';
      }
    }
    return true;
  }

  // Expand or Tile: one axis of one becomes the repetition over time, or none does (a copy); the
  // others keep their sizes (read from the shapes the shape pass inferred).
  bool repeat(const onnx::NodeProto& c, Axes* axes) {
    if (!selected_) return fail(c, "repeats a value other than the final hidden state");
    const Shape* inferred = g_.shape(c.input(0));
    if (inferred == nullptr || inferred->size() != axes->size()) {
      return fail(c, "the shape of its input is unknown, so how often it repeats the state is too");
    }
    Shape known = *inferred;  // the walk knows its axes of one
    for (size_t k = 0; k < axes->size(); ++k) {
      if ((*axes)[k] == '1' || (*axes)[k] == 'D') known[k] = Dim{1, ""};
    }
    const Shape* in = &known;
    // Its output's sizes: the input's times the repeats (Tile), or the target where the input's is 1
    // (Expand), from its second input as computed; else as the shape pass inferred them.
    std::vector<Elem> second;
    Shape computed;
    if (c.input_size() >= 2 && shape_vector(g_, c.input(1), &second, &out_->nodes) && second.size() == axes->size()) {
      for (size_t k = 0; k < second.size(); ++k) {
        const Dim& from = (*in)[k];
        const Dim by = second[k].as_dim();
        if (c.op_type() == "Tile") {
          computed.push_back(by.known() && by.value == 1 ? from : from.known() && from.value == 1 ? by : Dim{});
        } else {
          computed.push_back(by.known() && by.value == 1 ? from : from.known() && from.value == 1 ? by
                                                              : same_dim(from, by) ? from : Dim{});
        }
      }
    }
    const Shape* out = computed.empty() ? g_.shape(c.output(0)) : &computed;
    if (out == nullptr || out->size() != axes->size()) {
      return fail(c, "the shape of its output is unknown, so how often it repeats the state is too");
    }
    for (size_t k = 0; k < axes->size(); ++k) {
      const Dim& from = (*in)[k];
      const Dim& to = (*out)[k];
      const char a = (*axes)[k];
      if (a == '1' && to.unknown()) {
        return fail(c, "the shape inference cannot tell how often it repeats the state (a dynamic expand); repeat it "
                       "with x.shape[1] (torch's repeat exports a Tile it can follow) or export a fixed sequence length");
      }
      if (a == '1' && !(to.known() && to.value == 1)) {
        if (repeated_) return fail(c, "repeats the state along a second axis");
        if (!same_dim(to, time_)) {
          return fail(c, "repeats the state " + dim_string(to) + " times, the model input has " + dim_string(time_) +
                             " steps (qlstm runs the decoder over the input's steps: repeat it x.shape[1] times)");
        }
        repeated_ = true;
        (*axes)[k] = 'R';
      } else if (!same_dim(from, to) && !(to.known() && from.known() && to.value == from.value) &&
                 !(c.op_type() == "Expand" && from.known() && from.value != 1)) {  // Expand keeps a size other than 1
        return fail(c, "changes the size of an axis other than the repeated one");
      }
    }
    return true;  // an Expand to the same shape repeats nothing: a copy
  }

  const Graph& g_;
  const Dim& time_;
  RepeatedState* out_;
  bool selected_, repeated_ = false;
  std::vector<std::string> stacked_;
  int stacked_layers_ = 0;  // the stack's layers, once a Concat stacked this one's last
};

// The ops the walk itself takes; past the selection of the final state any other is a layer's.
bool walk_op(const std::string& op) {
  static const std::set<std::string> kOps = {"Identity", "Dropout", "Transpose", "Squeeze", "Unsqueeze",
                                             "Gather",   "Concat",  "Slice",     "Expand",  "Tile"};
  return kOps.count(op) != 0;
}

// The value where per-position layers from `value` end: the input of the next repetition or
// recurrent node along a path of single readers; empty when there is none.
std::string layers_end(const Graph& g, std::string value) {
  for (int guard = 0; guard < 64; ++guard) {
    const std::vector<const onnx::NodeProto*> readers = g.data_consumers(value);
    if (readers.size() != 1 || readers.front()->output_size() < 1 || g.is_graph_output(value)) return "";
    const onnx::NodeProto& r = *readers.front();
    if (r.op_type() == "Expand" || r.op_type() == "Tile" || recurrent(r)) return value;
    value = r.output(0);
  }
  return "";
}

// Per-position layers on the selected state (a Linear bottleneck, its activation), before or after
// the repetition, from *value to `stop` (walk_position_layers). They commute with the repetition:
// the program runs them once, on the one-step state.
bool take_layers(const PathContext& c, const std::string& stop, std::string* value, Axes* axes, RepeatedState* out) {
  PathContext one = c;
  one.directions = 1;
  PathState s;
  s.value = *value;
  s.view.width = out->width;
  for (char a : *axes) s.view.labels += a == 'R' ? 'T' : a;  // the walker's names: R is the new time axis
  if (!walk_position_layers(one, stop, &s, &out->nodes, &out->problem)) return false;
  *axes = Axes{};
  for (char a : s.view.labels) *axes += a == 'T' ? 'R' : a == 't' ? '1' : a;
  out->width = s.view.width;
  out->layers.insert(out->layers.end(), s.layers.begin(), s.layers.end());
  *value = stop;
  return true;
}

}  // namespace

// Does `value` reach a repetition (Expand, Tile) within a few single-reader nodes? For the refusals
// of the forms not supported yet.
bool reaches_repetition(const Graph& g, std::string value) {
  for (int guard = 0; guard < 16; ++guard) {
    const std::vector<const onnx::NodeProto*> readers = g.data_consumers(value);
    if (readers.size() != 1 || readers.front()->output_size() < 1) return false;
    const std::string& op = readers.front()->op_type();
    if (op == "Expand" || op == "Tile") return true;
    value = readers.front()->output(0);
  }
  return false;
}

bool follow_repeated_state(const PathContext& ctx, const NodeInfo& n, bool from_y, const Dim& time,
                           RepeatedState* out) {
  const Graph& g = *ctx.g;
  *out = RepeatedState{};
  out->width = n.hidden;
  const onnx::NodeProto& node = *n.node;
  const int k = from_y ? kY : kYH;
  if (node.output_size() <= k || node.output(k).empty() || !used(g, node, k)) return false;
  // The final state as another layer's initial state (a seq2seq that passes the state on).
  for (int s : {kYH, kYC}) {
    if (from_y || node.output_size() <= s || node.output(s).empty()) continue;
    for (const onnx::NodeProto* c : g.data_consumers(node.output(s))) {
      if (recurrent(*c) && ((c->input_size() > kInitialH && c->input(kInitialH) == node.output(s)) ||
                            (c->input_size() > kInitialC && c->input(kInitialC) == node.output(s)))) {
        out->problem = node_label(*c) + ": its initial state being " + n.label + "'s final state (a decoder that "
                       "continues the encoder's state) is not supported yet; start the decoder from zero";
        return false;
      }
    }
  }
  // One direction's final state: Y_h, or Y's last step of a forward layer.
  if (n.directions != 1 || (from_y && n.reverse)) {
    if (reaches_repetition(g, node.output(k))) {
      out->problem = n.label + ": the final state of a " + (n.directions != 1 ? "bidirectional" : "reverse") +
                     " layer repeated over time is not supported yet; make the encoder one forward direction";
    }
    return false;
  }
  std::string value = node.output(k);
  Axes axes = from_y ? (n.layout == 0 ? "TDBF" : "BTDF") : "DBF";
  Walk walk(g, time, !from_y, out);
  for (int guard = 0; guard < 32; ++guard) {
    const std::vector<const onnx::NodeProto*> readers = g.data_consumers(value);
    if (readers.size() != 1 || g.is_graph_output(value)) return false;
    const onnx::NodeProto& c = *readers.front();
    if (recurrent(c)) {
      if (c.input(kX) != value || !walk.repeated()) return false;
      // The next node reads [T, B, F] (layout 0) or [B, T, F].
      std::replace(axes.begin(), axes.end(), 'R', 'T');
      const Axes want = int_attribute(c, "layout", 0) == 0 ? "TBF" : "BTF";
      // An unbatched model's reshapes to a batch of one may drop its batch axis for an axis of one.
      const size_t unit = axes.find('1');
      if (ctx.unbatched && axes.find('B') == Axes::npos && unit != Axes::npos) axes[unit] = 'B';
      if (axes != want) {
        out->problem = node_label(c) + ": reads the repeated state as " + axes + ", expected " + want +
                       " (T time, B batch, F features)";
        return false;
      }
      out->next = &c;
      for (const std::string& v : walk.stacked()) {
        const onnx::NodeProto* p = g.producer(v);
        if (p == nullptr || !recurrent(*p) || p->output_size() <= kYH || p->output(kYH) != v) {
          out->problem = node_label(c) + ": h_n[-1] of a stack whose h_n holds other values than its layers' final states";
          return false;
        }
        out->stacked.push_back(p);
      }
      return true;
    }
    if (c.op_type() == "Concat" && c.input(c.input_size() - 1) != value) return false;  // not its last input
    if (walk.selected() && !walk_op(c.op_type())) {
      const std::string stop = layers_end(g, value);
      if (!stop.empty()) {
        if (!take_layers(ctx, stop, &value, &axes, out)) return false;
        continue;
      }
    }
    if (c.output_size() < 1 || !walk.take(c, &axes)) return false;
    out->nodes.push_back(&c);
    value = c.output(0);
  }
  return false;
}

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
