#include "qlstm/compiler/lower/compile_program.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <numeric>
#include <sstream>
#include <tuple>

#include "qlstm/compiler/lower/quantized_lstm_s16.h"
#include "qlstm/compiler/ops/op_kind.h"
#include "qlstm/kernels.h"

namespace qlstm {
namespace compiler {

namespace {

// One op of the front or the head: a layer, and the Relu/Clip folded into it (a Linear's).
struct LayerOp {
  const FloatLayer* layer = nullptr;
  const FloatLayer* clamp = nullptr;
};

std::vector<LayerOp> layer_ops(const std::vector<FloatLayer>& layers) {
  std::vector<LayerOp> out;
  for (size_t k = 0; k < layers.size(); ++k) {
    LayerOp op{&layers[k], nullptr};
    if (layers[k].kind == FloatLayerKind::kLinear && k + 1 < layers.size() && folds_into_clamp(layers[k + 1])) {
      op.clamp = &layers[++k];
    }
    out.push_back(op);
  }
  return out;
}

std::string node_label(const FloatLayer& l) { return "node '" + l.node + "'"; }

// Each entry's float values through one op (positions x width in, out), and the quantization the
// output observer picks from those of the first `observed` entries (the others are validation's).
AffineQuant run_layer_op(const LayerOp& op, std::vector<std::vector<double>>& values,
                         const std::vector<int32_t>& positions, const ObserverConfig& observer, size_t observed) {
  std::vector<float> all;
  for (size_t e = 0; e < values.size(); ++e) {
    const size_t n = static_cast<size_t>(positions[e]);
    values[e] = run_float_layer(*op.layer, values[e], n);
    if (op.clamp) values[e] = run_float_layer(*op.clamp, values[e], n);
    for (double v : values[e]) {
      if (!std::isfinite(v)) throw CompileError("calibration: " + node_label(*op.layer) + " produced a non-finite value");
      if (e < observed) all.push_back(static_cast<float>(v));
    }
  }
  if (op.layer->kind == FloatLayerKind::kSoftmax) return softmax_output_quant();
  if (op.layer->kind == FloatLayerKind::kLogSoftmax) return log_softmax_output_quant();
  if (all.empty()) throw CompileError("calibration: every sequence has zero time steps");
  const Range r = choose_range(all, observer);
  return affine_from_range(r.lo, r.hi);
}

// The int8 op of a per-position layer between two quantizations.
ProgramOp derive_layer_op(const LayerOp& lop, const AffineQuant& input, const AffineQuant& output,
                          const OpDecision& decision) {
  ProgramOp op;
  const FloatLayer& l = *lop.layer;
  switch (l.kind) {
    case FloatLayerKind::kLinear:
      op.set(derive_fc(l, lop.clamp, input, output, decision.fc_per_channel));
      break;
    case FloatLayerKind::kActivation:
      op.set(derive_table(l, l.input_size, input, output));
      break;
    case FloatLayerKind::kSoftmax:
      try {
        op.set(derive_softmax(l.input_size, input, l.softmax_beta));
      } catch (const CompileError& e) {
        throw CompileError(node_label(l) + ": " + e.what());
      }
      break;
    case FloatLayerKind::kLogSoftmax:
      try {
        op.set(derive_log_softmax(l.input_size, input));
      } catch (const CompileError& e) {
        throw CompileError(node_label(l) + ": " + e.what());
      }
      break;
    case FloatLayerKind::kLayerNorm:
      try {
        op.set(derive_layer_norm(l, input, output));
      } catch (const CompileError& e) {
        throw CompileError(node_label(l) + ": " + e.what());
      }
      break;
    case FloatLayerKind::kSelectStep:
    case FloatLayerKind::kPoolTime:
    case FloatLayerKind::kFlattenTime:
      throw CompileError(node_label(l) + ": a step selection, a pooling or a flatten over time must come first in the head, "
                         "right after the LSTM");
    case FloatLayerKind::kEmbedding:
      throw CompileError(node_label(l) + ": an embedding must be the model's first layer, on its token ids");
  }
  return op;
}

std::vector<double> to_double(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

// One per-position op in int8 through the runtime kernel, on n rows.
std::vector<int8_t> run_op_s8(const ProgramOp& op, const std::vector<int8_t>& x, int32_t n) {
  const OpKind* kind = find_op_kind(op.kind);
  if (kind == nullptr || kind->run_rows == nullptr) {
    throw CompileError(std::string("search: cannot run a ") + op_kind_name(op.kind) + " op alone");
  }
  std::vector<int8_t> y;
  const qlstm_status st = kind->run_rows(op, x.data(), n, &y);
  if (st != QLSTM_OK) throw CompileError(std::string("search: the runtime refused a head op: ") + qlstm_status_string(st));
  return y;
}

// Row (sequence % rows) of a constant state of one row [H] or of rows [rows][H].
std::vector<float> state_row(const std::vector<float>& state, int32_t H, size_t sequence) {
  const size_t rows = state.size() / static_cast<size_t>(H), r = rows > 1 ? sequence % rows : 0;
  return std::vector<float>(state.begin() + static_cast<ptrdiff_t>(r * H), state.begin() + static_cast<ptrdiff_t>((r + 1) * H));
}

}  // namespace

std::vector<FloatLayer> compiled_head_layers(const FloatProgram& program) {
  // The last layer's ops all write their final states into one [B][D x H] row, forward first. A
  // head that reads other directions, or in another order (h_n[-1] of a bidirectional stack is the
  // reverse direction's alone; torch.cat((h_n[-1], h_n[-2]), 1) swaps them), reads them through
  // its first Linear, whose weights are moved to the columns of the directions they read (zero for
  // the others: those products are 0, so the result is exact).
  std::vector<FloatLayer> head_layers = program.head;
  if (program.lstm_output != LstmOutput::kFinalState) return head_layers;
  const std::vector<int32_t> read = program.read_directions();
  std::vector<int32_t> all(static_cast<size_t>(program.directions));
  for (int32_t d = 0; d < program.directions; ++d) all[static_cast<size_t>(d)] = d;
  if (read == all) return head_layers;
  if (head_layers.empty() || head_layers.front().kind != FloatLayerKind::kLinear) {
    const std::string what = read.size() == 1 ? "h_n[-1] of a bidirectional LSTM is the reverse direction's state alone"
                                              : "the head reads the final states in another order than forward, reverse";
    throw CompileError("program: " + what + "; qlstm compiles it when a Linear reads it first, here " +
                       (head_layers.empty() ? std::string("it is the model's output") : node_label(head_layers.front())) +
                       " does; read y[:, -1] or torch.cat((h_n[-2], h_n[-1]), 1), or put the Linear first");
  }
  FloatLayer& first = head_layers.front();
  const int32_t H = program.ops.back().hidden_size, O = first.output_size, D = program.directions;
  const int32_t in = static_cast<int32_t>(read.size()) * H;
  std::vector<float> moved(static_cast<size_t>(O) * D * H, 0.0f);
  for (int32_t o = 0; o < O; ++o) {
    for (size_t j = 0; j < read.size(); ++j) {
      for (int32_t i = 0; i < H; ++i) {
        moved[static_cast<size_t>(o) * D * H + static_cast<size_t>(read[j]) * H + i] +=
            first.weight[static_cast<size_t>(o) * in + j * H + i];
      }
    }
  }
  first.weight = std::move(moved);
  first.input_size = D * H;
  return head_layers;
}

// A decoder op reads one input step at every step (the kernels' input_repeated).
void set_input_repeated(ProgramOp* op) {
  if (op->holds<DerivedGru>()) {
    DerivedGru gru = op->as<DerivedGru>();
    gru.input_repeated = 1;
    op->set(std::move(gru));
    return;
  }
  DerivedLstm lstm = op->as<DerivedLstm>();
  lstm.input_repeated = 1;
  op->set(std::move(lstm));
}

bool writes_final_state_only(const FloatProgram& p) {
  // A residual last layer's step is its output plus its input: the add reads the whole sequence.
  const bool last_step = !p.head.empty() && p.head.front().kind == FloatLayerKind::kSelectStep &&
                         p.head.front().step == -1 && p.head.front().step_count == 1 &&
                         !p.residual_after(p.layers() - 1);
  return p.lstm_output == LstmOutput::kFinalState || (last_step && p.directions == 1 && !p.ops.back().reverse) ||
         (last_step && runs_reverse_one_step(p));
}

// y[:, -1] of a last layer with a reverse direction: the reverse op's value at the last time step
// is its first step, so it runs that step alone (QLSTM_OUTPUT_FIRST), the forward op writing its
// final state beside it. Not where the model's state is an input or an output: the state left
// after a call would then be the first step's.
bool runs_reverse_one_step(const FloatProgram& p) {
  const bool last_step = !p.head.empty() && p.head.front().kind == FloatLayerKind::kSelectStep &&
                         p.head.front().step == -1 && p.head.front().step_count == 1 &&
                         !p.residual_after(p.layers() - 1);
  return last_step && p.lstm_output != LstmOutput::kFinalState && p.ops.back().reverse &&
         p.initial_hidden == StateSource::kZero && p.initial_cell == StateSource::kZero && !p.hidden_output &&
         !p.cell_output;
}

bool keeps_inner_sequence(const FloatProgram& p) {
  return p.layers() > 1 || !p.front.empty() || (!p.head.empty() && !writes_final_state_only(p));
}

namespace {

// One calibration entry per sequence and per starting state, as every layer sees it.
struct Entry {
  int32_t time_steps = 0;
  std::vector<float> x;  // this layer's input [T][F]
  bool chained = false;  // starts from the state the previous chained entry left
  bool validation = false;  // scored by the search, never observed
};

// The whole program's compile, step by step (compile_program runs them in order): the entries
// every layer is calibrated on, the front, the head's plan, the stack layer by layer (one float
// pass, the boundaries the program fixes, each op searched and derived), then the head's ops.
class ProgramCompiler {
 public:
  ProgramCompiler(const FloatProgram& program, const CalibrationSet& calibration, const CompileOptions& options)
      : program_(program), calibration_(calibration), options_(options), start_(starting_decision(options)),
        plan_(search_plan(options)), D_(program.directions),
        I_(program.input_size()), last_lstm_(program.ops.back()) {}

