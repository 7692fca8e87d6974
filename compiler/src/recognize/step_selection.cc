// Step selection on the head: one time step of the output sequence (y[:, -1], a Gather or a
// Slice of one step); a size-1 axis read whole passes.
#include "recognize/path_walker.h"

namespace qlstm {
namespace compiler {
namespace import {

// One step of the time axis as the selection; false (reported) otherwise.
bool PathWalker::select_step(const onnx::NodeProto& n, PathState* s, int64_t step, size_t axis, bool keep_axis) {
  if (front_) {
    problem(&n, std::string("a selection of one time step before the ") + c_.cell + ": not supported");
    return false;
  }
  if (s->selected) {
    problem(&n, "a selection of one time step after another, or after a pooling over time: not supported");
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
    s->view.labels[axis] = 't';
  } else {
    s->view.labels.erase(axis, 1);
  }
  s->last_is_linear = false;
  return true;
}

bool PathWalker::gather(const onnx::NodeProto& n, PathState* s) {
  const int64_t rank = static_cast<int64_t>(s->view.labels.size());
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
  const char label = s->view.labels[static_cast<size_t>(axis)];
  const bool keep = !dims.empty();
  if (label == 'T') return select_step(n, s, k, static_cast<size_t>(axis), keep);
  if (unit_axis(c_, label) && (k == 0 || k == -1)) {
    if (!keep) s->view.labels.erase(static_cast<size_t>(axis), 1);
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

bool PathWalker::slice(const onnx::NodeProto& n, PathState* s) {
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
  const int64_t rank = static_cast<int64_t>(s->view.labels.size());
  int64_t axis = 0, b_int = 0;
  if ((!axes.empty() && !small_int(axes[0], &axis)) || !small_int(starts[0], &b_int)) axis = rank;  // refused below
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) {
    problem(&n, "a Slice of an axis out of range, or with a start that is not a small integer");
    return false;
  }
  const char label = s->view.labels[static_cast<size_t>(axis)];
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
  const int64_t size = axis_size(c_, label, s->view.width);
  if (b == 0 && (e >= kToTheEnd || (size >= 0 && e >= static_cast<double>(size)))) return true;  // all of it
  problem(&n, std::string("a Slice of part of the ") + axis_name(label) + " axis: not supported");
  return false;
}

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
