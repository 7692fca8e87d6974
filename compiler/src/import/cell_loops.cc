#include "import/cell_loops.h"

#include <algorithm>
#include <map>
#include <queue>
#include <set>

#include "import/const_tensor.h"
#include "import/graph.h"

namespace qlstm {
namespace compiler {
namespace import {
namespace {

// torch holds nn.LSTMCell's gates i, f, g, o and nn.GRUCell's r, z, n; ONNX stacks i, o, f, c and
// z, r, h. The torch block of each ONNX block:
constexpr int kTorchBlockOfOnnxLstm[4] = {0, 3, 1, 2};
constexpr int kTorchBlockOfOnnxGru[3] = {1, 0, 2};

// One projection v Wᵀ + b of a step, as torch holds it: W [rows][cols], b [rows] (empty: none).
struct Projection {
  std::string input;  // v
  std::vector<double> weight, bias;
  int64_t rows = 0, cols = 0;
  std::vector<const onnx::NodeProto*> nodes;
  // The projection of a zero state that the constant folder evaluated (a static batch): only its
  // bias is left, as a constant the other steps' projections must match.
  bool folded = false;
  bool same_weights(const Projection& o) const {
    if (folded || o.folded) return bias == o.bias || (bias.empty() && std::all_of(o.bias.begin(), o.bias.end(), [](double b) { return b == 0.0; }));
    return rows == o.rows && cols == o.cols && weight == o.weight && bias == o.bias;
  }
};

// A constant whose rows ([width], [1, width] or [B, width]) are all `row`.
bool constant_rows(const Graph& g, const std::string& name, int64_t width, std::vector<double>* row) {
  std::vector<double> v;
  std::vector<int64_t> dims;
  if (!constant_values(g, name, &v, &dims) || dims.empty() || dims.size() > 2 || dims.back() != width || v.empty()) {
    return false;
  }
  row->assign(v.begin(), v.begin() + static_cast<ptrdiff_t>(width));
  for (size_t k = 0; k < v.size(); ++k) {
    if (v[k] != (*row)[k % static_cast<size_t>(width)]) return false;
  }
  return true;
}

// A zero state's projection folded into `row`s: the bias (all zeros without one).
Projection folded_projection(std::vector<double> row) {
  Projection p;
  p.folded = true;
  p.rows = static_cast<int64_t>(row.size());
  if (std::any_of(row.begin(), row.end(), [](double b) { return b != 0.0; })) p.bias = std::move(row);
  return p;
}

// A const [rows][cols] matrix, transposed when `transposed` (then the constant is [cols][rows]).
bool read_matrix(const Graph& g, const std::string& name, bool transposed, Projection* p) {
  std::vector<double> v;
  std::vector<int64_t> dims;
  if (!constant_values(g, name, &v, &dims) || dims.size() != 2 || dims[0] < 1 || dims[1] < 1) return false;
  p->rows = transposed ? dims[1] : dims[0];
  p->cols = transposed ? dims[0] : dims[1];
  p->weight.assign(v.size(), 0.0);
  for (int64_t r = 0; r < p->rows; ++r) {
    for (int64_t c = 0; c < p->cols; ++c) {
      p->weight[static_cast<size_t>(r * p->cols + c)] =
          transposed ? v[static_cast<size_t>(c * p->rows + r)] : v[static_cast<size_t>(r * p->cols + c)];
    }
  }
  return true;
}

// A bias of `rows` values ([rows] or [1, rows]), scaled by `beta`.
bool read_bias(const Graph& g, const std::string& name, int64_t rows, double beta, Projection* p) {
  std::vector<double> v;
  std::vector<int64_t> dims;
  if (!constant_values(g, name, &v, &dims) || static_cast<int64_t>(v.size()) != rows) return false;
  if (!(dims == std::vector<int64_t>{rows} || dims == std::vector<int64_t>{1, rows})) return false;
  for (double& b : v) b *= beta;
  p->bias = std::move(v);
  return true;
}

// `value` = Gemm(v, W, b) (transA 0), MatMul(v, Wᵀ), or Add(MatMul(v, Wᵀ), b).
bool read_projection(const Graph& g, const std::string& value, Projection* p) {
  const onnx::NodeProto* n = g.producer(value);
  if (n == nullptr) return false;
  if (n->op_type() == "Add" && n->input_size() == 2) {
    for (int k = 0; k < 2; ++k) {
      const onnx::NodeProto* m = g.producer(n->input(k));
      if (m == nullptr || m->op_type() != "MatMul" || m->input_size() != 2 || !read_matrix(g, m->input(1), true, p) ||
          !read_bias(g, n->input(1 - k), p->rows, 1.0, p) || g.data_consumers(m->output(0)).size() != 1) {
        continue;
      }
      p->input = m->input(0);
      p->nodes = {m, n};
      return true;
    }
    return false;
  }
  if (n->op_type() == "MatMul" && n->input_size() == 2 && read_matrix(g, n->input(1), true, p)) {
    p->input = n->input(0);
    p->nodes = {n};
    return true;
  }
  if (n->op_type() != "Gemm" || n->input_size() < 2 || int_attribute(*n, "transA", 0) != 0) return false;
  if (!read_matrix(g, n->input(1), int_attribute(*n, "transB", 0) == 0, p)) return false;
  const double alpha = float_attribute(*n, "alpha", 1.0);
  for (double& w : p->weight) w *= alpha;
  if (n->input_size() >= 3 && !n->input(2).empty() &&
      !read_bias(g, n->input(2), p->rows, float_attribute(*n, "beta", 1.0), p)) {
    return false;
  }
  p->input = n->input(0);
  p->nodes = {n};
  return true;
}

// The single node reading `value` if it is an `op` (and nothing else reads it).
const onnx::NodeProto* sole(const Graph& g, const std::string& value, const char* op) {
  return only_consumer_of_type(g, value, op);
}

// A Split of a rank-2 value along its last axis into `parts` equal chunks; the chunk size.
bool equal_split(const Graph& g, const onnx::NodeProto& s, int parts, int64_t* chunk) {
  if (s.op_type() != "Split" || s.output_size() != parts || s.input_size() < 1) return false;
  const int64_t axis = int_attribute(s, "axis", 0);
  if (axis != 1 && axis != -1) return false;
  std::vector<int64_t> sizes;
  if (const onnx::AttributeProto* a = attribute(s, "split")) {
    sizes.assign(a->ints().begin(), a->ints().end());
  } else if (s.input_size() >= 2 && !s.input(1).empty()) {
    std::vector<double> v;
    if (!constant_values(g, s.input(1), &v)) return false;
    for (double x : v) {
      int64_t k = 0;
      if (!small_int(x, &k)) return false;
      sizes.push_back(k);
    }
  }
  const Shape* shape = g.shape(s.input(0));
  if (shape != nullptr && shape->size() != 2) return false;
  if (sizes.empty()) {
    if (shape == nullptr || !(*shape)[1].known() || (*shape)[1].value % parts != 0) return false;
    sizes.assign(static_cast<size_t>(parts), (*shape)[1].value / parts);
  }
  if (sizes.size() != static_cast<size_t>(parts) || sizes[0] < 1) return false;
  for (int64_t k : sizes) {
    if (k != sizes[0]) return false;
  }
  *chunk = sizes[0];
  return true;
}

enum class Kind { kLstm, kGru };

// One step of a loop.
struct Step {
  Kind kind = Kind::kLstm;
  const onnx::NodeProto* anchor = nullptr;  // its (hidden projection's) Split: names it in messages
  int64_t hidden = 0;
  Projection proj[2];  // an LSTM's two, in the Add's order, until the chain says which is which
  int input_proj = -1;  // proj[input_proj] reads x, the other h (a GRU's: 0 and 1)
  std::string h_prev, c_prev, h_new, c_new;
  std::vector<const onnx::NodeProto*> nodes;  // all but the projections
  int prev = -1, next = -1;
  const Projection& in() const { return proj[input_proj]; }
  const Projection& rec() const { return proj[1 - input_proj]; }
};

// The node reading `value` that is an `op` with `other` as its other input, or null.
const onnx::NodeProto* consumer_with(const Graph& g, const std::string& value, const char* op, const std::string& other) {
  for (const onnx::NodeProto* c : g.data_consumers(value)) {
    if (c->op_type() == op && c->output_size() >= 1 && other_input(*c, value) == other) return c;
  }
  return nullptr;
}

// nn.LSTMCell's step from its Split into gates (i, f, g, o).
bool match_lstm_step(const Graph& g, const onnx::NodeProto& split, Step* s) {
  int64_t H = 0;
  if (!equal_split(g, split, 4, &H)) return false;
  const onnx::NodeProto* pre = g.producer(split.input(0));
  if (pre == nullptr || pre->op_type() != "Add" || pre->input_size() != 2 ||
      g.data_consumers(split.input(0)).size() != 1) {
    return false;
  }
  int folded = 0;
  for (int k = 0; k < 2; ++k) {
    std::vector<double> row;
    if (constant_rows(g, pre->input(k), 4 * H, &row)) {
      s->proj[k] = folded_projection(std::move(row));
      ++folded;
    } else if (!read_projection(g, pre->input(k), &s->proj[k]) || s->proj[k].rows != 4 * H ||
               g.data_consumers(pre->input(k)).size() != 1) {
      return false;
    }
  }
  if (folded > 1) return false;
  const onnx::NodeProto* si = sole(g, split.output(0), "Sigmoid");
  const onnx::NodeProto* sf = sole(g, split.output(1), "Sigmoid");
  const onnx::NodeProto* tg = sole(g, split.output(2), "Tanh");
  const onnx::NodeProto* so = sole(g, split.output(3), "Sigmoid");
  if (!si || !sf || !tg || !so) return false;
  const onnx::NodeProto* mig = sole(g, si->output(0), "Mul");
  const onnx::NodeProto* mf = sole(g, sf->output(0), "Mul");
  if (!mig || other_input(*mig, si->output(0)) != tg->output(0) || sole(g, tg->output(0), "Mul") != mig || !mf) {
    return false;
  }
  const onnx::NodeProto* add_c = sole(g, mf->output(0), "Add");
  if (!add_c || other_input(*add_c, mf->output(0)) != mig->output(0) || sole(g, mig->output(0), "Add") != add_c) {
    return false;
  }
  const onnx::NodeProto* mo = sole(g, so->output(0), "Mul");
  const onnx::NodeProto* tc = mo ? g.producer(other_input(*mo, so->output(0))) : nullptr;
  if (!tc || tc->op_type() != "Tanh" || tc->input(0) != add_c->output(0) || sole(g, tc->output(0), "Mul") != mo) {
    return false;
  }
  s->kind = Kind::kLstm;
  s->anchor = &split;
  s->hidden = H;
  s->c_prev = other_input(*mf, sf->output(0));
  s->c_new = add_c->output(0);
  s->h_new = mo->output(0);
  s->nodes = {pre, &split, si, sf, tg, so, mig, mf, add_c, tc, mo};
  return true;
}

// One value, or two constants equal in shape and elements (torch writes a zero state once per use).
bool same_value(const Graph& g, const std::string& a, const std::string& b) {
  if (a == b) return true;
  std::vector<double> va, vb;
  std::vector<int64_t> da, db;
  return constant_values(g, a, &va, &da) && constant_values(g, b, &vb, &db) && va == vb && da == db;
}

// nn.GRUCell's step from the Split of its input projection (r, z, n): x_r + h_r and x_z + h_z
// into Sigmoids, x_n + r * h_n into a Tanh n, h' = (h - n) * z + n. The hidden chunks h_r, h_z,
// h_n are a second Split's, or constants (a zero state's projection, folded).
bool match_gru_step(const Graph& g, const onnx::NodeProto& si, Step* s) {
  int64_t H = 0;
  if (!equal_split(g, si, 3, &H)) return false;
  const onnx::NodeProto* add_r = sole(g, si.output(0), "Add");
  const onnx::NodeProto* add_z = sole(g, si.output(1), "Add");
  const onnx::NodeProto* add_n = sole(g, si.output(2), "Add");
  const onnx::NodeProto* sig_r = add_r ? sole(g, add_r->output(0), "Sigmoid") : nullptr;
  const onnx::NodeProto* sig_z = add_z ? sole(g, add_z->output(0), "Sigmoid") : nullptr;
  const onnx::NodeProto* tn = add_n ? sole(g, add_n->output(0), "Tanh") : nullptr;
  const onnx::NodeProto* m_rn = add_n ? g.producer(other_input(*add_n, si.output(2))) : nullptr;
  if (!sig_r || !sig_z || !tn || !m_rn || m_rn->op_type() != "Mul" || sole(g, sig_r->output(0), "Mul") != m_rn ||
      sole(g, m_rn->output(0), "Add") != add_n) {
    return false;
  }
  const std::string hr = other_input(*add_r, si.output(0)), hz = other_input(*add_z, si.output(1));
  const std::string hn = other_input(*m_rn, sig_r->output(0));
  const std::string& n = tn->output(0);
  const auto readers = g.data_consumers(n);
  const onnx::NodeProto* sub = nullptr;
  for (const onnx::NodeProto* c : readers) {
    if (c->op_type() == "Sub" && c->input_size() == 2 && c->input(1) == n) sub = c;
  }
  const onnx::NodeProto* mz = sub ? sole(g, sub->output(0), "Mul") : nullptr;
  const onnx::NodeProto* out = mz ? consumer_with(g, mz->output(0), "Add", n) : nullptr;
  if (readers.size() != 2 || g.is_graph_output(n) || !mz || other_input(*mz, sub->output(0)) != sig_z->output(0) ||
      sole(g, sig_z->output(0), "Mul") != mz || !out || sole(g, mz->output(0), "Add") != out) {
    return false;
  }
  if (!read_projection(g, si.input(0), &s->proj[0]) || s->proj[0].rows != 3 * H ||
      g.data_consumers(si.input(0)).size() != 1) {
    return false;
  }
  s->nodes = {&si, add_r, sig_r, m_rn, add_z, sig_z, add_n, tn, sub, mz, out};
  const onnx::NodeProto* sh = g.producer(hr);
  std::vector<double> row_r, row_z, row_n;
  if (sh != nullptr && sh->op_type() == "Split") {
    int64_t Hh = 0;
    if (!equal_split(g, *sh, 3, &Hh) || Hh != H || sh->output(0) != hr || sh->output(1) != hz || sh->output(2) != hn ||
        !read_projection(g, sh->input(0), &s->proj[1]) || s->proj[1].rows != 3 * H ||
        !same_value(g, s->proj[1].input, sub->input(0)) || g.data_consumers(sh->input(0)).size() != 1) {
      return false;
    }
    for (const std::string& v : {hr, hz, hn}) {
      if (g.data_consumers(v).size() != 1) return false;
    }
    s->nodes.push_back(sh);
  } else if (constant_rows(g, hr, H, &row_r) && constant_rows(g, hz, H, &row_z) && constant_rows(g, hn, H, &row_n)) {
    row_r.insert(row_r.end(), row_z.begin(), row_z.end());
    row_r.insert(row_r.end(), row_n.begin(), row_n.end());
    s->proj[1] = folded_projection(std::move(row_r));
  } else {
    return false;
  }
  s->kind = Kind::kGru;
  s->anchor = &si;
  s->hidden = H;
  s->input_proj = 0;
  s->h_prev = sub->input(0);
  s->h_new = out->output(0);
  return true;
}

// Where step k of a loop reads its input.
struct StepInput {
  std::string sequence;  // x of x[:, t] (Gather), or empty
  int64_t axis = 0;      // its time axis (0: [T, B, I], 1: [B, T, I])
  int64_t time = -1;     // t
  const onnx::NodeProto* gather = nullptr;
};

bool read_step_input(const Graph& g, const std::string& v, StepInput* in) {
  const onnx::NodeProto* n = g.producer(v);
  if (n == nullptr || n->op_type() != "Gather" || n->input_size() != 2) return false;
  const Shape* shape = g.shape(n->input(0));
  std::vector<double> idx;
  std::vector<int64_t> dims;
  if (shape == nullptr || shape->size() != 3 || !constant_values(g, n->input(1), &idx, &dims) || !dims.empty() ||
      idx.size() != 1) {
    return false;
  }
  int64_t axis = int_attribute(*n, "axis", 0), t = 0;
  if (axis < 0) axis += 3;
  if ((axis != 0 && axis != 1) || !small_int(idx[0], &t)) return false;
  if (t < 0) {
    const Dim& d = (*shape)[static_cast<size_t>(axis)];
    if (!d.known()) return false;
    t += d.value;
  }
  in->sequence = n->input(0);
  in->axis = axis;
  in->time = t;
  in->gather = n;
  return true;
}

// A loop: its steps in order, and what it reads and exposes.
struct Loop {
  Kind kind = Kind::kLstm;
  std::vector<int> steps;
  bool reverse = false;
  StepInput x;              // x[:, t] of one input (x.sequence empty: stacked)
  int below = -1;           // stacked: the loop whose step k's h step k reads
  const onnx::NodeProto* stack = nullptr;  // the Concat of every step's h (Y), or null
  int64_t stack_axis = 0;
  std::vector<const onnx::NodeProto*> stack_nodes;
  std::string label;        // "the LSTMCell loop at node '/cell/Split' (Split)"
  std::string y, y_h, y_c;  // Y's name; the last step's h and c when read outside ("" when not)
  std::string node_y_h;     // the fused node's Y_h, when it has one
  std::string h0, c0;       // graph inputs [B, H] the loop starts from ("" for zeros)
  bool h_n_stacked = false;  // a loop above reads its last h: Y_h joins the layers' h_n Concat
};

class Fuser {
 public:
  Fuser(onnx::ModelProto* model, int64_t opset, ShapeFacts* facts, std::vector<std::string>* notes,
        std::vector<std::string>* problems)
      : model_(model), opset_(opset), facts_(facts), notes_(notes), problems_(problems), g_(model->graph(), facts) {}

