// Step selection on the head: one time step of the output sequence (y[:, -1], a Gather or a
// Slice of one step); a size-1 axis read whole passes.
#include <algorithm>

#include "recognize/path_walker.h"

namespace qlstm {
namespace compiler {
namespace import {

// One step of the time axis as the selection, or `count` consecutive steps from `step` (the axis
// kept, of that size: the layers after it run on each selected step); false (reported) otherwise.
bool PathWalker::select_step(const onnx::NodeProto& n, PathState* s, int64_t step, size_t axis, bool keep_axis,
                             int64_t count) {
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
  if (count > 1 && (count > kMaxStep || (c_.time_size > 0 && (step >= 0 ? step + count : -step) > c_.time_size))) {
    problem(&n, "selects " + std::to_string(count) + " steps from step " + std::to_string(step) + " of a " +
                    std::to_string(c_.time_size) + "-step input");
    return false;
  }
  s->selected = true;
  s->select.kind = FloatLayerKind::kSelectStep;
  s->select.node = n.name().empty() ? n.output(0) : n.name();
  s->select.step = static_cast<int32_t>(step);
  if (count > 1) {
    // The per-position layers taken so far run after the selection (they commute with it), on
    // each selected step.
    s->select.step_count = static_cast<int32_t>(count);
    s->view.range_steps = static_cast<int32_t>(count);
    for (FloatLayer& l : s->layers) l.groups = s->select.step_count;
    s->last_is_linear = false;
    return true;
  }
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

// A Slice [b, e) of several steps of the time axis (ends past it: to the last step), as a selection
// of consecutive steps: the last k (y[:, -k:]), from a step counted from the first or the last
// to another, or to the end of a time axis of a known size.
bool PathWalker::step_range(const onnx::NodeProto& n, PathState* s, double b, double e, size_t axis) {
  constexpr double kToTheEnd = 1u << 30;
  const int64_t T = c_.time_size;
  // Past the last step (torch writes INT64_MAX for "to the end"; a static axis ends at T).
  const bool to_end = e >= kToTheEnd || (T > 0 && e >= static_cast<double>(T));
  if (b == 0 && to_end) return true;  // every step
  int64_t step = 0, count = 0;
  if (b < 0 && to_end) {  // the last k: y[:, -k:], for any T
    step = static_cast<int64_t>(b);
    count = -step;
  } else if ((b < 0 && e < 0) || (b >= 0 && e >= 0 && !to_end)) {  // both from the last, or from the first
    step = static_cast<int64_t>(b);
    count = static_cast<int64_t>(e) - step;
  } else if (T > 0) {  // one bound from each end, or from a step to the end, of a static time axis
    const double first = b < 0 ? b + static_cast<double>(T) : b;
    const double end = to_end ? static_cast<double>(T) : e < 0 ? e + static_cast<double>(T) : e;
    step = static_cast<int64_t>(first);
    count = static_cast<int64_t>(end) - step;
  } else {
    problem(&n, "a Slice of the steps from " + std::to_string(static_cast<int64_t>(b)) + " to " +
                    (to_end ? std::string("the end") : std::to_string(static_cast<int64_t>(e))) +
                    " of a time axis of dynamic size: how many it takes depends on each call; slice the last k "
                    "steps (y[:, -k:]) or export with a fixed sequence length");
    return false;
  }
  if (count < 1) {
    problem(&n, "a Slice of no time steps");
    return false;
  }
  return select_step(n, s, step, axis, true, count);
}

bool PathWalker::slice(const onnx::NodeProto& n, PathState* s) {
  std::vector<double> starts, ends, axes, steps;
  const bool ok = n.input_size() >= 3 && constant_values(g_, n.input(1), &starts) &&
                  constant_values(g_, n.input(2), &ends) &&
                  (n.input_size() < 4 || n.input(3).empty() || constant_values(g_, n.input(3), &axes)) &&
                  (n.input_size() < 5 || n.input(4).empty() || constant_values(g_, n.input(4), &steps));
  const size_t count = starts.size();
  if (!ok || count < 1 || ends.size() != count || (!axes.empty() && axes.size() != count) ||
      (!steps.empty() && steps.size() != count) ||
      std::any_of(steps.begin(), steps.end(), [](double v) { return v != 1; })) {
    problem(&n, "a Slice that is not one constant range of one axis with step 1: not supported");
    return false;
  }
  const int64_t rank = static_cast<int64_t>(s->view.labels.size());
  // Ends past the axis: torch writes INT64_MAX for "to the end", tf2onnx INT32_MAX.
  constexpr double kToTheEnd = 1u << 30;
  // The ranges that take part of their axis (tf2onnx slices every axis at once, most of them whole).
  int64_t axis = -1, b_int = 0;
  double b = 0, e = 0;
  for (size_t k = 0; k < count; ++k) {
    int64_t a = static_cast<int64_t>(k), start = 0;
    if ((!axes.empty() && !small_int(axes[k], &a)) || !small_int(starts[k], &start)) a = rank;  // refused below
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) {
      problem(&n, "a Slice of an axis out of range, or with a start that is not a small integer");
      return false;
    }
    const char label = s->view.labels[static_cast<size_t>(a)];
    const int64_t size = label == 'T' && s->view.range_steps > 0 ? s->view.range_steps : axis_size(c_, label, s->view.width);
    if (starts[k] == 0 && (ends[k] >= kToTheEnd || (size >= 0 && ends[k] >= static_cast<double>(size)))) continue;
    if (axis >= 0) {
      problem(&n, "a Slice of part of two axes at once: not supported");
      return false;
    }
    axis = a, b_int = start, b = starts[k], e = ends[k];
  }
  if (axis < 0) return true;  // all of every axis
  const char label = s->view.labels[static_cast<size_t>(axis)];
  if (label == 'T') {
    const bool last = b == -1 && e >= kToTheEnd;
    if (last || (b >= 0 && e == b + 1) || (b < -1 && e == b + 1)) {
      return select_step(n, s, b_int, static_cast<size_t>(axis), true);
    }
    return step_range(n, s, b, e, static_cast<size_t>(axis));
  }
  problem(&n, std::string("a Slice of part of the ") + axis_name(label) + " axis: not supported");
  return false;
}

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
