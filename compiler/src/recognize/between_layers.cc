#include "recognize/between_layers.h"

#include "import/recurrent_nodes.h"

namespace qlstm {
namespace compiler {
namespace import {
namespace {

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

// Squeeze/Reshape may only drop the size-1 direction axis, or (for an unbatched model) the
// size-1 batch axis.
bool apply_reshape_like(const Graph& g, const onnx::NodeProto& n, bool unbatched, int32_t directions, Labels* l,
                        int64_t width) {
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

}  // namespace

// Follows the single-consumer chain of layout ops from `start` (with labels) to a graph output.
// Or to the X of another LSTM node (*next_lstm is then set).
bool follow_output(const Graph& g, std::string value, Labels labels, bool unbatched, int32_t directions,
                   std::string* graph_output, Labels* out_labels, const onnx::NodeProto** next_lstm,
                   std::vector<std::string>* problems, int64_t hidden) {
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

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