  int run() {
    find_steps();
    if (steps_.empty()) return 0;
    chain_steps();
    for (size_t k = 0; k < loops_.size(); ++k) {
      if (!read_loop(static_cast<int>(k))) return 0;
    }
    for (size_t k = 0; k < loops_.size(); ++k) find_stack(static_cast<int>(k));
    if (!check_reads()) return 0;
    rewrite();
    return static_cast<int>(loops_.size());
  }

 private:
  bool fail(const std::string& why) {
    problems_->push_back(why);
    return false;
  }
  const Step& step_of(int loop, size_t k) const { return steps_[static_cast<size_t>(loops_[static_cast<size_t>(loop)].steps[k])]; }

  void find_steps() {
    for (const auto& n : model_->graph().node()) {
      Step s;
      if (n.op_type() != "Split") continue;
      if (match_lstm_step(g_, n, &s) || match_gru_step(g_, n, &s)) steps_.push_back(std::move(s));
    }
  }

  // Links each step to the one before it by the state it reads (an LSTM's c, a GRU's h), then
  // gathers the chains into loops, first step first.
  void chain_steps() {
    std::map<std::string, int> by_state;
    for (size_t k = 0; k < steps_.size(); ++k) {
      by_state[steps_[k].kind == Kind::kLstm ? steps_[k].c_new : steps_[k].h_new] = static_cast<int>(k);
    }
    for (size_t k = 0; k < steps_.size(); ++k) {
      Step& s = steps_[k];
      const auto it = by_state.find(s.kind == Kind::kLstm ? s.c_prev : s.h_prev);
      if (it == by_state.end() || steps_[static_cast<size_t>(it->second)].kind != s.kind) continue;
      Step& p = steps_[static_cast<size_t>(it->second)];
      if (p.next != -1) continue;  // two steps read one state: neither is chained (refused below)
      s.prev = it->second;
      p.next = static_cast<int>(k);
    }
    for (size_t k = 0; k < steps_.size(); ++k) {
      if (steps_[k].prev != -1) continue;
      Loop l;
      l.kind = steps_[k].kind;
      for (int s = static_cast<int>(k); s != -1; s = steps_[static_cast<size_t>(s)].next) l.steps.push_back(s);
      l.label = std::string("the ") + (l.kind == Kind::kLstm ? "LSTMCell" : "GRUCell") + " loop at " +
                node_label(*steps_[k].anchor);
      loops_.push_back(std::move(l));
    }
  }

