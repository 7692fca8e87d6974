#include "import/direction_concat.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "import/graph.h"
#include "import/onnx_model.h"
#include "import/recurrent_nodes.h"

namespace qlstm {
namespace compiler {
namespace import {
namespace {

constexpr int64_t kDirectionAxis = 1;  // Y is [T, num_directions, B, H]
constexpr int64_t kYRank = 4;

bool is_axis(int64_t a, int64_t axis, int64_t rank) { return a == axis || a == axis - rank; }

// One number of a constant of one element (a scalar or [1]).
bool one_int(const Graph& g, const std::string& name, int64_t* v) {
  std::vector<double> values;
  return !name.empty() && constant_values(g, name, &values) && values.size() == 1 && small_int(values[0], v);
}

// A pick of one direction of Y: Slice(Y, [d], [d + 1], [1]) then Squeeze([1]), or Gather(Y, d,
// axis 1). Sets the direction, the value that carries it and the nodes it takes.
bool direction_pick(const Graph& g, const onnx::NodeProto& c, int64_t* d, std::string* out,
                    std::vector<const onnx::NodeProto*>* nodes) {
  if (c.op_type() == "Gather") {
    int64_t index = 0;
    if (c.input_size() != 2 || c.output_size() != 1 || !is_axis(int_attribute(c, "axis", 0), kDirectionAxis, kYRank) ||
        !one_int(g, c.input(1), &index) || index < -2 || index > 1) {
      return false;
    }
    std::vector<int64_t> dims;
    std::vector<double> values;
    if (!constant_values(g, c.input(1), &values, &dims) || !dims.empty()) return false;  // a scalar index drops the axis
    *d = index < 0 ? index + 2 : index;
    *out = c.output(0);
    nodes->push_back(&c);
    return true;
  }
  if (c.op_type() != "Slice" || c.input_size() < 4 || c.output_size() != 1) return false;
  int64_t start = 0, end = 0, axis = 0, step = 1;
  if (!one_int(g, c.input(1), &start) || !one_int(g, c.input(2), &end) || !one_int(g, c.input(3), &axis) ||
      !is_axis(axis, kDirectionAxis, kYRank)) {
    return false;
  }
  if (c.input_size() > 4 && !c.input(4).empty() && (!one_int(g, c.input(4), &step) || step != 1)) return false;
  if (start < 0) start += 2;
  if (start != 0 && start != 1) return false;
  if (end < 0) end += 2;
  if (end != start + 1 && !(start == 1 && end > 2)) return false;  // an end past the axis is clamped
  const onnx::NodeProto* squeeze = only_consumer_of_type(g, c.output(0), "Squeeze");
  std::vector<int64_t> axes;
  if (squeeze == nullptr || squeeze->output_size() != 1 || !axes_of(g, *squeeze, &axes) || axes.size() != 1 ||
      !is_axis(axes[0], kDirectionAxis, kYRank) || g.is_graph_output(c.output(0))) {
    return false;
  }
  *d = start;
  *out = squeeze->output(0);
  nodes->push_back(&c);
  nodes->push_back(squeeze);
  return true;
}

struct Join {
  const onnx::NodeProto* concat = nullptr;
  std::string y;
  int64_t hidden = 0;
  std::vector<const onnx::NodeProto*> taken;
};

bool find_join(const Graph& g, const onnx::NodeProto& n, Join* j) {
  if (!recurrent(n) || n.output_size() < 1 || n.output(0).empty() || g.is_graph_output(n.output(0))) return false;
  const onnx::AttributeProto* direction = attribute(n, "direction");
  if (direction == nullptr || direction->s() != "bidirectional") return false;
  const int64_t hidden = int_attribute(n, "hidden_size", 0);
  if (hidden <= 0) return false;
  const std::vector<const onnx::NodeProto*> readers = g.data_consumers(n.output(0));
  if (readers.size() != 2) return false;
  std::string picked[2];
  for (const onnx::NodeProto* c : readers) {
    int64_t d = 0;
    std::string out;
    if (!direction_pick(g, *c, &d, &out, &j->taken) || !picked[d].empty()) return false;
    if (g.is_graph_output(out)) return false;
    picked[d] = out;
  }
  const onnx::NodeProto* concat = only_consumer_of_type(g, picked[0], "Concat");
  if (concat == nullptr || only_consumer(g, picked[1]) != concat || concat->input_size() != 2 ||
      concat->input(0) != picked[0] || concat->input(1) != picked[1] || concat->output_size() != 1 ||
      !is_axis(int_attribute(*concat, "axis", 0), 2, kYRank - 1)) {
    return false;
  }
  j->concat = concat;
  j->y = n.output(0);
  j->hidden = hidden;
  return true;
}

}  // namespace

int join_split_directions(onnx::ModelProto* model, ShapeFacts* facts, std::vector<std::string>* notes) {
  onnx::GraphProto& gp = *model->mutable_graph();
  std::vector<Join> joins;
  {
    const Graph g(gp, facts);
    for (const auto& n : gp.node()) {
      Join j;
      if (find_join(g, n, &j)) joins.push_back(std::move(j));
    }
  }
  if (joins.empty()) return 0;
  std::set<const onnx::NodeProto*> removed;
  std::map<const onnx::NodeProto*, const Join*> at_concat;
  for (const Join& j : joins) {
    removed.insert(j.taken.begin(), j.taken.end());
    removed.insert(j.concat);
    at_concat[j.concat] = &j;
  }
  std::set<std::string> names = value_names(gp);
  rewrite_nodes(gp, removed, [&](const onnx::NodeProto& n, onnx::GraphProto* kept) {
    const auto it = at_concat.find(&n);
    if (it == at_concat.end()) return false;
    const Join& j = *it->second;
    const std::string base = n.name().empty() ? j.y : n.name();
    const std::string transposed = fresh_name(names, base + "_directions_to_features");
    names.insert(transposed);
    const std::string target = fresh_name(names, base + "_features_target");
    names.insert(target);
    onnx::TensorProto* t = gp.add_initializer();
    t->set_name(target);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(3);
    for (int64_t v : {int64_t{0}, int64_t{0}, 2 * j.hidden}) t->add_int64_data(v);
    facts->shapes[target] = Shape{Dim{3, ""}};
    onnx::NodeProto* tr = kept->add_node();
    tr->set_op_type("Transpose");
    tr->set_name(fresh_name(names, base + "_transpose"));
    names.insert(tr->name());
    tr->add_input(j.y);
    tr->add_output(transposed);
    onnx::AttributeProto* perm = tr->add_attribute();
    perm->set_name("perm");
    perm->set_type(onnx::AttributeProto::INTS);
    for (int64_t p : {0, 2, 1, 3}) perm->add_ints(p);
    if (const Shape* y = facts->shape(j.y); y != nullptr && y->size() == 4) {
      facts->shapes[transposed] = Shape{(*y)[0], (*y)[2], (*y)[1], (*y)[3]};
    }
    onnx::NodeProto* rs = kept->add_node();
    rs->set_op_type("Reshape");
    rs->set_name(n.name());
    rs->add_input(transposed);
    rs->add_input(target);
    rs->add_output(n.output(0));
    notes->push_back(node_label(n) + ": the two directions of '" + j.y +
                     "' cut apart and concatenated along the features, read as one [T, B, 2H] (" +
                     std::to_string(2 * j.hidden) + " features)");
    return true;
  });
  return static_cast<int>(joins.size());
}

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
