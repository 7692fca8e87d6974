// One layout view per value: the layout ops' rules (recognize/layout_view.h). They move, add or
// drop size-1 axes, or merge the directions into the features; a change that mixes positions with
// features is refused.
#include "recognize/layout_view.h"

#include <algorithm>
#include <vector>

namespace qlstm {
namespace compiler {
namespace import {

const std::set<std::string> kLayoutOps = {"Identity", "Dropout", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Reshape"};

int64_t axis_size(const PathContext& c, char label, int64_t width) {
  switch (label) {
    case 'T': return c.time_size;
    case 'B': return c.unbatched ? 1 : c.batch_size;
    case 'F': return width;
    case 'D': return c.directions;
    default: return 1;
  }
}

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

Labels data_axes(const PathContext& c, const Labels& l) {
  Labels out;
  for (char a : l) {
    if (!unit_axis(c, a)) out.push_back(a);
  }
  return out;
}

namespace {

// The rules of one op on one view; each refusal sets why_ (the node is named by the caller).
class LayoutRules {
 public:
  LayoutRules(const PathContext& c, PathPart part, LayoutView* v, std::string* why) : c_(c), part_(part), v_(*v), why_(*why) {}
  bool transpose(const onnx::NodeProto& n);
  bool squeeze(const onnx::NodeProto& n);
  bool unsqueeze(const onnx::NodeProto& n);
  bool flatten(const onnx::NodeProto& n);
  bool reshape(const onnx::NodeProto& n);
  bool merge_time(const Labels& before);
  // The axis's size: a selected range's step count for its time axis.
  int64_t size_of(char label, int64_t width) const {
    return label == 'T' && v_.range_steps > 0 ? v_.range_steps : axis_size(c_, label, width);
  }

 private:
  bool fail(const std::string& why) {
    why_ = why;
    return false;
  }
  // The batch axis, squeezable in the head: a static batch of 1.
  bool one_row_batch(char label) const {
    return label == 'B' && !c_.unbatched && part_ == PathPart::kHead && c_.batch_size == 1;
  }
  bool squeeze_all(const onnx::NodeProto& n, std::vector<bool>* drop);

  const PathContext& c_;
  PathPart part_;
  LayoutView& v_;
  std::string& why_;
};

// Applies a Transpose's perm (reversed when absent) to the labels; false when it does not fit.
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

}  // namespace

bool LayoutRules::transpose(const onnx::NodeProto& n) {
  Labels l = v_.labels;
  if (!apply_transpose(n, &l)) {
    return fail("a Transpose whose perm does not fit the rank-" + std::to_string(v_.labels.size()) + " input");
  }
  // The feature axis may move (BatchNorm1d on [B, F, T]): each op after it checks the axis it works
  // on, and the path must come back to the layout its end reads (the head's output, the next layer's X).
  v_.labels = l;
  return true;
}

// A Squeeze without axes: every axis of size 1 of this call's input.
bool LayoutRules::squeeze_all(const onnx::NodeProto& n, std::vector<bool>* drop) {
  // Which axes that drops is up to each call's sizes where one is dynamic (a batch or time axis
  // exported as such): its inferred shape, when the walk does not know the size, must say.
  const Shape* shape = c_.g->shape(n.input(0));
  const bool shaped = shape != nullptr && shape->size() == v_.labels.size();
  for (size_t k = 0; k < v_.labels.size(); ++k) {
    int64_t size = size_of(v_.labels[k], v_.width);
    if (size < 0 && shaped && (*shape)[k].known()) size = (*shape)[k].value;
    if (size < 0) {
      const bool named = shaped && !(*shape)[k].symbol.empty();
      return fail(std::string("a Squeeze without axes of a value whose ") + axis_name(v_.labels[k]) + " axis is " +
                  (named ? "dynamic ('" + (*shape)[k].symbol + "')" : std::string("of unknown size")) +
                  ": which axes it drops depends on each call's sizes; name the axes to squeeze");
    }
    if (size != 1) continue;
    if (one_row_batch(v_.labels[k])) {
      v_.batch_squeezed = true;
    } else if (v_.labels[k] == 'F' && part_ == PathPart::kHead) {
      v_.features_squeezed = true;  // a head's one value per position, as squeeze(-1) (below)
    } else if (!unit_axis(c_, v_.labels[k])) {
      return fail(std::string("a Squeeze without axes drops the ") + axis_name(v_.labels[k]) +
                  " axis (its size is 1 here): name the axes to squeeze");
    }
    (*drop)[k] = true;
  }
  return true;
}

bool LayoutRules::squeeze(const onnx::NodeProto& n) {
  std::vector<int64_t> axes;
  if (!axes_of(*c_.g, n, &axes)) return fail("a Squeeze whose axes are not constant: not supported");
  const int64_t rank = static_cast<int64_t>(v_.labels.size());
  std::vector<bool> drop(v_.labels.size(), false);
  if (axes.empty() && !squeeze_all(n, &drop)) return false;
  for (int64_t a : axes) {
    const int64_t k = a < 0 ? a + rank : a;
    if (k < 0 || k >= rank) {
      return fail("a Squeeze of axis " + std::to_string(a) + " of a rank-" + std::to_string(rank) + " tensor");
    }
    const char label = v_.labels[static_cast<size_t>(k)];
    // A head's one value per position ([B, T, 1] -> [B, T], as a forecaster's .squeeze(-1)):
    // the output keeps the axis (the same values in the same order) and says so.
    const bool one_feature = label == 'F' && v_.width == 1 && part_ == PathPart::kHead;
    // The batch axis of an export whose batch is static 1 ([1, T, F] -> [T, F], as deployment
    // code writes): the output keeps it, as one row per call, and says so.
    const bool one_row = one_row_batch(label);
    if (!unit_axis(c_, label) && !one_feature && !one_row) {
      if ((label == 'T' || label == 'B') && size_of(label, v_.width) == 1) {  // static 1 here; any size when compiled
        const char* where = part_ == PathPart::kFront ? "in front of" : part_ == PathPart::kHead ? "after" : "between the layers of";
        return fail(std::string("a Squeeze of the ") + axis_name(label) + " axis " + where + " the " + c_.cell +
                    " (of size 1 in this export, any size in the compiled model): not supported; keep that axis");
      }
      return fail(std::string("a Squeeze of the ") + axis_name(label) + " axis, which is not of size 1: not supported");
    }
    v_.features_squeezed = v_.features_squeezed || one_feature;
    v_.batch_squeezed = v_.batch_squeezed || one_row;
    drop[static_cast<size_t>(k)] = true;
  }
  Labels l;
  for (size_t k = 0; k < v_.labels.size(); ++k) {
    if (!drop[k]) l.push_back(v_.labels[k]);
  }
  v_.labels = l;
  return true;
}

bool LayoutRules::unsqueeze(const onnx::NodeProto& n) {
  std::vector<int64_t> axes;
  if (!axes_of(*c_.g, n, &axes) || axes.empty()) {
    return fail("an Unsqueeze whose axes are not constant: not supported");
  }
  const int64_t rank = static_cast<int64_t>(v_.labels.size() + axes.size());
  std::vector<int64_t> at;
  for (int64_t a : axes) at.push_back(a < 0 ? a + rank : a);
  std::sort(at.begin(), at.end());
  Labels l = v_.labels;
  for (int64_t a : at) {
    if (a < 0 || a > static_cast<int64_t>(l.size())) {
      return fail("an Unsqueeze at axis " + std::to_string(a) + " out of range");
    }
    l.insert(static_cast<size_t>(a), 1, '1');
  }
  v_.labels = l;
  return true;
}

bool LayoutRules::flatten(const onnx::NodeProto& n) {
  const int64_t rank = static_cast<int64_t>(v_.labels.size());
  int64_t axis = int_attribute(n, "axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) {
    return fail("a Flatten at axis " + std::to_string(axis) + " of a rank-" + std::to_string(rank) + " tensor");
  }
  const Labels left = data_axes(c_, v_.labels.substr(0, static_cast<size_t>(axis)));
  const Labels right = data_axes(c_, v_.labels.substr(static_cast<size_t>(axis)));
  if (part_ == PathPart::kHead && left == "B" && right == "TF") return merge_time(left);
  if (left.size() > 1 || left.find('F') != std::string::npos || (right != "F" && right != "DF")) {
    return fail("a Flatten that merges the " + v_.labels + " axes into [" + left + "][" + right +
                    "]: it mixes positions with features; not supported");
  }
  if (right == "DF") v_.width *= c_.directions;
  v_.labels = std::string(left.empty() ? "1" : left) + "F";
  return true;
}

// Every step of each batch row merged into one row of features (the head only, batch-major).
bool LayoutRules::merge_time(const Labels& before) {
  if (v_.flattened_steps != 0) return fail("a second merge of the time axis into the features: not supported");
  v_.step_width = v_.width;
  v_.flattened_steps = v_.range_steps > 0 ? v_.range_steps : c_.time_size > 0 ? static_cast<int32_t>(c_.time_size) : -1;
  v_.width = v_.flattened_steps > 0 ? v_.flattened_steps * v_.step_width : 0;
  v_.labels = before + "F";
  return true;
}

bool LayoutRules::reshape(const onnx::NodeProto& n) {
  std::vector<double> target;
  if (n.input_size() < 2 || !constant_values(*c_.g, n.input(1), &target)) {
    return fail("a Reshape to a shape that is not constant: not supported (reshape with constant sizes, or use "
                "Flatten/Squeeze)");
  }
  const bool allowzero = int_attribute(n, "allowzero", 0) != 0;
  // The data axes (size-1 ones may come and go), matched in order against the target's sizes.
  std::vector<size_t> real;
  for (size_t k = 0; k < v_.labels.size(); ++k) {
    if (!unit_axis(c_, v_.labels[k])) real.push_back(k);
  }
  Labels out;
  int32_t width = v_.width;
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
      const char cur = v_.labels[real[r]];
      const int64_t size = size_of(cur, width);
      // y.reshape(B, -1) of a batch-major [B, T, F] head: every step into one row (merge_time).
      const bool time_merge = part_ == PathPart::kHead && cur == 'T' && r + 2 == real.size() && out == "B" &&
                              v_.labels[real[r + 1]] == 'F' && j + 1 == target.size() &&
                              (t == -1 || (size > 0 && t == size * width));
      if (time_merge) return merge_time(out);
      const bool merge = cur == 'D' && r + 1 < real.size() && v_.labels[real[r + 1]] == 'F' &&
                         ((t == -1 && j + 1 == target.size()) || t == c_.directions * width);
      if (merge) {
        out.push_back('F');
        width *= c_.directions;
        r += 2;
        continue;
      }
      const bool same = copy ? (j < v_.labels.size() && v_.labels[j] == cur) : (t == -1 || (size >= 0 && t == size));
      if (same) {
        out.push_back(cur);
        ++r;
        continue;
      }
    }
    if (t == 1 || (copy && j < v_.labels.size() && unit_axis(c_, v_.labels[j]))) {
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
    return fail("a Reshape of the " + v_.labels + " axes to " + join(ts) +
                    " that does not only add or drop size-1 axes or merge the directions into the features: "
                    "not supported");
  }
  v_.labels = out;
  v_.width = width;
  return true;
}

bool apply_layout_op(const PathContext& c, PathPart part, const onnx::NodeProto& n, LayoutView* v, std::string* why) {
  const std::string& op = n.op_type();
  if (op == "Identity") return true;
  if (op == "Dropout") {
    // Eval mode: the identity (its mask output must be unused).
    const bool mask_used = n.output_size() > 1 && !n.output(1).empty() && !c.g->consumers(n.output(1)).empty();
    if (mask_used) *why = "a Dropout whose mask is used: not supported";
    return !mask_used;
  }
  LayoutRules rules(c, part, v, why);
  if (op == "Transpose") return rules.transpose(n);
  if (op == "Squeeze") return rules.squeeze(n);
  if (op == "Unsqueeze") return rules.unsqueeze(n);
  if (op == "Flatten") return rules.flatten(n);
  if (op == "Reshape") return rules.reshape(n);
  *why = "op '" + op + "' is not a layout op";
  return false;
}

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