  // Which of an LSTM step's projections reads h: the one reading the step before's h; in the
  // first step, the one with the second step's hidden weights (or, alone, not reading x[:, t]).
  bool assign_projections(Loop& l) {
    const size_t T = l.steps.size();
    StepInput unused;
    for (size_t j = 1; j <= T; ++j) {  // step 0 last: it goes by step 1's
      const size_t k = j % T;
      Step& s = steps_[static_cast<size_t>(l.steps[k])];
      if (s.kind == Kind::kGru) continue;
      bool is_rec[2];
      for (int p = 0; p < 2; ++p) {
        is_rec[p] = s.proj[p].folded || (k > 0 ? s.proj[p].input == steps_[static_cast<size_t>(l.steps[k - 1])].h_new
                                               : T > 1 && s.proj[p].same_weights(steps_[static_cast<size_t>(l.steps[1])].rec()));
      }
      if (k == 0 && is_rec[0] == is_rec[1] && !s.proj[0].folded && !s.proj[1].folded) {  // alone, or I = H alike
        for (int p = 0; p < 2; ++p) is_rec[p] = !read_step_input(g_, s.proj[p].input, &unused) && read_step_input(g_, s.proj[1 - p].input, &unused);
      }
      const int rec = is_rec[0] == is_rec[1] ? -1 : is_rec[0] ? 0 : 1;
      if (rec < 0) {
        return fail(node_label(*s.anchor) + ": step " + std::to_string(k) + " of " + l.label +
                    ": cannot tell its input projection from its hidden one" +
                    (k > 0 ? " (neither reads the step before's h)" : ""));
      }
      s.input_proj = 1 - rec;
      if (k == 0) s.h_prev = s.proj[rec].input;
    }
    return true;
  }

