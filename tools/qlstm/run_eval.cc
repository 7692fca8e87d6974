// What qlstm run and qlstm eval do on data in memory (run_eval.h).
#include "run_eval.h"

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "device.h"
#include "exit_status.h"
#include "qlstm/compiler/io/file_io.h"
#include "qlstm/compiler/ops/op_kind.h"
#include "qlstm/kernels.h"

namespace qlstm {
namespace cli {

using namespace qlstm::compiler;

// The recurrent (LSTM and GRU) ops of m in state order (layer-major, forward first): row k of a
// [ops][B][H] state.
std::vector<const ProgramOp*> lstm_ops(const CompiledModel& m) {
  std::vector<const ProgramOp*> ops;
  for (const ProgramOp& op : m.ops) {
    if (op.recurrent()) ops.push_back(&op);
  }
  return ops;
}

// "layer L forward" or "layer L reverse": LSTM op k (lstm_ops order) in the user's terms.
std::string lstm_op_label(const CompiledModel& m, size_t k) {
  const bool reverse = lstm_ops(m)[k]->time_direction() == QLSTM_TIME_REVERSE;
  return "layer " + std::to_string(k / static_cast<size_t>(m.directions)) + (reverse ? " reverse" : " forward");
}

// Op k's state value (h, or c when `cell`) as its kind keeps it.
StateValue state_value(const ProgramOp& op, bool cell) {
  const RecurrentState& state = *op_kind(op.kind, "state").state;
  return cell ? state.c(op) : state.h(op);
}

StateCells state_cells(const CompiledModel& m) {
  bool lstm = false, gru = false;  // with a cell, without
  for (const ProgramOp& op : m.ops) {
    if (!op.recurrent()) continue;
    const bool has_cell = state_value(op, true).present();
    lstm = lstm || has_cell;
    gru = gru || !has_cell;
  }
  return gru ? (lstm ? StateCells::kMixed : StateCells::kGru) : StateCells::kLstm;
}

namespace {

// The model's recurrent ops without a cell, for messages: "GRUs", "RNNs" or "GRUs and RNNs".
std::string cellless_ops(const CompiledModel& m) {
  bool gru = false, rnn = false;
  for (const ProgramOp& op : m.ops) {
    gru = gru || op.kind == QLSTM_OP_GRU_S8;
    rnn = rnn || op.kind == QLSTM_OP_RNN_S8;
  }
  return gru && rnn ? "GRUs and RNNs" : rnn ? "RNNs" : "GRUs";
}

}  // namespace

namespace {

// run_program_raw on the emulated CPU: the whole program in one bundle case (its buffer types
// with it), run there by the runtime's program runner from *state, which receives the final state.
// x: the input buffer's raw bytes (int8, or int16 for a 16x8 input); the result the output's.
std::vector<uint8_t> run_on_device(const std::string& cpu, const CompiledModel& m, const void* x,
                                   const SequenceShape& shape, ProgramState* state) {
  const device::Target target = device::find_target(cpu);
  const RuntimeProgram program = runtime_program(m, shape.batch, shape.time_steps, shape.layout);
  device::BundleCase c = device::program_case(m.name.empty() ? "model" : m.name, program.table(), shape.time_steps);
  c.stateful = true;
  c.input = static_cast<const int8_t*>(x);
  c.h0 = state->hidden.data();
  c.c0 = state->cell.data();
  const device::TempFile bundle("qlstm_run_bundle"), out("qlstm_run_output");
  write_file_atomically(bundle.path(), device::bundle({c}));
  device::RunOptions options;
  options.capture = true;
  const device::RunResult r = device::run_firmware(target, {"run", bundle.path(), out.path()}, options);
  if (r.exit_status != 0) {
    throw CompileError("the " + cpu + " firmware failed (exit status " + std::to_string(r.exit_status) + "): " +
                       r.console);
  }
  const std::string bytes = read_file(out.path());
  const size_t y_bytes = device::output_bytes(c), S = state->hidden.size();
  if (bytes.size() != y_bytes + S * (sizeof(int8_t) + sizeof(int16_t))) {
    throw CompileError("the " + cpu + " firmware wrote " + std::to_string(bytes.size()) + " bytes, expected " +
                       std::to_string(y_bytes + S * 3));
  }
  std::vector<uint8_t> y(y_bytes);
  std::memcpy(y.data(), bytes.data(), y_bytes);
  std::memcpy(state->hidden.data(), bytes.data() + y_bytes, S);
  std::memcpy(state->cell.data(), bytes.data() + y_bytes + S, S * sizeof(int16_t));
  return y;
}

// A [ops][B][H] state array, checked (`path` names it): float32 with float_io, else int8 (hidden) or
// int16 (cell, or a GRU's Q0.15 hidden).
const NpyArray& check_state(const NpyArray& a, const std::string& path, const CompiledModel& m, int32_t batch,
                            bool cell, bool float_io, const StateNames& names) {
  const int64_t ops = m.lstm_op_count();
  int64_t per = 0;  // [ops][B][H] (a 16x8 LSTM keeps 2H per row: not its size here)
  for (int32_t H : m.hidden_sizes()) per += static_cast<int64_t>(batch) * H;
  if (a.element_count() != per || a.shape.empty() || a.shape[0] != ops) {
    std::string s;
    for (int64_t d : a.shape) s += (s.empty() ? "" : ", ") + std::to_string(d);
    throw CompileError(path + ": shape [" + s + "], expected [" + std::to_string(ops) + ", " + std::to_string(batch) +
                       ", " + std::to_string(m.hidden_sizes().front()) + "] (ops x batch x hidden)");
  }
  const DType want = float_io ? DType::kFloat32 : cell ? DType::kInt16 : DType::kInt8;
  if (a.dtype != want) {
    throw CompileError(path + ": dtype " + dtype_name(a.dtype) + ", expected " + dtype_name(want) +
                       (float_io ? "" : " (" + names.float_io + " for float32)"));
  }
  return a;
}

// A float32 [ops][B][H] state (run --float, eval), each value finite.
std::vector<float> float_state(const NpyArray& a, const std::string& path, const CompiledModel& m, int32_t batch,
                               bool cell, const StateNames& names) {
  std::vector<float> v = check_state(a, path, m, batch, cell, true, names).as_float(path);
  for (size_t k = 0; k < v.size(); ++k) {
    if (!std::isfinite(v[k])) throw CompileError(path + ": non-finite state value at index " + std::to_string(k));
  }
  return v;
}

// The float values a state value holds (none for an absent one: nothing is clipped).
RangeCount state_range(const StateValue& v) {
  switch (v.format) {
    case StateValue::kAffineS8: return int8_range(v.quant);
    case StateValue::kScaledS16: return int16_range(v.quant);
    case StateValue::kPowerOfTwoS16: return cell_range(v.power);
    case StateValue::kAbsent: break;
  }
  return RangeCount{};
}

// Per LSTM op, the float state values beyond what its int8 hidden (the op's output quantization)
// or int16 cell (2^P) holds: quantizing clips them.
std::vector<RangeCount> state_clipping(const CompiledModel& m, int32_t batch, const std::vector<float>& v, bool cell) {
  std::vector<RangeCount> counts;
  size_t at = 0;
  for (const ProgramOp* op : lstm_ops(m)) {
    const StateValue value = state_value(*op, cell);  // a GRU's c is absent: nothing clipped
    RangeCount r = state_range(value);
    const size_t n = static_cast<size_t>(batch) * static_cast<size_t>(op->hidden_size());
    for (size_t e = 0; e < n; ++e, ++at) {
      if (value.present()) r.add(v[at]);
    }
    counts.push_back(r);
  }
  return counts;
}

// run --float: a warning per op whose given --h0 or --c0 values were clipped (an int8 or int16
// state is already in range: nothing to say).
void warn_clipped_state(const CompiledModel& m, int32_t batch, const std::vector<float>& v, const std::string& path,
                        bool cell, const RunRequest& req) {
  if (!req.warn) return;
  const std::vector<RangeCount> counts = state_clipping(m, batch, v, cell);
  for (size_t k = 0; k < counts.size(); ++k) {
    const RangeCount& r = counts[k];
    if (r.outside == 0) continue;
    char range[96];
    if (cell) std::snprintf(range, sizeof range, "exceed the cell range |c| <= %.4g (largest |c| %.4g)", r.hi,
                            std::fabs(r.furthest));
    else std::snprintf(range, sizeof range, "are outside the hidden range [%.4g, %.4g] (furthest %.4g)", r.lo, r.hi,
                       r.furthest);
    char line[512];
    std::snprintf(line, sizeof line, "%s %s: %zu of %zu values of LSTM op %zu (%s) %s and were clipped",
                  (cell ? req.names.c0 : req.names.h0).c_str(), path.c_str(), r.outside, r.total, k,
                  lstm_op_label(m, k).c_str(), range);
    req.warn(line);
  }
}

// A float32 state array of that shape.
NpyArray float_array(const std::vector<int64_t>& shape, const std::vector<float>& v) {
  NpyArray a;
  a.dtype = DType::kFloat32;
  a.shape = shape;
  a.bytes.resize(v.size() * sizeof(float));
  if (!v.empty()) std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  return a;
}

// printf into a string: eval builds its whole text first and prints it once every file is written.
__attribute__((format(printf, 2, 3))) void appendf(std::string* out, const char* format, ...) {
  va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  if (n > 0) {
    std::string line(static_cast<size_t>(n) + 1, '\0');
    std::vsnprintf(line.data(), line.size(), format, again);
    out->append(line.data(), static_cast<size_t>(n));
  }
  va_end(again);
}

// One output of the model: float against int8, dequantized.
struct ComparedOutput {
  std::string name;   // "y", "h_n" or "c_n"
  std::string label;  // what eval prints: "output y", "h_n (layer 0 forward)"
  int32_t op = -1;    // h_n, c_n: the LSTM op (its row of the state)
  double sqnr_db = 0, max_abs_error = 0;
  double scale = 0;  // one step of its int8 (y, h) or int16 (c) form
};

ComparedOutput compare_output(const std::string& name, const std::string& label, int32_t op,
                              const std::vector<float>& ref, const std::vector<float>& got, double scale) {
  return {name, label, op, sqnr_db(ref, got), max_abs_error(ref, got), scale};
}

// h_n and c_n of every LSTM op, those the model returns, float against the final int8 state: in
// the model's output order, every h_n before every c_n.
std::vector<ComparedOutput> compare_state(const CompiledModel& m, int32_t batch, const FloatProgramResult& f,
                                          const ProgramState& s) {
  std::vector<float> h, c;
  dequantize_program_state(m, s, batch, &h, &c);
  std::vector<ComparedOutput> hs, cs;
  const std::vector<const ProgramOp*> ops = lstm_ops(m);
  size_t at = 0;
  for (size_t k = 0; k < ops.size(); ++k) {
    const StateValue hv = state_value(*ops[k], false), cv = state_value(*ops[k], true);
    const auto from = static_cast<ptrdiff_t>(at), to = from + batch * ops[k]->hidden_size();
    auto slice = [&](const std::vector<float>& v) { return std::vector<float>(v.begin() + from, v.begin() + to); };
    const std::string who = " (" + lstm_op_label(m, k) + ")";
    const int32_t op = static_cast<int32_t>(k);
    if (m.hidden_output) hs.push_back(compare_output("h_n", "h_n" + who, op, slice(f.h_n), slice(h), hv.step()));
    if (m.cell_output) {  // a GRU's c_n (absent: step 1) is 0 in both
      cs.push_back(compare_output("c_n", "c_n" + who, op, slice(f.c_n), slice(c), cv.step()));
    }
    at = static_cast<size_t>(to);
  }
  hs.insert(hs.end(), cs.begin(), cs.end());
  return hs;
}

// The float model's values outside the ranges the int8 program holds them in (RangeCount).
struct Saturation {
  RangeCount input;
  bool output_fixed = false;  // a softmax's output range is fixed, not calibrated: not counted
  RangeCount output;
  std::vector<RangeCount> cell, hidden;  // per recurrent op, over every step (a GRU's cell: none, empty)
  std::vector<bool> has_cell;            // per recurrent op: an LSTM
  // Per residual add, its layer and its sum's range (every step of the layer's output plus input).
  std::vector<int32_t> residual_layer;
  std::vector<RangeCount> residual;
  bool any() const {
    bool state = false;
    for (size_t k = 0; k < cell.size(); ++k) state = state || cell[k].outside > 0 || hidden[k].outside > 0;
    for (const RangeCount& r : residual) state = state || r.outside > 0;
    return state || input.outside > 0 || output.outside > 0;
  }
};

Saturation saturation_ranges(const CompiledModel& m) {
  Saturation s;
  auto range = [](const ProgramBuffer& b) { return b.type == QLSTM_ELEMENT_S16 ? int16_range(b.quant) : int8_range(b.quant); };
  s.input = range(m.buffers.front());
  if (m.token_ids()) {  // the embedding's rows: any other id is refused before the run
    s.input = RangeCount{};
    s.input.hi = m.ops.front().as<DerivedEmbedding>().table_rows - 1;
  }
  s.output = range(m.buffers.back());
  const OpKind* last = find_op_kind(m.ops.back().kind);
  // A softmax's fixed output range [0, 1] holds every value; a log-softmax's [-255/16, 0] clips
  // the values below it, which are counted as any output's.
  s.output_fixed = last != nullptr && last->fixed_output != nullptr && last->kind != QLSTM_OP_LOG_SOFTMAX_S8;
  for (const ProgramOp* op : lstm_ops(m)) {
    const StateValue cell = state_value(*op, true);
    s.has_cell.push_back(cell.present());
    s.cell.push_back(state_range(cell));
    s.hidden.push_back(range(m.buffers[static_cast<size_t>(op->output_buffer)]));
  }
  // A residual add follows its layer's ops: its layer is the last whose ops came before it.
  int32_t recurrent_seen = 0;
  for (const ProgramOp& op : m.ops) {
    if (op.recurrent()) ++recurrent_seen;
    if (op.kind != QLSTM_OP_ADD_S8 || recurrent_seen == 0) continue;
    s.residual_layer.push_back(recurrent_seen / m.directions - 1);
    s.residual.push_back(range(m.buffers[static_cast<size_t>(op.output_buffer)]));
  }
  return s;
}

// The initial state both runs start from: --h0/--c0 (float32 [ops][B][H]) or the model's own,
// which for a state input the user did not give is zero.
struct EvalState {
  std::vector<float> h0, c0;  // empty: the model's own
  std::string line;           // what eval says about it; empty for the model's own state
  nlohmann::json json;
};

EvalState eval_state(const EvalRequest& r, const CompiledModel& m, int32_t batch) {
  EvalState s;
  if (r.c0 != nullptr) check_c0_usable(m, r.c0_name, r.names);
  if (r.h0 != nullptr) s.h0 = float_state(*r.h0, r.h0_name, m, batch, false, r.names);
  if (r.c0 != nullptr) s.c0 = float_state(*r.c0, r.c0_name, m, batch, true, r.names);
  const bool zero_h = m.initial_hidden == StateSource::kInput && r.h0 == nullptr;
  const bool zero_c = m.initial_cell == StateSource::kInput && r.c0 == nullptr;
  s.json = {{"h0", r.h0 == nullptr ? (zero_h ? "zero" : "model") : r.h0_name},
            {"c0", r.c0 == nullptr ? (zero_c ? "zero" : "model") : r.c0_name}};
  if (zero_h && zero_c) {
    s.line = "  state inputs not given: both run from a zero state\n";
  } else if (zero_h || zero_c) {
    s.line = std::string("  state input ") + (zero_h ? "h0" : "c0") + " not given: both run from a zero " +
             (zero_h ? "hidden" : "cell") + " state\n";
  }
  if (r.h0 != nullptr || r.c0 != nullptr) {
    s.line += "  initial state given for both runs:" + (r.h0 == nullptr ? "" : " " + r.names.h0 + " " + r.h0_name) +
              (r.c0 == nullptr ? "" : " " + r.names.c0 + " " + r.c0_name) + "\n";
  }
  return s;
}

struct EvalRuns {
  FloatProgramResult ref;  // the float model, from the same state
  std::vector<float> got;  // the int8 program's output, dequantized
  ProgramState state;      // its final state
  Saturation saturation;
};

// Both models on x from the same initial state; the float run counts what falls outside the int8
// ranges as it goes.
EvalRuns run_both(const OnnxLstm& onnx, const CompiledModel& m, const SequenceTensor& x, const EvalState& st,
                  const std::string& data_path) {
  EvalRuns r;
  const int32_t B = x.shape.batch;
  r.state = quantize_program_state(m, B, st.h0.empty() ? nullptr : &st.h0, st.c0.empty() ? nullptr : &st.c0,
                                   "--h0/--c0");
  Saturation& sat = r.saturation;
  sat = saturation_ranges(m);
  for (float v : x.values) sat.input.add(v);
  r.ref = run_float_program(onnx.program, x.values.data(), x.shape, st.h0.empty() ? nullptr : st.h0.data(),
                            st.c0.empty() ? nullptr : st.c0.data(),
                            [&sat](int32_t op, const double* c, const double* h, int32_t H) {
                              for (int32_t u = 0; u < H; ++u) {
                                if (c != nullptr) sat.cell[static_cast<size_t>(op)].add(c[u]);  // a GRU has none
                                sat.hidden[static_cast<size_t>(op)].add(h[u]);
                              }
                            });
  if (!sat.output_fixed) {
    for (float v : r.ref.output) sat.output.add(v);
  }
  for (size_t k = 0; k < sat.residual.size(); ++k) {  // the float layer's output is its residual sum
    for (float v : r.ref.layer_outputs.at(static_cast<size_t>(sat.residual_layer[k]))) sat.residual[k].add(v);
  }
  if (m.all_s8()) {
    r.got = dequantize_output(m, run_program_s8(m, quantize_input(m, x, data_path), x.shape, &r.state));
  } else {  // 16x8: float in, float out, from the same state
    const std::vector<uint8_t> raw = quantize_raw_input(m, x.values);
    r.got = dequantize_raw_output(m, run_program_raw(m, raw.data(), raw.size(), x.shape, &r.state));
  }
  if (r.ref.output.size() != r.got.size()) {
    throw CompileError(data_path + ": the float model wrote " + std::to_string(r.ref.output.size()) +
                       " values, the int8 model " + std::to_string(r.got.size()));
  }
  return r;
}

void report_outputs(const std::vector<ComparedOutput>& outs, std::string* text, nlohmann::json* j) {
  for (const ComparedOutput& o : outs) {
    appendf(text, "  %s: SQNR %.2f dB, max abs error %.5f (scale %.5g)\n", o.label.c_str(), o.sqnr_db,
            o.max_abs_error, o.scale);
    nlohmann::json e = {{"name", o.name},     {"label", o.label}, {"max_abs_error", o.max_abs_error},
                        {"scale", o.scale}};
    // JSON has no infinity: int8 equal to float everywhere is a null SQNR.
    e["sqnr_db"] = std::isfinite(o.sqnr_db) ? nlohmann::json(o.sqnr_db) : nlohmann::json(nullptr);
    if (o.op >= 0) e["op"] = o.op;
    (*j)["outputs"].push_back(e);
  }
}

void report_per_step(const std::vector<double>& rms, std::string* text, nlohmann::json* j) {
  constexpr size_t kStepsPerLine = 10;
  appendf(text, "  RMS error per time step:");
  for (size_t t = 0; t < rms.size(); ++t) {
    if (t % kStepsPerLine == 0) appendf(text, "\n   t=%-4zu", t);
    appendf(text, " %.4f", rms[t]);
  }
  appendf(text, "\n");
  (*j)["rms_error_per_step"] = rms;
}

// mode: "int8" or "16x8", the compiled model's (the JSON keys say int8 for either).
void report_classifier(const ClassifierScores& c, bool labelled, const char* mode, std::string* text, nlohmann::json* j) {
  const double n = static_cast<double>(c.rows);
  nlohmann::json& e = (*j)["classifier"];
  e = {{"sequences", c.rows}, {"agree", c.agree}, {"argmax_agreement", static_cast<double>(c.agree) / n}};
  if (labelled) {
    appendf(text, "  top-1 accuracy on %zu labelled sequences: float %.2f %%, %s %.2f %%\n", c.rows,
            100.0 * c.float_correct / n, mode, 100.0 * c.int8_correct / n);
    e["float_top1"] = static_cast<double>(c.float_correct) / n;
    e["int8_top1"] = static_cast<double>(c.int8_correct) / n;
  }
  appendf(text, "  argmax agreement %s vs float: %.2f %% (%zu of %zu)\n", mode, 100.0 * c.agree / n, c.agree, c.rows);
}

void report_forecast(const ForecastError& f, const ForecastError& q, const std::string& path, size_t values,
                     const OutputUnits& units, const char* mode, std::string* text, nlohmann::json* j) {
  appendf(text, "  forecast error against %s (%zu values), in %s: float MAE %.3f RMSE %.3f, %s MAE %.3f RMSE %.3f\n",
          path.c_str(), values, units.name.c_str(), f.mae, f.rmse, mode, q.mae, q.rmse);
  (*j)["forecast"] = {{"targets", path},
                      {"values", values},
                      {"units", units.name},
                      {"float", {{"mae", f.mae}, {"rmse", f.rmse}}},
                      {"int8", {{"mae", q.mae}, {"rmse", q.rmse}}}};
}

nlohmann::json range_json(const RangeCount& r) {
  nlohmann::json j = {{"lo", r.lo}, {"hi", r.hi}, {"outside", r.outside}, {"total", r.total},
                      {"fraction", r.fraction()}};
  if (r.outside > 0) j["furthest"] = r.furthest;
  return j;
}

void saturation_line(const std::string& what, const RangeCount& r, bool cell, std::string* text) {
  char range[64];
  if (cell) std::snprintf(range, sizeof range, "beyond |c| <= %.4g", r.hi);
  else std::snprintf(range, sizeof range, "outside [%.4g, %.4g]", r.lo, r.hi);
  appendf(text, "    %-28s %6.2f %% (%zu of %zu) %s\n", what.c_str(), 100.0 * r.fraction(), r.outside, r.total, range);
}

void report_saturation(const CompiledModel& m, const Saturation& s, std::string* text, nlohmann::json* j) {
  appendf(text, "  saturation (float values outside the calibrated ranges, clipped by the %s model):\n",
          !m.has_s16() ? "int8" : "16x8");
  nlohmann::json& e = (*j)["saturation"];
  saturation_line("input", s.input, false, text);
  e["input"] = range_json(s.input);
  if (s.output_fixed) {
    appendf(text, "    %-28s not counted: a softmax's range [0, 1] is fixed, not calibrated\n", "output");
    e["output"] = nullptr;
  } else {
    saturation_line("output", s.output, false, text);
    e["output"] = range_json(s.output);
  }
  e["ops"] = nlohmann::json::array();
  for (size_t k = 0; k < s.cell.size(); ++k) {
    const std::string who = " (" + lstm_op_label(m, k) + ")";
    if (s.has_cell[k]) saturation_line("cell" + who, s.cell[k], true, text);
    saturation_line("hidden" + who, s.hidden[k], false, text);
    e["ops"].push_back({{"op", k}, {"label", lstm_op_label(m, k)},
                        {"cell", s.has_cell[k] ? range_json(s.cell[k]) : nlohmann::json(nullptr)},
                        {"hidden", range_json(s.hidden[k])}});
  }
  e["residual"] = nlohmann::json::array();
  for (size_t k = 0; k < s.residual.size(); ++k) {
    saturation_line("residual sum (layer " + std::to_string(s.residual_layer[k]) + ")", s.residual[k], false, text);
    e["residual"].push_back({{"layer", s.residual_layer[k]}, {"sum", range_json(s.residual[k])}});
  }
  e["any"] = s.any();
  if (s.any()) {
    appendf(text, "  hint: the held-out data exceeds the calibration range: calibrate on data that covers it\n");
  }
}

}  // namespace

void check_run_flags(const RunRequest& r) {
  if (r.chunk > 0 && !r.target.empty()) {
    throw UsageError("--chunk runs on the host only (the device streams through the emitted NAME_stream)");
  }
}

void check_run_request(const CompiledModel& m, const RunRequest& r) {
  const StateNames& n = r.names;
  check_run_flags(r);
  if (m.initial_hidden == StateSource::kInput && r.h0 == nullptr) {
    throw UsageError(r.model_name + ": the model takes its initial hidden state as an input: give " + n.h0);
  }
  if (m.initial_cell == StateSource::kInput && r.c0 == nullptr) {
    throw UsageError(r.model_name + ": the model takes its initial cell state as an input: give " + n.c0);
  }
  // A GRU has no cell; its state is the Q0.15 hidden, int16 in an int state.
  const StateCells cells = state_cells(m);
  if (cells != StateCells::kLstm && (r.c0 != nullptr || r.want_c_n)) {
    throw UsageError(r.model_name + ": " + (r.c0 == nullptr ? n.c_n : n.c0) +
                     ": the model's recurrent ops are " + cellless_ops(m) + ", which have no cell state");
  }
  if (cells == StateCells::kMixed && !r.float_io && (r.h0 != nullptr || r.want_h_n)) {
    throw UsageError(r.model_name + ": " + n.h0 + "/" + n.h_n + ": the model mixes LSTM ops and " + cellless_ops(m) +
                     ", whose int states differ (int8, int16): " + n.float_io);
  }
}

RunOutput run_model(const CompiledModel& m, const RunRequest& r) {
  check_run_request(m, r);
  if (!m.all_s8()) {
    // A 16x8 model or one on token ids: its own int16, int32 (and int8) buffers, or float in and
    // out; its state as floats.
    if (!r.float_io && (r.h0 != nullptr || r.c0 != nullptr || r.want_h_n || r.want_c_n)) {
      if (m.buffers.front().type == QLSTM_ELEMENT_S32) {
        throw UsageError(r.model_name + ": the state of a model on token ids is given and returned as float32: " +
                         r.names.float_io);
      }
      throw UsageError(r.model_name + ": a 16x8 model's state is given and returned as float32 (its ops' int states "
                       "differ: int16 for 16x8 layers, int8 for int8 ones): " + r.names.float_io);
    }
    if (r.chunk > 0 && !m.streaming_refusal().empty()) {
      throw UsageError(r.model_name + ": --chunk: " + m.streaming_refusal());
    }
    // The state: the model's own, or --h0/--c0 (float) over it.
    const int32_t B = r.x.shape.batch;
    std::vector<float> hf, cf;
    if (r.h0 != nullptr) hf = float_state(*r.h0, r.h0_name, m, B, false, r.names);
    if (r.c0 != nullptr) cf = float_state(*r.c0, r.c0_name, m, B, true, r.names);
    ProgramState state = quantize_program_state(m, B, hf.empty() ? nullptr : &hf, cf.empty() ? nullptr : &cf,
                                                r.names.h0 + "/" + r.names.c0);
    if (!hf.empty()) warn_clipped_state(m, B, hf, r.h0_name, false, r);
    if (!cf.empty()) warn_clipped_state(m, B, cf, r.c0_name, true, r);
    RunOutput out;
    // Token ids are the same integers either way.
    const std::vector<uint8_t> raw = r.float_io || m.buffers.front().type == QLSTM_ELEMENT_S32
                                         ? quantize_raw_input(m, r.x.values)
                                     : m.buffers.front().type == QLSTM_ELEMENT_S16
                                         ? r.x.values_s16
                                         : std::vector<uint8_t>(r.x.values_s8.begin(), r.x.values_s8.end());
    const std::vector<uint8_t> y = !r.target.empty() ? run_on_device(r.target, m, raw.data(), r.x.shape, &state)
                                   : r.chunk > 0 ? run_program_raw_streamed(m, raw.data(), raw.size(), r.x.shape, r.chunk, &state)
                                                 : run_program_raw(m, raw.data(), raw.size(), r.x.shape, &state);
    out.shape = output_shape(m, r.x);
    if (!r.float_io) {
      out.y_int.dtype = m.buffers.back().type == QLSTM_ELEMENT_S16 ? DType::kInt16 : DType::kInt8;
      out.y_int.shape = out.shape;
      out.y_int.bytes = y;
      return out;
    }
    out.y = dequantize_raw_output(m, y);
    out.state_shape = {m.lstm_op_count(), B, m.hidden_sizes().front()};
    std::vector<float> hn, cn;
    dequantize_program_state(m, state, B, &hn, &cn);
    if (r.want_h_n) out.h_n = float_array(out.state_shape, hn);
    if (r.want_c_n) out.c_n = float_array(out.state_shape, cn);
    return out;
  }
  const bool gru_state = state_cells(m) == StateCells::kGru;
  const SequenceTensor& x = r.x;
  const std::vector<int8_t> x8 = r.float_io ? quantize_input(m, x, r.input_name) : x.values_s8;
  const int32_t B = x.shape.batch;
  ProgramState state = initial_program_state(m, B);
  if (r.h0 != nullptr || r.c0 != nullptr) {
    std::vector<float> hf, cf;
    if (r.h0 != nullptr) {
      if (r.float_io) {
        hf = float_state(*r.h0, r.h0_name, m, B, false, r.names);
      } else if (gru_state) {  // int16 in the GRU and RNN ops' state rows (Q0.15, or an RNN's 2^P)
        const NpyArray& a = check_state(*r.h0, r.h0_name, m, B, true, false, r.names);
        std::memcpy(state.cell.data(), a.bytes.data(), a.bytes.size());
      } else {
        state.hidden = check_state(*r.h0, r.h0_name, m, B, false, false, r.names).as_int8(r.h0_name);
      }
    }
    if (r.c0 != nullptr) {
      if (r.float_io) {
        cf = float_state(*r.c0, r.c0_name, m, B, true, r.names);
      } else {
        const NpyArray& a = check_state(*r.c0, r.c0_name, m, B, true, false, r.names);
        state.cell.resize(a.bytes.size() / sizeof(int16_t));
        std::memcpy(state.cell.data(), a.bytes.data(), a.bytes.size());
      }
    }
    if (r.float_io) {
      // The given values over the model's own initial state (a GRU or RNN op's h is in the cell rows).
      state = quantize_program_state(m, B, hf.empty() ? nullptr : &hf, cf.empty() ? nullptr : &cf,
                                     r.names.h0 + "/" + r.names.c0);
      if (!hf.empty()) warn_clipped_state(m, B, hf, r.h0_name, false, r);
      if (!cf.empty()) warn_clipped_state(m, B, cf, r.c0_name, true, r);
    }
  }
  RunOutput out;
  const auto on_device = [&] {
    const std::vector<uint8_t> y = run_on_device(r.target, m, x8.data(), x.shape, &state);
    return std::vector<int8_t>(y.begin(), y.end());
  };
  out.y8 = !r.target.empty() ? on_device()
           : r.chunk > 0     ? run_program_s8_streamed(m, x8, x.shape, r.chunk, &state)
                             : run_program_s8(m, x8, x.shape, &state);
  out.shape = output_shape(m, x);
  if (!r.float_io) out.y_int = {DType::kInt8, out.shape, std::vector<uint8_t>(out.y8.begin(), out.y8.end())};
  out.state_shape = {m.lstm_op_count(), B, m.hidden_sizes().front()};
  auto array = [&out](DType dtype, const void* data, size_t bytes) {
    NpyArray a;
    a.dtype = dtype;
    a.shape = out.state_shape;
    a.bytes.resize(bytes);
    std::memcpy(a.bytes.data(), data, bytes);
    return a;
  };
  if (r.float_io) {
    out.y = dequantize_output(m, out.y8);
    std::vector<float> hn, cn;
    dequantize_program_state(m, state, B, &hn, &cn);
    if (r.want_h_n) out.h_n = float_array(out.state_shape, hn);
    if (r.want_c_n) out.c_n = float_array(out.state_shape, cn);
  } else {
    if (r.want_h_n && gru_state) out.h_n = array(DType::kInt16, state.cell.data(), state.cell.size() * sizeof(int16_t));
    if (r.want_h_n && !gru_state) out.h_n = array(DType::kInt8, state.hidden.data(), state.hidden.size());
    if (r.want_c_n) out.c_n = array(DType::kInt16, state.cell.data(), state.cell.size() * sizeof(int16_t));
  }
  return out;
}

void check_eval_pair(const OnnxLstm& onnx, const CompiledModel& m, const std::string& model_name,
                     const std::string& onnx_name) {
  if (m.input_size() != onnx.program.input_size() || m.output_size() != onnx.program.output_size() ||
      static_cast<size_t>(m.lstm_op_count()) != onnx.program.ops.size() || m.batch_first != onnx.batch_first ||
      m.hidden_output != onnx.program.hidden_output || m.cell_output != onnx.program.cell_output) {
    throw CompileError(model_name + ": does not match " + onnx_name + " (sizes, layers, layout or outputs)");
  }
  size_t k = 0;  // the recurrent ops, in the ONNX program's order
  for (const ProgramOp& op : m.ops) {
    if (!op.recurrent()) continue;
    const CellKind cell = onnx.program.ops[k].cell;
    const RecurrentState& state = recurrent_state(op);
    if (std::string(state.cell) != cell_kind_name(cell)) {
      throw CompileError(model_name + ": recurrent op " + std::to_string(k) + " is " + state.a_cell + ", in " +
                         onnx_name + " it is " + (cell == CellKind::kGru ? "a GRU" : cell == CellKind::kRnn ? "an RNN" : "an LSTM"));
    }
    ++k;
  }
}

void check_labels_usable(const CompiledModel& m, const std::string& model_name) {
  const int32_t W = m.output_size();
  const bool one_step = m.output_is_one_step();
  if (!(one_step && W >= 2 && m.output_rows() == 1)) {
    throw UsageError("--labels: " + model_name + " is not a classifier: its output is " +
                     (one_step && m.output_rows() > 1 ? std::to_string(m.output_rows()) + " steps per sequence"
                      : one_step ? std::string("one value per sequence")
                               : W == 1 ? std::string("one value per time step")
                                        : std::to_string(W) + " values per time step") +
                     "; labels need one row of class scores per sequence (for a forecaster give --targets)");
  }
}

void check_c0_usable(const CompiledModel& m, const std::string& c0_name, const StateNames& names) {
  if (state_cells(m) != StateCells::kLstm) {
    throw UsageError(c0_name + ": " + names.c0 + ": the model's recurrent ops are " + cellless_ops(m) +
                     ", which have no cell state");
  }
}

Evaluation evaluate(const OnnxLstm& onnx, const CompiledModel& m, const EvalRequest& req) {
  check_eval_pair(onnx, m, req.model_name, req.onnx_name);
  const SequenceTensor& x = req.x;
  const int32_t W = m.output_size(), B = x.shape.batch, T = x.shape.time_steps;
  const bool one_step = m.output_is_one_step();
  // A head on several selected steps writes a row per step: not one class per sequence.
  const bool classifier = one_step && W >= 2 && m.output_rows() == 1;
  if (!req.labels.empty()) {
    check_labels_usable(m, req.model_name);
    if (req.labels.size() != static_cast<size_t>(B)) {
      throw CompileError("labels: " + std::to_string(req.labels.size()) + " labels for " + std::to_string(B) +
                         " sequences in " + req.data_name);
    }
  }
  const EvalState st = eval_state(req, m, B);

  const EvalRuns r = run_both(onnx, m, x, st, req.data_name);
  Evaluation out;
  const std::vector<float>& ref = r.ref.output;
  std::string& text = out.text;
  nlohmann::json& j = out.json;
  j = {{"model", req.model_name}, {"onnx", req.onnx_name}, {"data", req.data_name},
       {"sequences", B},          {"time_steps", T},       {"initial_state", st.json},
       {"output_values", W},      {"output_per", one_step ? "sequence" : "time step"},
       {"activations", !m.has_s16() ? "int8" : "int16"}};
  const char* mode = !m.has_s16() ? "int8" : "16x8";
  appendf(&text, "qlstm eval: %s vs %s on %s (%d sequences x %d steps)\n", req.model_name.c_str(),
          req.onnx_name.c_str(), req.data_name.c_str(), B, T);
  text += st.line;
  if (m.output_rows() > 1) {
    appendf(&text, "  output: %d steps x %d values per sequence\n", m.output_rows(), W / m.output_rows());
  } else {
    appendf(&text, "  output: %d value%s %s\n", W, W == 1 ? "" : "s", one_step ? "per sequence" : "per time step");
  }
  std::vector<ComparedOutput> outs = {compare_output("y", "output y", -1, ref, r.got, m.output_quant().scale)};
  for (ComparedOutput& o : compare_state(m, B, r.ref, r.state)) outs.push_back(std::move(o));
  report_outputs(outs, &text, &j);
  if (!one_step) {
    report_per_step(rms_error_per_step(ref, r.got, B, T, W, x.shape.layout == Layout::kTimeMajor), &text, &j);
  }
  if (classifier) report_classifier(score_classifier(ref, r.got, W, req.labels), !req.labels.empty(), mode, &text, &j);
  if (!req.targets.empty()) {
    report_forecast(forecast_error(ref, req.targets, req.units), forecast_error(r.got, req.targets, req.units),
                    req.targets_name, req.targets.size(), req.units, mode, &text, &j);
  }
  report_saturation(m, r.saturation, &text, &j);
  out.ref = ref;
  out.got = r.got;
  return out;
}

}  // namespace cli
}  // namespace qlstm
