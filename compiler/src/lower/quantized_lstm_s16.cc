// The 16x8 LSTM: calibration, derivation and the host run through the program runner.
#include "qlstm/compiler/lower/quantized_lstm_s16.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "qlstm/compiler/calibrate/quantize.h"
#include "qlstm/compiler/ops/op_kind.h"
#include "qlstm/program_s8.h"

namespace qlstm {
namespace compiler {

std::vector<bool> parse_activations(const std::string& text, int32_t layers) {
  const std::string usage = "--activations '" + text + "': expected int8, int16 or int16:L,M,... (layers from 0)";
  if (text == "int8") return {};
  if (text == "int16") return std::vector<bool>(static_cast<size_t>(layers), true);
  const std::string prefix = "int16:";
  if (text.compare(0, prefix.size(), prefix) != 0 || text.size() == prefix.size()) throw CompileError(usage);
  std::vector<bool> s16(static_cast<size_t>(layers), false);
  size_t at = prefix.size();
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    if (item.empty() || item.size() > 6 || item.find_first_not_of("0123456789") != std::string::npos) throw CompileError(usage);
    const int32_t l = std::stoi(item);
    if (l >= layers) {
      throw CompileError("--activations '" + text + "': layer " + item + ", the model has " + std::to_string(layers) +
                         " layer" + (layers == 1 ? "" : "s"));
    }
    s16[static_cast<size_t>(l)] = true;
    at = comma + 1;
  }
  return s16;
}

OpDecision s16_decision(const OpDecision& int8_chosen, const CellScaleRequest& requested) {
  OpDecision d = int8_chosen;
  d.precision = Precision::kS16x8;
  d.cell_scale = requested;
  d.weights.weight_rounding = WeightRounding::kNearest;
  return d;
}

int16_t quantize_s16(double x, double scale) {
  return static_cast<int16_t>(std::clamp(std::nearbyint(x / scale), -32768.0, 32767.0));
}

QuantizedLstmS16 QuantizedLstmS16::compile(const FloatLstm& lstm, const CalibrationSet& calibration,
                                           const OpDecision& decision, const ProgressFn& progress) {
  validate_decision(decision, "");
  const OpObservation observed = observe_op(lstm, calibration, progress);
  const int32_t I = lstm.input_size, H = lstm.hidden_size;
  double max_x = 0, max_h = 0;
  std::vector<double> sum_x(static_cast<size_t>(I), 0.0);
  int64_t steps = 0;
  for (const CalibrationSequence& s : observed.inputs.sequences) {
    for (size_t k = 0; k < s.values.size(); ++k) {
      max_x = std::max(max_x, std::fabs(static_cast<double>(s.values[k])));
      sum_x[k % static_cast<size_t>(I)] += s.values[k];
    }
    for (float v : s.h0) max_h = std::max(max_h, std::fabs(static_cast<double>(v)));
    steps += s.time_steps;
  }
  OperandStats means;
  if (decision.weights.bias_correction && steps > 0) {
    means.mean_x.assign(static_cast<size_t>(I), 0.0);
    means.mean_h.assign(static_cast<size_t>(H), 0.0);
    for (int32_t i = 0; i < I; ++i) means.mean_x[static_cast<size_t>(i)] = sum_x[static_cast<size_t>(i)] / static_cast<double>(steps);
    for (int32_t h = 0; h < H; ++h) {
      means.mean_h[static_cast<size_t>(h)] = observed.sum_h[static_cast<size_t>(h)] / static_cast<double>(steps);
    }
  }
  for (const std::vector<float>& y : observed.outputs) {
    for (float v : y) max_h = std::max(max_h, std::fabs(static_cast<double>(v)));
  }
  QuantizedLstmS16 q;
  const CellScaleChoice cell = choose_cell_scale(decision.cell_scale, observed.cell_max_abs);
  const int32_t bits = decision.s16_headroom_bits;
  q.d_ = derive_lstm_s16_params(
      lstm, symmetric_s16_scale(s16_boundary_range(max_x, bits, false), "input (max |x| of the calibration data)"),
      symmetric_s16_scale(s16_boundary_range(max_h, bits, true), "output (max |h| of the calibration run)"), cell,
      decision.weights, means);
  return q;
}

std::vector<int16_t> QuantizedLstmS16::run_s16(const std::vector<int16_t>& x, const SequenceShape& shape,
                                               const std::vector<int16_t>* h0, const std::vector<int16_t>* c0) const {
  const int32_t B = shape.batch, T = shape.time_steps, H = d_.hidden_size;
  const size_t rows = static_cast<size_t>(B) * static_cast<size_t>(H);
  if (x.size() != static_cast<size_t>(B) * static_cast<size_t>(T) * static_cast<size_t>(d_.input_size)) {
    throw CompileError("QuantizedLstmS16::run_s16: the input does not hold B x T x I values");
  }
  qlstm_lstm_s16_params params = d_.kernel_params(B, 0, shape.layout);
  qlstm_op op{};
  op.kind = QLSTM_OP_LSTM_S16;
  op.params = &params;
  op.input_buffer = 0;
  op.output_buffer = 1;
  const int32_t widths[2] = {d_.input_size, H};
  const int32_t steps[2] = {QLSTM_BUFFER_EVERY_STEP, QLSTM_BUFFER_EVERY_STEP};
  const int32_t types[2] = {QLSTM_ELEMENT_S16, QLSTM_ELEMENT_S16};
  const qlstm_program program = {&op, 1, 2, widths, 2 * rows, steps, B,
                                 shape.layout == Layout::kTimeMajor ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR,
                                 types};
  params.dims.time_steps = T;
  const size_t scratch_bytes = qlstm_op_scratch_bytes(&op);
  params.dims.time_steps = 0;
  struct alignas(QLSTM_SCRATCH_ALIGNMENT) Block {
    unsigned char bytes[QLSTM_SCRATCH_ALIGNMENT];
  };
  std::vector<Block> scratch(scratch_bytes / sizeof(Block) + 1);
  std::vector<int16_t> cell(rows), y(static_cast<size_t>(B) * static_cast<size_t>(T) * static_cast<size_t>(H));
  qlstm_program_context ctx = {scratch.data(), scratch.size() * sizeof(Block), cell.data(), {nullptr, nullptr}, 0};
  // The state: the cell rows, then the hidden rows, in the cell array; the int8 hidden array unused.
  std::vector<int16_t> state(2 * rows, 0);
  std::vector<int8_t> unused_hidden(2 * rows, 0);
  if (c0 != nullptr) std::copy(c0->begin(), c0->end(), state.begin());
  if (h0 != nullptr) std::copy(h0->begin(), h0->end(), state.begin() + static_cast<std::ptrdiff_t>(rows));
  const bool stateful = h0 != nullptr || c0 != nullptr;
  const qlstm_status st = qlstm_program_run(&program, &ctx, x.empty() ? nullptr : x.data(), y.data(), T,
                                            stateful ? unused_hidden.data() : nullptr, stateful ? state.data() : nullptr);
  if (st != QLSTM_OK) throw CompileError(std::string("QuantizedLstmS16::run_s16: ") + qlstm_status_string(st));
  return y;
}

std::vector<float> QuantizedLstmS16::run_float(const std::vector<float>& x, const SequenceShape& shape,
                                               const float* h0, const float* c0) const {
  std::vector<int16_t> x16(x.size());
  for (size_t k = 0; k < x.size(); ++k) x16[k] = quantize_s16(x[k], d_.input_scale);
  const size_t rows = static_cast<size_t>(shape.batch) * static_cast<size_t>(d_.hidden_size);
  std::vector<int16_t> h16, c16;
  if (h0 != nullptr) {
    for (size_t k = 0; k < rows; ++k) h16.push_back(quantize_s16(h0[k], d_.output_scale));
  }
  if (c0 != nullptr) {
    for (size_t k = 0; k < rows; ++k) c16.push_back(quantize_cell(c0[k], d_.cell.power));
  }
  if (h0 != nullptr && c0 == nullptr) c16.assign(rows, 0);
  if (c0 != nullptr && h0 == nullptr) h16.assign(rows, 0);
  const std::vector<int16_t> y16 = run_s16(x16, shape, h16.empty() ? nullptr : &h16, c16.empty() ? nullptr : &c16);
  std::vector<float> y(y16.size());
  for (size_t k = 0; k < y.size(); ++k) y[k] = static_cast<float>(y16[k] * d_.output_scale);
  return y;
}

}  // namespace compiler
}  // namespace qlstm