  bool read_loop(int index) {
    Loop& l = loops_[static_cast<size_t>(index)];
    if (!assign_projections(l)) return false;
    const Step& first = steps_[static_cast<size_t>(l.steps[0])];
    const int64_t T = static_cast<int64_t>(l.steps.size());
    for (size_t k = 1; k < l.steps.size(); ++k) {
      const Step& s = step_of(index, k);
      if (k == 1 && first.rec().folded && !s.rec().same_weights(first.rec())) {
        return fail(node_label(*first.anchor) + ": the first step of " + l.label + " adds a constant hidden "
                    "projection that is not the later steps' bias: it starts from a state that is not zero (only a "
                    "zero initial state is supported for a cell loop)");
      }
      if (!s.in().same_weights(first.in()) || !s.rec().same_weights(first.rec())) {
        return fail(node_label(*s.anchor) + ": step " + std::to_string(k) + " of " + l.label + " has weights other "
                    "than step 0's: steps with weights of their own are not one recurrent layer; step one cell module "
                    "(one nn.LSTMCell / nn.GRUCell) over the sequence");
      }
      if (s.in().input == s.rec().input) return fail(node_label(*s.anchor) + ": its input is its own hidden state");
    }
    double z = 1.0;
    // A state passed in as a model input [B, H] becomes the node's initial_h / initial_c.
    const auto model_input = [&](const std::string& v) {
      const Shape* shape = g_.shape(v);
      return g_.is_graph_input(v) && shape != nullptr && shape->size() == 2;
    };
    const bool zero_h = (first.rec().folded && first.kind == Kind::kLstm) || (uniform_value(g_, first.h_prev, &z) && z == 0.0);
    const bool zero_c = first.kind == Kind::kGru || (uniform_value(g_, first.c_prev, &z) && z == 0.0);
    if (!zero_h && model_input(first.h_prev)) l.h0 = first.h_prev;
    if (!zero_c && model_input(first.c_prev)) l.c0 = first.c_prev;
    if ((!zero_h && l.h0.empty()) || (!zero_c && l.c0.empty())) {
      return fail(node_label(*first.anchor) + ": " + l.label + " starts from the state '" +
                  (zero_h || !l.h0.empty() ? first.c_prev : first.h_prev) + "', neither zeros nor a model input of "
                  "[batch, hidden]: a cell loop starts from torch.zeros or from a state passed in (or run nn.LSTM / "
                  "nn.GRU, whose initial state may be a model input)");
    }
    return read_inputs(index, T);
  }

