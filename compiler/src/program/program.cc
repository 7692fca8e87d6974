#include "qlstm/compiler/program/program.h"
#include "qlstm/compiler/ops/op_kind.h"
#include "qlstm/compiler/lower/quantized_lstm_s16.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "qlstm/kernels.h"
#include "qlstm/program_s8.h"

namespace qlstm {
namespace compiler {
namespace {

size_t position(Layout layout, int32_t B, int32_t T, int32_t b, int32_t t) {
  return layout == Layout::kTimeMajor ? static_cast<size_t>(t) * B + b : static_cast<size_t>(b) * T + t;
}

// A field qlstm_program_validate names: "ops[k].field" for a field of op k.
std::string program_field(const char* field, int32_t op_index) {
  return (op_index >= 0 ? "ops[" + std::to_string(op_index) + "]." : std::string()) + (field ? field : "?");
}

bool same_quant(const AffineQuant& a, const AffineQuant& b) { return a.scale == b.scale && a.zero_point == b.zero_point; }

// Per recurrent op, the values per batch row it keeps in each state array (ProgramOp::state_size).
std::vector<int32_t> state_sizes(const CompiledModel& m) {
  std::vector<int32_t> sizes;
  for (const ProgramOp& op : m.ops) {
    if (op.recurrent()) sizes.push_back(op.state_size());
  }
  return sizes;
}

}  // namespace

bool ProgramOp::recurrent() const {
  const OpKind* k = find_op_kind(kind);
  return k != nullptr && k->state != nullptr;
}

void ProgramOp::wrong_block(int32_t wanted) const {
  throw CompileError(std::string("internal: a ") + op_kind_name(kind) + " op read as a " + op_kind_name(wanted) +
                     " op (its block is of its kind only)");
}

namespace {
RecurrentShape recurrent_shape(const ProgramOp& op) { return recurrent_state(op).shape(op); }
}  // namespace

int32_t ProgramOp::hidden_size() const { return recurrent_shape(*this).hidden_size; }
int32_t ProgramOp::time_direction() const { return recurrent_shape(*this).time_direction; }
int32_t ProgramOp::output_steps() const { return recurrent_shape(*this).output_steps; }
AffineQuant ProgramOp::recurrent_input() const { return recurrent_shape(*this).input; }
AffineQuant ProgramOp::recurrent_output() const { return recurrent_shape(*this).output; }
int32_t ProgramOp::state_size() const { return recurrent_shape(*this).state_size; }
void ProgramOp::set_output_steps(int32_t output_steps) {
  recurrent_state(*this).set_output_steps(this, output_steps);
}

int16_t quantize_cell(double c, int32_t power) {
  const double q = std::nearbyint(std::ldexp(c, -power));
  return static_cast<int16_t>(std::clamp(q, -32768.0, 32767.0));
}

const char* state_source_name(StateSource s) {
  switch (s) {
    case StateSource::kZero: return "zero";
    case StateSource::kConstant: return "constant";
    case StateSource::kInput: return "input";
  }
  return "?";
}

int32_t FloatProgram::state_size() const {
  int32_t n = 0;
  for (const FloatLstm& op : ops) n += op.hidden_size;
  return n;
}

int32_t FloatProgram::constant_state_batch() const {
  for (const std::vector<std::vector<float>>* s : {&h0, &c0}) {
    for (size_t k = 0; k < s->size() && k < ops.size(); ++k) {
      const size_t H = static_cast<size_t>(ops[k].hidden_size);
      if (H > 0 && (*s)[k].size() > H) return static_cast<int32_t>((*s)[k].size() / H);
    }
  }
  return 0;
}

namespace {

// Validates a run of per-position layers whose first reads `width` values; returns the last's
// output width. `where` names the run ("front", "head").
int32_t validate_layers(const std::vector<FloatLayer>& layers, int32_t width, const char* where) {
  for (size_t k = 0; k < layers.size(); ++k) {
    const FloatLayer& l = layers[k];
    const std::string at = std::string(where) + " layer " + std::to_string(k);
    try {
      l.validate();
    } catch (const CompileError& e) {
      throw CompileError(at + ": " + e.what());
    }
    // Per position: a layer after a selection of several steps runs on `groups` rows of each.
    if (static_cast<int64_t>(l.input_size) * l.groups != width) {
      throw CompileError(at + " ('" + l.node + "'): input_size " + std::to_string(l.input_size) +
                         (l.groups > 1 ? " x " + std::to_string(l.groups) + " rows" : std::string()) +
                         " is not the output size " + std::to_string(width) + " of what it reads");
    }
    width = l.output_size * l.groups;
  }
  return width;
}

}  // namespace

namespace {

// The layers whose final state the next reads repeated (FloatProgram::repeated): not the last,
// one direction, no residual connection between the two, LSTMs or GRUs (the kernels'
// input_repeated).
void validate_repeated(const FloatProgram& p) {
  if (p.repeated.size() > static_cast<size_t>(p.layers()) || p.repeated_after(p.layers() - 1)) {
    throw CompileError("program: repeated names " + std::to_string(p.repeated.size()) + " layers of " +
                       std::to_string(p.layers()) + " (and not the last: a layer above reads it)");
  }
  for (int32_t l = 0; l + 1 < p.layers(); ++l) {
    if (!p.repeated_after(l)) continue;
    const std::string at = "layer " + std::to_string(l);
    if (p.directions != 1) {
      throw CompileError(at + ": the final state of a bidirectional layer repeated over time is not supported yet; "
                         "make the encoder one direction");
    }
    if (p.residual_after(l)) {
      throw CompileError(at + ": a residual connection between an encoder and the decoder that reads its final state "
                         "repeated is not supported");
    }
    for (int32_t k : {l, l + 1}) {
      if (p.ops[static_cast<size_t>(k)].cell == CellKind::kRnn) {
        throw CompileError("layer " + std::to_string(k) + ": an RNN encoder or decoder of a repeated final state "
                           "is not supported yet (the LSTM's and GRU's are); export LSTM or GRU layers");
      }
    }
  }
}

// What stands between the recurrent layers: each layer's residual connection, and the per-position
// layers between it and the next (FloatProgram::residual, ::between).
void validate_between_layers(const FloatProgram& p) {
  if (p.residual.size() > static_cast<size_t>(p.layers())) {
    throw CompileError("program: residual names " + std::to_string(p.residual.size()) + " layers of " +
                       std::to_string(p.layers()));
  }
  if (p.residual_after(p.layers() - 1) && p.lstm_output == LstmOutput::kFinalState) {
    throw CompileError("program: the last layer has a residual connection but the head reads its final states, "
                       "which it does not change");
  }
  if (p.between.size() > static_cast<size_t>(p.layers()) || !p.between_after(p.layers() - 1).empty()) {
    throw CompileError("program: between names " + std::to_string(p.between.size()) + " layers of " +
                       std::to_string(p.layers()) + " (and none after the last: those are the head's)");
  }
  validate_repeated(p);
  for (int32_t l = 0; l < p.layers(); ++l) {
    const FloatLstm& op = p.ops[static_cast<size_t>(l * p.directions)];
    int32_t width = p.directions * op.hidden_size;
    for (const FloatLayer& b : p.between_after(l)) {
      b.validate();
      if (reads_whole_sequence(b.kind) || b.kind == FloatLayerKind::kEmbedding || b.groups != 1 || b.input_size != width) {
        throw CompileError("layer " + std::to_string(l) + ": layer '" + b.node + "' between it and the next is not a "
                           "per-position layer on its " + std::to_string(width) + " features");
      }
      width = b.output_size;
    }
    if (l + 1 < p.layers() && p.ops[static_cast<size_t>((l + 1) * p.directions)].input_size != width) {
      throw CompileError("layer " + std::to_string(l + 1) + ": input_size " +
                         std::to_string(p.ops[static_cast<size_t>((l + 1) * p.directions)].input_size) +
                         " is not the width " + std::to_string(width) + " of what the layer below writes");
    }
    if (p.residual_after(l) && op.input_size != p.directions * op.hidden_size) {
      throw CompileError("layer " + std::to_string(l) + ": a residual connection adds its input of " +
                         std::to_string(op.input_size) + " features to its output of " +
                         std::to_string(p.directions * op.hidden_size) + "; they must be as wide");
    }
  }
}

}  // namespace

void FloatProgram::validate() const {
  if (ops.empty()) throw CompileError("program: no LSTM op");
  if (directions != 1 && directions != 2) throw CompileError("program: directions must be 1 or 2");
  if (ops.size() % static_cast<size_t>(directions) != 0) {
    throw CompileError("program: the op count is not a multiple of the directions");
  }
  const int32_t state_batch = constant_state_batch();
  for (size_t k = 0; k < ops.size(); ++k) {
    const FloatLstm& op = ops[k];
    const std::string where = "layer " + std::to_string(k / directions) +
                              (directions == 2 ? (k % 2 ? " reverse" : " forward") : "");
    try {
      op.validate();
    } catch (const CompileError& e) {
      throw CompileError(where + ": " + e.what());
    }
    const bool want_reverse = directions == 2 && k % 2 == 1;
    if (directions == 2 && op.reverse != want_reverse) {
      throw CompileError(where + ": the direction does not match its position in the layer");
    }
    const size_t layer = k / static_cast<size_t>(directions);
    // Layers between (FloatProgram::between) change the width: validate_between_layers checks those.
    if (layer > 0) {
      const int32_t below = directions * ops[(layer - 1) * directions].hidden_size;
      if (op.input_size != below && between_after(static_cast<int32_t>(layer) - 1).empty()) {
        throw CompileError(where + ": input_size " + std::to_string(op.input_size) +
                           " is not the layer below's output size " + std::to_string(below));
      }
      if (op.input_size != ops[layer * directions].input_size) {
        throw CompileError(where + ": input_size differs from the other direction's");
      }
    } else if (op.input_size != ops[0].input_size) {
      throw CompileError(where + ": input_size differs from the other direction's");
    }
    if (directions == 2 && op.hidden_size != ops[layer * 2].hidden_size) {
      throw CompileError(where + ": hidden_size differs from the other direction's");
    }
    // A constant state: H values shared by every row, or state_batch rows of H (all ops alike).
    const size_t H = static_cast<size_t>(op.hidden_size);
    const size_t rows = state_batch > 0 ? static_cast<size_t>(state_batch) : 1;
    const std::string row_text = state_batch > 0 ? std::to_string(rows) + " x " : std::string();
    if (initial_hidden == StateSource::kConstant && (h0.size() != ops.size() || h0[k].size() != rows * H)) {
      throw CompileError(where + ": the constant initial_h needs " + row_text + std::to_string(H) + " values");
    }
    if (initial_cell == StateSource::kConstant && (c0.size() != ops.size() || c0[k].size() != rows * H)) {
      throw CompileError(where + ": the constant initial_c needs " + row_text + std::to_string(H) + " values");
    }
  }
  validate_between_layers(*this);
  for (const FloatLayer& l : front) {
    if (reads_whole_sequence(l.kind)) {
      throw CompileError("front layer '" + l.node + "': a step selection or a pooling over time before the LSTM");
    }
  }
  if (validate_layers(front, input_size(), "front") != ops.front().input_size) {
    throw CompileError("front layer '" + front.back().node + "': output_size " +
                       std::to_string(front.back().output_size) + " is not the LSTM's input_size " +
                       std::to_string(ops.front().input_size));
  }
  if (!final_directions.empty() && lstm_output != LstmOutput::kFinalState) {
    throw CompileError("program: final_directions is set but the head reads the sequence, not the final states");
  }
  for (int32_t d : final_directions) {
    if (d < 0 || d >= directions) {
      throw CompileError("program: final_directions names direction " + std::to_string(d) + " of a layer with " +
                         std::to_string(directions));
    }
  }
  for (size_t k = 0; k < head.size(); ++k) {
    if (!reads_whole_sequence(head[k].kind)) continue;
    if (k != 0 || lstm_output != LstmOutput::kSequence) {
      throw CompileError("head layer " + std::to_string(k) + " ('" + head[k].node +
                         "'): a step selection or a pooling over time must be the first head layer, on the "
                         "LSTM's output sequence");
    }
  }
  // Rows per position: a selection's step count until the steps are merged into the features.
  int32_t groups = !head.empty() && head.front().kind == FloatLayerKind::kSelectStep ? head.front().step_count : 1;
  for (size_t k = 0; k < head.size(); ++k) {
    if (reads_whole_sequence(head[k].kind)) continue;
    if (head[k].groups != groups && head[k].groups != 1) {
      throw CompileError("head layer " + std::to_string(k) + " ('" + head[k].node + "'): runs on " +
                         std::to_string(head[k].groups) + " rows per position, not the " + std::to_string(groups) +
                         " selected steps");
    }
    groups = head[k].groups;
  }
  for (const FloatLayer& l : front) {
    if (l.groups != 1) throw CompileError("front layer '" + l.node + "': groups must be 1");
  }
  validate_layers(head, stack_output_size(), "head");
}

size_t state_offset(const std::vector<int32_t>& hidden_sizes, int32_t op, int32_t batch) {
  size_t n = 0;
  for (int32_t k = 0; k < op; ++k) n += static_cast<size_t>(batch) * static_cast<size_t>(hidden_sizes[k]);
  return n;
}

namespace {

std::vector<float> to_float(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

// Appends step t of batch row b of a [B][T][W] or [T][B][W] sequence (as shape.layout) to *y.
void append_step(const std::vector<float>& x, const SequenceShape& shape, int32_t b, int32_t t, size_t W,
                 std::vector<double>* y) {
  const size_t B = static_cast<size_t>(shape.batch), T = static_cast<size_t>(shape.time_steps);
  const size_t at = shape.layout == Layout::kTimeMajor ? static_cast<size_t>(t) * B + static_cast<size_t>(b)
                                                       : static_cast<size_t>(b) * T + static_cast<size_t>(t);
  y->insert(y->end(), x.begin() + static_cast<ptrdiff_t>(at * W), x.begin() + static_cast<ptrdiff_t>((at + 1) * W));
}

// Runs per-position layers over `positions` rows, recording each layer's output.
std::vector<double> run_layers(const std::vector<FloatLayer>& layers, std::vector<double> x, size_t positions,
                               std::vector<std::vector<float>>* outputs) {
  for (const FloatLayer& l : layers) {
    x = run_float_layer(l, x, positions * static_cast<size_t>(l.groups));
    outputs->push_back(to_float(x));
  }
  return x;
}

// A constant initial state of op k for `B` rows: its shared row repeated, or its own rows.
std::vector<float> constant_state_rows(const std::vector<float>& s, int32_t H, int32_t B, const char* what) {
  if (s.size() == static_cast<size_t>(H)) {
    std::vector<float> rows;
    for (int32_t b = 0; b < B; ++b) rows.insert(rows.end(), s.begin(), s.end());
    return rows;
  }
  if (s.size() != static_cast<size_t>(B) * static_cast<size_t>(H)) {
    throw CompileError(std::string("input: the model's constant ") + what + " has " + std::to_string(s.size() / H) +
                       " batch rows, so the batch must be " + std::to_string(s.size() / H) + ", not " +
                       std::to_string(B));
  }
  return s;
}

}  // namespace

std::vector<float> repeat_last_step(const std::vector<float>& seq, const SequenceShape& shape, size_t W) {
  const int32_t B = shape.batch, T = shape.time_steps;
  const bool time_major = shape.layout == Layout::kTimeMajor;
  auto at = [&](int32_t b, int32_t t) {
    return (time_major ? static_cast<size_t>(t) * B + b : static_cast<size_t>(b) * T + t) * W;
  };
  std::vector<float> out(seq.size());
  for (int32_t b = 0; b < B; ++b) {
    for (int32_t t = 0; t < T; ++t) {
      std::copy_n(seq.begin() + static_cast<ptrdiff_t>(at(b, T - 1)), W, out.begin() + static_cast<ptrdiff_t>(at(b, t)));
    }
  }
  return out;
}

FloatProgramResult run_float_program(const FloatProgram& p, const float* x, const SequenceShape& shape,
                                     const float* h0, const float* c0, const ProgramStepVisitor& visit) {
  const int32_t B = shape.batch, T = shape.time_steps, D = p.directions;
  const size_t positions = static_cast<size_t>(B) * static_cast<size_t>(T);
  std::vector<int32_t> hs;
  for (const FloatLstm& op : p.ops) hs.push_back(op.hidden_size);
  FloatProgramResult r;
  const size_t S = state_offset(hs, static_cast<int32_t>(hs.size()), B);
  r.h_n.assign(S, 0.0f);
  r.c_n.assign(S, 0.0f);
  // Front: per step, in double; the LSTM reads its float result, as torch's float model does.
  const std::vector<double> x_in(x, x + positions * static_cast<size_t>(p.input_size()));
  std::vector<float> input = to_float(run_layers(p.front, x_in, positions, &r.front_outputs));
  for (int32_t l = 0; l < p.layers(); ++l) {
    const int32_t H = p.ops[static_cast<size_t>(l * D)].hidden_size, W = D * H;
    std::vector<float> out(positions * static_cast<size_t>(W));
    for (int32_t d = 0; d < D; ++d) {
      const int32_t k = l * D + d;
      const FloatLstm& op = p.ops[static_cast<size_t>(k)];
      const size_t off = state_offset(hs, k, B);
      std::vector<float> hk, ck;
      const float* hp = h0 ? h0 + off : nullptr;
      const float* cp = c0 ? c0 + off : nullptr;
      if (!h0 && p.initial_hidden == StateSource::kConstant) {
        hk = constant_state_rows(p.h0[static_cast<size_t>(k)], op.hidden_size, B, "initial_h");
        hp = hk.data();
      }
      if (!c0 && p.initial_cell == StateSource::kConstant) {
        ck = constant_state_rows(p.c0[static_cast<size_t>(k)], op.hidden_size, B, "initial_c");
        cp = ck.data();
      }
      StepVisitor op_visit;
      if (visit) op_visit = [&visit, k](const double* c, const double* h, int32_t n) { visit(k, c, h, n); };
      const FloatResult f = run_float(op, input.data(), shape, hp, cp, op_visit);
      for (size_t row = 0; row < positions; ++row) {
        std::copy_n(f.output.begin() + static_cast<ptrdiff_t>(row * H), H,
                    out.begin() + static_cast<ptrdiff_t>(row * W + static_cast<size_t>(d) * H));
      }
      std::copy(f.h_n.begin(), f.h_n.end(), r.h_n.begin() + static_cast<ptrdiff_t>(off));
      std::copy(f.c_n.begin(), f.c_n.end(), r.c_n.begin() + static_cast<ptrdiff_t>(off));
    }
    // A residual connection adds the layer's input, in float32 as torch does.
    if (p.residual_after(l)) {
      for (size_t i = 0; i < out.size(); ++i) out[i] += input[i];
    }
    r.layer_outputs.push_back(out);
    input = p.repeated_after(l) ? repeat_last_step(out, shape, static_cast<size_t>(W)) : std::move(out);
    // The layers between it and the next (a LayerNorm), on every position, in double as the head's.
    for (const FloatLayer& b : p.between_after(l)) input = to_float(run_float_layer(b, std::vector<double>(input.begin(), input.end()), positions));
  }
  // What the head reads: the last layer's sequence, one step of it, or the last op's h_n.
  std::vector<double> y;
  size_t rows = positions;
  size_t head_start = 0;
  if (p.lstm_output == LstmOutput::kFinalState) {
    // Each batch row: the read directions' final states of the last layer, side by side.
    const int32_t last_layer_first_op = static_cast<int32_t>(hs.size()) - p.directions;
    const size_t H = static_cast<size_t>(hs.back());
    for (int32_t b = 0; b < B; ++b) {
      for (int32_t d : p.read_directions()) {
        const size_t off = state_offset(hs, last_layer_first_op + d, B) + static_cast<size_t>(b) * H;
        y.insert(y.end(), r.h_n.begin() + static_cast<ptrdiff_t>(off), r.h_n.begin() + static_cast<ptrdiff_t>(off + H));
      }
    }
    rows = static_cast<size_t>(B);
  } else if (!p.head.empty() && p.head.front().kind == FloatLayerKind::kSelectStep) {
    const FloatLayer& sel = p.head.front();
    const int32_t t = sel.step >= 0 ? sel.step : T + sel.step;
    if (t < 0 || t >= T || static_cast<int64_t>(t) + sel.step_count > T) {
      throw CompileError("input: layer '" + sel.node + "' selects " +
                         (sel.step_count > 1 ? std::to_string(sel.step_count) + " steps from step " : "step ") +
                         std::to_string(sel.step) + " of a " + std::to_string(T) + "-step sequence");
    }
    // The taken steps in the sequence's order (the runtime's selection: table_s8.h).
    if (shape.layout == Layout::kTimeMajor) {
      for (int32_t j = 0; j < sel.step_count; ++j) {
        for (int32_t b = 0; b < B; ++b) append_step(input, shape, b, t + j, static_cast<size_t>(sel.input_size), &y);
      }
    } else {
      for (int32_t b = 0; b < B; ++b) {
        for (int32_t j = 0; j < sel.step_count; ++j) append_step(input, shape, b, t + j, static_cast<size_t>(sel.input_size), &y);
      }
    }
    rows = static_cast<size_t>(B);
    r.head_outputs.push_back(to_float(y));
    head_start = 1;
  } else if (!p.head.empty() && p.head.front().kind == FloatLayerKind::kFlattenTime) {
    const FloatLayer& flat = p.head.front();
    if (T != flat.flatten_steps) {
      throw CompileError("input: layer '" + flat.node + "' flattens exactly " + std::to_string(flat.flatten_steps) +
                         " steps; the input has " + std::to_string(T));
    }
    for (int32_t b = 0; b < B; ++b) {
      for (int32_t t = 0; t < T; ++t) append_step(input, shape, b, t, static_cast<size_t>(flat.input_size), &y);
    }
    rows = static_cast<size_t>(B);
    r.head_outputs.push_back(to_float(y));
    head_start = 1;
  } else if (!p.head.empty() && p.head.front().kind == FloatLayerKind::kPoolTime) {
    const FloatLayer& pool = p.head.front();
    if (T < 1) throw CompileError("input: layer '" + pool.node + "' pools a sequence of no time steps");
    for (int32_t b = 0; b < B; ++b) {
      std::vector<double> seq;  // batch row b's steps
      for (int32_t t = 0; t < T; ++t) append_step(input, shape, b, t, static_cast<size_t>(pool.input_size), &seq);
      const std::vector<double> row = pool_over_time(pool, seq, T);
      y.insert(y.end(), row.begin(), row.end());
    }
    rows = static_cast<size_t>(B);
    r.head_outputs.push_back(to_float(y));
    head_start = 1;
  } else {
    y.assign(input.begin(), input.end());
  }
  const std::vector<FloatLayer> rest(p.head.begin() + static_cast<ptrdiff_t>(head_start), p.head.end());
  y = run_layers(rest, std::move(y), rows, &r.head_outputs);
  r.output = to_float(y);
  return r;
}

int32_t CompiledModel::op_rows(size_t k) const {
  const ProgramOp& op = ops.at(k);
  if (op.kind == QLSTM_OP_SELECT_STEP) return op.as<DerivedSelect>().step_count;
  const OpKind* kind = find_op_kind(op.kind);
  OpBoundary b;
  // A pooling over time writes one row (a part of it, among other poolings of the same sequence).
  if (op.recurrent() || kind == nullptr || !pooled_over_time(op).empty()) return 1;
  kind->boundary(op, &b);
  const int32_t width = buffers.at(static_cast<size_t>(op.output_buffer)).width;
  return b.output_width > 0 && width % b.output_width == 0 ? width / b.output_width : 1;
}

namespace {
// A pooling over time, or a selection of one step: what a row of concatenated reads is made of.
bool reads_row_part(const ProgramOp& op) {
  return !pooled_over_time(op).empty() || (op.kind == QLSTM_OP_SELECT_STEP && op.as<DerivedSelect>().step_count == 1);
}
}  // namespace

bool CompiledModel::continues_row(size_t k) const {
  return k > 0 && k < ops.size() && reads_row_part(ops[k]) && reads_row_part(ops[k - 1]) &&
         ops[k].input_buffer == ops[k - 1].input_buffer && ops[k].output_buffer == ops[k - 1].output_buffer;
}

int32_t CompiledModel::lstm_op_count() const {
  return static_cast<int32_t>(std::count_if(ops.begin(), ops.end(), [](const ProgramOp& op) { return op.recurrent(); }));
}

std::vector<int32_t> CompiledModel::hidden_sizes() const {
  std::vector<int32_t> hs;
  for (const ProgramOp& op : ops) {
    if (op.recurrent()) hs.push_back(op.hidden_size());
  }
  return hs;
}

int32_t CompiledModel::state_size() const {
  int32_t n = 0;
  for (int32_t h : state_sizes(*this)) n += h;
  return n;
}

bool CompiledModel::all_s8() const {
  return std::all_of(buffers.begin(), buffers.end(), [](const ProgramBuffer& b) { return b.type == QLSTM_ELEMENT_S8; });
}

bool CompiledModel::has_s16() const {
  return std::any_of(buffers.begin(), buffers.end(), [](const ProgramBuffer& b) { return b.type == QLSTM_ELEMENT_S16; });
}

bool CompiledModel::all_forward() const {
  for (const ProgramOp& op : ops) {
    if (op.recurrent() && op.time_direction() != QLSTM_TIME_FORWARD) return false;
  }
  return true;
}

namespace {

// Steps op k reads at once (CompiledModel::fixed_time_steps), or 0.
int32_t flattened_steps(const CompiledModel& m, const ProgramOp& op) {
  const OpKind* kind = find_op_kind(op.kind);
  int32_t step = 0;
  OpBoundary ob;
  const auto in_range = [&](int32_t b) { return b >= 0 && static_cast<size_t>(b) < m.buffers.size(); };
  if (op.recurrent() || kind == nullptr || selected_step(op, &step) || !pooled_over_time(op).empty() ||
      !in_range(op.input_buffer) || !in_range(op.output_buffer) || !kind->boundary(op, &ob)) {
    return 0;
  }
  const ProgramBuffer& in = m.buffers[static_cast<size_t>(op.input_buffer)];
  const ProgramBuffer& out = m.buffers[static_cast<size_t>(op.output_buffer)];
  if (in.steps != QLSTM_BUFFER_EVERY_STEP || out.steps != QLSTM_BUFFER_ONE_STEP || in.width < 1 ||
      ob.input_width % in.width != 0) {
    return 0;
  }
  return ob.input_width / in.width;
}

}  // namespace

namespace {

// An int8 LSTM or GRU that reads one step at every step (DerivedLstm::input_repeated,
// DerivedGru::input_repeated).
bool reads_repeated(const ProgramOp& op) {
  if (op.kind == QLSTM_OP_LSTM_S8 && op.holds<DerivedLstm>()) return op.as<DerivedLstm>().input_repeated != 0;
  return op.kind == QLSTM_OP_GRU_S8 && op.holds<DerivedGru>() && op.as<DerivedGru>().input_repeated != 0;
}

}  // namespace

int32_t CompiledModel::fixed_time_steps() const {
  for (const ProgramOp& op : ops) {
    const int32_t steps = flattened_steps(*this, op);
    if (steps > 0) return steps;
  }
  return 0;
}

std::string CompiledModel::streaming_refusal() const {
  for (const ProgramOp& op : ops) {
    if (op.recurrent() && op.time_direction() != QLSTM_TIME_FORWARD) {
      return std::string("the model has a reverse ") + recurrent_state(op).cell +
             ", which starts from the last time step; it cannot be streamed in chunks";
    }
  }
  for (size_t k = 0; k < ops.size(); ++k) {
    if (reads_repeated(ops[k])) {
      return "op " + std::to_string(k) + " reads the layer below's final state repeated over the whole sequence (an "
             "autoencoder's decoder); a chunk's final state is not the sequence's, so the model cannot be streamed";
    }
    const int32_t flattened = flattened_steps(*this, ops[k]);
    if (flattened > 0) {
      return "op " + std::to_string(k) + " reads all " + std::to_string(flattened) + " steps of a sequence at once "
             "(a Linear on every step flattened); the model runs on sequences of exactly that many steps";
    }
    const std::string pooled = pooled_over_time(ops[k]);
    if (!pooled.empty()) {
      return "op " + std::to_string(k) + " takes " + pooled + " of the whole sequence; a chunk holds only part of "
             "it, so the model cannot be streamed";
    }
    int32_t step = -1;
    if (selected_step(ops[k], &step) && (step != -1 || op_rows(k) > 1)) {
      const std::string what = op_rows(k) > 1 ? std::to_string(op_rows(k)) + " time steps from step " : "time step ";
      return "op " + std::to_string(k) + " selects " + what + std::to_string(step) +
             " of the whole sequence; a chunk does not know which step that is, so the model cannot be streamed";
    }
  }
  return "";
}

namespace {

// The checks of CompiledModel::validate, each naming `origin` and the field.
class ModelChecker {
 public:
  ModelChecker(const CompiledModel& m, const std::string& origin) : m_(m), origin_(origin) {}
  void runtime_table() const;
  void buffers() const;
  void ops();