  void check();
  void make_entries(const CalibrationSet* validation);
  void lower_front();
  void lower_stack();
  void lower_head();
  QuantizedProgram finish();

 private:
  // The step whose output is op k's final hidden state.
  int32_t final_step(size_t k) const { return program_.ops[k].reverse ? 0 : -1; }
  void plan_head(const std::vector<std::vector<float>>& stack_out);
  std::vector<double> head_row(const std::vector<float>& stack_out, size_t e) const;
  std::vector<double> pooled_row(const std::vector<float>& stack_out, size_t e) const;
  std::vector<float> run_head(const AffineQuant& lstm_output, const std::vector<int8_t>& rows, int32_t n) const;
  void observe_layer(int32_t l, std::vector<OpObservation>* observed, std::vector<std::vector<float>>* outs);
  // outs: the layer's own output; stack_out: what the layers above or the head read (the residual
  // sum of a layer with one, else outs).
  OpBoundaries layer_boundaries(int32_t l, const std::vector<std::vector<float>>& outs,
                                const std::vector<std::vector<float>>& stack_out);
  void compile_layer(int32_t l, const std::vector<OpObservation>& observed, OpBoundaries fixed);
  void lower_residual(int32_t l, const std::vector<std::vector<float>>& sums);
  void lower_between(int32_t l);
  void repeat_final_states(int32_t l);
  QuantizedLayer compile_op(size_t k, const OpObservation& observed, const OpBoundaries& fixed) const;
  void assemble_stack();

