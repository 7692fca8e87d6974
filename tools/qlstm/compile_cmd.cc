// qlstm compile / qlstm run.
#include "compile_cmd.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "qlstm/compiler/emit_cpp.h"
#include "qlstm/compiler/model_file.h"
#include "qlstm/compiler/npy.h"
#include "qlstm/compiler/onnx_import.h"
#include "qlstm/compiler/quantized_lstm.h"
#include "qlstm/kernels.h"

namespace qlstm {
namespace cli {
namespace {

namespace fs = std::filesystem;
using namespace qlstm::compiler;
using nlohmann::json;

// A float32 sequence tensor in the model's layout: rank 3 ([B][T][I] batch-first, [T][B][I]
// otherwise) or rank 2 ([T][I], one sequence).
struct SequenceTensor {
  std::vector<float> values;
  std::vector<int8_t> values_s8;
  SequenceShape shape;
};

SequenceTensor read_sequences(const std::string& path, int32_t input_size, bool batch_first, bool int8) {
  const NpyArray a = read_npy(path);
  SequenceTensor t;
  if (a.shape.size() == 2) {
    t.shape = {1, static_cast<int32_t>(a.shape[0]), Layout::kBatchMajor};
  } else if (a.shape.size() == 3) {
    const int64_t b = batch_first ? a.shape[0] : a.shape[1];
    const int64_t s = batch_first ? a.shape[1] : a.shape[0];
    t.shape = {static_cast<int32_t>(b), static_cast<int32_t>(s),
               batch_first ? Layout::kBatchMajor : Layout::kTimeMajor};
  } else {
    throw CompileError(path + ": rank " + std::to_string(a.shape.size()) + ", expected 3 (" +
                       (batch_first ? "[B, T, I]" : "[T, B, I]") + ") or 2 ([T, I])");
  }
  if (a.shape.back() != input_size) {
    throw CompileError(path + ": feature size " + std::to_string(a.shape.back()) +
                       " does not match the model's input_size " + std::to_string(input_size));
  }
  if (t.shape.batch < 1) throw CompileError(path + ": the batch dimension is 0");
  if (int8) {
    if (a.dtype != DType::kInt8) {
      throw CompileError(path + ": dtype " + dtype_name(a.dtype) + ", expected int8 ('|i1'; use --float for float32)");
    }
    t.values_s8 = a.as_int8(path);
  } else {
    if (a.dtype != DType::kFloat32) {
      throw CompileError(path + ": dtype " + std::string(dtype_name(a.dtype)) + ", expected float32 ('<f4')");
    }
    t.values = a.as_float(path);
  }
  return t;
}

std::vector<int64_t> npy_shape(const SequenceShape& s, int32_t features) {
  if (s.layout == Layout::kBatchMajor) return {s.batch, s.time_steps, features};
  return {s.time_steps, s.batch, features};
}

json requant_json(const qlstm_requant& q) { return {{"multiplier", q.multiplier}, {"shift", q.shift}}; }

}  // namespace

int compile_command(const CompileArgs& args) {
  try {
    const OnnxLstm onnx = import_onnx(args.model);
    const int32_t I = onnx.lstm.input_size, H = onnx.lstm.hidden_size;
    CalibrationSet calibration;
    std::vector<SequenceTensor> calib_tensors;
    for (const std::string& path : args.calibration) {
      SequenceTensor t = read_sequences(path, I, onnx.batch_first, false);
      calibration.add_batch(t.values, t.shape, I);
      calib_tensors.push_back(std::move(t));
    }
    if (calibration.sequences.size() >= 256) {
      std::fprintf(stderr, "qlstm compile: calibrating on %zu sequences...\n", calibration.sequences.size());
    }
    CompileOptions o;
    o.input_observer = parse_observer(args.input_observer);
    o.output_observer = parse_observer(args.output_observer);
    o.cell_scale = parse_cell_policy(args.cell_scale);
    o.derive.weight_method = parse_weight_method(args.weights);
    o.derive.bias_correction = args.bias_correction;
    o.tuning = args.search ? Tuning::kSearch : Tuning::kNone;
    const QuantizedLstm q = QuantizedLstm::compile(onnx.lstm, calibration, o);

    // int8 against float on the calibration set.
    std::vector<float> ref, got;
    for (const SequenceTensor& t : calib_tensors) {
      const FloatResult f = run_float(onnx.lstm, t.values.data(), t.shape);
      const std::vector<float> y = q.run_float(t.values, t.shape);
      ref.insert(ref.end(), f.output.begin(), f.output.end());
      got.insert(got.end(), y.begin(), y.end());
    }
    const double sqnr = sqnr_db(ref, got);
    const DerivedLstm& d = q.derived();
    const CalibrationStats& st = q.calibration();
    const std::string name = args.name.empty() ? c_identifier(fs::path(args.model).stem().string())
                                               : args.name;
    if (name != c_identifier(name)) {
      throw CompileError("--name '" + name + "' is not a C identifier (letters, digits, '_')");
    }
    qlstm_lstm_dims dims = {args.batch, 1, I, H};
    const size_t scratch = qlstm_lstm_s8_scratch_bytes(&dims);
    const size_t weights = static_cast<size_t>(4) * H * (I + H);
    const size_t biases = static_cast<size_t>(8) * H * sizeof(int32_t);
    const size_t state = static_cast<size_t>(args.batch) * H * (sizeof(int16_t) + sizeof(int8_t));

    json report = {
        {"model", args.model},
        {"name", name},
        {"onnx_node", onnx.node_name},
        {"opset", onnx.opset},
        {"layout", onnx.batch_first ? "batch_first [B, T, F]" : "sequence_first [T, B, F]"},
        {"input_size", I},
        {"hidden_size", H},
        {"firmware_batch", args.batch},
        {"input", {{"scale", d.input.scale}, {"zero_point", d.input.zero_point},
                   {"observer", st.input_observer},
                   {"observed", {st.input_observed.lo, st.input_observed.hi}},
                   {"range", {st.input_range.lo, st.input_range.hi}}}},
        {"output", {{"scale", d.output.scale}, {"zero_point", d.output.zero_point},
                    {"observer", st.output_observer},
                    {"observed", {st.output_observed.lo, st.output_observed.hi}},
                    {"range", {st.output_range.lo, st.output_range.hi}}}},
        {"cell", {{"scale_power", d.cell.power}, {"policy", cell_policy_name(d.cell.policy)},
                  {"headroom", d.cell.headroom}, {"observed_max_abs", d.cell.observed_max_abs},
                  {"clamped_to_min", d.cell.clamped_to_min}, {"clip", d.cell_clip}}},
        {"weights", {{"method", weight_method_name(d.options.weight_method)},
                     {"bias_correction", d.options.bias_correction}}},
        {"search", {{"tuning", tuning_name(st.tuning)}, {"evaluations", st.evaluations},
                    {"start_sqnr_db", st.start_sqnr_db}, {"final_sqnr_db", st.final_sqnr_db}}},
        {"calibration", {{"files", args.calibration}, {"sequences", st.sequences}, {"steps", st.steps},
                         {"sqnr_db", std::isfinite(sqnr) ? json(sqnr) : json("inf")}}},
        {"memory", {{"flash_bytes", weights + biases}, {"weights_bytes", weights}, {"bias_bytes", biases},
                    {"ram_bytes", scratch + state}, {"scratch_bytes", scratch}, {"state_bytes", state}}},
    };
    json gates = json::object();
    for (int32_t g = 0; g < QLSTM_GATE_COUNT; ++g) {
      const DerivedGate& dg = d.gates[static_cast<size_t>(g)];
      gates[gate_name(g)] = {{"input_weight_scale", dg.w_x_scale}, {"hidden_weight_scale", dg.w_h_scale},
                             {"input_to_q3_12", requant_json(dg.input_to_q3_12)},
                             {"hidden_to_q3_12", requant_json(dg.hidden_to_q3_12)}};
    }
    report["gates"] = gates;

    CompiledModel m;
    m.name = name;
    m.batch_first = onnx.batch_first;
    m.derived = d;
    m.report_json = report.dump();
    const std::string model_bytes = serialize_model(m);
    const EmittedSource src = emit_cpp(m, name, args.batch, fs::path(args.model).filename().string());

    // Everything is computed; only now is anything written.
    std::error_code ec;
    fs::create_directories(args.outdir, ec);
    if (ec) throw CompileError(args.outdir + ": cannot create the output folder: " + ec.message());
    const fs::path out(args.outdir);
    write_file_atomically((out / (name + ".qlstm")).string(), model_bytes);
    write_file_atomically((out / (name + "_model.h")).string(), src.header);
    write_file_atomically((out / (name + "_model.cc")).string(), src.source);
    write_file_atomically((out / (name + "_report.json")).string(), report.dump(1) + "\n");

    std::printf("qlstm compile: %s -> %s/%s.{qlstm, _model.h, _model.cc, _report.json}\n",
                args.model.c_str(), args.outdir.c_str(), name.c_str());
    std::printf("  LSTM '%s': input %d, hidden %d, %s\n", onnx.node_name.c_str(), I, H,
                onnx.batch_first ? "batch_first" : "sequence-first");
    std::printf("  input  scale %.6g  zero point %d  (%s)\n", d.input.scale, d.input.zero_point, st.input_observer.c_str());
    std::printf("  output scale %.6g  zero point %d  (%s)\n", d.output.scale, d.output.zero_point, st.output_observer.c_str());
    std::printf("  cell   2^%d (%s, observed max |c| %.4g)\n", d.cell.power, cell_policy_name(d.cell.policy),
                d.cell.observed_max_abs);
    std::printf("  flash  %zu bytes (weights %zu, biases %zu)\n", weights + biases, weights, biases);
    std::printf("  RAM    %zu bytes for batch %d (scratch %zu, state %zu)\n", scratch + state, args.batch, scratch, state);
    std::printf("  SQNR   %.2f dB int8 vs float on the calibration set (%lld sequences)\n", sqnr,
                static_cast<long long>(st.sequences));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qlstm compile: error: %s\n", e.what());
    return 1;
  }
}

int run_command(const RunArgs& args) {
  try {
    const CompiledModel m = load_model(args.model);
    const DerivedLstm& d = m.derived;
    const SequenceTensor x = read_sequences(args.input, d.input_size, m.batch_first, !args.float_io);
    std::vector<int8_t> x8 = x.values_s8;
    if (args.float_io) {
      x8.resize(x.values.size());
      for (size_t k = 0; k < x.values.size(); ++k) {
        if (!std::isfinite(x.values[k])) {
          throw CompileError(args.input + ": non-finite value at index " + std::to_string(k));
        }
        x8[k] = d.input.quantize(x.values[k]);
      }
    }
    const std::vector<int8_t> y8 = run_kernel_s8(d, x8, x.shape);
    const std::vector<int64_t> shape = npy_shape(x.shape, d.hidden_size);
    if (args.float_io) {
      std::vector<float> y(y8.size());
      for (size_t k = 0; k < y8.size(); ++k) y[k] = static_cast<float>(d.output.dequantize(y8[k]));
      write_npy_float32(args.output, shape, y);
    } else {
      write_npy_int8(args.output, shape, y8);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qlstm run: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace cli
}  // namespace qlstm