  // Step k reads x[:, k] (x[:, T-1-k]: reverse) of one input, or step k's h of a loop below.
  bool read_inputs(int index, int64_t T) {
    Loop& l = loops_[static_cast<size_t>(index)];
    const Step& first = steps_[static_cast<size_t>(l.steps[0])];
    std::map<std::string, std::pair<int, int64_t>> h_of;  // h -> (loop, step)
    for (size_t o = 0; o < loops_.size(); ++o) {
      for (size_t k = 0; k < loops_[o].steps.size(); ++k) h_of[step_of(static_cast<int>(o), k).h_new] = {static_cast<int>(o), static_cast<int64_t>(k)};
    }
    const auto below = h_of.find(first.in().input);
    if (below != h_of.end()) {
      l.below = below->second.first;
      for (int64_t k = 0; k < T; ++k) {
        const auto it = h_of.find(step_of(index, static_cast<size_t>(k)).in().input);
        if (it == h_of.end() || it->second != std::make_pair(l.below, k) ||
            loops_[static_cast<size_t>(l.below)].steps.size() != l.steps.size() || loops_[static_cast<size_t>(l.below)].reverse) {
          return fail(node_label(*step_of(index, static_cast<size_t>(k)).anchor) + ": step " + std::to_string(k) + " of " +
                      l.label + " does not read step " + std::to_string(k) + "'s h of the loop below it (a stacked cell "
                      "reads the same step of the layer below, forward)");
        }
      }
      return true;
    }
    for (int64_t k = 0; k < T; ++k) {
      const Step& s = step_of(index, static_cast<size_t>(k));
      StepInput in;
      if (!read_step_input(g_, s.in().input, &in)) {
        return fail(node_label(*s.anchor) + ": step " + std::to_string(k) + " of " + l.label + " reads '" +
                    s.in().input + "', not x[:, t] of a [B, T, F] or [T, B, F] input (a Gather of one time step): "
                    "only that, or the h of a cell loop below it, is supported as a cell's input");
      }
      if (k == 0) {
        l.x = in;
        l.reverse = T > 1 && in.time == T - 1;
      }
      const int64_t want = l.reverse ? T - 1 - k : k;
      if (in.sequence != l.x.sequence || in.axis != l.x.axis || in.time != want) {
        return fail(node_label(*in.gather) + ": step " + std::to_string(k) + " of " + l.label + " reads time step " +
                    std::to_string(in.time) + " of '" + in.sequence + "'; a loop must read steps 0, 1, ... (or their "
                    "reverse) of one input, one per step");
      }
    }
    const Dim& steps = (*g_.shape(l.x.sequence))[static_cast<size_t>(l.x.axis)];
    if (steps.known() && steps.value != T) {
      return fail(node_label(*l.x.gather) + ": " + l.label + " runs " + std::to_string(T) + " steps over '" +
                  l.x.sequence + "', whose time axis has " + std::to_string(steps.value) + ": a loop over part of the "
                  "sequence is not supported (slice the input before the model, or loop over every step)");
    }
    return true;
  }

  // torch.stack(outs, dim) of every step's h: an Unsqueeze per step into one Concat, in time order.
  void find_stack(int index) {
    Loop& l = loops_[static_cast<size_t>(index)];
    const int64_t T = static_cast<int64_t>(l.steps.size());
    for (const onnx::NodeProto* u : g_.data_consumers(step_of(index, 0).h_new)) {
      std::vector<int64_t> axes;
      if (u->op_type() != "Unsqueeze" || !axes_of(g_, *u, &axes) || axes.size() != 1) continue;
      const onnx::NodeProto* cat = sole(g_, u->output(0), "Concat");
      if (cat == nullptr || cat->input_size() != T) continue;
      int64_t axis = int_attribute(*cat, "axis", 0);
      if (axis < 0) axis += 3;
      if (axis != 0 && axis != 1) continue;
      std::vector<const onnx::NodeProto*> nodes{cat};
      for (int64_t t = 0; t < T; ++t) {
        const onnx::NodeProto* ut = g_.producer(cat->input(static_cast<int>(t)));
        const std::string& h = step_of(index, static_cast<size_t>(l.reverse ? T - 1 - t : t)).h_new;
        std::vector<int64_t> ax;
        if (ut == nullptr || ut->op_type() != "Unsqueeze" || ut->input(0) != h || !axes_of(g_, *ut, &ax) ||
            ax.size() != 1 || (ax[0] < 0 ? ax[0] + 3 : ax[0]) != axis || sole(g_, ut->output(0), "Concat") != cat) {
          nodes.clear();
          break;
        }
        nodes.push_back(ut);
      }
      if (nodes.empty()) continue;
      l.stack = cat;
      l.stack_axis = axis;
      l.stack_nodes = nodes;
      return;
    }
  }

  // Every value a loop computes is read only inside it, except its last h and c and its stack.
  bool check_reads() {
    for (size_t k = 0; k < loops_.size(); ++k) {
      const Loop& l = loops_[k];
      std::vector<const onnx::NodeProto*> nodes = l.stack_nodes;
      for (int s : l.steps) {
        const Step& st = steps_[static_cast<size_t>(s)];
        nodes.insert(nodes.end(), st.nodes.begin(), st.nodes.end());
        for (const auto& p : st.proj) nodes.insert(nodes.end(), p.nodes.begin(), p.nodes.end());
      }
      for (const auto* n : nodes) removed_[n] = static_cast<int>(k);
    }
    for (size_t index = 0; index < loops_.size(); ++index) {
      Loop& l = loops_[index];
      const Step& last = steps_[static_cast<size_t>(l.steps.back())];
      std::set<std::string> exposed{last.h_new, last.c_new};
      if (l.stack) exposed.insert(l.stack->output(0));
      for (int s : l.steps) {
        for (const auto* n : steps_[static_cast<size_t>(s)].nodes) {
          for (const auto& v : n->output()) {
            if (exposed.count(v)) continue;
            if (g_.is_graph_output(v)) {
              return fail(node_label(*n) + ": '" + v + "' of " + l.label + " is a graph output: only the last step's h "
                          "and c, or every step's h stacked (torch.stack), can leave a cell loop");
            }
            for (const auto* c : g_.consumers(v)) {
              if (removed_.count(c) || c->op_type() == "Shape") continue;
              return fail(node_label(*c) + " reads '" + v + "' of " + l.label + ": only the last step's h and c, or "
                          "every step's h stacked (torch.stack(outs, 1)), can be read outside a cell loop");
            }
          }
        }
      }
      const auto read_outside = [&](const std::string& v) {
        if (v.empty()) return false;
        if (g_.is_graph_output(v)) return true;
        for (const auto* c : g_.consumers(v)) {
          if (!removed_.count(c)) return true;
        }
        return false;
      };
      l.y_h = read_outside(last.h_new) ? last.h_new : "";
      l.y_c = read_outside(last.c_new) ? last.c_new : "";
    }
    for (size_t index = 0; index < loops_.size(); ++index) {
      if (!check_state_interface(static_cast<int>(index))) return false;
    }
    // The last layer's h_n[-1], as nn.LSTM(num_layers=L) exports it: every layer's Y_h in a Concat.
    for (const Loop& l : loops_) {
      if (l.y_h.empty()) continue;
      for (int b = l.below; b >= 0; b = loops_[static_cast<size_t>(b)].below) {
        Loop& lower = loops_[static_cast<size_t>(b)];
        if (!lower.y_h.empty() || !lower.y_c.empty()) {
          return fail(l.label + " is stacked on " + lower.label + ", whose last state is read too: only the last "
                      "layer's final state can be read of stacked cells");
        }
        lower.h_n_stacked = true;
      }
    }
    return true;
  }

