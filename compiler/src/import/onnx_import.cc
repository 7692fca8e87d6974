// ONNX to a FloatProgram: the top-level steps of the import, each one function below, sharing an
// Import. The graph view is import/graph.h, the recurrent nodes import/recurrent_nodes.h, the walks
// along the data path compiler/src/recognize/.
#include "qlstm/compiler/import/onnx_import.h"

#include <onnx/onnx_pb.h>

#include "import/cell_loops.h"
#include "import/direction_concat.h"
#include "import/graph.h"
#include "import/onnx_model.h"
#include "import/recurrent_nodes.h"
#include "import/tensordot.h"
#include "qlstm/compiler/import/fold_constants.h"
#include "qlstm/compiler/import/refusals.h"
#include "qlstm/compiler/import/upgrade_opset.h"
#include "qlstm/compiler/io/file_io.h"
#include "recognize/between_layers.h"
#include "recognize/residual.h"
#include "recognize/path_walker.h"
#include "recognize/repeated_state.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace qlstm {
namespace compiler {
namespace import {
namespace {

// ONNX requires the nodes in topological order with each value produced once. The walkers
// below follow producers and consumers, so a cycle or a value with two producers would send them
// round forever: such a graph is refused here, naming the first node that breaks the order.
// (A value defined nowhere is left to the checks that name what it should have been.)
bool check_topological(const onnx::GraphProto& g, std::vector<std::string>* problems) {
  std::set<std::string> known, produced;
  for (const auto& i : g.input()) known.insert(i.name());
  for (const auto& t : g.initializer()) known.insert(t.name());
  for (const auto& n : g.node()) produced.insert(n.output().begin(), n.output().end());
  for (const auto& n : g.node()) {
    for (const auto& in : n.input()) {
      if (!in.empty() && !known.count(in) && produced.count(in)) {
        problems->push_back(node_label(n) + ": input '" + in +
                            "' is the output of this node or of a later one "
                            "(ONNX requires the nodes in topological order)");
        return false;
      }
    }
    for (const auto& out : n.output()) {
      if (!out.empty() && !known.insert(out).second) {
        problems->push_back(node_label(n) + ": output '" + out +
                            "' is already a graph input, an initializer or an earlier node's output "
                            "(ONNX requires each value to be produced once)");
        return false;
      }
    }
  }
  return true;
}

[[noreturn]] void refuse(const std::string& origin, const std::vector<std::string>& problems) {
  std::string msg = origin + ": the model is outside what qlstm compiles:";
  for (const auto& p : problems) msg += "\n  " + p;
  throw CompileError(msg);
}

// torch.ao.nn.quantizable.LSTM exports its cells unrolled (Linear "igates"/"hgates" per step).
const onnx::NodeProto* quantizable_lstm_node(const Graph& g) {
  for (const auto& n : g.proto().node()) {
    for (const auto& in : n.input()) {
      if (in.find("igates") != std::string::npos || in.find("hgates") != std::string::npos) return &n;
    }
  }
  return nullptr;
}

// A constant state whose batch rows differ (a learned [L, B, H] parameter) fixes the model's
// batch: every op's h0 and c0 then hold [B][H], the shared ones repeated for each row.
void share_state_rows(FloatProgram* p, const std::vector<int32_t>& hidden, int64_t declared_batch,
                      std::vector<std::string>* problems) {
  size_t rows = 0;  // of the per-row constants; 0: none
  for (const auto* s : {&p->h0, &p->c0}) {
    for (size_t k = 0; k < s->size() && k < hidden.size(); ++k) {
      const size_t n = (*s)[k].size() / static_cast<size_t>(hidden[k]);
      if (n <= 1) continue;
      if (rows != 0 && rows != n) {
        problems->push_back("graph: the constant initial states have " + std::to_string(rows) + " and " +
                            std::to_string(n) + " batch rows");
        return;
      }
      rows = n;
    }
  }
  if (rows == 0) return;
  if (declared_batch > 0 && static_cast<size_t>(declared_batch) != rows) {
    problems->push_back("graph: the constant initial state has " + std::to_string(rows) + " batch rows, but the input's "
                        "batch is " + std::to_string(declared_batch));
    return;
  }
  for (auto* s : {&p->h0, &p->c0}) {
    for (size_t k = 0; k < s->size() && k < hidden.size(); ++k) {
      std::vector<float>& v = (*s)[k];
      if (v.size() != static_cast<size_t>(hidden[k])) continue;
      const std::vector<float> row = v;
      for (size_t b = 1; b < rows; ++b) v.insert(v.end(), row.begin(), row.end());
    }
  }
}

// What the steps of one import share; each step fills its part or refuses the model (refuse()
// lists every problem found so far).
struct Import {
  std::string origin;                                // the file, for messages
  const Graph* g = nullptr;                          // the graph after the pre-pass
  ShapeFacts facts;                                  // its shapes and uniform values
  OnnxLstm r;                                        // the result, filled step by step
  std::vector<std::string> problems;                 // every reason to refuse found so far
  std::vector<const onnx::NodeProto*> lstms;         // the LSTM and GRU nodes, in graph order
  std::map<const onnx::NodeProto*, NodeInfo> info;   // each one read
  const onnx::NodeProto* head = nullptr;             // the chain's first node
  std::set<const onnx::NodeProto*> taken;            // the nodes a walk or a pattern took
  PathContext ctx;                                   // the axes as the front found them
  Labels in_labels;                                  // the input's layout ("BTF", "TBF", "TF"; token ids: as embedded)
  std::vector<std::string> front_problems;           // the front's, when no layout fits
  std::vector<NodeInfo> chain;                       // the stack, first layer first
  bool final_state = false;                          // the head reads h_n (Y unused)
  std::map<const onnx::NodeProto*, ResidualAdd> residuals;  // the graph's residual Adds
  std::map<std::string, LayoutView> views;           // each value's view as the walks reached it
  std::set<const onnx::NodeProto*> repeated_from_state;  // the layers whose Y_h is repeated into the next
};

// Parses the model and reads its default-domain opset (at least 7); refuses a graph out of
// topological order; then runs the pre-pass (attribute forms upgraded, constants folded).
void read_model(const std::string& bytes, onnx::ModelProto* out, Import* im) {
  onnx::ModelProto& model = *out;
  const std::string& origin = im->origin;
  OnnxLstm& r = im->r;
  if (bytes.empty() || !model.ParseFromString(bytes)) {
    throw FileError(origin + ": not a valid ONNX model (the protobuf does not parse)");
  }
  if (!model.has_graph()) throw FileError(origin + ": the ONNX model has no graph");
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") r.opset = o.version();
  }
  if (r.opset < 7) {
    throw CompileError(origin + ": default-domain opset " + std::to_string(r.opset) +
                       " is too old (LSTM and GRU as supported need opset 7 or newer)");
  }
  std::vector<std::string>& problems = im->problems;
  if (!check_topological(model.graph(), &problems)) refuse(origin, problems);
  // The graph as the walks below read it: opset-9 Slices in their input form, constant
  // subgraphs (weights computed from initializers, static shapes) evaluated into initializers.
  if (const int64_t ir = import::read_as_known_ir(&model)) {
    r.notes.push_back("IR version " + std::to_string(ir) + " read as " + std::to_string(model.ir_version()) +
                      ", this ONNX library's (no tensor has an element type it lacks)");
  }
  const bool checked = import::passes_checker(&model);
  import::upgrade_attribute_forms(&model, r.opset);
  import::fold_constants(&model, r.opset, checked);
  im->facts = import::fold_shapes(&model, checked);
  import::join_split_directions(&model, &im->facts, &r.notes);
  import::fold_tensordots(&model, &im->facts, &r.notes);
  import::fuse_cell_loops(&model, r.opset, &im->facts, &r.notes, &problems);
  if (!problems.empty()) refuse(origin, problems);
}

// The LSTM and GRU nodes, each read (attributes, weights); refuses a graph without any (naming
// what stands in their place) or with one that cannot be read.
void find_recurrent_nodes(Import* im) {
  const std::string& origin = im->origin;
  std::vector<std::string>& problems = im->problems;
  const Graph& g = *im->g;
  std::vector<const onnx::NodeProto*>& lstms = im->lstms;
  for (const auto& n : g.proto().node()) {
    if (recurrent(n)) lstms.push_back(&n);
  }
  if (lstms.empty()) {
    if (const onnx::NodeProto* q = quantizable_lstm_node(g)) {
      problems.push_back(node_label(*q) + ": the graph has no LSTM node: it is a torch.ao.nn.quantizable.LSTM "
                         "exported cell by cell (its 'igates'/'hgates' Linear layers); export torch.nn.LSTM instead "
                         "(load the same weights into it: it exports one ONNX LSTM node per layer)");
    } else {
      for (const auto& n : g.proto().node()) {
        const std::string why = import::describe_foreign_node(n);
        if (!why.empty()) problems.push_back(node_label(n) + ": " + why);
      }
      if (problems.empty()) problems.push_back("graph: no LSTM or GRU node");
    }
    refuse(origin, problems);
  }
  bool all_read = true;
  for (const auto* n : lstms) {
    NodeInfo ni;
    all_read = read_node(g, *n, &ni, &problems) && all_read;
    im->info[n] = std::move(ni);
  }
  if (!all_read) refuse(origin, problems);
}

// The chain's first node: the one whose X does not come from another recurrent node (exactly one).
void find_chain_head(Import* im) {
  const std::string& origin = im->origin;
  std::vector<std::string>& problems = im->problems;
  const Graph& g = *im->g;
  const std::vector<const onnx::NodeProto*>& lstms = im->lstms;
  std::map<const onnx::NodeProto*, NodeInfo>& info = im->info;
  const onnx::NodeProto*& head = im->head;
  for (const auto* n : lstms) {
    const onnx::NodeProto* p = g.producer(n->input(kX));
    bool from_lstm = false;
    for (int guard = 0; p != nullptr && guard < 16; ++guard) {
      if (recurrent(*p)) {
        from_lstm = true;
        break;
      }
      // Up the data input: the first one a node computes (a Linear's Add may read its bias first).
      const onnx::NodeProto* up = nullptr;
      for (int k = 0; k < p->input_size() && up == nullptr; ++k) {
        const onnx::NodeProto* q = p->input(k).empty() ? nullptr : g.producer(p->input(k));
        if (q != nullptr && q->op_type() != "Constant") up = q;
      }
      p = up;
    }
    if (!from_lstm) {
      if (head != nullptr) {
        problems.push_back("graph: " + info[head].label + " and " + info[n].label +
                           " both read the graph input (only a chain of LSTM or GRU layers is supported)");
        refuse(origin, problems);
      }
      head = n;
    }
  }
  if (head == nullptr) {
    problems.push_back("graph: no LSTM or GRU node reads the graph input");
    refuse(origin, problems);
  }
}

// The model input: the one graph input the first node's X is computed from, and its declared shape.
void find_model_input(Import* im) {
  const std::string& origin = im->origin;
  OnnxLstm& r = im->r;
  std::vector<std::string>& problems = im->problems;
  const Graph& g = *im->g;
  const NodeInfo& first = im->info[im->head];
  std::set<std::string> inputs_of_x;
  {
    std::vector<std::string> todo = {im->head->input(kX)};
    std::set<std::string> seen;
    while (!todo.empty() && seen.size() < 4096) {
      const std::string v = todo.back();
      todo.pop_back();
      if (v.empty() || !seen.insert(v).second) continue;
      if (g.is_graph_input(v)) inputs_of_x.insert(v);
      if (const onnx::NodeProto* p = g.producer(v)) todo.insert(todo.end(), p->input().begin(), p->input().end());
    }
  }
  if (inputs_of_x.size() != 1) {
    problems.push_back("graph: " + first.label + "'s input X is computed from " + std::to_string(inputs_of_x.size()) +
                       " graph inputs (expected one: the model's input sequence)");
    refuse(origin, problems);
  }
  r.input_name = *inputs_of_x.begin();
  for (const auto& i : g.proto().input()) {
    if (i.name() != r.input_name) continue;
    for (const auto& d : i.type().tensor_type().shape().dim()) r.input_shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
  }
}

// The front: the layers from the input to the first node's X. Tries the layouts the input's rank
// allows; the one that reaches X as the node reads it gives the input's layout (batch-first,
// sequence-first or unbatched) and the front's layers. When none does, the first one's problems.
void walk_front(Import* im) {
  OnnxLstm& r = im->r;
  std::vector<std::string>& problems = im->problems;
  const Graph& g = *im->g;
  const NodeInfo& first = im->info[im->head];
  const onnx::NodeProto* head = im->head;
  PathContext& ctx = im->ctx;
  Labels& in_labels = im->in_labels;
  std::vector<std::string>& front_problems = im->front_problems;
  std::set<const onnx::NodeProto*>& taken = im->taken;
  ctx.g = &g;
  ctx.residuals = &im->residuals;
  ctx.views = &im->views;
  ctx.opset = r.opset;
  ctx.cell = first.spec->op;
  ctx.directions = first.directions;
  const Labels want_x = first.layout == 0 ? "TBF" : "BTF";
  // An integer input holds token ids: no feature axis ([B, T], [T, B], or [T] unbatched), and only
  // an embedding may read it.
  bool ids = false;
  for (const auto& i : g.proto().input()) {
    const int32_t t = i.type().tensor_type().elem_type();
    if (i.name() == r.input_name) ids = t == onnx::TensorProto::INT64 || t == onnx::TensorProto::INT32;
  }
  std::vector<Labels> candidates = ids ? (r.input_shape.size() == 1 ? std::vector<Labels>{"T"} : std::vector<Labels>{"BT", "TB"})
                                   : r.input_shape.size() == 2 ? std::vector<Labels>{"TF"}
                                                               : std::vector<Labels>{"BTF", "TBF"};
  PathState front;
  for (size_t c = 0; c < candidates.size(); ++c) {
    PathContext cc = ctx;
    const Labels& cand = candidates[c];
    cc.unbatched = cand == "TF" || cand == "T";
    for (size_t k = 0; k < cand.size() && k < r.input_shape.size(); ++k) {
      if (cand[k] == 'T') cc.time_size = r.input_shape[k];
      if (cand[k] == 'B') cc.batch_size = r.input_shape[k];
    }
    PathState s;
    s.value = r.input_name;
    s.view.labels = cand;
    s.view.width = ids ? 1
                   : !r.input_shape.empty() && r.input_shape.back() > 0 ? static_cast<int32_t>(r.input_shape.back())
                                                                       : static_cast<int32_t>(first.input_size);
    s.ids = ids;
    std::vector<std::string> p;
    std::set<const onnx::NodeProto*> u;
    const bool walked = PathWalker(cc, true, &p, &u).walk(&s, head->input(kX));
    Labels at_x = s.view.labels;
    if (cc.unbatched) std::replace(at_x.begin(), at_x.end(), '1', 'B');
    if (walked && at_x != want_x) {
      p.push_back("graph: the input reaches " + first.label + " as " + s.view.labels + ", expected " + want_x +
                  " (T time, B batch, F features)");
    } else if (walked && s.view.width != first.input_size) {
      p.push_back("graph: " + first.label + " reads " + std::to_string(first.input_size) + " features, but its input has " +
                  std::to_string(s.view.width));
    }
    if (p.empty()) {
      in_labels = ids ? cand + "F" : cand;  // token ids: the layout of their embedded rows
      front = std::move(s);
      ctx = cc;
      taken.insert(u.begin(), u.end());
      front_problems.clear();
      break;
    }
    if (c == 0) {
      front_problems = p;
      taken.insert(u.begin(), u.end());
    }
  }
  if (in_labels.empty()) {
    problems.insert(problems.end(), front_problems.begin(), front_problems.end());
    problems.push_back("what to do: from " + first.label + "'s input '" + head->input(kX) + "' on, the model may "
                       "compile alone: export it with that as the input and run the layers before it on the host");
    in_labels = ids ? candidates.back() + "F" : candidates.back();
  }
  r.unbatched = ctx.unbatched;
  r.batch_first = in_labels != "TBF";
  r.program.front = front.layers;
}

// A recurrent node's output Y as ONNX writes it: [T, D, B, H] (layout 0) or [B, T, D, H].
LayoutView y_view(const NodeInfo& n) {
  LayoutView v;
  v.labels = n.layout == 0 ? "TDBF" : "BTDF";
  v.width = static_cast<int32_t>(n.hidden);
  return v;
}

// A per-feature affine before a node (x' = scale x + shift) taken into its input weights and the
// input part of its bias: W' = W diag(scale), b' = b + W shift, for every gate and direction.
void fold_affine(const FeatureAffine& a, NodeInfo* n) {
  const size_t I = a.scale.size();
  if (n->input_size != static_cast<int64_t>(I) || n->W.size() % I != 0) return;  // the chain check names it
  const size_t rows = n->W.size() / I;  // D x G x H
  const size_t per_direction = rows / static_cast<size_t>(n->directions);
  if (n->B.empty()) n->B.assign(static_cast<size_t>(n->directions) * 2 * per_direction, 0.0f);
  for (size_t r = 0; r < rows; ++r) {
    const size_t d = r / per_direction, row = r % per_direction;
    double b = n->B[d * 2 * per_direction + row];
    for (size_t i = 0; i < I; ++i) {
      float& w = n->W[r * I + i];
      b += static_cast<double>(w) * a.shift[i];
      w = static_cast<float>(static_cast<double>(w) * a.scale[i]);
    }
    n->B[d * 2 * per_direction + row] = static_cast<float>(b);
  }
}

// The link from layer ni to the layer nn above it, reached as `labels` (from the repeated final
// state: as nn reads it): the layout, sizes, directions and op must match; false with a problem.
// width: what nn reads per step (0: ni's output, D x H; else the width of layers between them).
bool check_link(const NodeInfo& ni, const NodeInfo& nn, const Labels& l, std::vector<std::string>& problems,
                int32_t width = 0) {
  const Labels want = nn.layout == 0 ? "TBF" : "BTF";
  const int32_t reads = width > 0 ? width : ni.directions * ni.hidden;
  if (l != want) {
    problems.push_back("graph: " + ni.label + "'s output reaches " + nn.label + " as " + l + ", expected " + want +
                       " (T time, B batch, F features; D directions must be merged into F)");
  } else if (nn.input_size != reads) {
    problems.push_back(nn.label + ": input_size " + std::to_string(nn.input_size) + " is not the output size " +
                       std::to_string(reads) + " of " + (width > 0 ? "the layers after " : "") + ni.label);
  } else if (nn.directions != ni.directions) {
    problems.push_back(nn.label + ": layers with different directions are not supported (a stack's layers are all "
                       "bidirectional or all one direction); export the layers of each kind as a model of their own");
  } else if (nn.spec != ni.spec) {
    problems.push_back(nn.label + ": a " + nn.spec->op + " layer on " + ni.label + " is not supported (a stack's "
                       "layers are all LSTM or all GRU: the state inputs and outputs are per stack); export the LSTM layers and the "
                       "GRU layers as two models");
  } else {
    return true;
  }
  return false;
}

// The model input's time axis, as the shape pass has it (unknown where it has none).
Dim input_time_dim(const Import* im) {
  const Shape* s = im->g->shape(im->r.input_name);
  const size_t t = im->in_labels.find('T');
  if (s == nullptr || t == Labels::npos || t >= s->size()) return Dim{};
  return (*s)[t];
}

// The node that reads layer ni's final hidden state repeated over time (recognize/repeated_state.h),
// or null: marks the layer repeated in the program, with the layers on the way between it and the
// next, and takes the nodes on the way. *width: what the next reads per step. *stop: why a
// recognized walk broke, where one did.
const onnx::NodeProto* repeated_next(Import* im, const NodeInfo& ni, int32_t* width, std::string* stop) {
  RepeatedState rs;
  for (const bool from_y : {false, true}) {
    if (follow_repeated_state(im->ctx, ni, from_y, input_time_dim(im), &rs)) {
      im->taken.insert(rs.nodes.begin(), rs.nodes.end());
      if (!from_y) im->repeated_from_state.insert(ni.node);
      im->repeated_from_state.insert(rs.stacked.begin(), rs.stacked.end());
      std::vector<bool>& repeated = im->r.program.repeated;
      repeated.resize(im->chain.size(), false);
      repeated.back() = true;
      if (!rs.layers.empty()) {
        im->r.program.between.resize(im->chain.size());
        im->r.program.between.back() = std::move(rs.layers);
      }
      *width = rs.width;
      return rs.next;
    }
    if (!rs.problem.empty()) *stop = rs.problem;
  }
  return nullptr;
}

// The chain: each node's Y reaches the next node's X through layout ops only, with matching sizes,
// directions and op; the last node's Y (or, Y unused, its h_n) feeds the head. Refuses a broken
// chain or recurrent nodes off it.
void follow_chain(Import* im) {
  const std::string& origin = im->origin;
  std::vector<std::string>& problems = im->problems;
  const Graph& g = *im->g;
  const onnx::NodeProto* head = im->head;
  std::map<const onnx::NodeProto*, NodeInfo>& info = im->info;
  const std::vector<const onnx::NodeProto*>& lstms = im->lstms;
  std::vector<NodeInfo>& chain = im->chain;
  bool& final_state = im->final_state;
  bool chain_ok = true;
  std::string stop;  // why the path from the chain's last node to the next one broke, if known
  for (const onnx::NodeProto* n = head; n != nullptr;) {
    if (chain.size() > lstms.size()) break;
    const NodeInfo& ni = info[n];
    chain.push_back(ni);
    int32_t width = 0;
    if (const onnx::NodeProto* decoder = repeated_next(im, ni, &width, &stop)) {
      // The walk checked the axes as the decoder reads them.
      if (!check_link(ni, info[decoder], info[decoder].layout == 0 ? "TBF" : "BTF", problems, width)) chain_ok = false;
      n = decoder;
      continue;
    }
    if (n->output_size() == 0 || n->output(kY).empty() || !used(g, *n, kY)) {
      final_state = true;  // Y unused: the head reads h_n
      break;
    }
    const onnx::NodeProto* nx = nullptr;
    PathContext layer = im->ctx;
    layer.directions = ni.directions;
    LayoutView view = y_view(ni);
    std::string graph_out;
    std::vector<std::string> link_problems;
    bool residual = false;
    FeatureAffine affine;
    std::vector<FloatLayer> norms;
    std::vector<const onnx::NodeProto*> norm_nodes;
    if (!follow_output(layer, n->output(kY), &view, &graph_out, &nx, &residual, &norms, &norm_nodes, &affine,
                       &link_problems) ||
        nx == nullptr) {
      if (stop.empty() && !link_problems.empty()) stop = link_problems.front();  // a repeated state's walk names its own
      break;  // the head starts at this node's Y (and walks its residual Add again)
    }
    if (!affine.scale.empty()) fold_affine(affine, &info[nx]);
    if (residual) {
      im->r.program.residual.resize(chain.size(), false);
      im->r.program.residual.back() = true;
    }
    if (!norms.empty()) {
      im->r.program.between.resize(chain.size());
      im->r.program.between.back() = std::move(norms);
      im->taken.insert(norm_nodes.begin(), norm_nodes.end());
    }
    const NodeInfo& nn = info[nx];
    const int32_t between_width = im->r.program.between_after(static_cast<int32_t>(chain.size()) - 1).empty() ? 0 : view.width;
    if (!check_link(ni, nn, view.labels, problems, between_width)) chain_ok = false;
    n = nx;
  }
  if (chain_ok && chain.size() != lstms.size()) {
    std::string off;
    for (const auto* n : lstms) {
      bool on = false;
      for (const NodeInfo& c : chain) on = on || c.node == n;
      if (!on) off += (off.empty() ? "" : ", ") + info[n].label + " (its X is '" + n->input(kX) + "')";
    }
    problems.push_back("graph: " + std::to_string(lstms.size()) + " LSTM/GRU nodes, of which " + std::to_string(chain.size()) +
                       " form a chain from the graph input to the output (only a chain of layers is supported); "
                       "off the chain: " + off + (stop.empty() ? "" : "; the path from " + chain.back().label +
                       " stops at " + stop) + "; export the chain and each layer off it as models of their own");
    chain_ok = false;
  }
  if (!chain_ok) refuse(origin, problems);
}

// The head's start when it reads Y: the last node's output sequence.
PathState head_from_y(const NodeInfo& last) {
  PathState hs;
  hs.value = last.node->output(kY);
  hs.view = y_view(last);
  return hs;
}

// h_n as the head reads it: the last node's, or torch's Concat of every layer's along axis 0;
// then an unbatched model's Squeeze of the batch axis ([rows, 1, H] -> [rows, H]), or that of an
// export whose batch is static 1 (the output then keeps it: one row per batch row).
std::string final_state_value(Import* im, PathState* hs) {
  const Graph& g = *im->g;
  const std::vector<NodeInfo>& chain = im->chain;
  const NodeInfo& last = chain.back();
  const bool unbatched = im->ctx.unbatched;
  const std::string& yh = last.node->output_size() > kYH ? last.node->output(kYH) : std::string();
  std::string start = yh;
  if (yh.empty() || !used(g, *last.node, kYH)) {
    im->problems.push_back(last.label + ": neither its output Y nor its h_n is used (the model outputs nothing of it)");
    refuse(im->origin, im->problems);
  }
  if (chain.size() > 1) {
    const auto cs = g.consumers(chain[0].node->output_size() > kYH ? chain[0].node->output(kYH) : std::string());
    bool ok = cs.size() == 1 && cs[0]->op_type() == "Concat" && cs[0]->input_size() == static_cast<int>(chain.size()) &&
              attribute(*cs[0], "axis") != nullptr && attribute(*cs[0], "axis")->i() == 0 && cs[0]->output_size() >= 1;
    for (size_t j = 0; ok && j < chain.size(); ++j) {
      ok = chain[j].node->output_size() > kYH && cs[0]->input(static_cast<int>(j)) == chain[j].node->output(kYH);
    }
    if (!ok) {
      im->problems.push_back("graph: the layers' h_n must be concatenated along axis 0, in layer order, before the "
                             "head reads h_n[-1]");
      refuse(im->origin, im->problems);
    }
    im->taken.insert(cs[0]);
    start = cs[0]->output(0);
  }
  const bool one_row = !unbatched && im->ctx.batch_size == 1;
  for (int guard = 0; guard < 4 && !g.is_graph_output(start); ++guard) {
    const onnx::NodeProto* sq = only_consumer(g, start);
    std::vector<int64_t> axes;
    const bool drops_batch = sq != nullptr && sq->op_type() == "Squeeze" && (unbatched || one_row) &&
                             axes_of(g, *sq, &axes) && axes == std::vector<int64_t>{1} && sq->output_size() >= 1;
    if (!drops_batch && !(sq != nullptr && sq->op_type() == "Identity" && sq->output_size() >= 1)) break;
    hs->view.batch_squeezed = hs->view.batch_squeezed || (drops_batch && one_row);
    im->taken.insert(sq);
    start = sq->output(0);
  }
  return start;
}

// The rows of h_n the head gathers (h_n[k], constant k), each a final state of the last layer:
// the Gathers and their directions; refuses any other read.
struct GatheredRows {
  std::vector<const onnx::NodeProto*> gathers;
  std::vector<int32_t> directions;
};
GatheredRows gathered_rows(Import* im, const std::string& h_n, size_t layers) {
  const Graph& g = *im->g;
  const int32_t D = im->chain.front().directions;
  const int64_t rows = static_cast<int64_t>(layers) * D;
  GatheredRows r;
  for (const onnx::NodeProto* n : g.data_consumers(h_n)) {
    double index = 0;
    const bool is_row = n->op_type() == "Gather" && n->input_size() == 2 && n->input(0) == h_n &&
                        int_attribute(*n, "axis", 0) == 0 && constant_scalar(g, n->input(1), &index) &&
                        n->output_size() >= 1 && index >= -rows && index < rows && index == std::floor(index);
    if (g.is_graph_output(h_n) || !is_row) {
      im->problems.push_back(node_label(*n) + ": h_n is read other than as rows h_n[k] (one, or several "
                             "concatenated along the features) feeding the head (with Y unused, the head reads the "
                             "last layer's final states only)");
      refuse(im->origin, im->problems);
    }
    const int64_t row = index < 0 ? static_cast<int64_t>(index) + rows : static_cast<int64_t>(index);
    if (row / D != static_cast<int64_t>(layers) - 1) {
      im->problems.push_back(node_label(*n) + ": a Gather of h_n row " + fmt(index) + ", the final state of layer " +
                             std::to_string(row / D) + " of " + std::to_string(layers) +
                             ": only the last layer's final states can feed the head (h_n[-1]" +
                             (D == 2 ? ", h_n[-2]" : "") + "); export the stack up to that layer as its own model");
      refuse(im->origin, im->problems);
    }
    r.gathers.push_back(n);
    r.directions.push_back(static_cast<int32_t>(row % D));
  }
  if (r.gathers.empty()) {
    im->problems.push_back("graph: h_n is read other than as rows h_n[k] feeding the head");
    refuse(im->origin, im->problems);
  }
  return r;
}

// The Concat that puts the gathered rows side by side (torch.cat((h_n[-2], h_n[-1]), dim=1)), or
// null: each of its inputs one of the rows, each row read by it alone, along the feature axis.
// Sets the directions it reads, in its order.
const onnx::NodeProto* rows_concat(Import* im, const GatheredRows& r, size_t rank, std::vector<int32_t>* order) {
  const Graph& g = *im->g;
  const std::string& first = r.gathers[0]->output(0);
  const auto next = g.data_consumers(first);
  const bool one_concat = next.size() == 1 && next[0]->op_type() == "Concat";
  if (!one_concat || (r.gathers.size() == 1 && g.is_graph_output(first))) return nullptr;
  const onnx::NodeProto* concat = next[0];
  const int64_t axis = int_attribute(*concat, "axis", 0);
  bool ok = (axis == static_cast<int64_t>(rank) - 1 || axis == -1) && concat->output_size() >= 1;
  for (int j = 0; ok && j < concat->input_size(); ++j) {
    const auto at = std::find_if(r.gathers.begin(), r.gathers.end(),
                                 [&](const onnx::NodeProto* n) { return n->output(0) == concat->input(j); });
    ok = at != r.gathers.end();
    if (ok) order->push_back(r.directions[static_cast<size_t>(at - r.gathers.begin())]);
  }
  for (const onnx::NodeProto* n : r.gathers) {
    ok = ok && !g.is_graph_output(n->output(0)) && g.data_consumers(n->output(0)).size() == 1 &&
         g.data_consumers(n->output(0))[0] == concat;
  }
  if (!ok) {
    im->problems.push_back(node_label(*concat) + ": a Concat of h_n rows is supported only along the feature axis, "
                           "of those rows alone (torch.cat((h_n[-2], h_n[-1]), dim=1))");
    refuse(im->origin, im->problems);
  }
  return concat;
}

// The last layer's rows of h_n as h_n.view(layers, directions, B, H)[-1] reads them (a Reshape to
// [L, D, B, H] and a Gather of row L - 1 along axis 0: [D, B, H]), taken; or h_n itself.
std::string last_layer_view(Import* im, const std::string& h_n, size_t* layers) {
  const Graph& g = *im->g;
  const int64_t L = static_cast<int64_t>(im->chain.size()), D = im->chain.front().directions;
  const int64_t H = im->chain.back().hidden;
  const onnx::NodeProto* view = g.is_graph_output(h_n) ? nullptr : only_consumer(g, h_n);
  if (view == nullptr || view->op_type() != "Reshape" || view->output_size() < 1 || g.is_graph_output(view->output(0))) {
    return h_n;
  }
  // The target as the shape pass left it: [L, D, B, H] with the batch as -1, or as its number.
  const Shape* from = g.shape(h_n);
  std::vector<int64_t> to;
  if (from == nullptr || from->size() != 3 || !reshape_target(g, *view, &to) || to.size() != 4 || to[0] != L ||
      to[1] != D || to[3] != H || !(to[2] == -1 || (to[2] > 0 && to[2] == (*from)[1].value))) {
    return h_n;
  }
  const onnx::NodeProto* last = only_consumer(g, view->output(0));
  double index = 0;
  if (last == nullptr || last->op_type() != "Gather" || last->input_size() != 2 || int_attribute(*last, "axis", 0) != 0 ||
      !constant_scalar(g, last->input(1), &index) || (index != -1 && index != static_cast<double>(L - 1)) ||
      last->output_size() < 1) {
    return h_n;
  }
  im->taken.insert(view);
  im->taken.insert(last);
  *layers = 1;
  return last->output(0);
}

// The head's start when it reads the final states of the last layer (Y unused): one row h_n[k],
// rows side by side, or (one layer, or the last layer's rows h_n.view(L, D, B, H)[-1]) every
// direction through layout ops; refuses any other read.
// FloatProgram::final_directions records the directions read, left empty for h_n[-1].
PathState head_from_final_state(Import* im) {
  const Graph& g = *im->g;
  const int32_t D = im->chain.front().directions;
  const int32_t H = static_cast<int32_t>(im->chain.back().hidden);
  FloatProgram& prog = im->r.program;
  prog.lstm_output = LstmOutput::kFinalState;
  PathState hs;
  size_t layers = im->chain.size();
  const std::string start = last_layer_view(im, final_state_value(im, &hs), &layers);
  const Labels row_labels = im->ctx.unbatched || hs.view.batch_squeezed ? "F" : "BF";
  // Every direction of one layer as a tensor ([D, B, H]) through layout ops: the head's walk
  // merges the directions into the features (h_n.permute(1, 0, 2).reshape(B, -1), forward first).
  const auto cs = g.data_consumers(start);
  if (!g.is_graph_output(start) && cs.size() == 1 && kLayoutOps.count(cs[0]->op_type())) {
    if (layers > 1) {
      im->problems.push_back(node_label(*cs[0]) + ": reads the final states of every layer of the stack; only the "
                             "last layer's can feed the head: read h_n[-1], or torch.cat((h_n[-2], h_n[-1]), 1) of "
                             "a bidirectional stack");
      refuse(im->origin, im->problems);
    }
    for (int32_t d = 0; D > 1 && d < D; ++d) prog.final_directions.push_back(d);  // D = 1: h_n[-1], the default
    hs.value = start;
    hs.view.labels = "D" + row_labels;
    hs.view.width = H;
    return hs;
  }
  const GatheredRows rows = gathered_rows(im, start, layers);
  std::vector<int32_t> order;
  if (const onnx::NodeProto* concat = rows_concat(im, rows, row_labels.size(), &order)) {
    for (const onnx::NodeProto* n : rows.gathers) im->taken.insert(n);
    im->taken.insert(concat);
    prog.final_directions = order;
    hs.value = concat->output(0);
    hs.view.labels = row_labels;
    hs.view.width = static_cast<int32_t>(order.size()) * H;
    return hs;
  }
  if (rows.gathers.size() > 1) {
    im->problems.push_back(node_label(*rows.gathers[1]) + ": h_n rows read apart; the head reads one row h_n[k] or "
                           "rows concatenated along the features");
    refuse(im->origin, im->problems);
  }
  im->taken.insert(rows.gathers[0]);
  if (rows.directions[0] != D - 1) prog.final_directions = rows.directions;  // h_n[-1] is the default
  hs.value = rows.gathers[0]->output(0);
  hs.view.labels = row_labels;
  hs.view.width = H;
  return hs;
}

// The head: the layers from the head's start to the graph output, whose axes must be the input's
// (or [B, F] for one step or the final state); its layers (the step selection first) go to the
// program. Problems are added, not refused here: the out-of-scope check names the rest.
void walk_head(Import* im, PathState* start) {
  OnnxLstm& r = im->r;
  std::vector<std::string>& problems = im->problems;
  PathState& hs = *start;
  const NodeInfo& last = im->chain.back();
  const int32_t D = im->chain.front().directions;
  const bool unbatched = im->ctx.unbatched;
  FloatProgram& prog = r.program;
  std::vector<std::string> head_problems;
  const std::string head_start = hs.value;  // the last layer's output
  bool head_ok = PathWalker(im->ctx, false, &head_problems, &im->taken).walk(&hs, "");
  if (head_ok && !im->front_problems.empty()) head_ok = false;  // the input's layout is unknown
  if (head_ok) {
    // A selection of several steps keeps the time axis (of that size) until it is merged.
    const bool range = hs.selected && hs.select.kind == FloatLayerKind::kSelectStep && hs.select.step_count > 1;
    Labels want = im->final_state || (hs.selected && !(range && !hs.range_merged)) ? Labels("BF") : im->in_labels;
    if (range && hs.range_merged && im->in_labels.find('B') != std::string::npos && im->in_labels.front() == 'T') {
      head_problems.push_back("node '" + hs.select.node + "': a flatten of several selected steps of a time-major "
                              "(sequence-first) " + std::string(im->ctx.cell) + ": not supported; export the model "
                              "batch-first");
      head_ok = false;
    }
    if (hs.selected && hs.select.pools.size() > 1 && im->in_labels.find('B') != std::string::npos &&
        im->in_labels.front() == 'T') {
      // Each pooling writes its part of a batch row's row: time-major, a row's steps are not one block.
      head_problems.push_back("node '" + hs.select.node + "': a concatenation of poolings over time of a time-major "
                              "(sequence-first) " + std::string(im->ctx.cell) + ": not supported; export the model "
                              "batch-first");
      head_ok = false;
      hs.last_good = head_start;
    }
    if (unbatched) want.erase(std::remove(want.begin(), want.end(), 'B'), want.end());
    if (hs.view.features_squeezed) want.erase(std::remove(want.begin(), want.end(), 'F'), want.end());
    if (hs.view.batch_squeezed) want.erase(std::remove(want.begin(), want.end(), 'B'), want.end());
    const Labels got = data_axes(im->ctx, hs.view.labels);
    if (got != want) {
      head_problems.push_back("graph: the output '" + hs.value + "' has axes " + hs.view.labels + ", expected " + want +
                              " (T time, B batch, F features, D directions, t/1 size 1): its layout is not the "
                              "input's, or the directions are not merged");
      head_ok = false;
    }
  }
  if (!head_problems.empty()) {
    problems.insert(problems.end(), head_problems.begin(), head_problems.end());
    problems.push_back("what to do: the model up to '" + hs.last_good + "' may compile alone: export it with that as "
                       "the output and run the rest on the host");
  }
  r.output_name = hs.value;
  r.output_squeezes_features = hs.view.features_squeezed;
  r.output_squeezes_batch = hs.view.batch_squeezed;
  if (hs.selected) {
    hs.select.input_size = hs.select.output_size = D * static_cast<int32_t>(last.hidden);
    if (hs.select.kind == FloatLayerKind::kSelectStep) hs.select.output_size *= hs.select.step_count;
    if (hs.select.kind == FloatLayerKind::kPoolTime) {
      hs.select.output_size *= static_cast<int32_t>(hs.select.pool_fns().size());  // concatenated reductions
    }
    if (hs.select.kind == FloatLayerKind::kFlattenTime) {
      if (hs.select.flatten_steps < 1) {
        problems.push_back("node '" + hs.select.node + "': a flatten of every step of a dynamic time axis that no "
                           "Linear reads: its size is unknown; export with a fixed sequence length");
      }
      hs.select.output_size = std::max(hs.select.flatten_steps, 1) * hs.select.input_size;
    }
    prog.head.push_back(hs.select);
  }
  prog.head.insert(prog.head.end(), hs.layers.begin(), hs.layers.end());
  if (hs.residual) {
    prog.residual.resize(im->chain.size(), false);
    prog.residual.back() = true;
  }
}

// Anything else that computes is outside the scope: every node no walk took and that is not a
// recurrent, structural or path op is named (once); refuses when any problem was found.
void check_out_of_scope(Import* im) {
  const std::string& origin = im->origin;
  std::vector<std::string>& problems = im->problems;
  const Graph& g = *im->g;
  const std::set<const onnx::NodeProto*>& taken = im->taken;
  std::set<std::string> named;
  for (const auto& p : problems) named.insert(p.substr(0, p.find(": ")));
  for (const auto& n : g.proto().node()) {
    // Ops a walk takes in some forms are reported off its path only when no form is supported
    // (a product of two activations).
    const bool two_activations = (n.op_type() == "MatMul" || n.op_type() == "Gemm") && n.input_size() >= 2 &&
                                 !is_const(g, n.input(0)) && !is_const(g, n.input(1));
    if (recurrent(n) || taken.count(&n) || kStructuralOps.count(n.op_type()) ||
        (kPathOps.count(n.op_type()) && !two_activations)) {
      continue;
    }
    if (!named.count(node_label(n))) problems.push_back(node_label(n) + ": " + what_it_is(g, n, im->ctx.cell));
  }
  if (!problems.empty()) refuse(origin, problems);
}

// initial_h (k = kInitialH) or initial_c of every layer: all zero, all constant or all rows of one
// graph input in layer order ([layers x directions, batch, hidden]); given ones need layout 0 and
// a batched input. Problems are added; the program and the result say where the state comes from.
void read_initial_state(Import* im, int k) {
  OnnxLstm& r = im->r;
  std::vector<std::string>& problems = im->problems;
  const Graph& g = *im->g;
  const std::vector<NodeInfo>& chain = im->chain;
  const PathContext& ctx = im->ctx;
  const bool unbatched = ctx.unbatched;
  FloatProgram& prog = r.program;
  const int64_t op_count = static_cast<int64_t>(chain.size()) * prog.directions;
  std::vector<StateOrigin> origins(chain.size());
  bool ok = true;
  for (size_t j = 0; j < chain.size(); ++j) {
    ok = trace_state(g, chain[j], k, &origins[j], &problems, unbatched ? 1 : ctx.batch_size) && ok;
  }
  if (!ok) return;
  const char* what = k == kInitialH ? "initial_h" : "initial_c";
  StateSource src = origins[0].source;
  for (size_t j = 0; j < chain.size(); ++j) {
    if (origins[j].source != src) {
      problems.push_back(std::string("graph: ") + what + " of " + chain[j].label + " is " +
                         state_source_name(origins[j].source) + " but of " + chain[0].label + " " +
                         state_source_name(src) + " (all layers' must come from the same place)");
      ok = false;
      break;
    }
    if (src == StateSource::kInput) {
      const int64_t want = static_cast<int64_t>(j) * prog.directions;
      if (origins[j].graph_input != origins[0].graph_input || origins[j].first_row != want) {
        problems.push_back(chain[j].label + ": " + what + " must be rows [" + std::to_string(want) + ", " +
                           std::to_string(want + prog.directions) + ") of graph input '" + origins[0].graph_input +
                           "' ([layers x directions, batch, hidden] in layer order)");
        ok = false;
      }
    }
    if ((chain[j].layout != 0 || unbatched) && src != StateSource::kZero) {
      problems.push_back(chain[j].label + ": a given " + what + " is supported with layout 0 and a batched input only");
      ok = false;
    }
  }
  if (!ok) return;
  if (src == StateSource::kInput) {
    for (const auto& i : g.proto().input()) {
      if (i.name() != origins[0].graph_input) continue;
      std::vector<int64_t> dims;
      for (const auto& d : i.type().tensor_type().shape().dim()) dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
      const int64_t H = chain[0].hidden;
      if (dims.size() != 3 || (dims[0] >= 0 && dims[0] != op_count) || (dims[2] >= 0 && dims[2] != H)) {
        problems.push_back("graph: input '" + i.name() + "' (" + what + ") has shape " + join(dims) + ", expected [" +
                           std::to_string(op_count) + ", batch, " + std::to_string(H) + "]");
      }
    }
  }
  (k == kInitialH ? prog.initial_hidden : prog.initial_cell) = src;
  (k == kInitialH ? r.initial_h_name : r.initial_c_name) = src == StateSource::kInput ? origins[0].graph_input : "";
  for (const StateOrigin& o : origins) {
    for (const auto& c : o.constant) (k == kInitialH ? prog.h0 : prog.c0).push_back(c);
  }
}

// The initial states (constant rows shared per batch row), then Y_h and Y_c as graph outputs
// (Y_h only when the head does not read it); refuses when any problem was found.
void read_states(Import* im) {
  const std::string& origin = im->origin;
  OnnxLstm& r = im->r;
  std::vector<std::string>& problems = im->problems;
  const Graph& g = *im->g;
  const std::vector<NodeInfo>& chain = im->chain;
  const bool unbatched = im->ctx.unbatched;
  FloatProgram& prog = r.program;
  prog.directions = chain.front().directions;
  for (int k : {kInitialH, kInitialC}) read_initial_state(im, k);
  std::vector<int32_t> hidden_sizes;
  for (const NodeInfo& n : chain) hidden_sizes.insert(hidden_sizes.end(), static_cast<size_t>(n.directions), static_cast<int32_t>(n.hidden));
  share_state_rows(&prog, hidden_sizes, im->ctx.batch_size, &problems);
  for (int k : {kYH, kYC}) {
    if (k == kYH && im->final_state) continue;  // the head's, checked above
    if (k == kYH && !im->repeated_from_state.empty()) {
      // An encoder's Y_h is its decoder's input: no other layer's may be a model output.
      for (const NodeInfo& n : chain) {
        if (!im->repeated_from_state.count(n.node) && used(g, *n.node, kYH)) {
          problems.push_back(n.label + ": its final state h_n as a model output, in a model whose encoder's h_n is "
                             "repeated into its decoder, is not supported yet; output the decoder's sequence only");
        }
      }
      continue;
    }
    std::string out;
    if (!trace_final_state(g, chain, k, &out, &problems)) continue;
    if (!out.empty() && (chain[0].layout != 0 || unbatched)) {
      problems.push_back(chain[0].label + ": the final state as an output is supported with layout 0 and a batched input only");
    }
    (k == kYH ? prog.hidden_output : prog.cell_output) = !out.empty();
    (k == kYH ? r.h_n_name : r.c_n_name) = out;
  }
  if (!problems.empty()) refuse(origin, problems);
}

// One op per layer and direction, the program validated.
void build_ops(Import* im) {
  OnnxLstm& r = im->r;
  FloatProgram& prog = r.program;
  for (const NodeInfo& n : im->chain) {
    r.node_names.push_back(n.node->name());
    for (int32_t d = 0; d < n.directions; ++d) prog.ops.push_back(node_op(n, d));
  }
  if (!prog.residual.empty()) prog.residual.resize(im->chain.size(), false);  // one per layer
  if (!prog.between.empty()) prog.between.resize(im->chain.size());
  if (!prog.repeated.empty()) prog.repeated.resize(im->chain.size(), false);
  try {
    prog.validate();
  } catch (const CompileError& e) {
    throw CompileError(im->origin + ": " + e.what());
  }
}

}  // namespace
}  // namespace import

OnnxLstm import_onnx_bytes(const std::string& bytes, const std::string& origin) {
  using namespace import;
  Import im;
  im.origin = origin;
  onnx::ModelProto model;
  read_model(bytes, &model, &im);
  const Graph g(model.graph(), &im.facts);
  im.g = &g;
  find_recurrent_nodes(&im);
  find_chain_head(&im);
  find_model_input(&im);
  im.residuals = find_residual_adds(g);
  walk_front(&im);
  follow_chain(&im);
  PathState hs = im.final_state ? head_from_final_state(&im) : head_from_y(im.chain.back());
  walk_head(&im, &hs);
  check_out_of_scope(&im);
  read_states(&im);
  build_ops(&im);
  return im.r;
}

OnnxLstm import_onnx(const std::string& path) { return import_onnx_bytes(read_file(path), path); }

}  // namespace compiler
}  // namespace qlstm
