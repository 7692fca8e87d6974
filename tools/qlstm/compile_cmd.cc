// qlstm compile / qlstm run.
#include "compile_cmd.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <unistd.h>

#include "qlstm/compiler/compile.h"
#include "qlstm/compiler/emit_cpp.h"
#include "qlstm/compiler/model_file.h"
#include "qlstm/compiler/npy.h"
#include "qlstm/compiler/onnx_import.h"
#include "qlstm/compiler/program.h"
#include "qlstm/compiler/quantized_lstm.h"
#include "qlstm/compiler/file_io.h"
#include "qlstm/kernels.h"
#include "device.h"
#include "eval_metrics.h"
#include "exit_status.h"

namespace qlstm {
namespace cli {
namespace {

namespace fs = std::filesystem;
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

// The program of a whole model, one line per op as the report's "op_table" has it: kind, shape
// ([T, W] a sequence, [1, W] one step per batch row), its output's quantization, flash bytes and
// the RAM of the buffer it writes; then the model's output.
void print_op_table(const CompiledModel& m, const nlohmann::json& table) {
  std::printf("  program: %zu ops (kind, shape, output scale / zero point, flash, RAM of its output)\n", table.size());
  for (const nlohmann::json& row : table) {
    std::string more;
    if (row.contains("output_steps") && row["output_steps"] == "final") more = ", the last step only";
    if (row.contains("direction") && row["direction"] == "reverse") more += ", reverse";
    if (row.contains("fused_activation") && row["fused_activation"] != "none") {
      more += ", " + row["fused_activation"].get<std::string>() + " folded in";
    }
    if (row.contains("per_channel")) more += row["per_channel"].get<bool>() ? ", per channel" : ", per tensor";
    if (row.contains("function")) more += ", " + row["function"].get<std::string>();
    if (row.contains("step")) more += ", step " + std::to_string(row["step"].get<int>());
    std::printf("    %-2d %-16s %-20s %10.6g / %-4d %6zu B flash %6zu B RAM%s\n", row["op"].get<int>(),
                row["kind"].get<std::string>().c_str(), row["shape"].get<std::string>().c_str(),
                row["output"]["scale"].get<double>(), row["output"]["zero_point"].get<int>(),
                row["flash_bytes"].get<size_t>(), row["ram_bytes"].get<size_t>(), more.c_str());
  }
  std::printf("  model output %d %s, scale %.6g  zero point %d\n", m.output_size(),
              m.output_is_one_step() ? "per sequence" : "per time step", m.output_quant().scale,
              m.output_quant().zero_point);
}

}  // namespace

int compile_command(const CompileArgs& args) {
  try {
    const OnnxLstm onnx = import_onnx(args.model);
    std::vector<CalibrationTensor> calibration;
    for (const std::string& path : args.calibration) {
      SequenceTensor t = read_sequences(path, onnx.program.input_size(), onnx.batch_first, false);
      calibration.push_back({std::move(t.values), t.shape});
    }
    ModelCompileOptions mo = model_compile_options(args, onnx);
    mo.warn = [](const std::string& w) { std::fprintf(stderr, "qlstm compile: warning: %s\n", w.c_str()); };
    CompileOptions& o = mo.quantization;
    // A progress indicator on stderr when the set is large: each stage in tenths, redrawn in place
    // on a terminal, one plain line per tenth in a log.
    size_t sequences = 0;
    for (const CalibrationTensor& t : calibration) sequences += static_cast<size_t>(t.shape.batch);
    if (sequences >= kLargeCalibrationSet) {
      o.progress = [last = std::string(), tenth = -1, tty = ::isatty(STDERR_FILENO) == 1](
                       const char* stage, int64_t done, int64_t total) mutable {
        const int now = total > 0 ? static_cast<int>(std::min<int64_t>(10, done * 10 / total)) : 10;
        if (stage == last && now == tenth) return;
        last = stage;
        tenth = now;
        std::fprintf(stderr, "%sqlstm compile: %s %3d%%%s", tty ? "\r" : "", stage, now * 10,
                     !tty || now == 10 ? "\n" : "");
        std::fflush(stderr);
      };
    }
    const ModelCompileResult r = compile_model(onnx, calibration, mo);
    const CompiledModel& m = r.model;
    const std::string& name = m.name;
    // Everything is computed; only now is anything written.
    write_model_files(model_files(m, r.report, mo.batch, r.max_time_steps, args.model), args.outdir);

    std::printf("qlstm compile: %s -> %s/%s.{qlstm, _model.h, _model.cc, _report.json}\n",
                args.model.c_str(), args.outdir.c_str(), name.c_str());
    std::string nodes;
    for (const std::string& n : onnx.node_names) nodes += (nodes.empty() ? "'" : ", '") + n + "'";
    const bool whole = m.lstm_op_count() != static_cast<int32_t>(m.ops.size());  // layers around the LSTMs
    std::printf("  %s %s: %d layer%s%s, input %d, output %d, %s\n", cell_kind_name(onnx.program.ops.front().cell),
                nodes.c_str(), m.layers(),
                m.layers() > 1 ? "s" : "", m.directions == 2 ? " bidirectional" : "", onnx.program.ops.front().input_size,
                m.directions * m.hidden_sizes().back(),
                onnx.unbatched ? "unbatched [T, F]" : onnx.batch_first ? "batch_first" : "sequence-first");
    std::printf("  input  scale %.6g  zero point %d  (%s)\n", m.input_quant().scale, m.input_quant().zero_point,
                r.stats.front().input_observer.c_str());
    size_t lstm = 0;  // the LSTM ops': the calibration stats
    for (const ProgramOp& op : m.ops) {
      if (!op.recurrent()) continue;
      const std::string who = m.lstm_op_count() == 1 ? std::string("") : " [" + lstm_op_label(m, lstm) + "]";
      std::printf("  %s scale %.6g  zero point %d  (%s)%s\n", whole ? "hidden" : "output", op.recurrent_output().scale,
                  op.recurrent_output().zero_point, r.stats[lstm].output_observer.c_str(), who.c_str());
      if (op.gru_op()) {
        std::printf("  state  Q0.15 hidden (a GRU has no cell)%s\n", who.c_str());
      } else {
        const DerivedLstm& d = op.lstm;
        std::printf("  cell   2^%d (%s, observed max |c| %.4g)%s\n", d.cell.power, cell_policy_name(d.cell.policy),
                    d.cell.observed_max_abs, who.c_str());
      }
      const CalibrationStats& st = r.stats[lstm];
      auto names = [](const std::vector<std::string>& v) {
        std::string s;
        for (const std::string& n : v) s += (s.empty() ? "" : ", ") + n;
        return s.empty() ? std::string("none") : s;
      };
      if (st.tuning == Tuning::kSearch && st.score_method == "none") {
        std::printf("  search: %s; upstream's choices where left open%s\n", st.score_note.c_str(), who.c_str());
        std::printf("  kept as given: %s%s\n", names(st.fixed_by_user).c_str(), who.c_str());
      } else if (st.tuning == Tuning::kSearch) {
        std::printf("  search tuned: %s (scored held out, %s of %d folds: %zu sequences, %lld steps)%s\n",
                    names(st.searched).c_str(), st.score_method == "k-fold" ? "k-fold" : "validation groups", st.folds,
                    st.scored_sequences.size(), static_cast<long long>(st.scored_steps), who.c_str());
        std::printf("  kept as given: %s%s\n", names(st.fixed_by_user).c_str(), who.c_str());
      } else {
        std::printf("  search off (--no-search): every option as given%s\n", who.c_str());
      }
      ++lstm;
    }
    if (whole) print_op_table(m, r.report.at("op_table"));
    if (m.initial_hidden != StateSource::kZero || m.initial_cell != StateSource::kZero || m.hidden_output ||
        m.cell_output) {
      std::printf("  state  initial h %s, c %s; final state %s (h_n int8 at each op's output quantization, c_n "
                  "int16 at 2^P)\n", state_source_name(m.initial_hidden), state_source_name(m.initial_cell),
                  m.hidden_output || m.cell_output ? "an output" : "not an output");
    }
    const ProgramMemory& mem = r.memory;
    std::printf("  flash  %zu bytes (weights %zu, biases %zu%s)\n", mem.flash_bytes(), mem.weight_bytes, mem.bias_bytes,
                whole ? (", requantization " + std::to_string(mem.requant_bytes) + ", tables " +
                         std::to_string(mem.table_bytes)).c_str() : "");
    std::printf("  RAM    %zu bytes for batch %d (scratch %zu, state %zu, activations %zu)\n", mem.ram_bytes(),
                mo.batch, mem.scratch_bytes, mem.state_bytes(), 2 * mem.activation_bytes);
    // The figure to expect on new data first; the calibration set's own is optimistic.
    const HeldOutEstimate& h = r.held_out;
    if (h.available()) {
      std::printf("  SQNR   %.2f dB +- %.2f int8 vs float held out (%s: %d folds, %lld sequences; the folds "
                  "spread %.2f dB)\n", h.sqnr_db, h.standard_error_db,
                  h.method == "k-fold" ? "k-fold over the calibration set" : "validation set", h.folds,
                  static_cast<long long>(h.sequences), h.spread_db);
      if (!h.caution.empty()) std::printf("  caution: %s\n", h.caution.c_str());
    } else {
      std::printf("  SQNR   no held-out figure: %s\n", h.note.c_str());
    }
    std::printf("  SQNR   %.2f dB int8 vs float on the calibration set itself (%lld sequences; not held out)\n",
                r.sqnr_db, static_cast<long long>(r.calibration_sequences));
    return 0;
  } catch (const std::exception& e) {
    return error_exit("compile", e);
  }
}

namespace {

// run_program_s8 on the emulated CPU: the whole program in one bundle case, run there by the
// runtime's program runner from *state, which receives the final state.
std::vector<int8_t> run_on_device(const std::string& cpu, const CompiledModel& m, const std::vector<int8_t>& x8,
                                  const SequenceShape& shape, ProgramState* state) {
  const device::Target target = device::find_target(cpu);
  const RuntimeProgram program = runtime_program(m, shape.batch, shape.time_steps, shape.layout);
  device::BundleCase c = device::program_case(m.name.empty() ? "model" : m.name, program.table(), shape.time_steps);
  c.stateful = true;
  c.input = x8.data();
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
  const size_t y_bytes = device::output_count(c), S = state->hidden.size();
  if (bytes.size() != y_bytes + S * (sizeof(int8_t) + sizeof(int16_t))) {
    throw CompileError("the " + cpu + " firmware wrote " + std::to_string(bytes.size()) + " bytes, expected " +
                       std::to_string(y_bytes + S * 3));
  }
  std::vector<int8_t> y(y_bytes);
  std::memcpy(y.data(), bytes.data(), y_bytes);
  std::memcpy(state->hidden.data(), bytes.data() + y_bytes, S);
  std::memcpy(state->cell.data(), bytes.data() + y_bytes + S, S * sizeof(int16_t));
  return y;
}

// What the recurrent ops' states are: LSTMs' (hidden and cell), GRUs' (a hidden state only, Q0.15
// int16 in the cell rows), or both kinds.
enum class StateCells { kLstm, kGru, kMixed };
StateCells state_cells(const CompiledModel& m) {
  bool lstm = false, gru = false;
  for (const ProgramOp& op : m.ops) {
    lstm = lstm || op.kind == QLSTM_OP_LSTM_S8;
    gru = gru || op.gru_op();
  }
  return gru ? (lstm ? StateCells::kMixed : StateCells::kGru) : StateCells::kLstm;
}

// A [ops][B][H] state file: float32 with --float, else int8 (hidden) or int16 (cell, or a GRU's
// Q0.15 hidden).
NpyArray read_state(const std::string& path, const CompiledModel& m, int32_t batch, bool cell, bool float_io) {
  const NpyArray a = read_npy(path);
  const int64_t ops = m.lstm_op_count();
  const int64_t per = static_cast<int64_t>(batch) * m.state_size();
  if (a.element_count() != per || a.shape.empty() || a.shape[0] != ops) {
    std::string s;
    for (int64_t d : a.shape) s += (s.empty() ? "" : ", ") + std::to_string(d);
    throw CompileError(path + ": shape [" + s + "], expected [" + std::to_string(ops) + ", " + std::to_string(batch) +
                       ", " + std::to_string(m.hidden_sizes().front()) + "] (ops x batch x hidden)");
  }
  const DType want = float_io ? DType::kFloat32 : cell ? DType::kInt16 : DType::kInt8;
  if (a.dtype != want) {
    throw CompileError(path + ": dtype " + dtype_name(a.dtype) + ", expected " + dtype_name(want) +
                       (float_io ? "" : " (use --float for float32)"));
  }
  return a;
}

// A float32 [ops][B][H] state file (run --float, eval), each value finite.
std::vector<float> read_float_state(const std::string& path, const CompiledModel& m, int32_t batch, bool cell) {
  std::vector<float> v = read_state(path, m, batch, cell, true).as_float(path);
  for (size_t k = 0; k < v.size(); ++k) {
    if (!std::isfinite(v[k])) throw CompileError(path + ": non-finite state value at index " + std::to_string(k));
  }
  return v;
}

// The final state of every op in float ([ops][B][H]): h by each op's output quantization, c at its 2^P;
// a GRU's h from its Q0.15 cell rows, its c 0.
void dequantize_state(const CompiledModel& m, const ProgramState& s, int32_t batch, std::vector<float>* h,
                      std::vector<float>* c) {
  size_t at = 0;
  for (const ProgramOp* op : lstm_ops(m)) {
    for (size_t e = 0; e < static_cast<size_t>(batch) * static_cast<size_t>(op->hidden_size()); ++e, ++at) {
      if (op->gru_op()) {
        h->push_back(static_cast<float>(std::ldexp(static_cast<double>(s.cell[at]), kGruHiddenPower)));
        c->push_back(0.0f);
        continue;
      }
      h->push_back(static_cast<float>(op->lstm.output.dequantize(s.hidden[at])));
      c->push_back(static_cast<float>(std::ldexp(static_cast<double>(s.cell[at]), op->lstm.cell.power)));
    }
  }
}

// Per LSTM op, the float state values beyond what its int8 hidden (the op's output quantization)
// or int16 cell (2^P) holds: quantizing clips them.
std::vector<RangeCount> state_clipping(const CompiledModel& m, int32_t batch, const std::vector<float>& v, bool cell) {
  std::vector<RangeCount> counts;
  size_t at = 0;
  for (const ProgramOp* op : lstm_ops(m)) {
    // A GRU's h is Q0.15 (its c unused: nothing clipped).
    RangeCount r = op->gru_op() ? cell_range(kGruHiddenPower)
                   : cell       ? cell_range(op->lstm.cell.power)
                                : int8_range(op->lstm.output);
    const size_t n = static_cast<size_t>(batch) * static_cast<size_t>(op->hidden_size());
    for (size_t e = 0; e < n; ++e, ++at) {
      if (!(op->gru_op() && cell)) r.add(v[at]);
    }
    counts.push_back(r);
  }
  return counts;
}

// run --float: a warning per op whose given --h0 or --c0 values were clipped (an int8 or int16
// state file is already in range: nothing to say).
void warn_clipped_state(const CompiledModel& m, int32_t batch, const std::vector<float>& v, const std::string& path,
                        bool cell) {
  const std::vector<RangeCount> counts = state_clipping(m, batch, v, cell);
  for (size_t k = 0; k < counts.size(); ++k) {
    const RangeCount& r = counts[k];
    if (r.outside == 0) continue;
    char range[96];
    if (cell) std::snprintf(range, sizeof range, "exceed the cell range |c| <= %.4g (largest |c| %.4g)", r.hi,
                            std::fabs(r.furthest));
    else std::snprintf(range, sizeof range, "are outside the hidden range [%.4g, %.4g] (furthest %.4g)", r.lo, r.hi,
                       r.furthest);
    std::fprintf(stderr, "qlstm run: warning: %s %s: %zu of %zu values of LSTM op %zu (%s) %s and were clipped\n",
                 cell ? "--c0" : "--h0", path.c_str(), r.outside, r.total, k, lstm_op_label(m, k).c_str(), range);
  }
}

}  // namespace

int run_command(const RunArgs& args) {
  try {
    if (args.chunk > 0 && !args.target.empty()) {
      throw UsageError("--chunk runs on the host only (the device streams through the emitted NAME_stream)");
    }
    if (!args.target.empty()) device::find_target(args.target);  // a bad CPU name first, before any file
    const CompiledModel m = load_model_file(args.model);
    if (m.initial_hidden == StateSource::kInput && args.h0.empty()) {
      throw UsageError(args.model + ": the model takes its initial hidden state as an input: give --h0");
    }
    if (m.initial_cell == StateSource::kInput && args.c0.empty()) {
      throw UsageError(args.model + ": the model takes its initial cell state as an input: give --c0");
    }
    // A GRU has no cell; its state is the Q0.15 hidden, int16 in an int state file.
    const StateCells cells = state_cells(m);
    if (cells != StateCells::kLstm && !(args.c0.empty() && args.c_n.empty())) {
      throw UsageError(args.model + ": " + (args.c0.empty() ? "--c-n" : "--c0") +
                       ": the model's recurrent ops are GRUs, which have no cell state");
    }
    if (cells == StateCells::kMixed && !args.float_io && !(args.h0.empty() && args.h_n.empty())) {
      throw UsageError(args.model + ": --h0/--h-n: the model mixes LSTM and GRU ops, whose int states differ "
                       "(int8, Q0.15 int16): use --float");
    }
    const bool gru_state = cells == StateCells::kGru;
    const SequenceTensor x = read_sequences(args.input, m.input_size(), m.batch_first, !args.float_io);
    const std::vector<int8_t> x8 = args.float_io ? quantize_input(m, x, args.input) : x.values_s8;
    const int32_t B = x.shape.batch;
    ProgramState state = initial_program_state(m, B);
    if (!args.h0.empty() || !args.c0.empty()) {
      std::vector<float> hf, cf;
      if (!args.h0.empty()) {
        if (args.float_io) {
          hf = read_float_state(args.h0, m, B, false);
        } else if (gru_state) {  // Q0.15 int16, the GRU ops' state rows
          const NpyArray a = read_state(args.h0, m, B, true, false);
          std::memcpy(state.cell.data(), a.bytes.data(), a.bytes.size());
        } else {
          state.hidden = read_state(args.h0, m, B, false, false).as_int8(args.h0);
        }
      }
      if (!args.c0.empty()) {
        if (args.float_io) {
          cf = read_float_state(args.c0, m, B, true);
        } else {
          const NpyArray a = read_state(args.c0, m, B, true, false);
          state.cell.resize(a.bytes.size() / sizeof(int16_t));
          std::memcpy(state.cell.data(), a.bytes.data(), a.bytes.size());
        }
      }
      if (args.float_io) {
        // The given values over the model's own initial state (a GRU op's h is in the cell rows).
        state = quantize_program_state(m, B, hf.empty() ? nullptr : &hf, cf.empty() ? nullptr : &cf, "--h0/--c0");
        if (!hf.empty()) warn_clipped_state(m, B, hf, args.h0, false);
        if (!cf.empty()) warn_clipped_state(m, B, cf, args.c0, true);
      }
    }
    const std::vector<int8_t> y8 = !args.target.empty() ? run_on_device(args.target, m, x8, x.shape, &state)
                                   : args.chunk > 0 ? run_program_s8_streamed(m, x8, x.shape, args.chunk, &state)
                                                    : run_program_s8(m, x8, x.shape, &state);
    const std::vector<int64_t> shape = output_shape(m, x);
    // Every output is computed before any is written.
    const std::vector<int64_t> state_shape = {m.lstm_op_count(), B, m.hidden_sizes().front()};
    std::vector<float> hn, cn;
    if (args.float_io) {
      const std::vector<float> y = dequantize_output(m, y8);
      dequantize_state(m, state, B, &hn, &cn);
      write_npy_float32(args.output, shape, y);
      if (!args.h_n.empty()) write_npy_float32(args.h_n, state_shape, hn);
      if (!args.c_n.empty()) write_npy_float32(args.c_n, state_shape, cn);
    } else {
      write_npy_int8(args.output, shape, y8);
      if (!args.h_n.empty() && gru_state) write_npy(args.h_n, DType::kInt16, state_shape, state.cell.data());
      if (!args.h_n.empty() && !gru_state) write_npy_int8(args.h_n, state_shape, state.hidden);
      if (!args.c_n.empty()) write_npy(args.c_n, DType::kInt16, state_shape, state.cell.data());
    }
    std::string dims;
    for (int64_t d : shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    std::printf("qlstm run: wrote %s: %s [%s]%s\n", args.output.c_str(), args.float_io ? "float32" : "int8",
                dims.c_str(), m.output_is_one_step() ? " (one row per sequence)" : "");
    return 0;
  } catch (const std::exception& e) {
    return error_exit("run", e);
  }
}

namespace {

// A small self-contained SVG: float against int8 for one sequence's first output unit over time
// (an output per step) or its H outputs (one_step: one row per sequence); and the histogram of
// all errors.
std::string svg_plot(const std::vector<float>& ref, const std::vector<float>& got, const SequenceShape& s,
                     int32_t H, bool one_step, const std::string& title) {
  const int W = 780, Hh = 260, pad = 60;
  const int points = one_step ? H : s.time_steps;
  auto at = [&](int t) {
    if (one_step) return static_cast<size_t>(t);
    const size_t row = s.layout == Layout::kBatchMajor ? static_cast<size_t>(t) : static_cast<size_t>(t) * s.batch;
    return row * static_cast<size_t>(H);
  };
  float lo = 0, hi = 0;
  for (int t = 0; t < points; ++t) {
    lo = std::min({lo, ref[at(t)], got[at(t)]});
    hi = std::max({hi, ref[at(t)], got[at(t)]});
  }
  if (hi <= lo) hi = lo + 1;
  auto xpos = [&](int t) { return pad + (W - 2 * pad) * (points > 1 ? t / double(points - 1) : 0.0); };
  auto ypos = [&](float v) { return pad + (Hh - 2 * pad) * (1.0 - (v - lo) / (hi - lo)); };
  std::string o = "<svg xmlns='http://www.w3.org/2000/svg' width='" + std::to_string(W) + "' height='" +
                  std::to_string(2 * Hh) + "' font-family='sans-serif' font-size='12'>\n";
  o += "<rect width='100%' height='100%' fill='white'/>\n<text x='" + std::to_string(pad) + "' y='20'>" + title +
       (one_step ? ": sequence 0, its outputs" : ": sequence 0, unit 0") + " (blue float, red int8)</text>\n";
  for (const auto& [v, color] : {std::pair<const std::vector<float>*, const char*>{&ref, "#1f77b4"}, {&got, "#d62728"}}) {
    o += "<polyline fill='none' stroke='" + std::string(color) + "' stroke-width='1.5' points='";
    for (int t = 0; t < points; ++t) o += std::to_string(xpos(t)) + "," + std::to_string(ypos((*v)[at(t)])) + " ";
    o += "'/>\n";
  }
  // Axis labels: the value range and the time steps.
  auto text = [&](double x, double y, const std::string& t, const char* anchor) {
    char b[64];
    std::snprintf(b, sizeof b, "<text x='%.1f' y='%.1f' text-anchor='%s'>", x, y, anchor);
    o += b + t + "</text>\n";
  };
  char v[32];
  std::snprintf(v, sizeof v, "%.3g", hi);
  text(pad - 4, ypos(hi) + 4, v, "end");
  std::snprintf(v, sizeof v, "%.3g", lo);
  text(pad - 4, ypos(lo) + 4, v, "end");
  const char* axis = one_step ? "output " : "t = ";
  text(xpos(0), Hh - pad + 16, axis + std::string("0"), "start");
  text(xpos(points - 1), Hh - pad + 16, axis + std::to_string(points - 1), "end");
  // Error histogram.
  constexpr int kBins = 41;
  double emax = 0;
  for (size_t k = 0; k < ref.size(); ++k) emax = std::max(emax, std::fabs(double(ref[k]) - got[k]));
  if (emax == 0) emax = 1;
  std::vector<int> bins(kBins, 0);
  for (size_t k = 0; k < ref.size(); ++k) {
    const double e = (double(got[k]) - ref[k]) / emax;  // [-1, 1]
    bins[static_cast<size_t>(std::clamp(static_cast<int>((e + 1) / 2 * (kBins - 1) + 0.5), 0, kBins - 1))]++;
  }
  const int peak = *std::max_element(bins.begin(), bins.end());
  o += "<text x='" + std::to_string(pad) + "' y='" + std::to_string(Hh + 20) + "'>error int8 - float, all values (range +-" +
       std::to_string(emax) + ")</text>\n";
  const double bw = (W - 2.0 * pad) / kBins;
  for (int b = 0; b < kBins; ++b) {
    const double h = (Hh - 2.0 * pad) * bins[static_cast<size_t>(b)] / std::max(peak, 1);
    o += "<rect x='" + std::to_string(pad + b * bw) + "' y='" + std::to_string(2 * Hh - pad - h) + "' width='" +
         std::to_string(bw - 1) + "' height='" + std::to_string(h) + "' fill='#555'/>\n";
  }
  text(pad, 2 * Hh - pad + 16, "-" + std::to_string(emax).substr(0, 7), "start");
  text(W - pad, 2 * Hh - pad + 16, "+" + std::to_string(emax).substr(0, 7), "end");
  return o + "</svg>\n";
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
  dequantize_state(m, s, batch, &h, &c);
  std::vector<ComparedOutput> hs, cs;
  const std::vector<const ProgramOp*> ops = lstm_ops(m);
  size_t at = 0;
  for (size_t k = 0; k < ops.size(); ++k) {
    const DerivedLstm& d = ops[k]->lstm;
    const auto from = static_cast<ptrdiff_t>(at), to = from + batch * ops[k]->hidden_size();
    auto slice = [&](const std::vector<float>& v) { return std::vector<float>(v.begin() + from, v.begin() + to); };
    const std::string who = " (" + lstm_op_label(m, k) + ")";
    const int32_t op = static_cast<int32_t>(k);
    const double h_step = ops[k]->gru_op() ? std::ldexp(1.0, kGruHiddenPower) : d.output.scale;
    if (m.hidden_output) hs.push_back(compare_output("h_n", "h_n" + who, op, slice(f.h_n), slice(h), h_step));
    if (m.cell_output) {
      cs.push_back(compare_output("c_n", "c_n" + who, op, slice(f.c_n), slice(c), std::ldexp(1.0, d.cell.power)));
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
  bool any() const {
    bool state = false;
    for (size_t k = 0; k < cell.size(); ++k) state = state || cell[k].outside > 0 || hidden[k].outside > 0;
    return state || input.outside > 0 || output.outside > 0;
  }
};

Saturation saturation_ranges(const CompiledModel& m) {
  Saturation s;
  s.input = int8_range(m.input_quant());
  s.output = int8_range(m.output_quant());
  s.output_fixed = m.ops.back().kind == QLSTM_OP_SOFTMAX_S8;
  for (const ProgramOp* op : lstm_ops(m)) {
    s.has_cell.push_back(!op->gru_op());
    s.cell.push_back(op->gru_op() ? RangeCount{} : cell_range(op->lstm.cell.power));
    s.hidden.push_back(int8_range(op->recurrent_output()));
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

EvalState eval_state(const EvalArgs& args, const CompiledModel& m, int32_t batch) {
  EvalState s;
  if (!args.c0.empty() && state_cells(m) != StateCells::kLstm) {
    throw UsageError(args.c0 + ": --c0: the model's recurrent ops are GRUs, which have no cell state");
  }
  if (!args.h0.empty()) s.h0 = read_float_state(args.h0, m, batch, false);
  if (!args.c0.empty()) s.c0 = read_float_state(args.c0, m, batch, true);
  const bool zero_h = m.initial_hidden == StateSource::kInput && args.h0.empty();
  const bool zero_c = m.initial_cell == StateSource::kInput && args.c0.empty();
  s.json = {{"h0", args.h0.empty() ? (zero_h ? "zero" : "model") : args.h0},
            {"c0", args.c0.empty() ? (zero_c ? "zero" : "model") : args.c0}};
  if (zero_h && zero_c) {
    s.line = "  state inputs not given: both run from a zero state\n";
  } else if (zero_h || zero_c) {
    s.line = std::string("  state input ") + (zero_h ? "h0" : "c0") + " not given: both run from a zero " +
             (zero_h ? "hidden" : "cell") + " state\n";
  }
  if (!args.h0.empty() || !args.c0.empty()) {
    s.line += "  initial state given for both runs:" + (args.h0.empty() ? "" : " --h0 " + args.h0) +
              (args.c0.empty() ? "" : " --c0 " + args.c0) + "\n";
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
  r.got = dequantize_output(m, run_program_s8(m, quantize_input(m, x, data_path), x.shape, &r.state));
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

void report_classifier(const ClassifierScores& c, bool labelled, std::string* text, nlohmann::json* j) {
  const double n = static_cast<double>(c.rows);
  nlohmann::json& e = (*j)["classifier"];
  e = {{"sequences", c.rows}, {"agree", c.agree}, {"argmax_agreement", static_cast<double>(c.agree) / n}};
  if (labelled) {
    appendf(text, "  top-1 accuracy on %zu labelled sequences: float %.2f %%, int8 %.2f %%\n", c.rows,
            100.0 * c.float_correct / n, 100.0 * c.int8_correct / n);
    e["float_top1"] = static_cast<double>(c.float_correct) / n;
    e["int8_top1"] = static_cast<double>(c.int8_correct) / n;
  }
  appendf(text, "  argmax agreement int8 vs float: %.2f %% (%zu of %zu)\n", 100.0 * c.agree / n, c.agree, c.rows);
}

void report_forecast(const ForecastError& f, const ForecastError& q, const std::string& path, size_t values,
                     const OutputUnits& units, std::string* text, nlohmann::json* j) {
  appendf(text, "  forecast error against %s (%zu values), in %s: float MAE %.3f RMSE %.3f, int8 MAE %.3f RMSE %.3f\n",
          path.c_str(), values, units.name.c_str(), f.mae, f.rmse, q.mae, q.rmse);
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
  appendf(text, "  saturation (float values outside the calibrated ranges, clipped by the int8 model):\n");
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
  e["any"] = s.any();
  if (s.any()) {
    appendf(text, "  hint: the held-out data exceeds the calibration range: calibrate on data that covers it\n");
  }
}

}  // namespace

int eval_command(const EvalArgs& args) {
  try {
    if (!args.units.empty() && args.targets.empty()) {
      throw UsageError("--units converts the forecast error against --targets: give --targets too");
    }
    const OutputUnits units = args.units.empty() ? OutputUnits() : read_output_units(args.units);
    const OnnxLstm onnx = import_onnx(args.onnx);
    const CompiledModel m = load_model_file(args.model);
    if (m.input_size() != onnx.program.input_size() || m.output_size() != onnx.program.output_size() ||
        static_cast<size_t>(m.lstm_op_count()) != onnx.program.ops.size() || m.batch_first != onnx.batch_first ||
        m.hidden_output != onnx.program.hidden_output || m.cell_output != onnx.program.cell_output) {
      throw CompileError(args.model + ": does not match " + args.onnx + " (sizes, layers, layout or outputs)");
    }
    size_t k = 0;  // the recurrent ops, in the ONNX program's order
    for (const ProgramOp& op : m.ops) {
      if (!op.recurrent()) continue;
      const CellKind cell = onnx.program.ops[k].cell;
      if (op.gru_op() != (cell == CellKind::kGru)) {
        throw CompileError(args.model + ": recurrent op " + std::to_string(k) + " is " +
                           (op.gru_op() ? "a GRU" : "an LSTM") + ", in " + args.onnx + " it is " +
                           (cell == CellKind::kGru ? "a GRU" : "an LSTM"));
      }
      ++k;
    }
    const SequenceTensor x = read_sequences(args.data, m.input_size(), onnx.batch_first, false);
    const int32_t W = m.output_size(), B = x.shape.batch, T = x.shape.time_steps;
    const bool one_step = m.output_is_one_step();
    const bool classifier = one_step && W >= 2;
    if (!args.labels.empty() && !classifier) {
      throw UsageError("--labels: " + args.model + " is not a classifier: its output is " +
                       (one_step ? std::string("one value per sequence")
                                 : W == 1 ? std::string("one value per time step")
                                          : std::to_string(W) + " values per time step") +
                       "; labels need one row of class scores per sequence (for a forecaster give --targets)");
    }
    // Every input file is read and checked before anything runs.
    const std::vector<int64_t> shape = output_shape(m, x);
    const std::vector<int64_t> labels = args.labels.empty() ? std::vector<int64_t>() : read_labels(args.labels, B, W);
    const std::vector<float> targets = args.targets.empty() ? std::vector<float>() : read_targets(args.targets, shape);
    const EvalState st = eval_state(args, m, B);

    const EvalRuns r = run_both(onnx, m, x, st, args.data);
    const std::vector<float>& ref = r.ref.output;
    std::string text;
    nlohmann::json j = {{"model", args.model}, {"onnx", args.onnx},     {"data", args.data},
                        {"sequences", B},      {"time_steps", T},       {"initial_state", st.json},
                        {"output_values", W},  {"output_per", one_step ? "sequence" : "time step"}};
    appendf(&text, "qlstm eval: %s vs %s on %s (%d sequences x %d steps)\n", args.model.c_str(), args.onnx.c_str(),
            args.data.c_str(), B, T);
    text += st.line;
    appendf(&text, "  output: %d value%s %s\n", W, W == 1 ? "" : "s", one_step ? "per sequence" : "per time step");
    std::vector<ComparedOutput> outs = {compare_output("y", "output y", -1, ref, r.got, m.output_quant().scale)};
    for (ComparedOutput& o : compare_state(m, B, r.ref, r.state)) outs.push_back(std::move(o));
    report_outputs(outs, &text, &j);
    if (!one_step) {
      report_per_step(rms_error_per_step(ref, r.got, B, T, W, x.shape.layout == Layout::kTimeMajor), &text, &j);
    }
    if (classifier) report_classifier(score_classifier(ref, r.got, W, labels), !labels.empty(), &text, &j);
    if (!targets.empty()) {
      report_forecast(forecast_error(ref, targets, units), forecast_error(r.got, targets, units), args.targets,
                      targets.size(), units, &text, &j);
    }
    report_saturation(m, r.saturation, &text, &j);
    // The files first: on an error nothing is printed but the error.
    if (!args.plot.empty()) {
      write_file_atomically(args.plot, svg_plot(ref, r.got, x.shape, W, one_step, m.name));
      appendf(&text, "  plot: %s\n", args.plot.c_str());
    }
    if (!args.json.empty()) {
      write_file_atomically(args.json, j.dump(1) + "\n");
      appendf(&text, "  json: %s\n", args.json.c_str());
    }
    std::fputs(text.c_str(), stdout);
    return 0;
  } catch (const std::exception& e) {
    return error_exit("eval", e);
  }
}

}  // namespace cli
}  // namespace qlstm