 private:
  [[noreturn]] void bad(const std::string& why) const { throw CompileError(origin_ + ": " + why); }
  void recurrent_op(size_t k, const std::string& w, const ProgramBuffer& in, const ProgramBuffer& out);
  void recurrent_state(const ProgramOp& op, const std::string& w) const;
  void per_position_op(const ProgramOp& op, const std::string& w, const ProgramBuffer& in,
                       const ProgramBuffer& out) const;
  void second_operand(const ProgramOp& op, const OpBoundary& ob, const std::string& w, const ProgramBuffer& in) const;

  const CompiledModel& m_;
  const std::string& origin_;
  int32_t lstm_seen_ = 0, prev_kind_ = -1;
  bool after_lstm_ = false;
  int32_t part_ = 0;      // a pooling over time: its part of the row (the poolings of one sequence before it)
  int32_t op_index_ = 0;  // the op being checked
  int32_t selected_steps_ = 1;  // the steps a selection before the op took (rows per position after it)
};

// What the runtime checks on the device (indices, widths, areas, state, each op's params), on the
// very table run_program_s8 runs, at the fewest steps every op can run: a selection of step k
// needs k + 1 (or -k) of them.
void ModelChecker::runtime_table() const {
  int32_t min_steps = 1;
  for (size_t k = 0; k < m_.ops.size(); ++k) {
    int32_t step = 0;
    if (!selected_step(m_.ops[k], &step)) continue;
    const int32_t count = m_.op_rows(k);  // consecutive steps from `step`
    if (step > -(1 << 20) && step < (1 << 20) && count < (1 << 20)) {
      min_steps = std::max(min_steps, step >= 0 ? step + count : -step);
    }
  }
  // A model that reads every step at once runs on exactly that many.
  if (m_.fixed_time_steps() > 0) min_steps = m_.fixed_time_steps();
  const Layout layout = m_.batch_first ? Layout::kBatchMajor : Layout::kTimeMajor;
  const RuntimeProgram r = runtime_program(m_, 1, min_steps, layout);
  const qlstm_program table = r.table();
  const char* field = nullptr;
  int32_t op_index = -1;
  const qlstm_status st = qlstm_program_validate(&table, nullptr, min_steps, &field, &op_index);
  if (st != QLSTM_OK) bad(program_field(field, op_index) + ": " + qlstm_status_string(st));
}

void ModelChecker::buffers() const {
  if (m_.ops.empty()) bad("field 'ops': the program has no op");
  if (m_.directions != 1 && m_.directions != 2) bad("field 'directions' must be 1 or 2");
  const int32_t lstm_ops = m_.lstm_op_count();
  if (lstm_ops < 1 || lstm_ops % m_.directions != 0) bad("field 'ops': not a whole number of LSTM layers");
  for (size_t b = 0; b < m_.buffers.size(); ++b) {
    const ProgramBuffer& buf = m_.buffers[b];
    const std::string w = "field 'buffers[" + std::to_string(b) + "]";
    if (buf.width < 1 || buf.width > (1 << 16)) bad(w + ".width' out of range");
    if (!(buf.quant.scale > 0) || !std::isfinite(buf.quant.scale)) bad(w + ".scale' is not positive");
    if (buf.type != QLSTM_ELEMENT_S8 && buf.type != QLSTM_ELEMENT_S16 && buf.type != QLSTM_ELEMENT_S32) {
      bad(w + ".type' is not an element type");
    }
    // Token ids: only the input, as they are.
    if (buf.type == QLSTM_ELEMENT_S32 && (b != 0 || buf.width != 1 || buf.quant.scale != token_id_quant().scale ||
                                          buf.quant.zero_point != token_id_quant().zero_point)) {
      bad(w + ".type' int32 (token ids) is only the input's, of width 1, scale 1 and zero point 0");
    }
    if (buf.type == QLSTM_ELEMENT_S16 && buf.quant.zero_point != 0) bad(w + ".zero_point' must be 0 for int16");
    if (buf.quant.zero_point < -128 || buf.quant.zero_point > 127) bad(w + ".zero_point' out of int8 range");
    if (buf.steps != QLSTM_BUFFER_EVERY_STEP && buf.steps != QLSTM_BUFFER_ONE_STEP) bad(w + ".steps' is not a buffer_steps");
  }
}

// Each buffer is written by the ops of one stage: the buffer after it is the next stage's. Op k
// reads the buffer before the one it writes, the next buffer; the second direction of a layer
// reads and writes the first's.
void ModelChecker::ops() {
  const std::vector<ProgramOp>& ops = m_.ops;
  const std::vector<ProgramBuffer>& buffers = m_.buffers;
  for (size_t k = 0; k < ops.size(); ++k) {
    const ProgramOp& op = ops[k];
    const std::string w = "field 'ops[" + std::to_string(k) + "]";
    if (op.input_buffer < 0 || op.output_buffer < 0 || static_cast<size_t>(op.input_buffer) >= buffers.size() ||
        static_cast<size_t>(op.output_buffer) >= buffers.size()) {
      bad(w + "': buffer index out of range");
    }
    const ProgramBuffer& in = buffers[static_cast<size_t>(op.input_buffer)];
    const ProgramBuffer& out = buffers[static_cast<size_t>(op.output_buffer)];
    const bool second_direction = op.recurrent() && lstm_seen_ % m_.directions == 1;
    // A pooling over time or a one-step selection after one of the same sequence writes the next
    // part of its row (its output buffer is checked below: the one before's).
    const bool next_part = k > 0 && reads_row_part(op) && reads_row_part(ops[k - 1]) &&
                           op.input_buffer == ops[k - 1].input_buffer;
    part_ = next_part ? part_ + 1 : 0;
    op_index_ = static_cast<int32_t>(k);
    const int32_t want_out = second_direction || next_part ? ops[k - 1].output_buffer
                                                           : (k == 0 ? 1 : ops[k - 1].output_buffer + 1);
    if (op.output_buffer != want_out || op.input_buffer != op.output_buffer - 1) {
      bad(w + "': buffers out of program order");
    }
    if (op.recurrent()) {
      recurrent_op(k, w, in, out);
    } else {
      per_position_op(op, w, in, out);
    }
    if (op.kind == QLSTM_OP_SELECT_STEP) selected_steps_ = m_.op_rows(k);
    prev_kind_ = op.kind;
  }
  if (static_cast<size_t>(ops.back().output_buffer) + 1 != buffers.size()) {
    bad("field 'buffers': " + std::to_string(buffers.size()) + " buffers, the last op writes buffer " +
        std::to_string(ops.back().output_buffer));
  }
}

// "LSTM" here and below: any recurrent op (a layer of GRUs is a layer as well). (A requantization
// between two layers, where a 16x8 layer meets an int8 one, is not the head.)
void ModelChecker::recurrent_op(size_t k, const std::string& w, const ProgramBuffer& in, const ProgramBuffer& out) {
  const ProgramOp& op = m_.ops[k];
  const int32_t directions = m_.directions;
  // Between two layers only ops that keep the steps may come: a requantization (a 16x8 layer meets
  // an int8 one), a residual add (the layer's output plus its input), per-position layers (a
  // LayerNorm, a Linear, an activation); no step selection, pooling or flatten.
  const auto per_position = [&](const ProgramOp& o) {
    const OpKind* kind = find_op_kind(o.kind);
    return !o.recurrent() && kind != nullptr && kind->selected_step == nullptr && pooled_over_time(o).empty() &&
           flattened_steps(m_, o) == 0;
  };
  size_t below = k;
  while (below > 0 && per_position(m_.ops[below - 1])) --below;
  const bool between_layers = below < k && below > 0 && m_.ops[below - 1].recurrent();
  if (after_lstm_ && !m_.ops[k - 1].recurrent() && !between_layers) {
    bad(w + "': a recurrent op after the head");
  }
  const int32_t dir = lstm_seen_ % directions;
  const int32_t hidden = op.hidden_size(), steps = op.output_steps();
  ++lstm_seen_;
  after_lstm_ = true;
  if (op.output_offset != dir * hidden) bad(w + ".output_offset' is not its direction's half");
  if (directions * hidden != out.width) bad(w + "': hidden_size does not fill its output buffer");
  if (!same_quant(op.recurrent_input(), in.quant)) bad(w + "': input quantization differs from its input buffer's");
  if (!same_quant(op.recurrent_output(), out.quant)) bad(w + "': output quantization differs from its output buffer's");
  if (in.steps != (reads_repeated(op) ? QLSTM_BUFFER_ONE_STEP : QLSTM_BUFFER_EVERY_STEP)) {
    bad(w + "': " + compiler::recurrent_state(op).a_cell +
        (reads_repeated(op) ? " reads one step repeated, not a sequence" : " reads a sequence, not a one-step buffer"));
  }
  const bool one_step = steps != QLSTM_OUTPUT_ALL_STEPS;  // FINAL, or FIRST (a reverse op's y[:, -1])
  const int32_t want_steps = one_step ? QLSTM_BUFFER_ONE_STEP : QLSTM_BUFFER_EVERY_STEP;
  if (out.steps != want_steps) bad(w + ".output_steps' does not match its output buffer's steps");
  // A layer's final state alone: the last layer's, or one the next op reads repeated over time.
  size_t next = k + 1;  // the next recurrent op, past the per-position ops on the state
  while (next < m_.ops.size() && !m_.ops[next].recurrent() && m_.ops[next].input_buffer == m_.ops[next - 1].output_buffer) {
    ++next;
  }
  const bool read_repeated = next < m_.ops.size() && reads_repeated(m_.ops[next]) &&
                             m_.ops[next].input_buffer == m_.ops[next - 1].output_buffer && steps == QLSTM_OUTPUT_FINAL;
  if (one_step && lstm_seen_ <= m_.lstm_op_count() - directions && !read_repeated) {
    bad(w + ".output_steps': only the last layer's ops may write one step alone (or a layer's final state the next "
            "reads repeated)");
  }
  if (steps == QLSTM_OUTPUT_FIRST && (m_.hidden_output || m_.cell_output || m_.initial_hidden != StateSource::kZero ||
                                      m_.initial_cell != StateSource::kZero)) {
    bad(w + ".output_steps': a recurrent op runs its first step alone only in a model without a state interface");
  }
  if ((op.time_direction() == QLSTM_TIME_REVERSE) != (dir == 1) && directions == 2) {
    bad(w + ".time_direction' does not match its half of the layer");
  }
  recurrent_state(op, w);
}

// [H] for every batch row, or [B][H] of the batch the model fixes (the same B for every op), as
// its kind keeps it.
void ModelChecker::recurrent_state(const ProgramOp& op, const std::string& w) const {
  const std::string problem = op_kind(op.kind, w).state->initial_state_problem(op, m_);
  if (!problem.empty()) bad(w + problem);
}

// The quantization it was derived for (an op without its own has its input buffer's), its widths,
// its steps, and no state.
void ModelChecker::per_position_op(const ProgramOp& op, const std::string& w, const ProgramBuffer& in,
                                   const ProgramBuffer& out) const {
  const OpKind* kind = find_op_kind(op.kind);
  if (kind == nullptr) bad(w + ".kind' is not an op kind this qlstm knows");
  OpBoundary ob;
  if (!kind->boundary(op, &ob)) ob.input = ob.output = in.quant;
  // The poolings over time and one-step selections of one sequence write its row's parts in turn,
  // side by side (torch.cat((y.mean(1), y.max(1).values), 1)); every other op writes its whole row.
  const bool pools = reads_row_part(op);
  const int32_t parts = pools && ob.output_width > 0 ? out.width / ob.output_width : 1;
  if (op.output_offset != (pools ? part_ * ob.output_width : 0)) {
    bad(w + ".output_offset' must be " + (pools ? "its part's place in the row" : std::string("0")) + " for a " +
        op_kind_name(op.kind) + " op");
  }
  if (pools && (part_ >= parts || out.width != parts * ob.output_width)) {
    bad(w + "': a pooling over time or a step selection writes one part of its row (its output buffer is not a "
            "whole number of them)");
  }
  // Its row whole once its last part is written: no part left unwritten.
  const bool last_part = pools && !m_.continues_row(static_cast<size_t>(op_index_) + 1);
  if (last_part && part_ + 1 != parts) {
    bad(w + "': the reads of one sequence write " + std::to_string(part_ + 1) + " of the " + std::to_string(parts) +
            " parts of their row");
  }
  const int32_t flattened = flattened_steps(m_, op);  // its input: that many rows of its input buffer
  // After a selection of several steps: a row per step of each position (the selection's count).
  const int32_t rows = !pools && flattened == 0 && ob.output_width > 0 && out.width % ob.output_width == 0
                           ? out.width / ob.output_width : 1;
  if (rows > 1 && (in.steps != QLSTM_BUFFER_ONE_STEP || ob.second_input_width != 0 || rows != selected_steps_)) {
    bad(w + "': runs on " + std::to_string(rows) + " rows per position, which only a per-position op after a "
            "selection of as many steps does");
  }
  if (ob.input_width * rows != in.width * std::max(flattened, 1) || ob.output_width * rows * (pools ? parts : 1) != out.width) {
    bad(w + "': its sizes are not its buffers' widths");
  }
  if (!same_quant(ob.input, in.quant)) bad(w + "': input quantization differs from its input buffer's");
  if (!same_quant(ob.output, out.quant)) bad(w + "': output quantization differs from its output buffer's");
  second_operand(op, ob, w, in);
  const bool reads_sequence = kind->selected_step != nullptr || !pooled_over_time(op).empty() || flattened > 0;
  const int32_t want_steps = reads_sequence ? QLSTM_BUFFER_ONE_STEP : in.steps;
  if (reads_sequence && in.steps != QLSTM_BUFFER_EVERY_STEP) {
    bad(w + "': a step selection or a pooling over time reads a sequence, not a one-step buffer");
  }
  if (out.steps != want_steps) bad(w + "': its output buffer's steps do not follow from its input's");
  if (!op.initial_hidden.empty() || !op.initial_cell.empty()) bad(w + "': only an LSTM op has an initial state");
}

// A two-operand op's second input: a buffer written before its output, of the operand's width,
// quantization and steps (those of its first operand's buffer).
void ModelChecker::second_operand(const ProgramOp& op, const OpBoundary& ob, const std::string& w,
                                  const ProgramBuffer& in) const {
  const std::string f = w + ".second_input_buffer'";
  if (ob.second_input_width == 0) {
    if (op.second_input_buffer != 0) bad(f + " must be 0 for a " + op_kind_name(op.kind) + " op");
    return;
  }
  if (op.second_input_buffer < 0 || op.second_input_buffer >= op.output_buffer) {
    bad(f + ": " + std::to_string(op.second_input_buffer) + " is not a buffer written before the op's output");
  }
  const ProgramBuffer& in2 = m_.buffers[static_cast<size_t>(op.second_input_buffer)];
  if (in2.width != ob.second_input_width) bad(f + ": its width is not the op's operand size");
  if (!same_quant(ob.second_input, in2.quant)) bad(f + ": its quantization differs from the op's second_input");
  if (in2.steps != in.steps) bad(f + ": its steps differ from the first operand's");
}

}  // namespace

// First what the runtime checks on the device; then what only the compiler knows (the op order,
// the quantization of each buffer, the initial state).
void CompiledModel::validate(const std::string& origin) const {
  ModelChecker check(*this, origin);
  check.runtime_table();
  check.buffers();
  check.ops();
}

CompiledModel assemble_program(std::vector<ProgramOp> ops, int32_t directions) {
  CompiledModel m;
  m.directions = directions;
  const int32_t layers = static_cast<int32_t>(ops.size()) / directions;
  const ProgramOp& first = ops.front();
  const OpKind& kind = op_kind(first.kind, "program");
  const int32_t type = kind.int16_data ? QLSTM_ELEMENT_S16 : QLSTM_ELEMENT_S8;
  OpBoundary first_boundary;
  kind.boundary(first, &first_boundary);
  m.buffers.push_back({first_boundary.input_width, first.recurrent_input(), QLSTM_BUFFER_EVERY_STEP, type});
  for (int32_t l = 0; l < layers; ++l) {
    const ProgramOp& layer = ops[static_cast<size_t>(l * directions)];
    const int32_t H = layer.hidden_size();
    m.buffers.push_back({directions * H, layer.recurrent_output(), QLSTM_BUFFER_EVERY_STEP, type});
    for (int32_t dir = 0; dir < directions; ++dir) {
      ProgramOp& op = ops[static_cast<size_t>(l * directions + dir)];
      op.input_buffer = l;
      op.output_buffer = l + 1;
      op.output_offset = dir * H;
    }
  }
  m.ops = std::move(ops);
  return m;
}

namespace {

CompiledModel single_op_model(ProgramOp op, const std::string& name, bool batch_first) {
  std::vector<ProgramOp> ops(1, std::move(op));
  CompiledModel m = assemble_program(std::move(ops), 1);
  m.name = name;
  m.batch_first = batch_first;
  return m;
}

}  // namespace

CompiledModel single_op_model(const DerivedLstm& d, const std::string& name, bool batch_first) {
  ProgramOp op;
  op.set(d);
  return single_op_model(std::move(op), name, batch_first);
}

CompiledModel single_op_model(const DerivedGru& d, const std::string& name, bool batch_first) {
  ProgramOp op;
  op.set(d);
  return single_op_model(std::move(op), name, batch_first);
}

CompiledModel single_op_model(const DerivedRnn& d, const std::string& name, bool batch_first) {
  ProgramOp op;
  op.set(d);
  return single_op_model(std::move(op), name, batch_first);
}

int32_t CompiledModel::constant_state_batch() const {
  for (const ProgramOp& op : ops) {
    if (!op.recurrent()) continue;
    const size_t H = static_cast<size_t>(std::max(op.state_size(), 1));  // 2H for a 16x8 LSTM's [c | h] rows
    if (std::max(op.initial_hidden.size(), op.initial_cell.size()) > H) {
      return static_cast<int32_t>(std::max(op.initial_hidden.size(), op.initial_cell.size()) / H);
    }
  }
  return 0;
}

ProgramState initial_program_state(const CompiledModel& m, int32_t batch) {
  ProgramState s;
  for (const ProgramOp& op : m.ops) {
    const OpKind* kind = find_op_kind(op.kind);
    if (kind != nullptr && kind->state != nullptr) kind->state->initial_rows(op, batch, &s.hidden, &s.cell);
  }
  return s;
}

namespace {

// A recurrent op's B x H values of h or c from the float state (at `at`) into its rows (at
// `rows`: of the hidden or the cell array as v says); nothing for a null state or an absent value.
void quantize_state_value(const StateValue& v, const std::vector<float>* f, size_t at, size_t BH, size_t rows,
                          ProgramState* s) {
  if (f == nullptr || !v.present()) return;
  const size_t to = rows + (v.after_cell ? BH : 0);
  for (size_t e = 0; e < BH; ++e) {
    if (v.format == StateValue::kAffineS8) {
      s->hidden[to + e] = v.quantize_s8((*f)[at + e]);
    } else {
      s->cell[to + e] = v.quantize_s16((*f)[at + e]);
    }
  }
}

// Element e of h or c in float from its rows (0 for an absent value).
double dequantize_state_value(const StateValue& v, const ProgramState& s, size_t rows, size_t BH, size_t e) {
  if (!v.present()) return 0;
  const size_t at = rows + (v.after_cell ? BH : 0) + e;
  return v.dequantize(v.format == StateValue::kAffineS8 ? s.hidden[at] : s.cell[at]);
}

}  // namespace

ProgramState quantize_program_state(const CompiledModel& m, int32_t batch, const std::vector<float>* h,
                                    const std::vector<float>* c, const std::string& what) {
  ProgramState s = initial_program_state(m, batch);
  // The float state is [ops][B][H]: H per op, whatever the op keeps (2H for a 16x8 LSTM).
  size_t n = 0;
  for (int32_t H : m.hidden_sizes()) n += static_cast<size_t>(batch) * static_cast<size_t>(H);
  for (const std::vector<float>* v : {h, c}) {
    if (v != nullptr && v->size() != n) {
      throw CompileError(what + ": " + std::to_string(v->size()) + " state values, expected ops x B x H = " +
                         std::to_string(n));
    }
    for (size_t k = 0; v != nullptr && k < v->size(); ++k) {
      if (!std::isfinite((*v)[k])) throw CompileError(what + ": non-finite state value at index " + std::to_string(k));
    }
  }
  size_t at = 0, rows = 0;  // into the float state, into the quantized one
  for (const ProgramOp& op : m.ops) {
    if (!op.recurrent()) continue;
    const RecurrentState& state = *op_kind(op.kind, what).state;
    const size_t BH = static_cast<size_t>(batch) * static_cast<size_t>(op.hidden_size());
    quantize_state_value(state.h(op), h, at, BH, rows, &s);
    quantize_state_value(state.c(op), c, at, BH, rows, &s);
    at += BH;
    rows += static_cast<size_t>(batch) * static_cast<size_t>(op.state_size());
  }
  return s;
}

void dequantize_program_state(const CompiledModel& m, const ProgramState& s, int32_t batch, std::vector<float>* h,
                              std::vector<float>* c) {
  size_t rows = 0;
  for (const ProgramOp& op : m.ops) {
    if (!op.recurrent()) continue;
    const RecurrentState& state = *op_kind(op.kind, "state").state;
    const StateValue hv = state.h(op), cv = state.c(op);
    const size_t BH = static_cast<size_t>(batch) * static_cast<size_t>(op.hidden_size());
    for (size_t e = 0; e < BH; ++e) {
      h->push_back(static_cast<float>(dequantize_state_value(hv, s, rows, BH, e)));
      c->push_back(static_cast<float>(dequantize_state_value(cv, s, rows, BH, e)));
    }
    rows += static_cast<size_t>(batch) * static_cast<size_t>(op.state_size());
  }
}

size_t buffer_bytes(const CompiledModel& m, size_t b, int32_t batch, int32_t time_steps) {
  const ProgramBuffer& buf = m.buffers[b];
  const size_t steps = buf.steps == QLSTM_BUFFER_ONE_STEP ? 1 : static_cast<size_t>(std::max(time_steps, 0));
  return static_cast<size_t>(std::max(batch, 0)) * steps * static_cast<size_t>(std::max(buf.width, 0)) *
         std::max<size_t>(qlstm_element_bytes(buf.type), 1);
}

ProgramMemory program_memory(const CompiledModel& m, int32_t batch, int32_t max_time_steps) {
  ProgramMemory mem;
  for (const ProgramOp& op : m.ops) {
    ProgramMemory::Op om;
    if (const OpKind* kind = find_op_kind(op.kind)) kind->memory(op, batch, &mem, &om);
    if (op.output_buffer >= 0 && static_cast<size_t>(op.output_buffer) < m.buffers.size()) {
      om.output_bytes = buffer_bytes(m, static_cast<size_t>(op.output_buffer), batch, max_time_steps);
    }
    mem.ops.push_back(om);
  }
  // Both areas are sized for the largest inner buffer (the runtime's context has one size).
  for (size_t b = 1; b + 1 < m.buffers.size(); ++b) {
    mem.activation_bytes = std::max(mem.activation_bytes, buffer_bytes(m, b, batch, max_time_steps));
  }
  return mem;
}

RuntimeProgram runtime_program(const CompiledModel& m, int32_t B, int32_t T, Layout layout) {
  RuntimeProgram r;
  const std::vector<int32_t> hs = state_sizes(m);
  const bool typed = !m.all_s8();
  for (const ProgramBuffer& buf : m.buffers) {
    r.widths.push_back(buf.width);
    r.steps.push_back(buf.steps);
    if (typed) r.types.push_back(buf.type);
  }
  r.batch = B;
  r.layout = layout == Layout::kTimeMajor ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR;
  int32_t lstm_index = 0;
  r.blocks.assign(m.ops.size(), OpBlock{});  // sized once: the ops point into it
  for (const ProgramOp& op : m.ops) {
    qlstm_op o{};
    o.kind = op.kind;
    // A recurrent op's output buffer width (an index out of range is left for the validation to name).
    int32_t output_width = 0;
    if (op.recurrent() && op.output_buffer >= 0 && static_cast<size_t>(op.output_buffer) < m.buffers.size()) {
      const int32_t width = m.buffers[static_cast<size_t>(op.output_buffer)].width;
      output_width = width == op.hidden_size() ? 0 : width;
    }
    if (op.recurrent()) o.state_offset = state_offset(hs, lstm_index++, B);
    // An unknown kind is left for the validation to name.
    if (const OpKind* kind = find_op_kind(op.kind)) {
      o.params = kind->to_kernel(op, B, T, layout, output_width, &r.blocks[r.ops.size()]);
    }
    o.input_buffer = op.input_buffer;
    o.output_buffer = op.output_buffer;
    o.output_offset = op.output_offset;
    o.second_input_buffer = op.second_input_buffer;
    r.ops.push_back(o);
  }
  r.state_values = state_offset(hs, static_cast<int32_t>(hs.size()), B);
  return r;
}

std::vector<uint8_t> run_program_raw(const CompiledModel& m, const void* x, size_t x_bytes, const SequenceShape& shape,
                                     ProgramState* state) {
  const int32_t B = shape.batch, T = shape.time_steps;
  if (B < 1 || T < 0) throw CompileError("input: batch must be >= 1 and time steps >= 0");
  const size_t positions = static_cast<size_t>(B) * static_cast<size_t>(T);
  const size_t element = qlstm_element_bytes(m.buffers.front().type);
  if (x_bytes != positions * static_cast<size_t>(m.input_size()) * element) {
    throw CompileError("input: " + std::to_string(x_bytes / std::max<size_t>(element, 1)) + " values, expected " +
                       std::to_string(positions * static_cast<size_t>(m.input_size())) + " (B=" +
                       std::to_string(B) + " T=" + std::to_string(T) + " x " + std::to_string(m.input_size()) + ")");
  }
  const int32_t fixed = m.fixed_time_steps();
  if (fixed > 0 && T != fixed) {
    throw CompileError("input: " + std::to_string(T) + " time steps; the model reads exactly " + std::to_string(fixed) +
                       " per sequence (a Linear on every step flattened)");
  }
  ProgramState own;
  if (state == nullptr) {
    own = initial_program_state(m, B);
    state = &own;
  }
  const size_t S = static_cast<size_t>(B) * static_cast<size_t>(m.state_size());
  if (state->hidden.size() != S || state->cell.size() != S) {
    throw CompileError("state: hidden and cell must have ops x B x H = " + std::to_string(S) + " values");
  }
  // The runtime's own program runner, as the emitted source calls it on the device.
  const ProgramMemory mem = program_memory(m, B, T);
  const RuntimeProgram r = runtime_program(m, B, T, shape.layout);
  ProgramContextStorage storage(mem);
  std::vector<uint8_t> y(buffer_bytes(m, m.buffers.size() - 1, B, T));
  // The runner reads and writes whole elements: int16 buffers need their alignment.
  std::vector<int16_t> x_aligned((x_bytes + 1) / 2), y_aligned((y.size() + 1) / 2);
  if (x_bytes > 0) std::memcpy(x_aligned.data(), x, x_bytes);
  const qlstm_program program = r.table();
  qlstm_program_context ctx = storage.context();
  const qlstm_status st = qlstm_program_run(&program, &ctx, x_aligned.data(), y_aligned.data(), T, state->hidden.data(),
                                            state->cell.data());
  if (st != QLSTM_OK) {
    const char* field = nullptr;
    int32_t op_index = -1;
    qlstm_program_validate(&program, &ctx, T, &field, &op_index);
    throw CompileError(std::string("program: the runtime refused to run it: ") + qlstm_status_string(st) +
                       (field ? " (" + program_field(field, op_index) + ")" : std::string()));
  }
  if (!y.empty()) std::memcpy(y.data(), y_aligned.data(), y.size());
  return y;
}

std::vector<float> run_program_float(const CompiledModel& m, const std::vector<float>& x, const SequenceShape& shape) {
  const std::vector<uint8_t> raw = quantize_raw_input(m, x);
  return dequantize_raw_output(m, run_program_raw(m, raw.data(), raw.size(), shape));
}

std::vector<uint8_t> quantize_raw_input(const CompiledModel& m, const std::vector<float>& x) {
  const ProgramBuffer& in = m.buffers.front();
  std::vector<uint8_t> raw(x.size() * qlstm_element_bytes(in.type));
  // Token ids: the embedding's rows (the runtime refuses any other id too, naming none).
  const int32_t rows = m.token_ids() && !m.ops.empty() && m.ops.front().holds<DerivedEmbedding>()
                           ? m.ops.front().as<DerivedEmbedding>().table_rows
                           : 0;
  for (size_t k = 0; k < x.size(); ++k) {
    if (in.type == QLSTM_ELEMENT_S32) {
      if (!(x[k] >= 0 && x[k] < static_cast<float>(rows)) || x[k] != std::floor(x[k])) {
        const bool integral = std::isfinite(x[k]) && x[k] == std::floor(x[k]) && std::fabs(x[k]) < 1e15f;
        const std::string value = integral ? std::to_string(static_cast<int64_t>(x[k])) : std::to_string(x[k]);
        throw CompileError("input: value " + value + " at index " + std::to_string(k) +
                           " is not a token id of the embedding's table (an integer in [0, " + std::to_string(rows) + "))");
      }
      const int32_t id = static_cast<int32_t>(x[k]);
      std::memcpy(&raw[4 * k], &id, sizeof id);
    } else if (in.type == QLSTM_ELEMENT_S16) {
      const double q = std::nearbyint(x[k] / in.quant.scale) + in.quant.zero_point;
      const int16_t v = static_cast<int16_t>(std::clamp(std::isnan(q) ? 0.0 : q, -32768.0, 32767.0));
      std::memcpy(&raw[2 * k], &v, sizeof v);
    } else {
      raw[k] = static_cast<uint8_t>(in.quant.quantize(x[k]));
    }
  }
  return raw;
}

std::vector<float> dequantize_raw_output(const CompiledModel& m, const std::vector<uint8_t>& y) {
  const ProgramBuffer& out = m.buffers.back();
  std::vector<float> f(y.size() / qlstm_element_bytes(out.type));
  for (size_t k = 0; k < f.size(); ++k) {
    int32_t q = static_cast<int8_t>(y[k]);
    if (out.type == QLSTM_ELEMENT_S16) {
      int16_t v;
      std::memcpy(&v, &y[2 * k], sizeof v);
      q = v;
    }
    f[k] = static_cast<float>(out.quant.dequantize(q));
  }
  return f;
}

std::vector<int8_t> run_program_s8(const CompiledModel& m, const std::vector<int8_t>& x,
                                   const SequenceShape& shape, ProgramState* state) {
  if (m.buffers.front().type != QLSTM_ELEMENT_S8 || m.buffers.back().type != QLSTM_ELEMENT_S8) {
    throw CompileError("program: its input or output is not int8 (a 16x8 model: run_program_raw)");
  }
  const std::vector<uint8_t> y = run_program_raw(m, x.data(), x.size(), shape, state);
  return std::vector<int8_t>(reinterpret_cast<const int8_t*>(y.data()), reinterpret_cast<const int8_t*>(y.data()) + y.size());
}

void gather_steps(const int8_t* x, int32_t B, int32_t T, int32_t F, Layout layout, int32_t t0, int32_t n,
                  int8_t* chunk) {
  for (int32_t b = 0; b < B; ++b) {
    for (int32_t t = 0; t < n; ++t) {
      std::copy_n(x + position(layout, B, T, b, t0 + t) * F, F, chunk + position(layout, B, n, b, t) * F);
    }
  }
}

void scatter_steps(const int8_t* chunk, int32_t B, int32_t T, int32_t F, Layout layout, int32_t t0, int32_t n,
                   int8_t* y) {
  for (int32_t b = 0; b < B; ++b) {
    for (int32_t t = 0; t < n; ++t) {
      std::copy_n(chunk + position(layout, B, n, b, t) * F, F, y + position(layout, B, T, b, t0 + t) * F);
    }
  }
}

std::vector<uint8_t> run_program_raw_streamed(const CompiledModel& m, const void* x, size_t x_bytes,
                                              const SequenceShape& shape, int32_t chunk, ProgramState* state) {
  if (chunk < 1) throw CompileError("chunk: must be at least 1 time step, got " + std::to_string(chunk));
  const std::string refusal = m.streaming_refusal();
  if (!refusal.empty()) throw CompileError("chunk: " + refusal);
  const int32_t B = shape.batch, T = shape.time_steps;
  const size_t in_element = qlstm_element_bytes(m.buffers.front().type);
  const size_t out_element = qlstm_element_bytes(m.buffers.back().type);
  if (B < 1 || T < 0 || x_bytes != static_cast<size_t>(B) * static_cast<size_t>(T) * m.input_size() * in_element) {
    return run_program_raw(m, x, x_bytes, shape, state);  // reports the shape error
  }
  ProgramState own;
  if (state == nullptr) {
    own = initial_program_state(m, B);
    state = &own;
  }
  // Positions are copied as rows of bytes: I (or O) elements of the buffer's type each.
  const int32_t row_in = m.input_size() * static_cast<int32_t>(in_element);
  const int32_t row_out = m.output_size() * static_cast<int32_t>(out_element);
  const int8_t* xb = static_cast<const int8_t*>(x);
  // A one-step output: one position per chunk, the output of the chunk's last step.
  const bool one_step = m.output_is_one_step();
  const int32_t chunks = (T + chunk - 1) / chunk;
  std::vector<uint8_t> y(static_cast<size_t>(B) * (one_step ? chunks : T) * row_out);
  std::vector<int8_t> xc;
  int8_t* yb = reinterpret_cast<int8_t*>(y.data());
  for (int32_t t0 = 0, c = 0; t0 < T; t0 += chunk, ++c) {
    const int32_t n = std::min(chunk, T - t0);
    xc.resize(static_cast<size_t>(B) * n * row_in);
    gather_steps(xb, B, T, row_in, shape.layout, t0, n, xc.data());
    const std::vector<uint8_t> yc = run_program_raw(m, xc.data(), xc.size(), {B, n, shape.layout}, state);
    const int8_t* ycb = reinterpret_cast<const int8_t*>(yc.data());
    if (one_step) {
      scatter_steps(ycb, B, chunks, row_out, shape.layout, c, 1, yb);
    } else {
      scatter_steps(ycb, B, T, row_out, shape.layout, t0, n, yb);
    }
  }
  return y;
}

std::vector<int8_t> run_program_s8_streamed(const CompiledModel& m, const std::vector<int8_t>& x,
                                            const SequenceShape& shape, int32_t chunk, ProgramState* state) {
  if (!m.all_s8()) throw CompileError("run_program_s8_streamed: a 16x8 program: run_program_raw_streamed");
  const std::vector<uint8_t> y = run_program_raw_streamed(m, x.data(), x.size(), shape, chunk, state);
  return std::vector<int8_t>(y.begin(), y.end());
}

}  // namespace compiler
}  // namespace qlstm
