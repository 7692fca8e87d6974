// Poolings over time concatenated along the features (internal to compiler/src/import/ and
// compiler/src/recognize/): torch.cat((y.mean(1), y.max(1).values), 1), as text classifiers pool a
// recurrent layer's output, with the first or the last step too (torch.cat((y[:, -1], y.mean(1)), 1)). One head layer that writes each reduction side by side; the program
// runs one pooling op per reduction, each writing its part of one row (an output offset, no copy).
#include <algorithm>

#include "recognize/path_walker.h"
#include "recognize/residual.h"

namespace qlstm {
namespace compiler {
namespace import {

// At a value read by several nodes: each a mean or a max over the time axis alone, or its first or
// last step (then layout ops only), at least one a mean or a max, all joined by one Concat along
// the features. False for anything else, with nothing
// reported (the walk then names the branch as it does any other).
bool PathWalker::match_pooled_concat(PathState* s) {
  if (front_ || s->selected || !s->layers.empty() || s->view.labels.find('T') == std::string::npos) return false;
  const auto cs = path_consumers(c_, s->value);
  if (cs.size() < 2) return false;
  std::vector<std::string> quiet;
  std::set<const onnx::NodeProto*> used;
  PathWalker sub(c_, false, &quiet, &used);
  const onnx::NodeProto* concat = nullptr;
  std::vector<PathState> branches;
  for (const onnx::NodeProto* reduce : cs) {
    const std::string& op = reduce->op_type();
    if (op != "ReduceMean" && op != "ReduceMax" && op != "Gather" && op != "Slice") return false;
    PathState b = *s;
    if (reduce->output_size() != 1 || !sub.take(*reduce, &b) || !b.selected) return false;
    if (b.select.kind == FloatLayerKind::kSelectStep) {
      // The first or the last step alone: a part as a pooling's is.
      if (b.select.step_count != 1 || (b.select.step != 0 && b.select.step != -1)) return false;
      b.select.pool = b.select.step == 0 ? PoolFn::kFirstStep : PoolFn::kLastStep;
    } else if (b.select.kind != FloatLayerKind::kPoolTime) {
      return false;
    }
    used.insert(reduce);
    b.value = reduce->output(0);
    for (int guard = 0; guard < 16; ++guard) {
      const auto next = g_.data_consumers(b.value);
      // One consumer (a reduction torch computed once for two of the Concat's inputs: that one Concat).
      const bool one = !next.empty() && std::all_of(next.begin(), next.end(), [&](const onnx::NodeProto* n) { return n == next[0]; });
      if (!one || g_.is_graph_output(b.value)) return false;
      if (next[0]->op_type() == "Concat") {
        if (concat != nullptr && concat != next[0]) return false;
        concat = next[0];
        break;
      }
      // Layout ops only between a reduction and the Concat (a Squeeze of a kept axis, a Flatten).
      if (!kLayoutOps.count(next[0]->op_type()) || next[0]->output_size() < 1 || !sub.take(*next[0], &b) ||
          !b.layers.empty()) {
        return false;
      }
      used.insert(next[0]);
      b.value = next[0]->output(0);
    }
    if (concat == nullptr) return false;
    branches.push_back(std::move(b));
  }
  // The Concat joins the branches (each at least once) and nothing else, along their feature axis.
  if (concat->input_size() < static_cast<int>(branches.size()) || concat->output_size() != 1) return false;
  const PathState& first = branches.front();
  const int64_t rank = static_cast<int64_t>(first.view.labels.size());
  int64_t axis = int_attribute(*concat, "axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank || first.view.labels[static_cast<size_t>(axis)] != 'F') return false;
  std::vector<PoolFn> pools;
  bool reduces = false;  // at least one mean or max: steps alone side by side are a selection's
  std::vector<bool> taken(branches.size(), false);
  for (int k = 0; k < concat->input_size(); ++k) {
    size_t j = 0;
    while (j < branches.size() && branches[j].value != concat->input(k)) ++j;
    if (j == branches.size()) return false;
    taken[j] = true;
    const PathState& b = branches[j];
    if (b.view.labels != first.view.labels || b.view.width != first.view.width) return false;
    pools.push_back(b.select.pool);
    reduces = reduces || b.select.kind == FloatLayerKind::kPoolTime;
  }
  if (!reduces) return false;
  if (std::find(taken.begin(), taken.end(), false) != taken.end()) return false;
  used.insert(concat);
  used_->insert(used.begin(), used.end());
  s->selected = true;
  s->select = first.select;
  s->select.kind = FloatLayerKind::kPoolTime;
  s->select.step = -1;
  s->select.step_count = 1;
  s->select.node = concat->name().empty() ? concat->output(0) : concat->name();
  s->select.pools = pools;
  s->view = first.view;
  s->view.width = first.view.width * static_cast<int32_t>(pools.size());
  s->last_is_linear = false;
  s->value = concat->output(0);
  return true;
}

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