namespace qlstm {
namespace compiler {
namespace {

// Max |v| and the per-feature sums of a [n][W] block of values.
struct Observed {
  double max_abs = 0;
  std::vector<double> sum;
  int64_t rows = 0;
  void add(const std::vector<float>& v, size_t width) {
    if (sum.size() < width) sum.resize(width, 0.0);
    for (size_t k = 0; k < v.size(); ++k) {
      max_abs = std::max(max_abs, std::fabs(static_cast<double>(v[k])));
      sum[k % width] += v[k];
    }
    rows += static_cast<int64_t>(v.size() / std::max<size_t>(width, 1));
  }
  std::vector<double> mean(size_t from, size_t n) const {
    std::vector<double> m(n, 0.0);
    for (size_t k = 0; k < n && rows > 0; ++k) m[k] = sum[from + k] / static_cast<double>(rows);
    return m;
  }
};

std::string layer_label(const FloatLayer& l) { return "node '" + l.node + "'"; }

// A sequence the 16x8 weight choice scores on: its input and every layer's float output.
struct Scored {
  int32_t time_steps = 0;
  std::vector<float> x;
  std::vector<std::vector<float>> layer_outputs;  // [T][D x H] per layer
};

// The weight derivations a 16x8 LSTM op chooses from: the int8 search's choice first (clips and
// bias correction), then max-abs and MSE-clipped scales, each with and without bias correction.
// int8's choice is tuned to int8's boundary noise; with int16 boundaries the weights' own error
// is most of what is left, and which derivation leaves least of it differs by model
// (docs/compiler.md). Only the first when the user fixed the weights or turned the search off,
// and, as the int8 search, when the calibration has nothing to hold out (`held_out`: its
// score_method): scored on the data bias correction takes its means from, a single sequence
// favours the candidates that fit it.
std::vector<WeightDecision> weight_candidates(const WeightDecision& chosen, const SearchPlan& plan, bool held_out) {
  std::vector<WeightDecision> out = {chosen};
  if (plan.tuning != Tuning::kSearch || plan.user_fixed.weights || plan.user_fixed.bias_correction || !held_out) {
    return out;
  }
  for (WeightScaleMethod method : {WeightScaleMethod::kMaxAbs, WeightScaleMethod::kMseClip}) {
    for (bool bias_correction : {false, true}) {
      WeightDecision w = chosen;
      w.weight_method = method;
      w.weight_clip_ratio = {};
      w.bias_correction = bias_correction;
      out.push_back(w);
    }
  }
  return out;
}

// One 16x8 op of layer l, direction d, against the float layer's output for that direction, on
// the scored sequences (its input: the float model's, quantized at s_in).
double op_sqnr_db(const DerivedLstmS16& d16, const std::vector<Scored>& scored, int32_t l, int32_t d, int32_t D,
                  double s_in) {
  const QuantizedLstmS16 q = QuantizedLstmS16::from_derived(d16);
  const int32_t H = d16.hidden_size, W = D * H;
  std::vector<float> ref, got;
  for (const Scored& s : scored) {
    const std::vector<float>& x = l == 0 ? s.x : s.layer_outputs[static_cast<size_t>(l - 1)];
    std::vector<float> xq(x.size());
    for (size_t k = 0; k < x.size(); ++k) xq[k] = static_cast<float>(quantize_s16(x[k], s_in) * s_in);
    const std::vector<float> y = q.run_float(xq, {1, s.time_steps, Layout::kBatchMajor});
    got.insert(got.end(), y.begin(), y.end());
    const std::vector<float>& f = s.layer_outputs[static_cast<size_t>(l)];
    for (int32_t t = 0; t < s.time_steps; ++t) {
      ref.insert(ref.end(), f.begin() + static_cast<ptrdiff_t>(t) * W + static_cast<ptrdiff_t>(d) * H,
                 f.begin() + static_cast<ptrdiff_t>(t) * W + static_cast<ptrdiff_t>(d + 1) * H);
    }
  }
  return sqnr_db(ref, got);
}

// The 16x8 form of an int8 program, step by step (s16_program runs them in order).
class S16ProgramBuilder {
 public:
  S16ProgramBuilder(const FloatProgram& program, const CalibrationSet& calibration, const QuantizedProgram& int8,
                    const OpDecision& start, const std::vector<bool>& s16_layers, const SearchPlan& plan)
      : program_(program), calibration_(calibration), int8_(int8), start_(start), s16_layers_(s16_layers), plan_(plan),
        D_(program.directions),
        L_(program.layers()), head_(compiled_head_layers(program)) {}

