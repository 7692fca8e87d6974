#include "recognize/residual.h"

#include <algorithm>

#include "import/recurrent_nodes.h"

namespace qlstm {
namespace compiler {
namespace import {
namespace {

constexpr int kMaxLayoutOps = 16;  // a layout path longer than this is not a view

// The recurrent node whose Y reaches `value` through layout ops that each have one reader, or null.
const onnx::NodeProto* layer_of_output(const Graph& g, std::string value) {
  for (int guard = 0; guard < kMaxLayoutOps; ++guard) {
    if (g.data_consumers(value).size() != 1 || g.is_graph_output(value)) return nullptr;
    const onnx::NodeProto* p = g.producer(value);
    if (p == nullptr) return nullptr;
    if (recurrent(*p)) return p->output_size() > kY && p->output(kY) == value ? p : nullptr;
    if (!kLayoutOps.count(p->op_type()) || p->input_size() < 1 || p->output_size() != 1) return nullptr;
    value = p->input(0);
  }
  return nullptr;
}

// Whether `value`'s readers but `aside` lead through layout ops, one reader each, to `layer`'s X.
bool reaches_input(const Graph& g, std::string value, const onnx::NodeProto* aside, const onnx::NodeProto& layer) {
  for (int guard = 0; guard < kMaxLayoutOps; ++guard) {
    std::vector<const onnx::NodeProto*> next = g.data_consumers(value);
    next.erase(std::remove(next.begin(), next.end(), aside), next.end());
    if (next.size() != 1 || g.is_graph_output(value)) return false;
    const onnx::NodeProto& n = *next[0];
    if (&n == &layer) return n.input_size() > kX && n.input(kX) == value;
    if (!kLayoutOps.count(n.op_type()) || n.input_size() < 1 || n.input(0) != value || n.output_size() != 1) {
      return false;
    }
    value = n.output(0);
    aside = nullptr;
  }
  return false;
}

// The Add `add`'s operand x as `layer`'s input: back from x through layout ops (each read by the
// next alone) to the first value from which the layer's X is reached; false when there is none.
bool find_branch(const Graph& g, const onnx::NodeProto& add, const std::string& x, const onnx::NodeProto& layer,
                 ResidualAdd* r) {
  std::string value = x;
  const onnx::NodeProto* reader = &add;
  std::vector<const onnx::NodeProto*> ops;
  for (int guard = 0; guard < kMaxLayoutOps; ++guard) {
    if (reaches_input(g, value, reader, layer)) {
      r->branch = value;
      r->branch_reader = reader;
      r->skip_ops.assign(ops.rbegin(), ops.rend());
      return true;
    }
    if (g.data_consumers(value).size() != 1 || g.is_graph_output(value)) return false;
    const onnx::NodeProto* p = g.producer(value);
    if (p == nullptr || !kLayoutOps.count(p->op_type()) || p->input_size() < 1 || p->output_size() != 1) return false;
    ops.push_back(p);
    reader = p;
    value = p->input(0);
  }
  return false;
}

}  // namespace

std::map<const onnx::NodeProto*, ResidualAdd> find_residual_adds(const Graph& g) {
  std::map<const onnx::NodeProto*, ResidualAdd> found;
  for (const onnx::NodeProto& n : g.proto().node()) {
    if (n.op_type() != "Add" || n.input_size() != 2 || n.output_size() != 1 || n.input(0) == n.input(1) ||
        is_const(g, n.input(0)) || is_const(g, n.input(1))) {
      continue;
    }
    for (int side = 0; side < 2; ++side) {
      const std::string& y = n.input(side);
      const std::string& x = n.input(1 - side);
      const onnx::NodeProto* layer = layer_of_output(g, y);
      ResidualAdd r{&n, layer, y, x, "", nullptr, {}};
      if (layer != nullptr && find_branch(g, n, x, *layer, &r)) {
        found[&n] = r;
        break;
      }
    }
  }
  return found;
}

std::vector<const onnx::NodeProto*> path_consumers(const PathContext& c, const std::string& value) {
  std::vector<const onnx::NodeProto*> out;
  for (const onnx::NodeProto* n : c.g->data_consumers(value)) {
    if (c.residuals != nullptr) {
      const bool skip_path = std::any_of(c.residuals->begin(), c.residuals->end(), [&](const auto& r) {
        return r.second.branch == value && r.second.branch_reader == n;
      });
      if (skip_path) continue;
    }
    out.push_back(n);
  }
  return out;
}

const ResidualAdd* residual_from(const PathContext& c, const onnx::NodeProto& n, const std::string& value) {
  if (c.residuals == nullptr) return nullptr;
  const auto it = c.residuals->find(&n);
  return it != c.residuals->end() && it->second.from_y == value ? &it->second : nullptr;
}

void record_view(const PathContext& c, const std::string& value, const LayoutView& view) {
  if (c.views != nullptr) (*c.views)[value] = view;
}

bool same_axes_as_skip(const PathContext& c, const ResidualAdd& r, const LayoutView& view, std::string* why) {
  const LayoutView* found = nullptr;
  if (c.views != nullptr) {
    const auto it = c.views->find(r.branch);
    if (it != c.views->end()) found = &it->second;
  }
  if (found == nullptr) {
    *why = "a residual add whose operand '" + r.skip + "' is not on the data path into " + node_label(*r.layer);
    return false;
  }
  LayoutView skip = *found;
  for (const onnx::NodeProto* op : r.skip_ops) {
    std::string op_why;
    if (!apply_layout_op(c, PathPart::kBetweenLayers, *op, &skip, &op_why)) {
      *why = "a residual add whose operand '" + r.skip + "' comes through " + node_label(*op) + ": " + op_why;
      return false;
    }
  }
  if (skip.labels != view.labels || skip.width != view.width) {
    *why = "a residual add of '" + r.from_y + "' (axes " + view.labels + ", " + std::to_string(view.width) +
           " features) and '" + r.skip + "' (axes " + skip.labels + ", " + std::to_string(skip.width) +
           "): the operands must have the same axes and widths (no broadcasting)";
    return false;
  }
  return true;
}

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
