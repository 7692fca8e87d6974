#include "recognize/between_layers.h"

#include "import/recurrent_nodes.h"
#include "recognize/residual.h"

namespace qlstm {
namespace compiler {
namespace import {

bool follow_output(const PathContext& c, std::string value, LayoutView* view, std::string* graph_output,
                   const onnx::NodeProto** next_lstm, bool* residual, std::vector<std::string>* problems) {
  const Graph& g = *c.g;
  *next_lstm = nullptr;
  *residual = false;
  for (int guard = 0; guard < 16; ++guard) {
    record_view(c, value, *view);
    const auto next = path_consumers(c, value);
    if (next.size() == 1 && !g.is_graph_output(value)) {
      if (const ResidualAdd* r = residual_from(c, *next[0], value)) {
        std::string why = *residual ? "a second residual add after one layer" : "";
        if (why.empty()) same_axes_as_skip(c, *r, *view, &why);
        if (!why.empty()) {
          problems->push_back(node_label(*next[0]) + ": " + why);
          return false;
        }
        *residual = true;
        value = next[0]->output(0);
        continue;
      }
    }
    if (next.size() == 1 && recurrent(*next[0]) && !g.is_graph_output(value)) {
      if (next[0]->input_size() < 1 || next[0]->input(0) != value) {
        problems->push_back(node_label(*next[0]) + ": a recurrent layer's output feeds an input other than X");
        return false;
      }
      *next_lstm = next[0];
      return true;
    }
    if (g.is_graph_output(value)) {
      if (!next.empty()) {
        problems->push_back("graph: the LSTM output '" + value + "' is both a graph output and consumed");
        return false;
      }
      *graph_output = value;
      return true;
    }
    if (next.size() != 1) {
      problems->push_back("graph: the LSTM output sequence must reach one graph output through "
                          "layout ops only; '" + value + "' has " + std::to_string(next.size()) +
                          " consumers");
      return false;
    }
    const onnx::NodeProto& n = *next[0];
    if (n.output_size() < 1 || n.output(0).empty()) {
      problems->push_back(node_label(n) + ": has no output");
      return false;
    }
    if (!kLayoutOps.count(n.op_type())) return false;  // the head's: it names what the op is
    if (n.input_size() < 1 || n.input(0) != value) {
      problems->push_back(node_label(n) + ": reads the LSTM output as other than its data input");
      return false;
    }
    std::string why;
    if (!apply_layout_op(c, PathPart::kBetweenLayers, n, view, &why)) {
      problems->push_back(node_label(n) + ": " + why);
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
