// qlstm compile / qlstm run.
#include "compile_cmd.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "qlstm/compiler/compile.h"
#include "qlstm/compiler/artifacts/emit_cpp.h"
#include "qlstm/compiler/artifacts/model_file.h"
#include "qlstm/compiler/ops/op_kind.h"
#include "qlstm/compiler/io/npy.h"
#include "qlstm/compiler/import/onnx_import.h"
#include "qlstm/compiler/program/program.h"
#include "qlstm/compiler/lower/compile_program.h"
#include "qlstm/compiler/io/file_io.h"
#include "qlstm/kernels.h"
#include "device.h"
#include "eval_metrics.h"
#include "exit_status.h"
#include "run_eval.h"

namespace qlstm {
namespace cli {
namespace {

namespace fs = std::filesystem;
using namespace qlstm::compiler;

// The program of a whole model, one line per op as the report's "op_table" has it: kind, shape
// ([T, W] a sequence, [1, W] one step per batch row), its output's quantization, flash bytes and
// the RAM of the buffer it writes; then the model's output.
void print_op_table(const CompiledModel& m, const nlohmann::json& table) {
  std::printf("  program: %zu ops (kind, shape, output scale / zero point, flash, RAM of its output)\n", table.size());
  for (const nlohmann::json& row : table) {
    std::string more;
    if (row.contains("output_steps") && row["output_steps"] == "final") more = ", the last step only";
    if (row.contains("output_steps") && row["output_steps"] == "first") more = ", one step (the last time step)";
    if (row.contains("direction") && row["direction"] == "reverse") more += ", reverse";
    if (row.contains("gate_activation")) more += ", " + row["gate_activation"].get<std::string>() + " gates";
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
  const int32_t rows = m.output_rows();
  const std::string size = rows > 1 ? std::to_string(rows) + " steps x " + std::to_string(m.output_size() / rows)
                                    : std::to_string(m.output_size());
  std::printf("  model output %s %s, scale %.6g  zero point %d\n", size.c_str(),
              m.output_is_one_step() ? "per sequence" : "per time step", m.output_quant().scale,
              m.output_quant().zero_point);
}

// A progress indicator on stderr when the set is large: each stage in tenths, redrawn in place on
// a terminal, one plain line per tenth in a log. Null for a small set.
ProgressFn progress_indicator(const std::vector<CalibrationTensor>& calibration) {
  size_t sequences = 0;
  for (const CalibrationTensor& t : calibration) sequences += static_cast<size_t>(t.shape.batch);
  if (sequences < kLargeCalibrationSet) return nullptr;
  return [last = std::string(), tenth = -1, tty = ::isatty(STDERR_FILENO) == 1](
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

// The model's recurrent layers, its edges' quantization and the activations' width.
void print_model_summary(const OnnxLstm& onnx, const ModelCompileResult& r, const ModelCompileOptions& mo) {
  const CompiledModel& m = r.model;
  std::string nodes;
  for (const std::string& n : onnx.node_names) nodes += (nodes.empty() ? "'" : ", '") + n + "'";
  std::printf("  %s %s: %d layer%s%s, input %d, output %d, %s\n", cell_kind_name(onnx.program.ops.front().cell),
              nodes.c_str(), m.layers(),
              m.layers() > 1 ? "s" : "", m.directions == 2 ? " bidirectional" : "", onnx.program.ops.front().input_size,
              m.directions * m.hidden_sizes().back(),
              onnx.unbatched ? "unbatched [T, F]" : onnx.batch_first ? "batch_first" : "sequence-first");
  for (const std::string& note : onnx.notes) std::printf("  %s\n", note.c_str());
  if (onnx.output_squeezes_features) {
    std::printf("  output keeps the size-1 feature axis the ONNX model squeezes away (%s for %s): the same "
                "values in the same order\n",
                m.output_is_one_step() ? "[B, 1]" : "[B, T, 1]", m.output_is_one_step() ? "[B]" : "[B, T]");
  }
  if (onnx.output_squeezes_batch) {
    std::printf("  output keeps the batch axis the ONNX model (exported with a batch of 1) squeezes away: one row "
                "per batch row, for any batch\n");
  }
  if (m.has_s16()) {
    std::printf("  activations int16 (16x8: int16 activations and state, int8 weights; int16 ranges %d bits "
                "above max |v|, an LSTM's output at most 1)\n",
                mo.quantization.s16_headroom_bits);
  }
  if (m.token_ids()) {
    std::printf("  input  token ids, int32, [0, %d) (the embedding's rows; an id outside them is refused at run time)\n",
                m.ops.front().as<DerivedEmbedding>().table_rows);
  } else {
    std::printf("  input  scale %.6g  zero point %d  (%s)\n", m.input_quant().scale, m.input_quant().zero_point,
                !m.has_s16() ? r.stats.front().input_observer.c_str() : "16x8: max |x| and headroom");
  }
}

// Each recurrent op's output quantization, state format and what the search did.
void print_recurrent_ops(const ModelCompileResult& r, bool whole) {
  const CompiledModel& m = r.model;
  size_t lstm = 0;  // the LSTM ops': the calibration stats
  for (const ProgramOp& op : m.ops) {
    if (!op.recurrent()) continue;
    const std::string who = m.lstm_op_count() == 1 ? std::string("") : " [" + lstm_op_label(m, lstm) + "]";
    const RecurrentState& state = recurrent_state(op);
    std::printf("  %s scale %.6g  zero point %d  (%s)%s\n", whole ? "hidden" : "output", op.recurrent_output().scale,
                op.recurrent_output().zero_point,
                state.output_observer ? state.output_observer : r.stats[lstm].output_observer.c_str(), who.c_str());
    std::printf("  %s%s\n", state.summary_state(op).c_str(), who.c_str());
    nlohmann::json row;  // the op table's columns (only some kinds print a table)
    if (const OpKind* kind = find_op_kind(op.kind)) kind->report(op, &row);
    if (row.contains("gate_activation")) {
      std::printf("  gates  forget, input, output %s; cell tanh%s\n", row["gate_activation"].get<std::string>().c_str(),
                  who.c_str());
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
}

// The op table, the state's sources, flash, RAM and the SQNR figures.
void print_program_summary(const ModelCompileResult& r, const ModelCompileOptions& mo, bool whole) {
  const CompiledModel& m = r.model;
  if (whole) print_op_table(m, r.report.at("op_table"));
  if (m.initial_hidden != StateSource::kZero || m.initial_cell != StateSource::kZero || m.hidden_output ||
      m.cell_output) {
    std::printf("  state  initial h %s, c %s; final state %s (h_n %s at each op's output quantization, c_n "
                "int16 at 2^P)\n", state_source_name(m.initial_hidden), state_source_name(m.initial_cell),
                m.hidden_output || m.cell_output ? "an output" : "not an output", !m.has_s16() ? "int8" : "int16");
  }
  const ProgramMemory& mem = r.memory;
  std::printf("  flash  %zu bytes (weights %zu, biases %zu%s)\n", mem.flash_bytes(), mem.weight_bytes, mem.bias_bytes,
              whole ? (", requantization " + std::to_string(mem.requant_bytes) + ", tables " +
                       std::to_string(mem.table_bytes)).c_str() : "");
  std::printf("  RAM    %zu bytes for batch %d (scratch %zu, state %zu, activations %zu)\n", mem.ram_bytes(),
              mo.batch, mem.scratch_bytes, mem.state_bytes(), 2 * mem.activation_bytes);
  // The figure to expect on new data first; the calibration set's own is optimistic.
  const HeldOutEstimate& h = r.held_out;
  const char* mode = !m.has_s16() ? "int8" : "16x8";
  if (h.available()) {
    std::printf("  SQNR   %.2f dB +- %.2f %s vs float held out (%s: %d folds, %lld sequences; the folds "
                "spread %.2f dB)\n", h.sqnr_db, h.standard_error_db, mode,
                h.method == "k-fold" ? "k-fold over the calibration set" : "validation set", h.folds,
                static_cast<long long>(h.sequences), h.spread_db);
    if (!h.caution.empty()) std::printf("  caution: %s\n", h.caution.c_str());
  } else {
    std::printf("  SQNR   no held-out figure: %s\n", h.note.c_str());
  }
  std::printf("  SQNR   %.2f dB %s vs float on the calibration set itself (%lld sequences; not held out)\n",
              r.sqnr_db, mode, static_cast<long long>(r.calibration_sequences));
}

}  // namespace

// The report's runtime_code: the runtime's code a firmware of the model's emitted source keeps on
// the target, from its kinds' probes (device::runtime_code_bytes).
nlohmann::json runtime_code(const device::Target& t, const CompiledModel& m) {
  std::vector<int32_t> kinds;
  nlohmann::json names = nlohmann::json::array();
  for (const ProgramOp& op : m.ops) {
    if (std::find(kinds.begin(), kinds.end(), op.kind) != kinds.end()) continue;
    kinds.push_back(op.kind);
    names.push_back(op_kind_name(op.kind));
  }
  return {{"cpu", t.cpu},
          {"bytes", device::runtime_code_bytes(t, kinds)},
          {"kinds", names},
          {"what", "code (.text) the runtime library adds to a firmware of the emitted source built as "
                   "examples/firmware builds it (the CPU's best variants), measured from the host build's "
                   "kind probes (targets/cortex-m/firmware/kind_probe.cc); const data left out"}};
}

int compile_command(const CompileArgs& args) {
  try {
    if (!args.target.empty()) device::find_target(args.target);  // an unknown CPU fails before any work
    const OnnxLstm onnx = import_onnx(args.model);
    std::vector<CalibrationTensor> calibration;
    for (const std::string& path : args.calibration) {
      SequenceTensor t = read_sequences(path, onnx.program.input_size(), onnx.batch_first, false, model_input_type(onnx));
      calibration.push_back({std::move(t.values), t.shape});
    }
    ModelCompileOptions mo = model_compile_options(args, onnx);
    mo.warn = [](const std::string& w) { std::fprintf(stderr, "qlstm compile: warning: %s\n", w.c_str()); };
    mo.quantization.progress = progress_indicator(calibration);
    const ModelCompileResult r = compile_model(onnx, calibration, mo);
    const CompiledModel& m = r.model;
    nlohmann::json report = r.report;
    if (!args.target.empty()) report["runtime_code"] = runtime_code(device::find_target(args.target), m);
    // Everything is computed; only now is anything written.
    write_model_files(model_files(m, report, mo.batch, r.max_time_steps, args.model), args.outdir);

    std::printf("qlstm compile: %s -> %s/%s.{qlstm, _model.h, _model.cc, _report.json}\n",
                args.model.c_str(), args.outdir.c_str(), m.name.c_str());
    const bool whole = m.lstm_op_count() != static_cast<int32_t>(m.ops.size());  // layers around the LSTMs
    print_model_summary(onnx, r, mo);
    print_recurrent_ops(r, whole);
    print_program_summary(r, mo, whole);
    if (report.contains("runtime_code")) {
      const nlohmann::json& rc = report.at("runtime_code");
      std::printf("  runtime code on %s: %lld bytes (the runtime's code a firmware of %s_model.cc keeps there)\n",
                  rc.at("cpu").get<std::string>().c_str(), static_cast<long long>(rc.at("bytes").get<int64_t>()),
                  m.name.c_str());
    }
    return 0;
  } catch (const std::exception& e) {
    return error_exit("compile", e);
  }
}

int run_command(const RunArgs& args) {
  try {
    RunRequest req;
    req.model_name = args.model;
    req.input_name = args.input;
    req.float_io = args.float_io;
    req.target = args.target;
    req.chunk = args.chunk;
    req.h0_name = args.h0;
    req.c0_name = args.c0;
    req.want_h_n = !args.h_n.empty();
    req.want_c_n = !args.c_n.empty();
    req.warn = [](const std::string& w) { std::fprintf(stderr, "qlstm run: warning: %s\n", w.c_str()); };
    // The usage checks first: a bad CPU name before any file, the state flags before the input.
    check_run_flags(req);
    if (!args.target.empty()) device::find_target(args.target);
    const CompiledModel m = load_model_file(args.model);
    // check_run_request asks whether a state was given: any array stands for the file until it is read.
    NpyArray h0, c0;
    req.h0 = args.h0.empty() ? nullptr : &h0;
    req.c0 = args.c0.empty() ? nullptr : &c0;
    check_run_request(m, req);
    req.x = read_sequences(args.input, m.input_size(), m.batch_first, !args.float_io, m.buffers.front().type);
    if (!args.h0.empty()) h0 = read_npy(args.h0);
    if (!args.c0.empty()) c0 = read_npy(args.c0);
    const RunOutput out = run_model(m, req);
    // Every output is computed before any is written.
    if (args.float_io) {
      write_npy_float32(args.output, out.shape, out.y);
    } else {
      write_npy(args.output, out.y_int.dtype, out.y_int.shape, out.y_int.bytes.data());
    }
    if (!args.h_n.empty()) write_npy(args.h_n, out.h_n.dtype, out.h_n.shape, out.h_n.bytes.data());
    if (!args.c_n.empty()) write_npy(args.c_n, out.c_n.dtype, out.c_n.shape, out.c_n.bytes.data());
    std::string dims;
    for (int64_t d : out.shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    std::printf("qlstm run: wrote %s: %s [%s]%s\n", args.output.c_str(),
                args.float_io ? "float32" : out.y_int.dtype == DType::kInt16 ? "int16" : "int8",
                dims.c_str(), !m.output_is_one_step() ? ""
                : m.output_rows() > 1 ? (" (" + std::to_string(m.output_rows()) + " steps per sequence)").c_str()
                                      : " (one row per sequence)");
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

}  // namespace

int eval_command(const EvalArgs& args) {
  try {
    if (!args.units.empty() && args.targets.empty()) {
      throw UsageError("--units converts the forecast error against --targets: give --targets too");
    }
    EvalRequest req;
    req.model_name = args.model;
    req.onnx_name = args.onnx;
    req.data_name = args.data;
    req.units = args.units.empty() ? OutputUnits() : read_output_units(args.units);
    const OnnxLstm onnx = import_onnx(args.onnx);
    const CompiledModel m = load_model_file(args.model);
    check_eval_pair(onnx, m, args.model, args.onnx);
    req.x = read_sequences(args.data, m.input_size(), onnx.batch_first, false, m.buffers.front().type);
    if (!args.labels.empty()) check_labels_usable(m, args.model);
    // Every input file is read and checked before anything runs.
    const int32_t B = req.x.shape.batch;
    if (!args.labels.empty()) req.labels = read_labels(args.labels, B, m.output_size());
    if (!args.targets.empty()) req.targets = read_targets(args.targets, output_shape(m, req.x));
    req.targets_name = args.targets;
    if (!args.c0.empty()) check_c0_usable(m, args.c0, req.names);
    NpyArray h0, c0;
    if (!args.h0.empty()) h0 = read_npy(args.h0);
    if (!args.c0.empty()) c0 = read_npy(args.c0);
    req.h0 = args.h0.empty() ? nullptr : &h0;
    req.c0 = args.c0.empty() ? nullptr : &c0;
    req.h0_name = args.h0;
    req.c0_name = args.c0;
    Evaluation ev = evaluate(onnx, m, req);
    // The files first: on an error nothing is printed but the error.
    if (!args.plot.empty()) {
      write_file_atomically(args.plot,
                            svg_plot(ev.ref, ev.got, req.x.shape, m.output_size(), m.output_is_one_step(), m.name));
      ev.text += "  plot: " + args.plot + "\n";
    }
    if (!args.json.empty()) {
      write_file_atomically(args.json, ev.json.dump(1) + "\n");
      ev.text += "  json: " + args.json + "\n";
    }
    std::fputs(ev.text.c_str(), stdout);
    return 0;
  } catch (const std::exception& e) {
    return error_exit("eval", e);
  }
}

}  // namespace cli
}  // namespace qlstm
