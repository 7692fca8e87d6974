#include "import/tensordot.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "import/graph.h"
#include "import/onnx_model.h"

namespace qlstm {
namespace compiler {
namespace import {
namespace {

bool constant_target(const Graph& g, const onnx::NodeProto& reshape, std::vector<int64_t>* target) {
  if (reshape.op_type() != "Reshape" || reshape.input_size() != 2 || reshape.output_size() != 1 ||
      int_attribute(reshape, "allowzero", 0) != 0) {
    return false;
  }
  std::vector<double> v;
  std::vector<int64_t> dims;
  if (!constant_values(g, reshape.input(1), &v, &dims) || dims.size() != 1) return false;
  target->clear();
  for (double x : v) {
    int64_t t = 0;
    if (!small_int(x, &t)) return false;
    target->push_back(t);
  }
  return true;
}

struct Tensordot {
  const onnx::NodeProto* merge = nullptr;   // Reshape to [-1, F]
  const onnx::NodeProto* matmul = nullptr;  // by a constant [F, C]
  const onnx::NodeProto* split = nullptr;   // Reshape back to [d0, d1, C]
};

bool find_tensordot(const Graph& g, const onnx::NodeProto& merge, Tensordot* t) {
  std::vector<int64_t> target;
  if (!constant_target(g, merge, &target) || target.size() != 2) return false;
  const Shape* x = g.shape(merge.input(0));
  if (x == nullptr || x->size() != 3 || !(*x)[2].known()) return false;
  const int64_t features = (*x)[2].value;
  if (target[1] != features || target[0] != -1) return false;
  const onnx::NodeProto* matmul = only_consumer_of_type(g, merge.output(0), "MatMul");
  if (matmul == nullptr || matmul->input_size() != 2 || matmul->input(0) != merge.output(0) ||
      matmul->output_size() != 1 || g.is_graph_output(merge.output(0))) {
    return false;
  }
  std::vector<double> w;
  std::vector<int64_t> wdims;
  if (!constant_values(g, matmul->input(1), &w, &wdims) || wdims.size() != 2 || wdims[0] != features) return false;
  const int64_t outputs = wdims[1];
  const onnx::NodeProto* split = only_consumer_of_type(g, matmul->output(0), "Reshape");
  std::vector<int64_t> back;
  if (split == nullptr || split->input(0) != matmul->output(0) || g.is_graph_output(matmul->output(0)) ||
      !constant_target(g, *split, &back) || back.size() != 3 || back[2] != outputs) {
    return false;
  }
  // [d0, d1, C] again: one of the two positions' sizes given as the number it is, the other -1.
  const Dim& d0 = (*x)[0];
  const Dim& d1 = (*x)[1];
  const bool restores = (back[0] == -1 && d1.known() && back[1] == d1.value) ||
                        (back[1] == -1 && d0.known() && back[0] == d0.value);
  if (!restores) return false;
  *t = Tensordot{&merge, matmul, split};
  return true;
}

}  // namespace

int fold_tensordots(onnx::ModelProto* model, ShapeFacts* facts, std::vector<std::string>* notes) {
  onnx::GraphProto& gp = *model->mutable_graph();
  std::vector<Tensordot> found;
  {
    const Graph g(gp, facts);
    for (const auto& n : gp.node()) {
      Tensordot t;
      if (n.op_type() == "Reshape" && find_tensordot(g, n, &t)) found.push_back(t);
    }
  }
  if (found.empty()) return 0;
  std::set<const onnx::NodeProto*> removed;
  std::map<const onnx::NodeProto*, const Tensordot*> at_split;
  for (const Tensordot& t : found) {
    removed.insert(t.merge);
    removed.insert(t.matmul);
    at_split[t.split] = &t;
  }
  rewrite_nodes(gp, removed, [&](const onnx::NodeProto& n, onnx::GraphProto* kept) {
    const auto it = at_split.find(&n);
    if (it == at_split.end()) return false;
    const Tensordot& t = *it->second;
    onnx::NodeProto* m = kept->add_node();
    *m = *t.matmul;
    m->set_input(0, t.merge->input(0));
    m->set_output(0, n.output(0));
    notes->push_back(node_label(*t.matmul) + ": a Tensordot (" + node_label(*t.merge) + " to rows, then " +
                     node_label(n) + " back) read as one MatMul on each step of '" + t.merge->input(0) + "'");
    return true;
  });
  return static_cast<int>(found.size());
}

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