  // A state the loop takes from a model input, or gives as a model output: one loop, not stacked
  // cells (their state would be one [layers, B, H] input), and an input read by the loop only.
  bool check_state_interface(int index) {
    const Loop& l = loops_[static_cast<size_t>(index)];
    const Step& last = steps_[static_cast<size_t>(l.steps.back())];
    const bool outputs = (!l.y_h.empty() && g_.is_graph_output(last.h_new)) ||
                         (!l.y_c.empty() && g_.is_graph_output(last.c_new));
    if (l.h0.empty() && l.c0.empty() && !outputs) return true;
    bool stacked = l.below >= 0;
    for (const Loop& o : loops_) stacked = stacked || o.below == index;
    if (stacked) {
      return fail(l.label + ": a state passed in or out of stacked cells is not supported (one cell loop's is; "
                  "or run nn.LSTM / nn.GRU with num_layers, whose state is one [layers, batch, hidden] tensor)");
    }
    for (const std::string& v : {l.y_h, l.y_c}) {
      if (v.empty() || !g_.is_graph_output(v)) continue;
      for (const auto* c : g_.consumers(v)) {
        if (removed_.count(c)) continue;
        return fail(node_label(*c) + " reads the last state '" + v + "' of " + l.label + ", which the model also "
                    "returns: a head on a state the model gives back is not supported yet (as for nn.LSTM's h_n); "
                    "return the state alone, or read every step's h (torch.stack)");
      }
    }
    for (const std::string& v : {l.h0, l.c0}) {
      if (v.empty()) continue;
      for (const auto* c : g_.consumers(v)) {
        if (!removed_.count(c)) return fail(node_label(*c) + " reads the model input '" + v + "', the initial state of " + l.label + ": only the loop may read it");
      }
    }
    return true;
  }

  // A graph input or output declared [B, H] becomes [1, B, H]: ONNX's state layout, the same values.
  void add_directions_axis(const std::string& name, bool input) {
    auto* values = input ? model_->mutable_graph()->mutable_input() : model_->mutable_graph()->mutable_output();
    for (auto& v : *values) {
      if (v.name() != name || !v.type().has_tensor_type()) continue;
      auto* shape = v.mutable_type()->mutable_tensor_type()->mutable_shape();
      onnx::TensorShapeProto fixed;
      fixed.add_dim()->set_dim_value(1);
      for (const auto& d : shape->dim()) *fixed.add_dim() = d;
      *shape = fixed;
    }
    Shape s = facts_->shapes.count(name) ? facts_->shapes[name] : Shape{};
    s.insert(s.begin(), Dim{1, ""});
    facts_->shapes[name] = s;
  }

  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int k = 2; used_names_.count(name); ++k) name = base + "_" + std::to_string(k);
    used_names_.insert(name);
    return name;
  }

  void add_float_initializer(const std::string& name, const std::vector<int64_t>& dims, const std::vector<double>& v) {
    ConstTensor c;
    c.type = onnx::TensorProto::FLOAT;
    c.dims = dims;
    c.f = v;
    encode(c, name, model_->mutable_graph()->add_initializer());
  }

  // axis squeezed (out empty: a fresh name); its output name.
  std::string squeeze(const std::string& in, int64_t axis, const std::string& out, const std::string& scope,
                      std::vector<onnx::NodeProto>* nodes) {
    onnx::NodeProto n;
    n.set_op_type("Squeeze");
    n.set_name(fresh(scope + "Squeeze"));
    n.add_input(in);
    if (opset_ >= 13) {
      const std::string axes = fresh(scope + "squeeze_axes");
      ConstTensor c;
      c.type = onnx::TensorProto::INT64;
      c.dims = {1};
      c.i = {axis};
      encode(c, axes, model_->mutable_graph()->add_initializer());
      n.add_input(axes);
    } else {
      auto* a = n.add_attribute();
      a->set_name("axes");
      a->set_type(onnx::AttributeProto::INTS);
      a->add_ints(axis);
    }
    n.add_output(out.empty() ? fresh(scope + "squeezed") : out);
    nodes->push_back(n);
    return nodes->back().output(0);
  }

  std::string transpose_first_two(const std::string& in, const std::string& out, const std::string& scope,
                                  std::vector<onnx::NodeProto>* nodes) {
    onnx::NodeProto n;
    n.set_op_type("Transpose");
    n.set_name(fresh(scope + "Transpose"));
    n.add_input(in);
    n.add_output(out.empty() ? fresh(scope + "transposed") : out);
    auto* a = n.add_attribute();
    a->set_name("perm");
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t p : {1, 0, 2}) a->add_ints(p);
    nodes->push_back(n);
    return nodes->back().output(0);
  }

  // W [1][G·H][cols] in ONNX's gate order from torch's [G·H][cols].
  std::vector<double> onnx_order(const std::vector<double>& torch, int64_t H, int64_t cols, Kind kind) const {
    const int gates = kind == Kind::kLstm ? 4 : 3;
    const int* block = kind == Kind::kLstm ? kTorchBlockOfOnnxLstm : kTorchBlockOfOnnxGru;
    std::vector<double> out;
    const size_t n = static_cast<size_t>(H * cols);
    for (int j = 0; j < gates; ++j) {
      const auto from = torch.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(block[j]) * n);
      out.insert(out.end(), from, from + static_cast<ptrdiff_t>(n));
    }
    return out;
  }

  void set_shape(const std::string& v, Shape s) { facts_->shapes[v] = std::move(s); }

