// Attention pooling over time (internal to compiler/src/import/ and compiler/src/recognize/), as
// recurrent classifiers write it on a batch-first or sequence-first layer's output y:
//   w = torch.softmax(self.attention(y), dim=1)      # Linear(W, 1): one score per step
//   context = torch.sum(w * y, dim=1)                 # or (w * y).sum(1), keepdim or not
// with the score squeezed before the softmax and unsqueezed after it, or not. torch exports a
// MatMul by the [W, 1] weight, an Add of the bias, Softmax over the time axis, a Mul by y and a
// ReduceSum over the time axis. The head's first layer: a kPoolTime of PoolFn::kAttention.
#include <cmath>

#include "recognize/path_walker.h"
#include "recognize/residual.h"

namespace qlstm {
namespace compiler {
namespace import {

namespace {

// n is a Squeeze or an Unsqueeze of the one axis `axis` of a rank-`rank` value (before a Squeeze,
// after an Unsqueeze), as an attribute or a constant input.
bool one_axis(const Graph& g, const onnx::NodeProto* n, const char* op, int64_t axis, int64_t rank) {
  std::vector<int64_t> axes;
  if (n == nullptr || n->op_type() != op || n->output_size() < 1 || !axes_of(g, *n, &axes) || axes.size() != 1) return false;
  return axes[0] == axis || axes[0] + rank == axis;
}

}  // namespace

bool PathWalker::match_attention_pool(PathState* s) {
  if (front_) return false;
  const Labels& labels = s->view.labels;
  const size_t time = labels.find('T');
  const int64_t rank = static_cast<int64_t>(labels.size());
  if (time == std::string::npos || labels.back() != 'F' || labels.find('D') != std::string::npos) return false;
  if (c_.opset < 13) return false;  // Softmax over one axis since opset 13
  const std::string y = s->value;
  const auto cs = path_consumers(c_, y);
  if (cs.size() != 2) return false;
  for (int k = 0; k < 2; ++k) {
    const onnx::NodeProto* score = cs[static_cast<size_t>(k)];
    const onnx::NodeProto* mul = cs[static_cast<size_t>(1 - k)];
    if (score->op_type() != "MatMul" || score->input_size() != 2 || score->input(0) != y || score->output_size() < 1 ||
        mul->op_type() != "Mul" || mul->output_size() < 1) {
      continue;
    }
    // The score Linear: a [W, 1] weight, then maybe the Add of one bias.
    std::vector<double> w, b;
    std::vector<int64_t> dims;
    const int64_t W = s->view.width;
    if (!constant_values(g_, score->input(1), &w, &dims) || dims != std::vector<int64_t>{W, 1}) continue;
    std::string v = score->output(0);
    std::vector<const onnx::NodeProto*> nodes = {score};
    const onnx::NodeProto* add = only_consumer_of_type(g_, v, "Add");
    if (add != nullptr && is_const(g_, other_input(*add, v))) {
      if (!constant_values(g_, other_input(*add, v), &b) || b.size() != 1) continue;
      nodes.push_back(add);
      v = add->output(0);
    }
    // Maybe squeezed to [.., T], the softmax over the time axis, maybe unsqueezed back.
    const onnx::NodeProto* squeeze = only_consumer(g_, v);
    const bool squeezed = one_axis(g_, squeeze, "Squeeze", rank - 1, rank);
    if (squeezed) {
      nodes.push_back(squeeze);
      v = squeeze->output(0);
    }
    const onnx::NodeProto* softmax = only_consumer_of_type(g_, v, "Softmax");
    const int64_t softmax_rank = squeezed ? rank - 1 : rank;
    if (softmax == nullptr) continue;
    int64_t axis = int_attribute(*softmax, "axis", -1);
    if (axis < 0) axis += softmax_rank;
    if (axis != static_cast<int64_t>(time)) continue;
    nodes.push_back(softmax);
    v = softmax->output(0);
    if (squeezed) {
      const onnx::NodeProto* unsqueeze = only_consumer(g_, v);
      if (!one_axis(g_, unsqueeze, "Unsqueeze", rank - 1, rank)) continue;
      nodes.push_back(unsqueeze);
      v = unsqueeze->output(0);
    }
    // The weights times y, summed over the time axis.
    if (only_consumer(g_, v) != mul || other_input(*mul, v) != y) continue;
    const onnx::NodeProto* sum = only_consumer_of_type(g_, mul->output(0), "ReduceSum");
    std::vector<int64_t> axes;
    if (sum == nullptr || !axes_of(g_, *sum, &axes) || axes.size() != 1 ||
        (axes[0] != static_cast<int64_t>(time) && axes[0] + rank != static_cast<int64_t>(time))) {
      continue;
    }
    nodes.push_back(mul);
    nodes.push_back(sum);
    for (const auto* n : nodes) used_->insert(n);
    if (!read_whole_sequence(*sum, s, FloatLayerKind::kPoolTime, "attention pooling over time", "pool")) {
      s->failed = true;  // named; the walk goes on past it
      s->value = sum->output(0);
      return true;
    }
    s->select.pool = PoolFn::kAttention;
    s->select.node = softmax->name().empty() ? softmax->output(0) : softmax->name();
    s->select.weight.assign(w.begin(), w.end());
    s->select.bias.assign(b.begin(), b.end());
    if (int_attribute(*sum, "keepdims", 1) != 0) {
      s->view.labels[time] = 't';
    } else {
      s->view.labels.erase(time, 1);
    }
    s->value = sum->output(0);
    return true;
  }
  return false;
}

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
