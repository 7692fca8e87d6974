// Per-step layers exported unrolled (internal to compiler/src/import/ and compiler/src/recognize/):
// Keras' TimeDistributed(Dense) as tf2onnx writes it, and a Python loop over the steps: the
// sequence sliced into each of its T steps, the same layers on every slice, the results
// concatenated along the time axis in step order. It is those layers once, on every step.
#include <algorithm>

#include "recognize/path_walker.h"
#include "recognize/residual.h"

namespace qlstm {
namespace compiler {
namespace import {
namespace {

bool same_layer(const FloatLayer& a, const FloatLayer& b) {
  return a.kind == b.kind && a.input_size == b.input_size && a.output_size == b.output_size && a.weight == b.weight &&
         a.bias == b.bias && a.fn == b.fn && a.alpha == b.alpha && a.beta == b.beta && a.clip_min == b.clip_min &&
         a.clip_max == b.clip_max && a.gelu_tanh == b.gelu_tanh && a.softmax_beta == b.softmax_beta;
}

}  // namespace

// At a value with the time axis read by one Slice per step: each branch walked quietly (its own
// walker, its problems its own) up to the one Concat they all reach, which must join them in step
// order along the axis the slice kept. False for anything else, with nothing reported but for
// branches whose layers differ (the walk then names the branch as it does any other).
bool PathWalker::match_unrolled_steps(PathState* s) {
  // Also each of several selected steps (Keras: a Lambda of the last k steps, then TimeDistributed).
  const bool range = s->selected && s->select.kind == FloatLayerKind::kSelectStep && s->select.step_count > 1 &&
                     !s->range_merged;
  if (front_ || (s->selected && !range) || s->view.labels.find('T') == std::string::npos) return false;
  const auto cs = path_consumers(c_, s->value);
  const int64_t T = range ? s->select.step_count : c_.time_size;
  if (cs.size() < 2 || T != static_cast<int64_t>(cs.size())) return false;  // one slice per step of a fixed length
  std::vector<std::string> quiet;
  std::set<const onnx::NodeProto*> used;
  PathWalker sub(c_, false, &quiet, &used);
  const onnx::NodeProto* concat = nullptr;
  std::vector<PathState> branches(static_cast<size_t>(T));
  std::vector<bool> seen(static_cast<size_t>(T), false);
  for (const onnx::NodeProto* slice : cs) {
    PathState b = *s;
    b.layers.clear();
    if (range) {  // a step of the selected ones: the branch selects it within them
      b.selected = false;
      b.select = FloatLayer{};
    }
    if (slice->op_type() != "Slice" || slice->output_size() != 1 || !sub.take(*slice, &b) || !b.selected) return false;
    const int64_t step = b.select.step < 0 ? b.select.step + T : b.select.step;
    if (step < 0 || step >= T || seen[static_cast<size_t>(step)]) return false;
    seen[static_cast<size_t>(step)] = true;
    used.insert(slice);
    b.value = slice->output(0);
    for (int guard = 0; guard < 16; ++guard) {
      const auto next = g_.data_consumers(b.value);
      if (next.size() != 1 || g_.is_graph_output(b.value)) return false;
      if (next[0]->op_type() == "Concat") {
        if (concat != nullptr && concat != next[0]) return false;
        concat = next[0];
        break;
      }
      if (next[0]->output_size() < 1 || !sub.take(*next[0], &b)) return false;
      used.insert(next[0]);
      b.value = next[0]->output(0);
    }
    if (concat == nullptr || g_.data_consumers(b.value).size() != 1) return false;
    branches[static_cast<size_t>(step)] = std::move(b);
  }
  // The Concat joins exactly the branches, in step order, along a size-1 axis they kept.
  if (concat->input_size() != T || concat->output_size() != 1) return false;
  const PathState& first = branches.front();
  const int64_t rank = static_cast<int64_t>(first.view.labels.size());
  int64_t axis = int_attribute(*concat, "axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return false;
  const char kept = first.view.labels[static_cast<size_t>(axis)];
  if (kept != 't' && kept != '1') return false;
  for (int64_t t = 0; t < T; ++t) {
    const PathState& b = branches[static_cast<size_t>(t)];
    if (concat->input(static_cast<int>(t)) != b.value || b.view.labels != first.view.labels ||
        b.view.width != first.view.width || b.layers.size() != first.layers.size()) {
      return false;
    }
    for (size_t k = 0; k < b.layers.size(); ++k) {
      if (!same_layer(b.layers[k], first.layers[k])) {
        problem(concat, "joins the " + std::to_string(T) + " steps of '" + s->value + "' each through its own layers (step " +
                            std::to_string(t) + "'s differ from step 0's): one layer per step is not supported; apply "
                            "the same layer to every step (nn.Linear on the sequence, Keras TimeDistributed)");
        return false;
      }
    }
  }
  if (first.layers.empty()) return false;  // slices concatenated back: not this pattern
  used.insert(concat);
  used_->insert(used.begin(), used.end());
  for (FloatLayer l : first.layers) {
    l.groups = range ? s->select.step_count : 1;  // on each selected step
    s->layers.push_back(std::move(l));
  }
  s->last_is_linear = first.last_is_linear;
  s->last_is_batch_norm = first.last_is_batch_norm;
  s->view = first.view;
  s->view.labels[static_cast<size_t>(axis)] = 'T';
  s->value = concat->output(0);
  return true;
}

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