  void check_scope() const;
  void observe();
  void lower_front();
  void lower_layer(int32_t l);
  void lower_head();
  CompiledModel finish();

 private:
  double scale(const Observed& o, bool lstm_output, const std::string& what) const {
    return symmetric_s16_scale(s16_boundary_range(o.max_abs, start_.s16_headroom_bits, lstm_output), what);
  }
  void requantize_to(int32_t type, const AffineQuant& quant, const std::string& what);
  void per_position_op(size_t k8, const std::vector<FloatLayer>& float_layers, const std::vector<Observed>& observed,
                       size_t& j);
  void layer_input(int32_t l, bool s16_layer);
  ProgramOp lstm_s16_op(int32_t l, int32_t d, const ProgramOp& op8, const ProgramBuffer& out, double s_in) const;

  const FloatProgram& program_;
  const CalibrationSet& calibration_;
  const QuantizedProgram& int8_;
  const OpDecision& start_;  // the program's: the cell scale policy and the 16x8 headroom
  const std::vector<bool>& s16_layers_;
  const SearchPlan& plan_;
  const int32_t D_, L_;
  const std::vector<FloatLayer> head_;
  // What every boundary takes on the calibration set, through the float program.
  Observed input_;
  std::vector<Observed> fronts_, layers_, heads_;
  std::vector<Scored> scored_;  // the sequences the weight choice scores on
  size_t k_front_ = 0;          // the int8 program's ops before its first recurrent op
  CompiledModel m_;
};

void S16ProgramBuilder::check_scope() const {
  const char* retry = "; compile it with --activations int8";
  for (const FloatLstm& op : program_.ops) {
    if (op.cell != CellKind::kLstm) {
      throw CompileError(std::string("16x8: the model has a ") + cell_kind_name(op.cell) +
                         " layer; 16x8 has an LSTM kernel only (as CMSIS-NN)" + retry);
    }
    if (op.gate_sigmoid.hard) {
      throw CompileError(std::string("16x8: the model has an LSTM with HardSigmoid gates; its line is in the int8 LSTM kernel "
                         "only") + retry);
    }
  }
  if (program_.constant_state_batch() > 0) {
    throw CompileError("16x8: the model's initial state is learned per batch row (" +
                       std::to_string(program_.constant_state_batch()) +
                       " rows); the 16x8 calibration runs each sequence alone, so it takes a constant state "
                       "shared by every row only, for now" + retry);
  }
}

// Every boundary's values over the calibration set, and the sequences the weight choice scores
// on: the first ones whose MACs fit the search's budget. Inputs and Linear outputs are unbounded;
// an LSTM layer's output |h| < 1.
void S16ProgramBuilder::observe() {
  fronts_.resize(program_.front.size());
  layers_.resize(static_cast<size_t>(L_));
  heads_.resize(head_.size());
  const size_t I = static_cast<size_t>(program_.input_size());
  int64_t macs_per_step = 0;
  for (const FloatLstm& op : program_.ops) macs_per_step += 4 * int64_t{op.hidden_size} * (op.input_size + op.hidden_size);
  int64_t scored_macs = 0;
  for (const CalibrationSequence& s : calibration_.sequences) {
    if (s.time_steps == 0) continue;
    const FloatProgramResult f = run_float_program(program_, s.values.data(), {1, s.time_steps, Layout::kBatchMajor});
    if (scored_.empty() || scored_macs + s.time_steps * macs_per_step <= plan_.max_macs) {
      scored_macs += s.time_steps * macs_per_step;
      scored_.push_back({s.time_steps, program_.front.empty() ? s.values : f.front_outputs.back(), f.layer_outputs});
    }
    input_.add(s.values, I);
    for (size_t j = 0; j < program_.front.size(); ++j) {
      fronts_[j].add(f.front_outputs[j], static_cast<size_t>(program_.front[j].output_size));
    }
    for (int32_t l = 0; l < L_; ++l) {
      layers_[static_cast<size_t>(l)].add(f.layer_outputs[static_cast<size_t>(l)],
                                          static_cast<size_t>(D_ * program_.ops[static_cast<size_t>(l * D_)].hidden_size));
    }
    for (size_t j = 0; j < head_.size(); ++j) heads_[j].add(f.head_outputs[j], static_cast<size_t>(head_[j].output_size));
  }
  m_.directions = D_;
}

// A requantization from the last buffer to (type, quant): where a 16x8 layer meets an int8 one.
void S16ProgramBuilder::requantize_to(int32_t type, const AffineQuant& quant, const std::string& what) {
  const ProgramBuffer from = m_.buffers.back();
  ProgramOp rq;
  rq.set(derive_requantize(from.width, from.type, from.quant, type, quant, what));
  rq.input_buffer = static_cast<int32_t>(m_.buffers.size()) - 1;
  rq.output_buffer = rq.input_buffer + 1;
  m_.buffers.push_back({from.width, quant, from.steps, type});
  m_.ops.push_back(std::move(rq));
}

// One int8 op of the front or the head (op k8 of the int8 program), in its 16x8 form while the
// buffers are int16 and it has a 16x8 kernel (a Linear, with its folded Relu or Clip: layers[j],
// observed[j]; a softmax over 2 or more values); else a requantization to the int8 program's
// quantization there and the int8 op itself, and int8 from there on.
void S16ProgramBuilder::per_position_op(size_t k8, const std::vector<FloatLayer>& float_layers,
                                        const std::vector<Observed>& observed, size_t& j) {
  const ProgramOp& op8 = int8_.model.ops[k8];
  const ProgramBuffer& out8 = int8_.model.buffers[static_cast<size_t>(op8.output_buffer)];
  const bool s16 = m_.buffers.back().type == QLSTM_ELEMENT_S16;
  ProgramOp op;
  ProgramBuffer out = out8;
  if (op8.kind == QLSTM_OP_SELECT_STEP) {
    op = op8;
    out.quant = m_.buffers.back().quant;
    out.type = m_.buffers.back().type;
  } else if (s16 && op8.kind == QLSTM_OP_FULLY_CONNECTED_S8) {
    const FloatLayer& linear = float_layers.at(j);
    const bool clamp = j + 1 < float_layers.size() && folds_into_clamp(float_layers[j + 1]);
    const Observed& o = observed[j + (clamp ? 1 : 0)];
    op.set(derive_fc_s16(linear, clamp ? &float_layers[j + 1] : nullptr, m_.buffers.back().quant.scale,
                              scale(o, false, "16x8: the output of " + layer_label(linear))));
    out.quant = {op.as<DerivedFcS16>().output_scale, 0};
    out.type = QLSTM_ELEMENT_S16;
    j += clamp ? 2 : 1;
  } else if (s16 && op8.kind == QLSTM_OP_SOFTMAX_S8 && op8.as<DerivedSoftmax>().row_size >= 2) {
    // The 16x8 softmax on the int16 logits; its output int16 at 1/32768. (A row of one stays
    // int8: upstream's int16 arithmetic stores its probability of 1 as -32768.)
    const DerivedSoftmax& softmax = op8.as<DerivedSoftmax>();
    op.set(derive_softmax_s16(softmax.row_size, m_.buffers.back().quant.scale, softmax.beta));
    out.quant = softmax_s16_output_quant();
    out.type = QLSTM_ELEMENT_S16;
    if (j < float_layers.size() && float_layers[j].kind == FloatLayerKind::kSoftmax) ++j;
  } else {
    if (s16) {  // hand over to int8 at the quantization the int8 program has here
      requantize_to(QLSTM_ELEMENT_S8, int8_.model.buffers[static_cast<size_t>(op8.input_buffer)].quant,
                    "16x8: the requantization before op " + std::to_string(k8));
    }
    op = op8;
  }
  op.input_buffer = static_cast<int32_t>(m_.buffers.size()) - 1;
  op.output_buffer = op.input_buffer + 1;
  m_.buffers.push_back(out);
  m_.ops.push_back(std::move(op));
}

// The front (per-step layers before the first LSTM): 16x8 when the first layer is, from an int16
// model input; else the int8 program's own ops.
void S16ProgramBuilder::lower_front() {
  m_.buffers.push_back(int8_.model.buffers.front());
  while (k_front_ < int8_.model.ops.size() && !int8_.model.ops[k_front_].recurrent()) ++k_front_;
  if (s16_layers_.front()) {
    m_.buffers.front() = {m_.buffers.front().width, {scale(input_, false, "16x8: the model input"), 0},
                          QLSTM_BUFFER_EVERY_STEP, QLSTM_ELEMENT_S16};
  }
  for (size_t k8 = 0, j = 0; k8 < k_front_; ++k8) per_position_op(k8, program_.front, fronts_, j);
}

// Layer l's input in the layer's element type: a requantization where the type changes.
void S16ProgramBuilder::layer_input(int32_t l, bool s16_layer) {
  const Observed& stack_input = program_.front.empty() ? input_ : fronts_.back();
  const Observed& in = l == 0 ? stack_input : layers_[static_cast<size_t>(l - 1)];
  const std::string in_name = l == 0 ? (program_.front.empty() ? std::string("16x8: the model input")
                                                               : "16x8: the output of " + layer_label(program_.front.back()))
                                     : "16x8: the output of layer " + std::to_string(l - 1);
  const size_t b8 = k_front_ + static_cast<size_t>(l);  // the int8 program's buffer of layer l's input
  if (s16_layer) {
    if (m_.buffers.back().type != QLSTM_ELEMENT_S16) {
      requantize_to(QLSTM_ELEMENT_S16, {scale(in, l > 0, in_name), 0},
                    "16x8: the requantization before layer " + std::to_string(l));
    }
  } else if (m_.buffers.back().type != QLSTM_ELEMENT_S8) {
    requantize_to(QLSTM_ELEMENT_S8, int8_.model.buffers[b8].quant,
                  "16x8: the requantization before layer " + std::to_string(l));
  }
}

// Direction d of a 16x8 layer l: the int8 search's weight candidates derived in 16x8, the best on
// the scored sequences; the cell scale by the requested policy on the observed cells (the int8
// search's headroom is tuned to int8's error, which a 16x8 cell does not share).
ProgramOp S16ProgramBuilder::lstm_s16_op(int32_t l, int32_t d, const ProgramOp& op8, const ProgramBuffer& out,
                                         double s_in) const {
  const size_t k = static_cast<size_t>(l * D_ + d);  // the LSTM op's index among the recurrent ops
  const Observed& in = l == 0 ? (program_.front.empty() ? input_ : fronts_.back()) : layers_[static_cast<size_t>(l - 1)];
  const FloatLstm& lstm = program_.ops[k];
  const int32_t H = lstm.hidden_size;
  const std::string where = "16x8: layer " + std::to_string(l) + (D_ == 2 ? (d ? " reverse" : " forward") : "");
  const OpDecision decision = s16_decision(int8_.stats.at(k).chosen, start_.cell_scale);
  const CellScaleChoice cell = choose_cell_scale(decision.cell_scale, int8_.stats.at(k).cell_max_abs);
  const std::vector<WeightDecision> candidates =
      weight_candidates(decision.weights, plan_, int8_.stats.at(k).score_method != "none");
  const OperandStats means{in.mean(0, static_cast<size_t>(lstm.input_size)),
                           layers_[static_cast<size_t>(l)].mean(static_cast<size_t>(d * H), static_cast<size_t>(H)), {}};
  ProgramOp op16;  // the best candidate's (the first one that derives, whatever its score)
  double best_db = -std::numeric_limits<double>::infinity();
  for (const WeightDecision& weights : candidates) {
    DerivedLstmS16 derived;
    try {
      derived = derive_lstm_s16_params(lstm, s_in, out.quant.scale, cell, weights, means);
    } catch (const CompileError& e) {
      if (&weights == &candidates.front()) throw CompileError(where + ": " + e.what());
      continue;  // another candidate's weights: the first one's error is the one to report
    }
    const double db = candidates.size() == 1 ? 0.0 : op_sqnr_db(derived, scored_, l, d, D_, s_in);
    if (db > best_db || !op16.holds<DerivedLstmS16>()) {
      best_db = db;
      op16.set(std::move(derived));
    }
  }
  op16.set_output_steps(op8.output_steps());
  set_constant_state(program_, k, &op16);
  op16.output_offset = op8.output_offset;
  return op16;
}

// Layer l: a 16x8 layer's ops are QLSTM_OP_LSTM_S16 with the int8 search's weight choices; an
// int8 layer's are the int8 program's own, at its quantization.
void S16ProgramBuilder::lower_layer(int32_t l) {
  const bool s16_layer = s16_layers_[static_cast<size_t>(l)];
  layer_input(l, s16_layer);
  const size_t b8 = k_front_ + static_cast<size_t>(l);
  const double s_in = m_.buffers.back().quant.scale;
  const ProgramBuffer& out8 = int8_.model.buffers[b8 + 1];
  ProgramBuffer out = out8;
  if (s16_layer) {
    out = {out8.width, {scale(layers_[static_cast<size_t>(l)], true, "16x8: the output of layer " + std::to_string(l)), 0},
           out8.steps, QLSTM_ELEMENT_S16};
  }
  for (int32_t d = 0; d < D_; ++d) {
    const size_t k = static_cast<size_t>(l * D_ + d);
    ProgramOp op = int8_.model.ops[k_front_ + k];
    if (s16_layer) op = lstm_s16_op(l, d, op, out, s_in);
    op.input_buffer = static_cast<int32_t>(m_.buffers.size()) - 1;
    op.output_buffer = op.input_buffer + 1;
    m_.ops.push_back(std::move(op));
  }
  m_.buffers.push_back(out);
}

// The head: 16x8 while it has 16x8 kernels, then a requantization and the int8 program's ops.
void S16ProgramBuilder::lower_head() {
  size_t j = 0;  // the head layer the next op starts at
  if (!head_.empty() && head_.front().kind == FloatLayerKind::kSelectStep) j = 1;
  for (size_t k8 = k_front_ + static_cast<size_t>(L_ * D_); k8 < int8_.model.ops.size(); ++k8) {
    per_position_op(k8, head_, heads_, j);
  }
}

CompiledModel S16ProgramBuilder::finish() {
  m_.name = int8_.model.name;
  m_.batch_first = int8_.model.batch_first;
  m_.initial_hidden = program_.initial_hidden;
  m_.initial_cell = program_.initial_cell;
  m_.hidden_output = program_.hidden_output;
  m_.cell_output = program_.cell_output;
  return std::move(m_);
}

}  // namespace

CompiledModel s16_program(const FloatProgram& program, const CalibrationSet& calibration, const QuantizedProgram& int8,
                          const OpDecision& start, const std::vector<bool>& s16_layers, const SearchPlan& plan) {
  S16ProgramBuilder b(program, calibration, int8, start, s16_layers, plan);
  b.check_scope();
  b.observe();
  b.lower_front();
  for (int32_t l = 0; l < program.layers(); ++l) b.lower_layer(l);
  b.lower_head();
  return b.finish();
}

}  // namespace compiler
}  // namespace qlstm