  // The nodes that replace loop `index`, at the place of its last node.
  std::vector<onnx::NodeProto> fused_nodes(int index) {
    Loop& l = loops_[static_cast<size_t>(index)];
    const Step& s = steps_[static_cast<size_t>(l.steps[0])];
    const Projection& in = s.in();
    const Projection* rec_p = &s.rec();
    for (int k : l.steps) {
      if (!steps_[static_cast<size_t>(k)].rec().folded) rec_p = &steps_[static_cast<size_t>(k)].rec();
    }
    Projection rec = *rec_p;  // a loop of one step from a zero state: R never meets a nonzero h
    if (rec.folded) rec.weight.assign(static_cast<size_t>(rec.rows * s.hidden), 0.0);
    const int64_t H = s.hidden, I = in.cols, G = l.kind == Kind::kLstm ? 4 : 3;
    std::string scope = s.anchor->name();
    scope = scope.substr(0, scope.rfind('/') + 1) + (l.kind == Kind::kLstm ? "LSTMCell_loop/" : "GRUCell_loop/");
    std::vector<onnx::NodeProto> nodes;
    // X as [T, B, I].
    std::string x;
    Dim T_dim, B_dim;
    if (l.below >= 0) {
      const Loop& b = loops_[static_cast<size_t>(l.below)];
      x = squeeze(b.y, 1, "", scope, &nodes);
      const Shape& yb = facts_->shapes[b.y];
      T_dim = yb[0];
      B_dim = yb[2];
    } else {
      const Shape& xs = *g_.shape(l.x.sequence);
      T_dim = xs[static_cast<size_t>(l.x.axis)];
      B_dim = xs[static_cast<size_t>(1 - l.x.axis)];
      x = l.x.axis == 0 ? l.x.sequence : transpose_first_two(l.x.sequence, "", scope, &nodes);
    }
    set_shape(x, {T_dim, B_dim, Dim{I, ""}});
    const std::string W = fresh(scope + "W"), R = fresh(scope + "R"), Bn = fresh(scope + "B");
    add_float_initializer(W, {1, G * H, I}, onnx_order(in.weight, H, I, l.kind));
    add_float_initializer(R, {1, G * H, H}, onnx_order(rec.weight, H, H, l.kind));
    std::vector<double> bias = onnx_order(in.bias.empty() ? std::vector<double>(static_cast<size_t>(G * H)) : in.bias, H, 1, l.kind);
    const auto rb = onnx_order(rec.bias.empty() ? std::vector<double>(static_cast<size_t>(G * H)) : rec.bias, H, 1, l.kind);
    bias.insert(bias.end(), rb.begin(), rb.end());
    add_float_initializer(Bn, {1, 2 * G * H}, bias);
    // The loop above this one reads Y; a stack reads it too.
    bool y_read = l.stack != nullptr;
    for (const Loop& o : loops_) y_read = y_read || o.below == index;
    onnx::NodeProto node;
    node.set_op_type(l.kind == Kind::kLstm ? "LSTM" : "GRU");
    node.set_name(fresh(scope + node.op_type()));
    for (const std::string& v : {x, W, R, Bn}) node.add_input(v);
    if (!l.h0.empty() || !l.c0.empty()) {
      for (const std::string& v : {std::string(), l.h0, l.c0}) node.add_input(v);  // sequence_lens, initial_h, initial_c
      if (l.kind == Kind::kGru) node.mutable_input()->RemoveLast();
      if (!l.h0.empty()) add_directions_axis(l.h0, true);
      if (!l.c0.empty()) add_directions_axis(l.c0, true);
    }
    l.y = y_read ? fresh(scope + "Y") : "";
    const std::string yh = l.y_h.empty() && !l.h_n_stacked ? "" : fresh(scope + "Y_h");
    l.node_y_h = yh;
    const std::string yc = l.y_c.empty() ? "" : fresh(scope + "Y_c");
    node.add_output(l.y);
    node.add_output(yh);
    if (l.kind == Kind::kLstm) node.add_output(yc);
    while (node.output_size() > 1 && node.output(node.output_size() - 1).empty()) node.mutable_output()->RemoveLast();
    auto attr = [&](const char* name, int64_t v) {
      auto* a = node.add_attribute();
      a->set_name(name);
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(v);
    };
    attr("hidden_size", H);
    if (l.kind == Kind::kGru) attr("linear_before_reset", 1);
    if (l.reverse) {
      auto* a = node.add_attribute();
      a->set_name("direction");
      a->set_type(onnx::AttributeProto::STRING);
      a->set_s("reverse");
    }
    nodes.push_back(node);
    const Dim H_dim{H, ""}, one{1, ""};
    if (!l.y.empty()) set_shape(l.y, {T_dim, one, B_dim, H_dim});
    if (!yh.empty()) set_shape(yh, {one, B_dim, H_dim});
    if (!l.y_h.empty() && l.below < 0) final_state(yh, l.y_h, scope, node.name(), 1, &nodes);
    if (!l.y_h.empty() && l.below >= 0) last_layer_h(index, scope, &nodes);
    if (!yc.empty()) {
      set_shape(yc, {one, B_dim, H_dim});
      final_state(yc, l.y_c, scope, node.name(), 2, &nodes);
    }
    if (l.stack != nullptr) {
      const std::string& out = l.stack->output(0);
      if (l.stack_axis == 0) {
        squeeze(l.y, 1, out, scope, &nodes);
      } else {
        const std::string tb = squeeze(l.y, 1, "", scope, &nodes);
        set_shape(tb, {T_dim, B_dim, H_dim});
        transpose_first_two(tb, out, scope, &nodes);
      }
    }
    notes_->push_back(std::string(l.kind == Kind::kLstm ? "nn.LSTMCell" : "nn.GRUCell") + " loop of " +
                      std::to_string(l.steps.size()) + " steps at " + node_label(*s.anchor) + " fused into one " +
                      node.op_type() + " layer (" + (l.reverse ? "reverse, " : "") + "hidden " + std::to_string(H) +
                      ") over every step of its input");
    return nodes;
  }

  // The last step's h (or c) `value` from the node's output `k` (`made`): squeezed to [B, H] for
  // the nodes that read it; a model output takes the node's [1, B, H] output itself, under its name.
  void final_state(const std::string& made, const std::string& value, const std::string& scope,
                   const std::string& node_name, int k, std::vector<onnx::NodeProto>* nodes) {
    if (!g_.is_graph_output(value)) {
      squeeze(made, 0, value, scope, nodes);
      return;
    }
    for (auto& n : *nodes) {
      if (n.name() == node_name) n.set_output(k, value);
    }
    facts_->shapes[value] = facts_->shapes[made];
    add_directions_axis(value, false);
    facts_->shapes[value] = facts_->shapes[made];
    bool read = false;
    for (const auto* c : g_.consumers(value)) read = read || !removed_.count(c);
    if (read) renamed_[value] = squeeze(value, 0, "", scope, nodes);
  }

