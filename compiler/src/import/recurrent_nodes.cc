#include "recurrent_nodes.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "qlstm/compiler/float/float_gru.h"
#include "qlstm/compiler/import/refusals.h"

namespace qlstm {
namespace compiler {
namespace import {

// ONNX stacks the LSTM gates i, o, f, c. The one place that knows it: the ONNX block of each kernel gate.
constexpr int32_t kOnnxStackIndex[QLSTM_GATE_COUNT] = {
    /* QLSTM_GATE_FORGET */ 2, /* QLSTM_GATE_INPUT */ 0, /* QLSTM_GATE_CELL */ 3,
    /* QLSTM_GATE_OUTPUT */ 1};
// ONNX stacks the GRU gates z, r, h (update, reset, hidden); FloatGru's are reset, update, new.
constexpr int32_t kOnnxGruStackIndex[kGruGateCount] = {/* kGruReset */ 1, /* kGruUpdate */ 0, /* kGruNew */ 2};

const CellSpec kLstmSpec{CellKind::kLstm, "LSTM", QLSTM_GATE_COUNT, kOnnxStackIndex, kP + 1, kYC + 1,
                         {"Sigmoid", "Tanh", "Tanh"}};
const CellSpec kGruSpec{CellKind::kGru, "GRU", kGruGateCount, kOnnxGruStackIndex, kInitialH + 1, kYH + 1,
                        {"Sigmoid", "Tanh"}};
// ONNX's RNN: one block; its activation Tanh or Relu.
constexpr int32_t kOnnxRnnStackIndex[1] = {0};
const CellSpec kRnnSpec{CellKind::kRnn, "RNN", 1, kOnnxRnnStackIndex, kInitialH + 1, kYH + 1, {"Tanh"}};

// The spec of an LSTM, GRU or RNN node; null for any other op.
const CellSpec* cell_spec(const onnx::NodeProto& n) {
  if (n.op_type() == "LSTM") return &kLstmSpec;
  if (n.op_type() == "GRU") return &kGruSpec;
  if (n.op_type() == "RNN") return &kRnnSpec;
  return nullptr;
}
bool recurrent(const onnx::NodeProto& n) { return cell_spec(n) != nullptr; }

namespace {

bool read_weight(const Graph& g, const onnx::NodeProto& lstm, int index, const char* what,
                 const std::vector<int64_t>& shape, std::vector<float>* out,
                 std::vector<std::string>* problems) {
  const std::string& name = lstm.input(index);
  const onnx::TensorProto* t = constant_tensor(g, name);
  if (t == nullptr) {
    problems->push_back(node_label(lstm) + ": input " + what + " ('" + name +
                        "') is neither an initializer nor a constant");
    return false;
  }
  const std::vector<int64_t> dims(t->dims().begin(), t->dims().end());
  if (dims != shape) {
    problems->push_back(node_label(lstm) + ": " + what + " has shape " + join(dims) + ", expected " + join(shape));
    return false;
  }
  std::vector<double> v;
  if (!tensor_values(*t, &v) || (t->data_type() != onnx::TensorProto::FLOAT &&
                                  t->data_type() != onnx::TensorProto::DOUBLE)) {
    problems->push_back(node_label(lstm) + ": " + what + " is not a float tensor with consistent data");
    return false;
  }
  out->assign(v.begin(), v.end());
  return true;
}

// Rows [block * H, (block + 1) * H) of a [G·H][cols] stack.
std::vector<float> block_rows(const std::vector<float>& stacked, int32_t block, int32_t H, int32_t cols) {
  const size_t n = static_cast<size_t>(H) * static_cast<size_t>(cols);
  return std::vector<float>(stacked.begin() + static_cast<ptrdiff_t>(block * n),
                            stacked.begin() + static_cast<ptrdiff_t>((block + 1) * n));
}

// The attributes only one of the cells has; false for an attribute neither has.
bool read_cell_attribute(const onnx::AttributeProto& a, const NodeInfo& info, int64_t* linear_before_reset,
                         std::vector<std::string>* problems) {
  const std::string& an = a.name();
  if (info.spec->cell == CellKind::kLstm && an == "input_forget") {
    if (a.i() != 0) problems->push_back(info.label + ": attribute 'input_forget' = " + std::to_string(a.i()) + " is not supported (the kernel has independent input and forget gates): export a layer with independent "
                            "gates (torch's nn.LSTM)");
    return true;
  }
  if (info.spec->cell == CellKind::kGru && an == "linear_before_reset") {
    *linear_before_reset = a.i();
    return true;
  }
  return false;
}

// activations (per direction: an LSTM's f, g, h; a GRU's f, g), and activation_alpha and _beta,
// which the activations that take parameters consume in order (ONNX's LSTM; HardSigmoid's
// defaults 0.2 and 0.5 where the lists end). The kernel's: f Sigmoid or (an LSTM's) HardSigmoid,
// the others Tanh.
void read_activations(const onnx::NodeProto& node, NodeInfo* info, std::vector<std::string>* problems) {
  const CellSpec& spec = *info->spec;
  const std::string& label = info->label;
  const onnx::AttributeProto* acts_attr = attribute(node, "activations");
  const onnx::AttributeProto* alpha_attr = attribute(node, "activation_alpha");
  const onnx::AttributeProto* beta_attr = attribute(node, "activation_beta");
  if (acts_attr == nullptr) {
    for (const char* name : {"activation_alpha", "activation_beta"}) {
      if (attribute(node, name) != nullptr) {
        problems->push_back(label + ": attribute '" + name + "' is not supported without activations that take it "
                            "(the default Sigmoid and Tanh have no parameters)");
      }
    }
    return;
  }
  const std::vector<std::string> acts(acts_attr->strings().begin(), acts_attr->strings().end());
  const size_t per_direction = spec.activations.size();
  if (acts.size() != per_direction * static_cast<size_t>(info->directions)) {
    problems->push_back(label + ": " + std::to_string(acts.size()) + " activations for " +
                        std::to_string(info->directions) + " direction(s); ONNX wants " +
                        std::to_string(per_direction) + " per direction");
    return;
  }
  const std::vector<float> alphas = alpha_attr ? std::vector<float>(alpha_attr->floats().begin(), alpha_attr->floats().end())
                                               : std::vector<float>{};
  const std::vector<float> betas = beta_attr ? std::vector<float>(beta_attr->floats().begin(), beta_attr->floats().end())
                                             : std::vector<float>{};
  size_t next_alpha = 0, next_beta = 0;
  bool unsupported = false;
  for (size_t k = 0; k < acts.size(); ++k) {
    const size_t d = k / per_direction, role = k % per_direction;
    const std::string& a = acts[k];
    if (a == spec.activations[role]) continue;
    if (spec.cell == CellKind::kRnn && a == "Relu") {
      info->relu[d] = true;
      continue;
    }
    if (role == 0 && a == "HardSigmoid" && spec.cell == CellKind::kLstm) {
      GateSigmoid& s = info->gate_sigmoid[d];
      s.hard = true;
      if (next_alpha < alphas.size()) s.alpha = alphas[next_alpha++];
      if (next_beta < betas.size()) s.beta = betas[next_beta++];
      if (const std::string line = s.line_problem(); !line.empty()) problems->push_back(label + ": " + line);
      continue;
    }
    unsupported = true;
  }
  if (unsupported) {
    std::string s, w;
    for (const auto& x : acts) s += (s.empty() ? "" : ", ") + x;
    for (const auto& x : spec.activations) w += (w.empty() ? "" : ", ") + x;
    problems->push_back(label + ": activations " + s + " are not supported (only " + w +
                        (spec.cell == CellKind::kLstm  ? ", or HardSigmoid in Sigmoid's place"
                         : spec.cell == CellKind::kRnn ? ", or Relu"
                                                       : "") +
                        ": the kernel's); train the layer with those (torch's defaults; Keras: "
                        "recurrent_activation='sigmoid' or 'hard_sigmoid')");
  }
  if (next_alpha < alphas.size() || next_beta < betas.size()) {
    problems->push_back(label + ": activation_alpha or activation_beta has more values than its activations take");
  }
}

// The attributes of one node; false when its weights cannot be read (an invalid direction).
bool read_attributes(const onnx::NodeProto& lstm, NodeInfo* info, std::vector<std::string>* problems) {
  const CellSpec& spec = *info->spec;
  const std::string& label = info->label;
  bool weights_readable = true;
  int64_t linear_before_reset = 0;  // ONNX's default
  for (const auto& a : lstm.attribute()) {
    const std::string& an = a.name();
    if (an == "hidden_size") {
      info->hidden = a.i();
    } else if (an == "layout") {
      info->layout = a.i();
      if (info->layout != 0 && info->layout != 1) problems->push_back(label + ": layout " + std::to_string(info->layout) + " is invalid");
    } else if (an == "direction") {
      if (a.s() == "reverse") {
        info->reverse = true;
      } else if (a.s() == "bidirectional") {
        info->directions = 2;
      } else if (a.s() != "forward") {
        weights_readable = false;
        problems->push_back(label + ": direction '" + a.s() + "' is invalid (forward, reverse or bidirectional)");
      }
    } else if (an == "clip") {
      problems->push_back(label + ": attribute 'clip' is not supported (the kernel has no pre-activation clip): export "
                          "the layer without it (torch's nn.LSTM and nn.GRU have none)");
    } else if (an == "activations" || an == "activation_alpha" || an == "activation_beta") {
      // Read with the direction count, after this loop (read_activations).
    } else if (!read_cell_attribute(a, *info, &linear_before_reset, problems)) {
      problems->push_back(label + ": unknown attribute '" + an + "'");
    }
  }
  read_activations(lstm, info, problems);
  if (spec.cell == CellKind::kGru && linear_before_reset != 1) {
    problems->push_back(label + ": linear_before_reset = " + std::to_string(linear_before_reset) +
                        (attribute(lstm, "linear_before_reset") ? "" : " (the default: attribute absent)") +
                        " is not supported (the kernel computes PyTorch's new gate tanh(W_in x + b_in + r * (W_hn h + "
                        "b_hn)), which is linear_before_reset = 1, as torch.onnx.export writes nn.GRU)");
  }
  return weights_readable;
}

// Inputs and outputs the op does not have, or that the kernel does not support.
void check_inputs_and_outputs(const onnx::NodeProto& lstm, const NodeInfo& info, std::vector<std::string>* problems) {
  const CellSpec& spec = *info.spec;
  const std::string& label = info.label;
  for (int k = spec.inputs; k < lstm.input_size(); ++k) {
    if (present(lstm, k)) problems->push_back(label + ": input " + std::to_string(k) + " ('" + lstm.input(k) + "') is not one of the " + std::to_string(spec.inputs) + " inputs of " + spec.op);
  }
  for (int k = spec.outputs; k < lstm.output_size(); ++k) {
    if (!lstm.output(k).empty()) problems->push_back(label + ": output " + std::to_string(k) + " ('" + lstm.output(k) + "') is not one of the " + std::to_string(spec.outputs) + " outputs of " + spec.op);
  }
  if (present(lstm, kSequenceLens)) {
    problems->push_back(label + ": input sequence_lens is not supported (all sequences run to T): export without "
                        "lengths (no pack_padded_sequence) and give each call the steps of one length");
  }
  if (spec.cell == CellKind::kLstm && present(lstm, kP)) {
    problems->push_back(label + ": peephole weights (input P) are not supported (the kernel has no peephole path): "
                        "export a layer without peepholes (torch's nn.LSTM has none)");
  }
}

// hidden_size and the weights W, R (and B) with their shapes.
void read_weights(const Graph& g, const onnx::NodeProto& lstm, bool weights_readable, NodeInfo* info,
                  std::vector<std::string>* problems) {
  const CellSpec& spec = *info->spec;
  const std::string& label = info->label;
  if (info->hidden < 1) problems->push_back(label + ": attribute hidden_size missing or < 1");
  // A damaged file may hold any int64: sizes are bounded before the shape arithmetic (8H, 4H x I)
  // and the compiler's int32 sizes use them.
  if (info->hidden > kMaxLayerSize) {
    problems->push_back(label + ": attribute hidden_size " + std::to_string(info->hidden) + " is above " +
                        std::to_string(kMaxLayerSize));
    info->hidden = -1;
  }
  // Shapes (G gates): W [D][G·H][I] fixes I; R [D][G·H][H]; B [D][2·G·H].
  const int64_t D = info->directions, H = info->hidden, G = spec.gates;
  const onnx::TensorProto* w = constant_tensor(g, lstm.input(kW));
  if (w != nullptr && w->dims_size() == 3) info->input_size = w->dims(2);
  if (weights_readable && w != nullptr && (w->dims_size() != 3 || info->input_size < 1)) {
    problems->push_back(label + ": W must have shape [num_directions, " + std::to_string(G) + "*hidden_size, input_size]");
  } else if (info->input_size > kMaxLayerSize) {
    problems->push_back(label + ": input_size " + std::to_string(info->input_size) + " (W's last axis) is above " +
                        std::to_string(kMaxLayerSize));
    info->input_size = -1;
  }
  if (!weights_readable) {
    // reported above
  } else if (H >= 1 && info->input_size >= 1) {
    read_weight(g, lstm, kW, "W", {D, G * H, info->input_size}, &info->W, problems);
    read_weight(g, lstm, kR, "R", {D, G * H, H}, &info->R, problems);
    if (present(lstm, kB)) read_weight(g, lstm, kB, "B", {D, 2 * G * H}, &info->B, problems);
  } else if (w == nullptr) {
    read_weight(g, lstm, kW, "W", {}, &info->W, problems);
  }
}

}  // namespace

bool present(const onnx::NodeProto& n, int k) { return n.input_size() > k && !n.input(k).empty(); }
bool used(const Graph& g, const onnx::NodeProto& n, int k) {
  return n.output_size() > k && !n.output(k).empty() &&
         (g.is_graph_output(n.output(k)) || !g.consumers(n.output(k)).empty());
}

// Attributes, inputs and weights of one node; false (with problems) when it cannot be read.
bool read_node(const Graph& g, const onnx::NodeProto& lstm, NodeInfo* info, std::vector<std::string>* problems) {
  const size_t before = problems->size();
  info->node = &lstm;
  info->spec = cell_spec(lstm);
  info->label = node_label(lstm);
  const bool weights_readable = read_attributes(lstm, info, problems);
  check_inputs_and_outputs(lstm, *info, problems);
  if (!present(lstm, kX) || !present(lstm, kW) || !present(lstm, kR)) {
    problems->push_back(info->label + ": inputs X, W and R are required");
    return false;
  }
  read_weights(g, lstm, weights_readable, info, problems);
  return problems->size() == before;
}

// One op's float layer: direction d of the node's weights, gates from the ONNX stacking order.
FloatLstm node_op(const NodeInfo& n, int32_t d) {
  const int32_t I = static_cast<int32_t>(n.input_size), H = static_cast<int32_t>(n.hidden);
  const int32_t G = n.spec->gates;
  const size_t w_size = static_cast<size_t>(G) * H * I, r_size = static_cast<size_t>(G) * H * H,
               b_size = static_cast<size_t>(2 * G) * H;
  const std::vector<float> W(n.W.begin() + static_cast<ptrdiff_t>(d * w_size), n.W.begin() + static_cast<ptrdiff_t>((d + 1) * w_size));
  const std::vector<float> R(n.R.begin() + static_cast<ptrdiff_t>(d * r_size), n.R.begin() + static_cast<ptrdiff_t>((d + 1) * r_size));
  std::vector<float> B;
  if (!n.B.empty()) B.assign(n.B.begin() + static_cast<ptrdiff_t>(d * b_size), n.B.begin() + static_cast<ptrdiff_t>((d + 1) * b_size));
  std::array<FloatGate, QLSTM_GATE_COUNT> gates;
  for (int32_t gate = 0; gate < G; ++gate) {
    const int32_t blk = n.spec->stack_index[gate];
    FloatGate& fg = gates[static_cast<size_t>(gate)];
    fg.w_x = block_rows(W, blk, H, I);
    fg.w_h = block_rows(R, blk, H, H);
    if (B.empty()) {
      fg.bias_x.assign(static_cast<size_t>(H), 0.0f);
      fg.bias_h.assign(static_cast<size_t>(H), 0.0f);
    } else {
      fg.bias_x = block_rows(B, blk, H, 1);
      fg.bias_h = block_rows(B, G + blk, H, 1);  // Rb; a GRU's new gate applies it inside r * (...)
    }
  }
  const bool reverse = n.directions == 2 ? d == 1 : n.reverse;
  if (n.spec->cell == CellKind::kRnn) {
    FloatLstm rnn;
    rnn.cell = CellKind::kRnn;
    rnn.relu = n.relu[static_cast<size_t>(d)];
    rnn.input_size = I;
    rnn.hidden_size = H;
    rnn.reverse = reverse;
    rnn.gates[0] = gates[0];
    return rnn;
  }
  if (n.spec->cell == CellKind::kGru) {
    FloatGru gru;
    gru.input_size = I;
    gru.hidden_size = H;
    gru.reverse = reverse;
    std::copy(gates.begin(), gates.begin() + kGruGateCount, gru.gates.begin());
    return as_layer(gru);
  }
  FloatLstm f;
  f.input_size = I;
  f.hidden_size = H;
  f.reverse = reverse;
  f.gates = gates;
  f.gate_sigmoid = n.gate_sigmoid[static_cast<size_t>(d)];
  return f;
}

namespace {

// The shape of a zero state: a constant's, or that of the uniform value the shape pass found
// (named in *from, symbolic where it follows the input's axes); false when it is not known.
bool zero_state_shape(const Graph& g, const std::string& name, Shape* shape, std::string* from) {
  if (const onnx::TensorProto* t = constant_tensor(g, name)) {
    shape->clear();
    for (int64_t d : t->dims()) shape->push_back(Dim{d, ""});
    *from = "the constant";
    return true;
  }
  const UniformValue* u = g.uniform(name);
  if (u == nullptr || !u->shape_known) return false;
  *shape = u->shape;
  *from = (u->origin.rfind("node ", 0) == 0 ? "the ConstantOfShape " : "") + u->origin + " that builds";
  return true;
}

// ONNX's shape of initial_h / initial_c: [num_directions, batch, hidden_size] (layout 0) or
// [batch, num_directions, hidden_size] (layout 1), batch that of X. Empty when `s` has it, else
// what is wrong.
std::string state_shape_problem(const Graph& g, const Shape& s, int64_t directions, const Dim& batch, int64_t hidden,
                                int64_t layout) {
  const size_t d = layout == 1 ? 1 : 0, b = layout == 1 ? 0 : 1;
  // Refused only where the sizes differ for certain (Graph::sizes_differ); the rest is the call's.
  const bool ok = s.size() == 3 && !g.sizes_differ(s[d], Dim{directions, ""}) &&
                  !g.sizes_differ(s[2], Dim{hidden, ""}) && !(s[b].known() && s[b].value < 1) &&
                  !g.sizes_differ(s[b], batch);
  if (ok) return "";
  const std::string D = "num_directions = " + std::to_string(directions);
  const std::string B = batch.unknown() ? std::string("batch")
                        : batch.known() ? "batch = " + dim_string(batch) : "batch = X's axis '" + batch.symbol + "'";
  const std::string H = "hidden_size = " + std::to_string(hidden);
  return "has shape " + shape_string(s) + ", expected [" + (layout == 1 ? B + ", " + D : D + ", " + B) + ", " + H +
         "] (ONNX's shape of an initial state" + (layout == 1 ? " with layout 1)" : ")");
}

// The batch axis of the node's X ([T, B, I], or [B, T, I] with layout 1): a number or the input's
// axis name; `declared` (the graph input's, < 0 unknown) when X's shape is not known.
Dim batch_of_x(const Graph& g, const NodeInfo& n, int64_t declared) {
  const Shape* x = g.shape(n.node->input(kX));
  if (x != nullptr && x->size() == 3) return (*x)[n.layout == 1 ? 0 : 1];
  return Dim{declared, ""};
}

// A constant initial state [D, batch, H]: one row per direction when the batch rows are equal.
bool constant_state(const NodeInfo& n, const onnx::TensorProto* t, const char* what, StateOrigin* o,
                    std::vector<std::string>* problems) {
  const int64_t D = n.directions, H = n.hidden;
  std::vector<double> vals;
  const std::vector<int64_t> dims(t->dims().begin(), t->dims().end());
  if (!tensor_values(*t, &vals) || dims.size() != 3 || dims[0] != D || dims[2] != H || dims[1] < 1) {
    problems->push_back(n.label + ": the constant " + what + " has shape " + join(dims) + ", expected [" +
                        std::to_string(D) + ", batch, " + std::to_string(H) + "]");
    return false;
  }
  o->source = StateSource::kConstant;
  // One row shared by every batch row when they are equal; else every row (a learned
  // [L, B, H] state: the model fixes the batch).
  bool rows_equal = true;
  for (int64_t d = 0; d < D; ++d) {
    const size_t base = static_cast<size_t>(d * dims[1] * H);
    for (int64_t e = H; e < dims[1] * H; ++e) {
      rows_equal = rows_equal && vals[base + static_cast<size_t>(e)] == vals[base + static_cast<size_t>(e % H)];
    }
  }
  const int64_t kept = rows_equal ? H : dims[1] * H;
  for (int64_t d = 0; d < D; ++d) {
    const auto base = vals.begin() + static_cast<ptrdiff_t>(d * dims[1] * H);
    o->constant.emplace_back(base, base + static_cast<ptrdiff_t>(kept));
  }
  return true;
}

// Rows of a graph input (through Identity and Slices along axis 0, which torch emits per layer).
bool input_state_rows(const Graph& g, const NodeInfo& n, const std::string& name, const char* what, StateOrigin* o,
                      std::vector<std::string>* problems) {
  const int64_t D = n.directions;
  std::string value = name;
  int64_t first = 0;
  for (int guard = 0; guard < 16; ++guard) {
    if (g.is_graph_input(value)) {
      o->source = StateSource::kInput;
      o->graph_input = value;
      o->first_row = first;
      return true;
    }
    const onnx::NodeProto* p = g.producer(value);
    if (p != nullptr && p->op_type() == "Identity" && p->input_size() == 1) {
      value = p->input(0);
      continue;
    }
    if (p != nullptr && p->op_type() == "Slice" && p->input_size() >= 3 && !p->input(0).empty()) {
      std::vector<double> starts, ends, axes = {0}, steps = {1};
      const onnx::TensorProto* st = constant_tensor(g, p->input(1));
      const onnx::TensorProto* en = constant_tensor(g, p->input(2));
      const onnx::TensorProto* ax = p->input_size() > 3 && !p->input(3).empty() ? constant_tensor(g, p->input(3)) : nullptr;
      const onnx::TensorProto* sp = p->input_size() > 4 && !p->input(4).empty() ? constant_tensor(g, p->input(4)) : nullptr;
      const bool ok = st && en && tensor_values(*st, &starts) && tensor_values(*en, &ends) &&
                      (p->input_size() <= 3 || p->input(3).empty() || (ax && tensor_values(*ax, &axes))) &&
                      (p->input_size() <= 4 || p->input(4).empty() || (sp && tensor_values(*sp, &steps)));
      if (ok && starts.size() == 1 && ends.size() == 1 && axes.size() == 1 && axes[0] == 0 && steps.size() == 1 &&
          steps[0] == 1 && starts[0] >= 0 && starts[0] <= (1 << 30) && starts[0] == std::floor(starts[0]) &&
          ends[0] - starts[0] >= static_cast<double>(D)) {
        first += static_cast<int64_t>(starts[0]);
        value = p->input(0);
        continue;
      }
      problems->push_back(node_label(*p) + ": " + what + " must be a run of rows along axis 0 of a graph input");
      return false;
    }
    break;
  }
  problems->push_back(n.label + ": " + what + " ('" + name + "') is neither a constant nor rows of a graph input");
  return false;
}

}  // namespace

bool trace_state(const Graph& g, const NodeInfo& n, int k, StateOrigin* o, std::vector<std::string>* problems,
                 int64_t batch) {
  const char* what = k == kInitialH ? "initial_h" : "initial_c";
  if (!present(*n.node, k)) return true;
  const std::string& name = n.node->input(k);
  double v = 0;
  if (uniform_value(g, name, &v) && v == 0.0) {
    // A zero state of a constant shape must still have ONNX's (a runtime refuses the file).
    Shape shape;
    std::string from;
    const std::string bad = zero_state_shape(g, name, &shape, &from)
                                ? state_shape_problem(g, shape, n.directions, batch_of_x(g, n, batch), n.hidden, n.layout)
                                : "";
    if (bad.empty()) return true;
    problems->push_back(n.label + ": " + from + " " + what + " ('" + name + "') " + bad);
    return false;
  }
  if (const onnx::TensorProto* t = constant_tensor(g, name)) return constant_state(n, t, what, o, problems);
  return input_state_rows(g, n, name, what, o, problems);
}

// The graph output Y_h / Y_c reach: directly (through Identity) for one node; one Concat along
// axis 0 of every node's, in layer order, for several.
bool trace_final_state(const Graph& g, const std::vector<NodeInfo>& nodes, int k, std::string* out,
                       std::vector<std::string>* problems) {
  const char* what = k == kYH ? "Y_h" : "Y_c";
  size_t count = 0;
  for (const NodeInfo& n : nodes) count += used(g, *n.node, k) ? 1 : 0;
  if (count == 0) return true;
  if (count != nodes.size()) {
    problems->push_back(std::string("graph: ") + what + " of only some " + nodes[0].spec->op + " layers is used (the final state is "
                        "an output of all layers or of none)");
    return false;
  }
  auto to_output = [&](std::string value) {
    for (int guard = 0; guard < 16; ++guard) {
      if (g.is_graph_output(value) && g.consumers(value).empty()) {
        *out = value;
        return true;
      }
      const auto cs = g.consumers(value);
      if (cs.size() != 1 || cs[0]->op_type() != "Identity" || cs[0]->output_size() < 1) break;
      value = cs[0]->output(0);
    }
    return false;
  };
  const std::string& first = nodes[0].node->output(k);
  if (nodes.size() == 1) {
    if (to_output(first)) return true;
    problems->push_back(nodes[0].label + ": output " + what + " is used other than as a graph output");
    return false;
  }
  const auto cs = g.consumers(first);
  bool ok = cs.size() == 1 && cs[0]->op_type() == "Concat" && cs[0]->input_size() == static_cast<int>(nodes.size());
  if (ok) {
    const onnx::AttributeProto* axis = attribute(*cs[0], "axis");
    ok = axis != nullptr && axis->i() == 0;
    for (size_t j = 0; ok && j < nodes.size(); ++j) {
      ok = cs[0]->input(static_cast<int>(j)) == nodes[j].node->output(k) &&
           g.consumers(nodes[j].node->output(k)).size() == 1;
    }
    ok = ok && cs[0]->output_size() >= 1 && to_output(cs[0]->output(0));
  }
  if (!ok) {
    problems->push_back(std::string("graph: the layers' ") + what + " must be concatenated along axis 0, in layer "
                        "order, into one graph output");
  }
  return ok;
}

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
