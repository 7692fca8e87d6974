// Layout ops on the data path: they move, add or drop size-1 axes, or merge the directions
// into the features; a change that mixes positions with features is refused.
#include "recognize/path_walker.h"

#include <algorithm>

namespace qlstm {
namespace compiler {
namespace import {

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

bool PathWalker::transpose(const onnx::NodeProto& n, PathState* s) {
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

bool PathWalker::one_row_batch(char label) const { return label == 'B' && !c_.unbatched && !front_ && c_.batch_size == 1; }

bool PathWalker::squeeze(const onnx::NodeProto& n, PathState* s) {
  std::vector<int64_t> axes;
  if (!axes_of(*c_.g, n, &axes)) {
    problem(&n, "a Squeeze whose axes are not constant: not supported");
    return false;
  }
  const int64_t rank = static_cast<int64_t>(s->labels.size());
  std::vector<bool> drop(s->labels.size(), false);
  if (axes.empty()) {  // every size-1 axis
    // Which axes that drops is up to each call's sizes where one is dynamic (a batch or time axis
    // exported as such): its inferred shape, when the walk does not know the size, must say.
    const Shape* shape = c_.g->shape(n.input(0));
    for (size_t k = 0; k < s->labels.size(); ++k) {
      int64_t size = axis_size(c_, s->labels[k], s->width);
      if (size < 0 && shape != nullptr && shape->size() == s->labels.size() && (*shape)[k].known()) {
        size = (*shape)[k].value;
      }
      if (size < 0) {
        const bool named = shape != nullptr && shape->size() == s->labels.size() && !(*shape)[k].symbol.empty();
        problem(&n, std::string("a Squeeze without axes of a value whose ") + axis_name(s->labels[k]) + " axis is " +
                        (named ? "dynamic ('" + (*shape)[k].symbol + "')" : std::string("of unknown size")) +
                        ": which axes it drops depends on each call's sizes; name the axes to squeeze");
        return false;
      }
      if (size == 1) {
        if (one_row_batch(s->labels[k])) {
          s->batch_squeezed = true;
        } else if (!unit_axis(c_, s->labels[k])) {
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
    // The batch axis of an export whose batch is static 1 ([1, T, F] -> [T, F], as deployment
    // code writes): the output keeps it, as one row per call, and says so.
    const bool one_row = one_row_batch(label);
    if (!unit_axis(c_, label) && !one_feature && !one_row) {
      problem(&n, std::string("a Squeeze of the ") + axis_name(label) + " axis, which is not of size 1: not supported");
      return false;
    }
    s->features_squeezed = s->features_squeezed || one_feature;
    s->batch_squeezed = s->batch_squeezed || one_row;
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

bool PathWalker::unsqueeze(const onnx::NodeProto& n, PathState* s) {
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

bool PathWalker::flatten(const onnx::NodeProto& n, PathState* s) {
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

bool PathWalker::reshape(const onnx::NodeProto& n, PathState* s) {
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

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