  // h_n = Concat(every layer's Y_h) along axis 0, then h_n[-1]: the last h of loop `index`.
  void last_layer_h(int index, const std::string& scope, std::vector<onnx::NodeProto>* nodes) {
    const Loop& l = loops_[static_cast<size_t>(index)];
    std::vector<std::string> layers{l.node_y_h};
    for (int b = l.below; b >= 0; b = loops_[static_cast<size_t>(b)].below) {
      layers.insert(layers.begin(), loops_[static_cast<size_t>(b)].node_y_h);
    }
    onnx::NodeProto cat;
    cat.set_op_type("Concat");
    cat.set_name(fresh(scope + "Concat"));
    for (const auto& v : layers) cat.add_input(v);
    cat.add_output(fresh(scope + "h_n"));
    auto* a = cat.add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(0);
    const Shape& row = facts_->shapes[l.node_y_h];
    set_shape(cat.output(0), {Dim{static_cast<int64_t>(layers.size()), ""}, row[1], row[2]});
    onnx::NodeProto last;
    last.set_op_type("Gather");
    last.set_name(fresh(scope + "Gather"));
    const std::string index_name = fresh(scope + "last_layer");
    ConstTensor c;
    c.type = onnx::TensorProto::INT64;
    c.i = {-1};
    encode(c, index_name, model_->mutable_graph()->add_initializer());
    last.add_input(cat.output(0));
    last.add_input(index_name);
    last.add_output(l.y_h);
    a = last.add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(0);
    nodes->push_back(cat);
    nodes->push_back(last);
  }

  void rewrite() {
    for (const auto& n : model_->graph().node()) {
      used_names_.insert(n.name());
      used_names_.insert(n.output().begin(), n.output().end());
    }
    for (const auto& t : model_->graph().initializer()) used_names_.insert(t.name());
    for (const auto& i : model_->graph().input()) used_names_.insert(i.name());
    // Each loop's nodes go where its last node was; loops below first (a stack reads their Y).
    std::map<const onnx::NodeProto*, std::vector<onnx::NodeProto>> at;
    std::vector<bool> done(loops_.size(), false);
    for (size_t pass = 0; pass < loops_.size(); ++pass) {
      for (size_t k = 0; k < loops_.size(); ++k) {
        const int below = loops_[k].below;
        if (done[k] || (below >= 0 && !done[static_cast<size_t>(below)])) continue;
        const onnx::NodeProto* last = nullptr;
        for (const auto& n : model_->graph().node()) {
          const auto it = removed_.find(&n);
          if (it != removed_.end() && it->second == static_cast<int>(k)) last = &n;
        }
        auto nodes = fused_nodes(static_cast<int>(k));
        auto& slot = at[last];
        slot.insert(slot.end(), nodes.begin(), nodes.end());
        done[k] = true;
      }
    }
    std::vector<onnx::NodeProto> kept;
    for (const auto& n : model_->graph().node()) {
      if (!removed_.count(&n)) {
        kept.push_back(n);
        for (auto& in : *kept.back().mutable_input()) {
          const auto r = renamed_.find(in);
          if (r != renamed_.end()) in = r->second;
        }
      }
      const auto it = at.find(&n);
      if (it != at.end()) kept.insert(kept.end(), it->second.begin(), it->second.end());
    }
    drop_dead(&kept);
    topological(&kept);
    auto* nodes = model_->mutable_graph()->mutable_node();
    nodes->Clear();
    for (auto& n : kept) *nodes->Add() = std::move(n);
  }

  // The nodes only the loops read (x[:, t]'s Gathers, their index constants) leave with them.
  void drop_dead(std::vector<onnx::NodeProto>* nodes) const {
    std::set<std::string> outputs;
    for (const auto& o : model_->graph().output()) outputs.insert(o.name());
    for (bool changed = true; changed;) {
      changed = false;
      std::map<std::string, int> reads;
      for (const auto& n : *nodes) {
        for (const auto& in : n.input()) ++reads[in];
      }
      for (size_t k = nodes->size(); k-- > 0;) {
        const auto& n = (*nodes)[k];
        const bool dead = n.output_size() > 0 && std::all_of(n.output().begin(), n.output().end(), [&](const std::string& v) {
          return v.empty() || (!reads.count(v) && !outputs.count(v));
        });
        if (dead && (n.op_type() == "Gather" || n.op_type() == "Constant")) {
          nodes->erase(nodes->begin() + static_cast<ptrdiff_t>(k));
          changed = true;
        }
      }
    }
  }

  // Nodes in an order that defines each value before it is read, the given order kept otherwise.
  static void topological(std::vector<onnx::NodeProto>* nodes) {
    std::map<std::string, size_t> producer;
    for (size_t k = 0; k < nodes->size(); ++k) {
      for (const auto& o : (*nodes)[k].output()) {
        if (!o.empty()) producer[o] = k;
      }
    }
    std::vector<int> waiting(nodes->size(), 0);
    std::vector<std::vector<size_t>> readers(nodes->size());
    for (size_t k = 0; k < nodes->size(); ++k) {
      for (const auto& in : (*nodes)[k].input()) {
        const auto it = producer.find(in);
        if (in.empty() || it == producer.end()) continue;
        ++waiting[k];
        readers[it->second].push_back(k);
      }
    }
    std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
    for (size_t k = 0; k < nodes->size(); ++k) {
      if (waiting[k] == 0) ready.push(k);
    }
    std::vector<onnx::NodeProto> out;
    while (!ready.empty()) {
      const size_t k = ready.top();
      ready.pop();
      out.push_back((*nodes)[k]);
      for (size_t r : readers[k]) {
        if (--waiting[r] == 0) ready.push(r);
      }
    }
    if (out.size() == nodes->size()) *nodes = std::move(out);  // else a cycle: left for the import to name
  }

  onnx::ModelProto* model_;
  int64_t opset_;
  ShapeFacts* facts_;
  std::vector<std::string>* notes_;
  std::vector<std::string>* problems_;
  Graph g_;
  std::vector<Step> steps_;
  std::vector<Loop> loops_;
  std::map<const onnx::NodeProto*, int> removed_;  // every node of a loop, and which
  std::set<std::string> used_names_;
  std::map<std::string, std::string> renamed_;  // a model output the kept nodes read squeezed
};

}  // namespace

int fuse_cell_loops(onnx::ModelProto* model, int64_t opset, ShapeFacts* facts, std::vector<std::string>* notes,
                    std::vector<std::string>* problems) {
  Fuser f(model, opset, facts, notes, problems);
  return f.run();
}

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
