#include "qlstm/compiler/compile.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "qlstm/compiler/lower/quantized_lstm_s16.h"
#include "qlstm/compiler/ops/op_kind.h"
#include "qlstm/kernels.h"

namespace qlstm {
namespace compiler {
namespace {

using nlohmann::json;

json quant_json(const AffineQuant& q) { return {{"scale", q.scale}, {"zero_point", q.zero_point}}; }

json search_json(const CalibrationStats& st) {
  auto db = [](double v) { return std::isfinite(v) ? json(v) : json(v > 0 ? "inf" : "-inf"); };
  json j = {{"tuning", tuning_name(st.tuning)}, {"evaluations", st.evaluations},
            {"scored_on", st.score_method}, {"start_sqnr_db", db(st.start_sqnr_db)},
            {"final_sqnr_db", db(st.final_sqnr_db)}, {"searched", st.searched}, {"fixed_by_user", st.fixed_by_user}};
  if (!st.score_note.empty()) j["note"] = st.score_note;
  if (st.folds > 0) j["folds"] = st.folds;
  if (st.tuning == Tuning::kSearch) {
    // Which sequences were scored: how many, their steps, and the first and last index (an even
    // stride over the whole set between them).
    j["scored_sequences"] = st.scored_sequences.size();
    j["scored_steps"] = st.scored_steps;
    if (!st.scored_sequences.empty()) {
      j["scored_first_last"] = {st.scored_sequences.front(), st.scored_sequences.back()};
    }
  }
  return j;
}

// The compiled program (int8 or 16x8) against float on the calibration tensors, from the model's initial state. The float side
// is calibration's own float pass (float_outputs, one per sequence, in the tensors' order),
// arranged in each tensor's layout.
double calibration_sqnr(const QuantizedProgram& q, const CompiledModel& m,
                        const std::vector<CalibrationTensor>& calibration) {
  const size_t W = static_cast<size_t>(m.output_size());
  std::vector<float> ref, got;
  size_t first = 0;  // the tensor's first sequence
  for (const CalibrationTensor& t : calibration) {
    // A one-step output (a last-step or h_n head): one position per sequence.
    const size_t B = static_cast<size_t>(t.shape.batch),
                 T = m.output_is_one_step() ? 1 : static_cast<size_t>(t.shape.time_steps);
    const size_t at = ref.size();
    ref.resize(at + B * T * W);
    for (size_t b = 0; b < B; ++b) {
      const std::vector<float>& y = q.float_outputs.at(first + b);
      for (size_t s = 0; s < T; ++s) {
        const size_t row = t.shape.layout == Layout::kTimeMajor ? s * B + b : b * T + s;
        std::copy_n(y.begin() + static_cast<ptrdiff_t>(s * W), W, ref.begin() + static_cast<ptrdiff_t>(at + row * W));
      }
    }
    first += B;
    const std::vector<float> y = run_program_float(m, t.values, t.shape);
    got.insert(got.end(), y.begin(), y.end());
  }
  return sqnr_db(ref, got);
}

// The accuracy the report states: measured on sequences the derivation did not see.
json held_out_json(const HeldOutEstimate& e, const ModelCompileOptions& options) {
  auto db = [](double v) { return std::isfinite(v) ? json(v) : json(v > 0 ? "inf" : "-inf"); };
  if (!e.available()) return {{"method", "none"}, {"note", e.note}};
  json folds = json::array();
  for (double v : e.fold_sqnr_db) folds.push_back(db(v));
  json j = {{"method", e.method}, {"sqnr_db", db(e.sqnr_db)}, {"standard_error_db", e.standard_error_db},
            {"spread_db", e.spread_db}, {"folds", e.folds}, {"fold_sqnr_db", folds}, {"sequences", e.sequences}};
  if (!e.caution.empty()) j["caution"] = e.caution;
  if (e.method == "validation") {
    j["files"] = options.validation_files;
    j["what"] = "int8 vs float on the validation set (never observed), split into groups for the spread";
  } else {
    j["what"] = "int8 vs float on each fold of the calibration sequences, compiled from the other folds with the "
                "search's choices; spread: standard deviation over the folds";
  }
  return j;
}

json memory_json(const ProgramMemory& mem) {
  return {{"flash_bytes", mem.flash_bytes()}, {"weights_bytes", mem.weight_bytes}, {"bias_bytes", mem.bias_bytes},
          {"requant_bytes", mem.requant_bytes}, {"table_bytes", mem.table_bytes},
          {"ram_bytes", mem.ram_bytes()}, {"scratch_bytes", mem.scratch_bytes}, {"state_bytes", mem.state_bytes()},
          {"activation_bytes", 2 * mem.activation_bytes}};
}

// The shape an op reads and writes, per position ("[T, 8] -> [T, 16]", "[T, 16] -> [1, 16]").
// [T, W] a sequence, [1, W] one step per batch row, [1, k x W] k selected steps per batch row.
std::string op_shape(const CompiledModel& m, size_t k) {
  const ProgramOp& op = m.ops[k];
  auto one = [&](int32_t b, int32_t rows) {
    const ProgramBuffer& buf = m.buffers[static_cast<size_t>(b)];
    const std::string width = rows > 1 ? std::to_string(rows) + " x " + std::to_string(buf.width / rows) : std::to_string(buf.width);
    return "[" + std::string(buf.steps == QLSTM_BUFFER_ONE_STEP ? "1" : "T") + ", " + width + "]";
  };
  const int32_t rows = m.op_rows(k);
  return one(op.input_buffer, op.kind == QLSTM_OP_SELECT_STEP ? 1 : rows) + " -> " + one(op.output_buffer, rows);
}

// One row of the report's op table: every op's kind, shape, boundary quantizations, fused
// activation, flash and the RAM of the buffer it writes.
json op_table_row(const CompiledModel& m, size_t k, const ProgramMemory::Op& mem) {
  const ProgramOp& op = m.ops[k];
  const ProgramBuffer& in = m.buffers[static_cast<size_t>(op.input_buffer)];
  const ProgramBuffer& out = m.buffers[static_cast<size_t>(op.output_buffer)];
  json row = {{"op", k}, {"kind", op_kind_name(op.kind)}, {"shape", op_shape(m, k)},
              {"input", quant_json(in.quant)}, {"output", quant_json(out.quant)},
              {"flash_bytes", mem.flash_bytes}, {"ram_bytes", mem.output_bytes}};
  if (const OpKind* kind = find_op_kind(op.kind)) kind->report(op, &row);
  return row;
}

// The model's input: its buffer's quantization, what calibration observed and the range it covers
// (the int8 observer's, or a 16x8 input's symmetric int16 one).
json input_json(const CompiledModel& m, const CalibrationStats& first, const ModelCompileOptions& options) {
  const bool s16 = m.buffers.front().type == QLSTM_ELEMENT_S16;
  const double s16_range = m.input_quant().scale * std::numeric_limits<int16_t>::max();
  if (m.token_ids()) {
    const int32_t rows = m.ops.front().as<DerivedEmbedding>().table_rows;
    return {{"scale", 1.0},
            {"zero_point", 0},
            {"type", "int32 token ids"},
            {"observer", "token ids: int32 as they are, an embedding's rows"},
            {"observed", {first.input_observed.lo, first.input_observed.hi}},
            {"range", {0, rows - 1}}};
  }
  return {{"scale", m.input_quant().scale},
          {"zero_point", m.input_quant().zero_point},
          {"observer", s16 ? "16x8: symmetric int16 over 2^" + std::to_string(options.quantization.s16_headroom_bits) +
                                 " times max |x| of the calibration data"
                           : first.input_observer},
          {"observed", {first.input_observed.lo, first.input_observed.hi}},
          {"range", s16 ? json{-s16_range, s16_range} : json{first.input_range.lo, first.input_range.hi}}};
}

// The model's output: the last buffer's quantization, and where it comes from (the last LSTM's
// observer, the observer over the last head op's float output, or the softmax's fixed one).
json output_json(const CompiledModel& m, const CalibrationStats& last_lstm, const ModelCompileOptions& options) {
  json out = {{"scale", m.output_quant().scale}, {"zero_point", m.output_quant().zero_point},
              {"steps", m.output_is_one_step() ? "one per batch row" : "every step"}};
  const ProgramOp& op = m.ops.back();
  const OpKind* kind = find_op_kind(op.kind);
  if (kind != nullptr && kind->fixed_output != nullptr) {
    out["observer"] = kind->fixed_output;
  } else if (m.buffers.back().type == QLSTM_ELEMENT_S16) {
    out["observer"] = "16x8: symmetric int16 over 2^" + std::to_string(options.quantization.s16_headroom_bits) +
                      " times max |y| of the float program on the calibration set" +
                      (op.recurrent() ? " (an LSTM's output: at most 1)" : "");
  } else if (op.recurrent()) {
    out["observer"] = last_lstm.output_observer;
    out["observed"] = {last_lstm.output_observed.lo, last_lstm.output_observed.hi};
    out["range"] = {last_lstm.output_range.lo, last_lstm.output_range.hi};
  } else {
    out["observer"] = std::string(observer_name(options.quantization.output_observer.kind)) + " over the float output of op " +
                      std::to_string(m.ops.size() - 1) + " (" + op_kind_name(op.kind) + ")";
  }
  return out;
}

json build_report(const OnnxLstm& onnx, const ModelCompileOptions& options, const ModelCompileResult& r,
                  int64_t calib_steps) {
  const CompiledModel& m = r.model;
  const CalibrationStats& first = r.stats.front();
  const CalibrationStats& last = r.stats.back();
  json report = {
      {"model", options.model_origin},
      {"name", m.name},
      {"onnx_nodes", onnx.node_names},
      {"opset", onnx.opset},
      {"layout", onnx.unbatched ? "unbatched [T, F]"
                 : onnx.batch_first ? "batch_first [B, T, F]" : "sequence_first [T, B, F]"},
      {"layers", m.layers()},
      {"directions", m.directions},
      {"input_size", m.input_size()},
      {"hidden_size", m.hidden_sizes().back()},
      {"output_size", m.output_size()},
      {"firmware_batch", options.batch},
      // "int16": 16x8 (int16 activations and state, int8 weights) up to the first op without a
      // 16x8 kernel, int8 from there.
      {"activations", m.has_s16() ? "int16" : "int8"},
      {"input", input_json(m, first, options)},
      {"output", output_json(m, last, options)},
      {"calibration", {{"files", options.calibration_files}, {"sequences", r.calibration_sequences},
                       {"steps", calib_steps},
                       {"from_carried_state", m.initial_hidden == StateSource::kInput || m.initial_cell == StateSource::kInput},
                       {"sqnr_db", std::isfinite(r.sqnr_db) ? json(r.sqnr_db) : json("inf")}}},
      {"memory", memory_json(r.memory)},
      {"held_out", held_out_json(r.held_out, options)},
  };
  if (keeps_inner_sequence(onnx.program)) report["max_time_steps"] = r.max_time_steps;
  if (declared_time_steps(onnx) > 0) report["time_steps"] = declared_time_steps(onnx);  // what bench runs
  report["warnings"] = r.warnings;
  report["import_rewrites"] = onnx.notes;  // what the import rewrote (a cell loop fused), one line each
  // The state interface: [ops][B][H]; row k in op k's hidden quantization and cell scale 2^P.
  json rows = json::array();
  json ops = json::array();
  json table = json::array();
  for (size_t k = 0; k < m.ops.size(); ++k) table.push_back(op_table_row(m, k, r.memory.ops.at(k)));
  report["op_table"] = table;
  // Every buffer: the model's input and output (the caller's) and the inner ones (in the two
  // activation areas, each sized for the largest it holds).
  json buffers = json::array();
  for (size_t b = 0; b < m.buffers.size(); ++b) {
    buffers.push_back({{"buffer", b}, {"width", m.buffers[b].width},
                       {"steps", m.buffers[b].steps == QLSTM_BUFFER_ONE_STEP ? "one" : "every"},
                       {"quant", quant_json(m.buffers[b].quant)},
                       {"type", m.buffers[b].type == QLSTM_ELEMENT_S16 ? "int16" : "int8"},
                       {"bytes", buffer_bytes(m, b, options.batch, r.max_time_steps)}});
  }
  report["buffers"] = buffers;
  size_t k = 0;  // the LSTM ops': the state's rows and the calibration stats
  for (const ProgramOp& op : m.ops) {
    if (!op.recurrent()) continue;
    const int32_t layer = static_cast<int32_t>(k) / m.directions;
    const char* dir = op.time_direction() == QLSTM_TIME_REVERSE ? "reverse" : "forward";
    const RecurrentState& state = *op_kind(op.kind, "report").state;
    json row = {{"op", k}, {"kind", op_kind_name(op.kind)}, {"layer", layer}, {"direction", dir},
                {"hidden", quant_json(op.recurrent_output())}};
    state.report_state_row(op, &row);
    rows.push_back(row);
    json entry = {{"kind", op_kind_name(op.kind)}, {"layer", layer}, {"direction", dir},
                  {"input_size", m.buffers[static_cast<size_t>(op.input_buffer)].width}, {"hidden_size", op.hidden_size()},
                  {"input", quant_json(op.recurrent_input())}, {"output", quant_json(op.recurrent_output())},
                  {"input_observer", r.stats[k].input_observer}, {"output_observer", r.stats[k].output_observer},
                  {"search", search_json(r.stats[k])}};
    state.report_details(op, &entry);  // "cell", "weights", "gates"
    ops.push_back(entry);
    ++k;
  }
  report["ops"] = ops;
  report["state"] = {{"initial_h", state_source_name(m.initial_hidden)}, {"initial_c", state_source_name(m.initial_cell)},
                     {"initial_h_input", onnx.initial_h_name}, {"initial_c_input", onnx.initial_c_name},
                     {"h_n_output", onnx.h_n_name}, {"c_n_output", onnx.c_n_name},
                     {"layout", std::string("[ops, B, H]: h int8 in each op's hidden quantization, c int16 at each op's 2^P (a GRU op: its q0_15 hidden in c, h unused") +
                                    (!m.has_s16() ? ")" : "; a 16x8 LSTM op: its B x H cells, then its B x H int16 hiddens at its output scale, in c, h unused)")},
                     {"rows", rows}};
  if (m.ops.size() == 1) {  // one recurrent op alone: its details at the top, as before
    op_kind(m.ops[0].kind, "report").state->report_details(m.ops[0], &report);
    report["search"] = search_json(first);
  }
  return report;
}

}  // namespace

int32_t declared_time_steps(const OnnxLstm& onnx) {
  const size_t at = onnx.unbatched || !onnx.batch_first ? 0 : 1;
  if (onnx.input_shape.size() <= at || onnx.input_shape[at] < 1) return 0;
  return static_cast<int32_t>(std::min<int64_t>(onnx.input_shape[at], 1 << 20));
}

ModelCompileResult compile_model(const OnnxLstm& onnx, const std::vector<CalibrationTensor>& calibration,
                                 const ModelCompileOptions& options) {
  const FloatProgram& prog = onnx.program;
  validate_options(options.quantization, prog);
  const int32_t I = prog.input_size();
  CalibrationSet set;
  // A per-row constant initial state fixes the batch: calibration row b starts from row b.
  const int32_t state_batch = prog.constant_state_batch();
  for (size_t k = 0; k < calibration.size(); ++k) {
    if (state_batch > 0 && calibration[k].shape.batch != state_batch) {
      throw CompileError("calibration: tensor " + std::to_string(k) + " has a batch of " +
                         std::to_string(calibration[k].shape.batch) + "; the model's constant initial state has " +
                         std::to_string(state_batch) + " rows, so every tensor must have that batch");
    }
  }
  for (const CalibrationTensor& t : calibration) set.add_batch(t.values, t.shape, I);
  ModelCompileResult r;
  r.warnings = calibration_warnings(set, I);
  // Layers after one step (h_n, y[:, k]) see one value per channel and calibration sequence, so
  // their ranges rest on as many values as there are sequences (docs/compiler.md).
  const bool reads_sequence = !prog.head.empty() && reads_whole_sequence(prog.head.front().kind);
  const bool one_step_head = prog.lstm_output == LstmOutput::kFinalState || reads_sequence;
  const size_t head_layers = prog.head.size() - (reads_sequence ? 1 : 0);
  // A selection of k steps: k values per sequence.
  const size_t steps_read = reads_sequence && prog.head.front().kind == FloatLayerKind::kSelectStep
                                ? static_cast<size_t>(prog.head.front().step_count) : 1;
  if (one_step_head && head_layers > 0 && set.sequences.size() * steps_read < kOneStepHeadCalibrationSequences) {
    r.warnings.push_back("calibration: the layers after the LSTM read " +
                         (steps_read > 1 ? std::to_string(steps_read) + " steps" : std::string("one step")) +
                         " per sequence, so each of their ranges comes from only " +
                         std::to_string(set.sequences.size() * steps_read) + " values; give at least " +
                         std::to_string((kOneStepHeadCalibrationSequences + steps_read - 1) / steps_read) +
                         " calibration sequences for ranges that hold on new data");
  }
  if (options.warn) {
    for (const std::string& w : r.warnings) options.warn(w);
  }
  r.max_time_steps = options.max_time_steps > 0 ? options.max_time_steps : declared_time_steps(onnx);
  // A Linear on every step flattened fixes the steps of every call.
  if (!prog.head.empty() && prog.head.front().kind == FloatLayerKind::kFlattenTime) {
    const FloatLayer& flat = prog.head.front();
    if (!onnx.batch_first || onnx.unbatched) {
      throw CompileError(options.model_origin + ": node '" + flat.node + "' flattens every step of a sequence-first "
                         "input; qlstm reads the steps of a batch row together only batch-first: export the model "
                         "with batch_first=True (the input [B, T, F])");
    }
    if (options.max_time_steps > 0 && options.max_time_steps != flat.flatten_steps) {
      throw CompileError(options.model_origin + ": --max-time-steps " + std::to_string(options.max_time_steps) +
                         ": node '" + flat.node + "' flattens exactly " + std::to_string(flat.flatten_steps) +
                         " steps into a Linear, so every call has that many");
    }
    r.max_time_steps = flat.flatten_steps;
  }
  if (keeps_inner_sequence(prog) && r.max_time_steps < 1) {
    throw CompileError(options.model_origin + ": the input's sequence length is symbolic; a model that keeps a "
                       "sequence between its ops (stacked layers, a front end, a per-step head, a selected step or a pooling over time) "
                       "needs --max-time-steps N (its activation buffers hold N steps)");
  }
  CalibrationSet validation;
  for (const CalibrationTensor& t : options.validation) {
    try {
      validation.add_batch(t.values, t.shape, I);
    } catch (const CompileError& e) {
      throw CompileError(std::string("validation set: ") + e.what());
    }
  }
  const bool validated = !options.validation.empty();
  QuantizedProgram q = compile_program(prog, set, options.quantization, validated ? &validation : nullptr);
  // The held-out estimate first: it replays q.stats' choices.
  if (!validated) r.held_out = estimate_k_fold(prog, set, options.quantization, q);
  r.model = std::move(q.model);
  r.stats = std::move(q.stats);
  r.model.name = options.name;
  r.model.batch_first = onnx.batch_first;
  r.sqnr_db = calibration_sqnr(q, r.model, calibration);
  if (validated && state_batch > 1) {
    r.held_out.note = "a learned per-row initial state: a validation sequence has no row of its own";
  } else if (validated) {
    r.held_out = measure_validation(prog, r.model, validation, options.quantization.search_folds);
  }
  r.memory = program_memory(r.model, options.batch, r.max_time_steps);
  r.calibration_sequences = static_cast<int64_t>(set.sequences.size());
  int64_t calib_steps = 0;
  for (const CalibrationSequence& c : set.sequences) calib_steps += c.time_steps;
  r.report = build_report(onnx, options, r, calib_steps);
  r.model.report_json = r.report.dump();
  return r;
}

ModelCompileResult compile_model(const std::string& onnx_bytes, const std::vector<CalibrationTensor>& calibration,
                                 const ModelCompileOptions& options) {
  return compile_model(import_onnx_bytes(onnx_bytes, options.model_origin), calibration, options);
}

}  // namespace compiler
}  // namespace qlstm