  const FloatProgram& program_;
  const CalibrationSet& calibration_;
  const CompileOptions& options_;  // only for op_choices and s16_layers
  // The decision the program's ops start from (the boundaries it observes, the layers around the
  // stack, the recurrent ops' search) and how the search runs.
  const OpDecision start_;
  const SearchPlan plan_;
  const int32_t D_, I_;
  const FloatLstm& last_lstm_;
  bool has_select_ = false, final_state_ = false, select_op_ = false;
  bool pool_ = false;  // the head pools the last layer's sequence over time first
  bool attention_ = false;  // that pooling is attention's: a score per step first
  AffineQuant attention_scores_;  // the scores' quantization (the output observer over them)
  bool flatten_ = false;  // the head's first Linear reads every step of each sequence at once
  std::vector<FloatLayer> head_layers_;
  std::optional<int32_t> head_step_;  // the step of the last layer's output the head reads
  std::vector<Entry> entries_;
  size_t observed_entries_ = 0;  // the entries the observers read: the validation sequences come after them
  std::vector<int32_t> positions_;
  std::optional<BoundaryQuant> lstm_input_;
  std::vector<LayerOp> head_ops_;
  std::vector<AffineQuant> head_quants_;
  std::vector<std::vector<double>> head_values_;
  std::vector<ProgramOp> lstm_ops_;
  std::vector<ProgramOp> residual_adds_;  // per layer with a residual connection, in layer order
  std::vector<std::vector<ProgramOp>> between_ops_;  // per layer: the ops between it and the next
  // The quantization of what the next layer reads: the last layer's output, or its residual sum.
  std::optional<BoundaryQuant> next_input_;
  QuantizedProgram result_;
};

// Op k searched from the start decision, or, when the options give its decision (the held-out
// estimate's replay of the search), derived with exactly that one.
QuantizedLayer ProgramCompiler::compile_op(size_t k, const OpObservation& observed, const OpBoundaries& fixed) const {
  if (k >= options_.op_choices.size()) return QuantizedLayer::compile(program_.ops[k], observed, start_, plan_, fixed);
  SearchPlan exact = plan_;
  exact.tuning = Tuning::kNone;
  return QuantizedLayer::compile(program_.ops[k], observed, options_.op_choices[k], exact, fixed);
}

void ProgramCompiler::check() {
  program_.validate();
  for (const std::vector<FloatLayer>* part : {&program_.front, &program_.head}) {
    for (const FloatLayer& l : *part) l.validate();
  }
  if (calibration_.sequences.empty()) throw CompileError("calibration: the calibration set is empty");
  has_select_ = !program_.head.empty() && program_.head.front().kind == FloatLayerKind::kSelectStep;
  pool_ = !program_.head.empty() && program_.head.front().kind == FloatLayerKind::kPoolTime;
  attention_ = pool_ && program_.head.front().pool_fns().front() == PoolFn::kAttention;
  flatten_ = !program_.head.empty() && program_.head.front().kind == FloatLayerKind::kFlattenTime;
  if (flatten_ && (program_.head.size() < 2 || program_.head[1].kind != FloatLayerKind::kLinear)) {
    throw CompileError(node_label(program_.head.front()) + ": a flatten of every step must feed a Linear directly");
  }
  if ((pool_ || flatten_) &&
      std::find(options_.s16_layers.begin(), options_.s16_layers.end(), true) != options_.s16_layers.end()) {
    throw CompileError(node_label(program_.head.front()) + ": a pooling or a flatten over time after 16x8 layers is "
                       "not supported yet; compile the layers int8 (without --s16-layers)");
  }

  const bool any_s16 = std::find(options_.s16_layers.begin(), options_.s16_layers.end(), true) != options_.s16_layers.end();
  const bool any_residual = std::find(program_.residual.begin(), program_.residual.end(), true) != program_.residual.end();
  if (any_s16 && any_residual) {
    throw CompileError("program: a residual connection between 16x8 layers is not supported yet; compile the layers "
                       "int8 (without --s16-layers)");
  }
  for (int32_t l = 0; any_s16 && l < program_.layers(); ++l) {
    if (program_.repeated_after(l)) {
      throw CompileError("layer " + std::to_string(l + 1) + ": a decoder that reads a final state repeated over time "
                         "runs int8 only; compile the layers int8 (without --s16-layers)");
    }
    if (!program_.between_after(l).empty()) {
      throw CompileError(node_label(program_.between_after(l).front()) + ": a layer between 16x8 recurrent layers is "
                         "not supported yet; compile the layers int8 (without --s16-layers)");
    }
  }
  head_layers_ = compiled_head_layers(program_);
  if (program_.lstm_output == LstmOutput::kFinalState && has_select_) {
    throw CompileError(node_label(program_.head.front()) + ": selects a step of h_n, which has one");
  }
  // The head reads one step of the stack's output: the last op's final state alone (written
  // without the sequence), or step k of the sequence (a selection op).
  final_state_ = writes_final_state_only(program_);
  select_op_ = has_select_ && !final_state_;
  if (program_.lstm_output == LstmOutput::kFinalState) head_step_ = last_lstm_.reverse ? 0 : -1;
  if (has_select_) head_step_ = program_.head.front().step;
  for (size_t k = 0; k < program_.front.size(); ++k) {
    const FloatLayer& l = program_.front[k];
    if (reads_whole_sequence(l.kind)) {
      throw CompileError(node_label(l) + ": a step selection or a pooling over time before the LSTM");
    }
    if (l.kind == FloatLayerKind::kEmbedding && k != 0) {
      throw CompileError(node_label(l) + ": an embedding must be the model's first layer, on its token ids");
    }
  }
  for (const FloatLayer& l : program_.head) {
    if (l.kind == FloatLayerKind::kEmbedding) throw CompileError(node_label(l) + ": an embedding after the LSTM");
  }
}

void ProgramCompiler::make_entries(const CalibrationSet* validation) {
  const bool fed = program_.initial_hidden == StateSource::kInput || program_.initial_cell == StateSource::kInput;
  for (int pass = 0; pass < (fed ? 2 : 1); ++pass) {
    for (size_t k = 0; k < calibration_.sequences.size(); ++k) {
      const CalibrationSequence& s = calibration_.sequences[k];
      if (pass == 0) check_sequence(s, k, I_);
      entries_.push_back({s.time_steps, s.values, pass == 1});
    }
  }
  observed_entries_ = entries_.size();
  for (size_t k = 0; validation && k < validation->sequences.size(); ++k) {
    const CalibrationSequence& s = validation->sequences[k];
    try {
      check_sequence(s, k, I_);
    } catch (const CompileError& e) {
      throw CompileError(std::string("validation set: ") + e.what());
    }
    entries_.push_back({s.time_steps, s.values, false, true});
  }
  result_.source = program_;
  for (const Entry& en : entries_) positions_.push_back(en.time_steps);
}

// The front: per-step ops on the model input, each observed on the float pass.
void ProgramCompiler::lower_front() {
  if (program_.front.empty()) return;
  CompiledModel& m = result_.model;
  std::vector<float> inputs;
  for (const CalibrationSequence& s : calibration_.sequences) inputs.insert(inputs.end(), s.values.begin(), s.values.end());
  if (inputs.empty()) throw CompileError("calibration: every sequence has zero time steps");
  const bool ids = program_.front.front().kind == FloatLayerKind::kEmbedding;
  if (ids) {
    // Token ids in, as they are (an int32 buffer).
    m.buffers.push_back({I_, token_id_quant(), QLSTM_BUFFER_EVERY_STEP, QLSTM_ELEMENT_S32});
  } else {
    const Range r = choose_range(inputs, start_.input_observer);
    m.buffers.push_back({I_, affine_from_range(r.lo, r.hi), QLSTM_BUFFER_EVERY_STEP});
  }
  std::vector<std::vector<double>> values;
  for (Entry& en : entries_) values.push_back(to_double(en.x));
  for (const LayerOp& lop : layer_ops(program_.front)) {
    if (lop.layer->kind == FloatLayerKind::kEmbedding) {
      // Its quantization is the whole table's, not what calibration happened to look up.
      for (size_t e = 0; e < values.size(); ++e) values[e] = run_float_layer(*lop.layer, values[e], static_cast<size_t>(positions_[e]));
      ProgramOp op;
      op.set(derive_embedding(*lop.layer));
      op.input_buffer = static_cast<int32_t>(m.buffers.size()) - 1;
      op.output_buffer = op.input_buffer + 1;
      m.buffers.push_back({lop.layer->output_size, op.as<DerivedEmbedding>().output, QLSTM_BUFFER_EVERY_STEP});
      m.ops.push_back(std::move(op));
      continue;
    }
    const AffineQuant out = run_layer_op(lop, values, positions_, start_.output_observer, observed_entries_);
    ProgramOp op = derive_layer_op(lop, m.buffers.back().quant, out, start_);
    op.input_buffer = static_cast<int32_t>(m.buffers.size()) - 1;
    op.output_buffer = op.input_buffer + 1;
    m.buffers.push_back({lop.layer->output_size, out, QLSTM_BUFFER_EVERY_STEP});
    m.ops.push_back(std::move(op));
  }
  for (size_t e = 0; e < entries_.size(); ++e) entries_[e].x.assign(values[e].begin(), values[e].end());
  lstm_input_ = BoundaryQuant{m.buffers.back().quant, "the output of the front end (" + program_.front.back().node + ")"};
}

// Entry e's row the head reads: each direction's part, its final state (h_n) or the selected step;
// a selection of several steps: those steps side by side.
std::vector<double> ProgramCompiler::head_row(const std::vector<float>& stack_out, size_t e) const {
  const int32_t T = entries_[e].time_steps, H = last_lstm_.hidden_size, W = D_ * H;
  std::vector<double> row;
  const int32_t count = program_.head.empty() ? 1 : program_.head.front().step_count;
  if (program_.lstm_output != LstmOutput::kFinalState && count > 1) {
    const int32_t step = *head_step_, t0 = step < 0 ? T + step : step;
    if (t0 < 0 || static_cast<int64_t>(t0) + count > T) {
      throw CompileError("calibration: sequence " + std::to_string(e % calibration_.sequences.size()) + " has " +
                         std::to_string(T) + " steps; the head reads " + std::to_string(count) + " steps from step " +
                         std::to_string(step));
    }
    const auto at = stack_out.begin() + static_cast<ptrdiff_t>(t0) * W;
    return std::vector<double>(at, at + static_cast<ptrdiff_t>(count) * W);
  }
  for (int32_t d = 0; d < D_; ++d) {
    const size_t k = program_.ops.size() - static_cast<size_t>(D_ - d);
    const int32_t step = program_.lstm_output == LstmOutput::kFinalState ? final_step(k) : *head_step_;
    const int32_t t = step < 0 ? T + step : step;
    if (t < 0 || t >= T) {
      throw CompileError("calibration: sequence " + std::to_string(e % calibration_.sequences.size()) + " has " +
                         std::to_string(T) + " steps; the head reads step " + std::to_string(step));
    }
    const auto at = stack_out.begin() + static_cast<ptrdiff_t>(t) * W + static_cast<ptrdiff_t>(d) * H;
    row.insert(row.end(), at, at + H);
  }
  return row;
}

// Entry e's mean or max over its steps of the last layer's output (the head's pooling over time).
std::vector<double> ProgramCompiler::pooled_row(const std::vector<float>& stack_out, size_t e) const {
  const int32_t T = entries_[e].time_steps;
  const FloatLayer& pool = program_.head.front();
  if (T < 1) {
    throw CompileError("calibration: sequence " + std::to_string(e % calibration_.sequences.size()) +
                       " has no time steps for " + node_label(pool) + " to pool");
  }
  return pool_over_time(pool, to_double(stack_out), T);
}

// The head, planned on the float pass of the last layer: what it reads (every step, one step or
// h_n), its per-position ops (the selection is not one) and each one's output quantization, and
// the float model's output per entry.
void ProgramCompiler::plan_head(const std::vector<std::vector<float>>& stack_out) {
  std::vector<int32_t> head_positions;
  for (size_t e = 0; e < entries_.size(); ++e) {
    if (pool_) {
      head_values_.push_back(pooled_row(stack_out[e], e));
      head_positions.push_back(1);
    } else if (flatten_) {
      const int32_t steps = program_.head.front().flatten_steps;
      if (entries_[e].time_steps != steps) {
        throw CompileError("calibration: sequence " + std::to_string(e % calibration_.sequences.size()) + " has " +
                           std::to_string(entries_[e].time_steps) + " steps; the model reads exactly " +
                           std::to_string(steps) + " (" + node_label(program_.head.front()) + " flattens every step)");
      }
      head_values_.push_back(to_double(stack_out[e]));
      head_positions.push_back(1);
    } else if (!head_step_) {
      head_values_.push_back(to_double(stack_out[e]));
      head_positions.push_back(entries_[e].time_steps);
    } else {
      head_values_.push_back(head_row(stack_out[e], e));
      head_positions.push_back(1);
    }
  }
  if (attention_) {
    // The scores of every step, observed as a per-position layer's output.
    const FloatLayer score = attention_score_layer(program_.head.front());
    std::vector<std::vector<double>> scores;
    std::vector<int32_t> steps;
    for (size_t e = 0; e < entries_.size(); ++e) {
      scores.push_back(to_double(stack_out[e]));
      steps.push_back(entries_[e].time_steps);
    }
    attention_scores_ = run_layer_op(LayerOp{&score, nullptr}, scores, steps, start_.output_observer, observed_entries_);
  }
  for (const LayerOp& lop : head_ops_) {
    // After a selection of several steps, each of them is a row.
    std::vector<int32_t> rows = head_positions;
    for (int32_t& r : rows) r *= lop.layer->groups;
    head_quants_.push_back(run_layer_op(lop, head_values_, rows, start_.output_observer, observed_entries_));
  }
}

// The head in int8 on rows of the last op's output in `lstm_output` (the search's score).
std::vector<float> ProgramCompiler::run_head(const AffineQuant& lstm_output, const std::vector<int8_t>& rows,
                                             int32_t n) const {
  std::vector<int8_t> x = rows;
  AffineQuant q = lstm_output;
  for (size_t j = 0; j < head_ops_.size(); ++j) {
    x = run_op_s8(derive_layer_op(head_ops_[j], q, head_quants_[j], start_), x, n * head_ops_[j].layer->groups);
    q = head_quants_[j];
  }
  std::vector<float> y;
  for (int8_t v : x) y.push_back(static_cast<float>(q.dequantize(v)));
  return y;
}

// The one float pass of layer l: each op's observation (what its observers and its search read)
// and, together, the layer's output, the input of the layer above.
void ProgramCompiler::observe_layer(int32_t l, std::vector<OpObservation>* observed,
                                    std::vector<std::vector<float>>* outs) {
  const int32_t H = program_.ops[static_cast<size_t>(l * D_)].hidden_size, W = D_ * H;
  observed->assign(static_cast<size_t>(D_), OpObservation{});
  outs->assign(entries_.size(), {});
  std::vector<std::vector<float>> carried_h(static_cast<size_t>(D_)), carried_c(static_cast<size_t>(D_));
  for (size_t e = 0; e < entries_.size(); ++e) {
    Entry& en = entries_[e];
    (*outs)[e].assign(static_cast<size_t>(en.time_steps) * W, 0.0f);
    for (int32_t d = 0; d < D_; ++d) {
      const size_t k = static_cast<size_t>(l * D_ + d);
      std::vector<float> h0, c0;
      // A per-row constant state: calibration sequence e is row e of its batch (in order).
      const size_t row = en.validation ? e - observed_entries_ : e % calibration_.sequences.size();
      if (program_.initial_hidden == StateSource::kConstant) h0 = state_row(program_.h0[k], H, row);
      if (program_.initial_cell == StateSource::kConstant) c0 = state_row(program_.c0[k], H, row);
      if (en.chained && program_.initial_hidden == StateSource::kInput) h0 = carried_h[static_cast<size_t>(d)];
      if (en.chained && program_.initial_cell == StateSource::kInput) c0 = carried_c[static_cast<size_t>(d)];
      // The last op of the layer takes the input: the layer's output replaces it below.
      const FloatResult f = (*observed)[static_cast<size_t>(d)].add(
          program_.ops[k], {en.time_steps, d + 1 == D_ ? std::move(en.x) : en.x, std::move(h0), std::move(c0)},
          en.validation);
      for (int32_t t = 0; t < en.time_steps; ++t) {
        std::copy_n(f.output.begin() + static_cast<ptrdiff_t>(t) * H, H,
                    (*outs)[e].begin() + static_cast<ptrdiff_t>(t) * W + static_cast<ptrdiff_t>(d) * H);
      }
      if (en.chained) {
        carried_h[static_cast<size_t>(d)] = f.h_n;
        carried_c[static_cast<size_t>(d)] = f.c_n;
      }
    }
    if (plan_.progress) plan_.progress("calibrating", static_cast<int64_t>(e + 1), static_cast<int64_t>(entries_.size()));
  }
}

// What the program fixes of layer l's boundaries: its input (the layer below's output or residual
// sum, or the front's), the last layer's scored steps and head, and a bidirectional layer's shared
// output.
OpBoundaries ProgramCompiler::layer_boundaries(int32_t l, const std::vector<std::vector<float>>& outs,
                                              const std::vector<std::vector<float>>& stack_out) {
  OpBoundaries fixed;
  if (l > 0) fixed.input = next_input_;
  if (l == 0 && lstm_input_) fixed.input = lstm_input_;
  if (l + 1 == program_.layers()) {
    // A selection of several steps: the search scores every step (its head reads several rows).
    const bool range = has_select_ && program_.head.front().step_count > 1;
    if (!range) fixed.scored_step = head_step_;
    plan_head(stack_out);
    // One op per layer: its candidates are scored by the model's output through the head (not
    // through a residual add, whose other operand the score does not see).
    if (D_ == 1 && !head_ops_.empty() && !pool_ && !flatten_ && !range && !program_.residual_after(l)) {
      fixed.head = [this](const AffineQuant& q, const std::vector<int8_t>& rows, int32_t n) { return run_head(q, rows, n); };
      for (const std::vector<double>& v : head_values_) fixed.head_reference.emplace_back(v.begin(), v.end());
    }
  }
  if (D_ == 2) {
    std::vector<float> all;
    for (size_t e = 0; e < observed_entries_; ++e) all.insert(all.end(), outs[e].begin(), outs[e].end());
    for (float v : all) {
      if (!std::isfinite(v)) throw CompileError("calibration: layer " + std::to_string(l) + " produced a non-finite output");
    }
    if (all.empty()) throw CompileError("calibration: every sequence has zero time steps");
    // The search cannot tune a range both directions share. A ReLU RNN's outputs are unbounded and
    // heavy-tailed: min/max would spend the int8 steps on rare peaks, so with the search on and no
    // observer asked for, the shared range is the one of least int8 error (the MSE observer).
    const FloatLstm& op = program_.ops[static_cast<size_t>(l * D_)];
    const bool unbounded = op.cell == CellKind::kRnn && op.relu;
    const ObserverConfig observer = unbounded && plan_.tuning == Tuning::kSearch && !plan_.user_fixed.output_observer
                                        ? parse_observer("mse")
                                        : start_.output_observer;
    const Range r = choose_range(all, observer);
    fixed.output = BoundaryQuant{affine_from_range(r.lo, r.hi),
                                 std::string(observer_name(observer.kind)) + " over both directions" +
                                     (observer.kind != start_.output_observer.kind ? " (a ReLU RNN's unbounded outputs)" : "")};
  }
  return fixed;
}

// Each op of layer l searched and derived, with its constant initial state in its formats.
void ProgramCompiler::compile_layer(int32_t l, const std::vector<OpObservation>& observed, OpBoundaries fixed) {
  for (int32_t d = 0; d < D_; ++d) {
    const size_t k = static_cast<size_t>(l * D_ + d);
    if (d == 1 && !fixed.input) {  // both directions read the same buffer
      fixed.input = BoundaryQuant{lstm_ops_.back().recurrent_input(),
                                  "the forward direction's choice (" + result_.stats.back().input_observer + ")"};
    } else if (d == 1) {
      fixed.input->quant = lstm_ops_.back().recurrent_input();
    }
    if ((l + 1 == program_.layers() && program_.lstm_output == LstmOutput::kFinalState) || program_.repeated_after(l)) {
      fixed.scored_step = final_step(k);  // what the op writes
    }
    QuantizedLayer q = [&] {
      try {
        return compile_op(k, observed[static_cast<size_t>(d)], fixed);
      } catch (const CompileError& e) {
        if (program_.ops.size() == 1) throw;
        throw CompileError("layer " + std::to_string(l) + (D_ == 2 ? (d ? " reverse" : " forward") : "") + ": " + e.what());
      }
    }();
    ProgramOp op = q.program_op();
    set_constant_state(program_, k, &op);
    lstm_ops_.push_back(std::move(op));
    result_.stats.push_back(q.calibration());
  }
}

// The stack's ops after the front's, its buffers after the front's (buffer 0 is the first LSTM's
// input when there is no front); the last layer's ops write their final states only when the
// head reads nothing else (both directions: into one [B][2H] row).
void ProgramCompiler::assemble_stack() {
  if (final_state_) {
    const bool one_reverse_step = runs_reverse_one_step(program_);
    const size_t last_layer = program_.lstm_output == LstmOutput::kFinalState || one_reverse_step ? D_ : 1;
    for (size_t k = lstm_ops_.size() - last_layer; k < lstm_ops_.size(); ++k) {
      const bool first = one_reverse_step && program_.ops[k].reverse;
      lstm_ops_[k].set_output_steps(first ? QLSTM_OUTPUT_FIRST : QLSTM_OUTPUT_FINAL);
    }
  }
  CompiledModel& m = result_.model;
  // Buffer 0 is the first layer's input when there is no front.
  if (m.buffers.empty()) {
    const ProgramOp& first = lstm_ops_.front();
    OpBoundary ob;
    op_kind(first.kind, "program").boundary(first, &ob);
    m.buffers.push_back({ob.input_width, first.recurrent_input(), QLSTM_BUFFER_EVERY_STEP});
  }
  int32_t input = static_cast<int32_t>(m.buffers.size()) - 1;  // what the layer reads
  auto add = residual_adds_.begin();
  for (int32_t l = 0; l < program_.layers(); ++l) {
    const int32_t output = static_cast<int32_t>(m.buffers.size()), layer_input = input;
    const ProgramOp& layer = lstm_ops_[static_cast<size_t>(l * D_)];
    const int32_t H = layer.hidden_size();
    m.buffers.push_back({D_ * H, layer.recurrent_output(), QLSTM_BUFFER_EVERY_STEP});
    for (int32_t d = 0; d < D_; ++d) {
      ProgramOp& op = lstm_ops_[static_cast<size_t>(l * D_ + d)];
      op.input_buffer = input;
      op.output_buffer = output;
      op.output_offset = d * H;
      m.ops.push_back(std::move(op));
    }
    input = output;
    if (program_.repeated_after(l)) {
      // It writes its final state alone; the layer above reads that one step at every step.
      m.ops.back().set_output_steps(QLSTM_OUTPUT_FINAL);
      m.buffers.back().steps = QLSTM_BUFFER_ONE_STEP;
      set_input_repeated(&lstm_ops_[static_cast<size_t>(l + 1)]);
    }
    if (program_.residual_after(l)) {
      // The sum goes into the next buffer: the area of the layer's input (written in place over it).
      ProgramOp& sum = *add++;
      sum.input_buffer = output;
      sum.second_input_buffer = layer_input;
      sum.output_buffer = output + 1;
      m.buffers.push_back({D_ * H, sum.as<DerivedAdd>().output, QLSTM_BUFFER_EVERY_STEP});
      m.ops.push_back(std::move(sum));
      input = output + 1;
    }
    // Each op between it and the next layer reads the buffer before it and writes one of its own.
    for (ProgramOp& op : between_ops_[static_cast<size_t>(l)]) {
      OpBoundary ob;
      op_kind(op.kind, "program").boundary(op, &ob);
      op.input_buffer = input;
      input = op.output_buffer = static_cast<int32_t>(m.buffers.size());
      // On a repeated final state they run once, on its one step.
      m.buffers.push_back({ob.output_width, ob.output,
                           program_.repeated_after(l) ? QLSTM_BUFFER_ONE_STEP : QLSTM_BUFFER_EVERY_STEP});
      m.ops.push_back(std::move(op));
    }
  }
  if (final_state_) m.buffers.back().steps = QLSTM_BUFFER_ONE_STEP;
}

// Layer l's residual add: its output (operand 1) plus its input (operand 2), at the quantization
// the output observer picks from the sums' range; what the next layer or the head reads.
void ProgramCompiler::lower_residual(int32_t l, const std::vector<std::vector<float>>& sums) {
  const std::string what = "layer " + std::to_string(l) + "'s residual add";
  std::vector<float> all;
  for (size_t e = 0; e < observed_entries_; ++e) all.insert(all.end(), sums[e].begin(), sums[e].end());
  for (float v : all) {
    if (!std::isfinite(v)) throw CompileError("calibration: " + what + " produced a non-finite value");
  }
  if (all.empty()) throw CompileError("calibration: every sequence has zero time steps");
  const Range r = choose_range(all, start_.output_observer);
  const AffineQuant sum = affine_from_range(r.lo, r.hi);
  const ProgramOp& first = lstm_ops_[static_cast<size_t>(l * D_)];
  ProgramOp add;
  add.set(derive_add(D_ * first.hidden_size(), first.recurrent_output(), first.recurrent_input(), sum, what));
  residual_adds_.push_back(std::move(add));
  next_input_ = BoundaryQuant{sum, "the " + std::string(observer_name(start_.output_observer.kind)) + " of " + what};
}

// The per-position ops between layer l and the next (a LayerNorm), each between the quantization
// before it and the one its output observer picks; what the next layer reads.
void ProgramCompiler::lower_between(int32_t l) {
  between_ops_.emplace_back();
  const std::vector<FloatLayer>& layers = program_.between_after(l);
  if (layers.empty()) return;
  std::vector<std::vector<double>> values;
  for (const Entry& en : entries_) values.push_back(to_double(en.x));
  for (const LayerOp& lop : layer_ops(layers)) {
    const AffineQuant out = run_layer_op(lop, values, positions_, start_.output_observer, observed_entries_);
    between_ops_.back().push_back(derive_layer_op(lop, next_input_->quant, out, start_));
    next_input_ = BoundaryQuant{out, "the " + std::string(observer_name(start_.output_observer.kind)) + " of " +
                                         node_label(*lop.layer) + " between layers " + std::to_string(l) + " and " +
                                         std::to_string(l + 1)};
  }
  for (size_t e = 0; e < entries_.size(); ++e) entries_[e].x.assign(values[e].begin(), values[e].end());
}

// What the layer above a repeated layer l reads: each entry's last step of l's output at every step.
void ProgramCompiler::repeat_final_states(int32_t l) {
  const size_t W = static_cast<size_t>(program_.ops[static_cast<size_t>(l)].hidden_size);
  for (Entry& en : entries_) en.x = repeat_last_step(en.x, {1, en.time_steps, Layout::kBatchMajor}, W);
}

// The LSTM stack, layer by layer.
void ProgramCompiler::lower_stack() {
  head_ops_ = layer_ops(head_layers_);
  if (has_select_ || pool_ || flatten_) head_ops_.erase(head_ops_.begin());
  for (int32_t l = 0; l < program_.layers(); ++l) {
    std::vector<OpObservation> observed;
    std::vector<std::vector<float>> outs, sums;
    const bool residual = program_.residual_after(l);
    if (residual) {
      for (const Entry& en : entries_) sums.push_back(en.x);  // the layer's input, before the pass takes it
    }
    observe_layer(l, &observed, &outs);
    for (size_t e = 0; residual && e < entries_.size(); ++e) {
      // In float32, as torch adds them.
      for (size_t i = 0; i < sums[e].size(); ++i) sums[e][i] = outs[e][i] + sums[e][i];
    }
    compile_layer(l, observed, layer_boundaries(l, outs, residual ? sums : outs));
    next_input_ = BoundaryQuant{lstm_ops_.back().recurrent_output(), "the output of layer " + std::to_string(l)};
    if (residual) lower_residual(l, sums);
    for (size_t e = 0; e < entries_.size(); ++e) entries_[e].x = std::move(residual ? sums[e] : outs[e]);
    if (program_.repeated_after(l)) repeat_final_states(l);
    lower_between(l);
  }
  assemble_stack();
}

// The head's ops, each between the quantization before it and its own observed one.
void ProgramCompiler::lower_head() {
  CompiledModel& m = result_.model;
  const int32_t W = D_ * last_lstm_.hidden_size;
  if (attention_) {
    // The score Linear on every step (a sequence of one value per step), then the pooling that
    // reads the scores and, as its second input, the sequence: one row at the sequence's quantization.
    const FloatLayer score = attention_score_layer(program_.head.front());
    const AffineQuant quant = m.buffers.back().quant;
    const int32_t sequence = static_cast<int32_t>(m.buffers.size()) - 1;
    ProgramOp fc = derive_layer_op(LayerOp{&score, nullptr}, quant, attention_scores_, start_);
    fc.input_buffer = sequence;
    fc.output_buffer = sequence + 1;
    m.buffers.push_back({1, attention_scores_, QLSTM_BUFFER_EVERY_STEP});
    m.ops.push_back(std::move(fc));
    ProgramOp pool;
    try {
      pool.set(derive_attention_pool(W, attention_scores_, quant));
    } catch (const CompileError& e) {
      throw CompileError(node_label(program_.head.front()) + ": " + e.what());
    }
    pool.input_buffer = sequence + 1;
    pool.second_input_buffer = sequence;
    pool.output_buffer = sequence + 2;
    m.buffers.push_back({W, quant, QLSTM_BUFFER_ONE_STEP});
    m.ops.push_back(std::move(pool));
  } else if (pool_) {
    // One op per reduction, each writing its part of one row (a concatenation by output offsets).
    const FloatLayer& pool = program_.head.front();
    const size_t parts = pool.pool_fns().size();
    const AffineQuant quant = m.buffers.back().quant;
    const int32_t sequence = static_cast<int32_t>(m.buffers.size()) - 1;
    m.buffers.push_back({W * static_cast<int32_t>(parts), quant, QLSTM_BUFFER_ONE_STEP});
    for (size_t part = 0; part < parts; ++part) {
      ProgramOp op;
      const PoolFn fn = pool.pool_fns()[part];
      if (fn == PoolFn::kFirstStep || fn == PoolFn::kLastStep) {
        op.set(DerivedSelect{W, fn == PoolFn::kFirstStep ? 0 : -1, 1});  // y[:, 0] or y[:, -1], copied into its part
      } else {
        op.set(derive_pool_time(pool, quant, part));
      }
      op.input_buffer = sequence;
      op.output_buffer = sequence + 1;
      op.output_offset = W * static_cast<int32_t>(part);
      m.ops.push_back(std::move(op));
    }
  }
  if (select_op_) {
    ProgramOp op;
    const FloatLayer& sel = program_.head.front();
    op.set(DerivedSelect{W, sel.step, sel.step_count});
    op.input_buffer = static_cast<int32_t>(m.buffers.size()) - 1;
    op.output_buffer = op.input_buffer + 1;
    m.buffers.push_back({W * sel.step_count, m.buffers.back().quant, QLSTM_BUFFER_ONE_STEP});
    m.ops.push_back(std::move(op));
  }
  for (size_t j = 0; j < head_ops_.size(); ++j) {
    const LayerOp& lop = head_ops_[j];
    const AffineQuant& out = head_quants_[j];
    ProgramOp op = derive_layer_op(lop, m.buffers.back().quant, out, start_);
    op.input_buffer = static_cast<int32_t>(m.buffers.size()) - 1;
    op.output_buffer = op.input_buffer + 1;
    // After a flatten the first Linear reads the sequence and writes one row per batch row.
    const int32_t steps = flatten_ && j == 0 ? QLSTM_BUFFER_ONE_STEP : m.buffers.back().steps;
    m.buffers.push_back({lop.layer->output_size * lop.layer->groups, out, steps});
    m.ops.push_back(std::move(op));
  }
}

QuantizedProgram ProgramCompiler::finish() {
  // The first pass's entries start from the program's own state, one per calibration sequence.
  for (size_t e = 0; e < calibration_.sequences.size(); ++e) {
    result_.float_outputs.emplace_back(head_values_[e].begin(), head_values_[e].end());
  }
  CompiledModel& m = result_.model;
  m.directions = D_;
  m.initial_hidden = program_.initial_hidden;
  m.initial_cell = program_.initial_cell;
  m.hidden_output = program_.hidden_output;
  m.cell_output = program_.cell_output;
  if (std::find(options_.s16_layers.begin(), options_.s16_layers.end(), true) != options_.s16_layers.end()) {
    m = s16_program(program_, calibration_, result_, start_, options_.s16_layers, plan_);
  }
  return std::move(result_);
}

}  // namespace

void validate_options(const CompileOptions& options, const FloatProgram& program) {
  const auto cellless = std::find_if(program.ops.begin(), program.ops.end(),
                                     [](const FloatLstm& op) { return op.cell != CellKind::kLstm; });
  validate_options(options, static_cast<int32_t>(program.ops.size()), program.layers(),
                   cellless == program.ops.end() ? CellKind::kLstm : cellless->cell);
}

QuantizedProgram compile_program(const FloatProgram& program, const CalibrationSet& calibration,
                                 const CompileOptions& options, const CalibrationSet* validation) {
  validate_options(options, program);
  ProgramCompiler c(program, calibration, options);
  c.check();
  c.make_entries(validation);
  c.lower_front();
  c.lower_stack();
  c.lower_head();
  return c.finish();
}

}  // namespace compiler
}  // namespace qlstm
