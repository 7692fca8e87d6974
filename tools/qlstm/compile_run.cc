// What qlstm compile and qlstm run do without the command line (compile_run.h).
#include "compile_run.h"

#include <cmath>
#include <filesystem>

#include "qlstm/compiler/artifacts/emit_cpp.h"
#include "qlstm/compiler/io/file_io.h"
#include "qlstm/compiler/artifacts/model_file.h"
#include "qlstm/compiler/lower/quantized_lstm_s16.h"

namespace qlstm {
namespace cli {

namespace fs = std::filesystem;
using namespace qlstm::compiler;

namespace {

std::vector<int64_t> npy_shape(const SequenceShape& s, int32_t features) {
  if (s.layout == Layout::kBatchMajor) return {s.batch, s.time_steps, features};
  return {s.time_steps, s.batch, features};
}

}  // namespace

ModelCompileOptions model_compile_options(const CompileArgs& args, const OnnxLstm& onnx) {
  ModelCompileOptions mo;
  for (const std::string& path : args.validation) {
    SequenceTensor t = read_sequences(path, onnx.program.input_size(), onnx.batch_first, false, model_input_type(onnx));
    mo.validation.push_back({std::move(t.values), t.shape});
  }
  mo.validation_files = args.validation;
  mo.model_origin = args.model;
  mo.calibration_files = args.calibration;
  // A learned per-row initial state fixes the batch: the firmware is generated for it unless
  // --batch says otherwise (which compile then refuses, naming the model's batch).
  const int32_t fixed_batch = onnx.program.constant_state_batch();
  mo.batch = args.batch > 0 ? args.batch : (fixed_batch > 0 ? fixed_batch : 1);
  mo.max_time_steps = args.max_time_steps;
  CompileOptions& o = mo.quantization;
  o.input_observer = parse_observer(args.input_observer);
  o.output_observer = parse_observer(args.output_observer);
  o.cell_scale = parse_cell_policy(args.cell_scale);
  o.weights.weight_method = parse_weight_method(args.weights);
  o.weights.bias_correction = args.bias_correction;
  o.weights.weight_rounding = parse_weight_rounding(args.weight_rounding);
  o.tuning = args.search ? Tuning::kSearch : Tuning::kNone;
  o.s16_layers = parse_activations(args.activations, onnx.program.layers());
  o.s16_headroom_bits = args.int16_headroom;
  o.user_fixed = args.user_fixed;
  mo.name = args.name.empty() ? c_identifier(fs::path(args.model).stem().string()) : args.name;
  if (mo.name != c_identifier(mo.name)) {
    throw CompileError("--name '" + mo.name + "' is not a C identifier (letters, digits, '_')");
  }
  return mo;
}

int32_t model_input_type(const OnnxLstm& onnx) {
  const auto& front = onnx.program.front;
  return !front.empty() && front.front().kind == FloatLayerKind::kEmbedding ? QLSTM_ELEMENT_S32 : QLSTM_ELEMENT_S8;
}

namespace {

// Token ids: [B, T] (batch-first) or [T, B], or [T] for one sequence, of any integer dtype; kept
// as floats (exact: every id a table may hold is below 2^24) and read as one feature per step.
SequenceTensor token_ids_from_array(const NpyArray& a, const std::string& path, bool batch_first) {
  SequenceTensor t;
  t.rank = a.shape.size() + 1;  // as a sequence tensor with its one feature
  if (a.shape.size() == 1) {
    t.shape = {1, static_cast<int32_t>(a.shape[0]), Layout::kBatchMajor};
  } else if (a.shape.size() == 2) {
    t.shape = {static_cast<int32_t>(batch_first ? a.shape[0] : a.shape[1]),
               static_cast<int32_t>(batch_first ? a.shape[1] : a.shape[0]),
               batch_first ? Layout::kBatchMajor : Layout::kTimeMajor};
  } else {
    throw CompileError(path + ": rank " + std::to_string(a.shape.size()) + ", expected token ids of rank 2 (" +
                       (batch_first ? "[B, T]" : "[T, B]") + ") or 1 ([T]): the model's input is an embedding's ids");
  }
  if (t.shape.batch < 1) throw CompileError(path + ": the batch dimension is 0");
  if (a.dtype == DType::kFloat32 || a.dtype == DType::kFloat64) {
    throw CompileError(path + ": dtype " + std::string(dtype_name(a.dtype)) +
                       ", expected integer token ids (int64, numpy's default, or int32, int16, int8)");
  }
  const std::vector<int64_t> ids = a.as_integers(path);
  t.values.resize(ids.size());
  for (size_t k = 0; k < ids.size(); ++k) {
    if (ids[k] < 0 || ids[k] >= kMaxEmbeddingRows) {
      throw CompileError(path + ": token id " + std::to_string(ids[k]) + " at index " + std::to_string(k) +
                         " is outside [0, " + std::to_string(kMaxEmbeddingRows) + ")");
    }
    t.values[k] = static_cast<float>(ids[k]);
  }
  return t;
}

}  // namespace

SequenceTensor sequences_from_array(const NpyArray& a, const std::string& path, int32_t input_size, bool batch_first,
                                    bool integer, int32_t element_type) {
  if (element_type == QLSTM_ELEMENT_S32) return token_ids_from_array(a, path, batch_first);
  SequenceTensor t;
  t.rank = a.shape.size();
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
  if (integer && element_type == QLSTM_ELEMENT_S16) {
    if (a.dtype != DType::kInt16) {
      throw CompileError(path + ": dtype " + dtype_name(a.dtype) +
                         ", expected int16 ('<i2', a 16x8 model's input; use --float for float32)");
    }
    t.values_s16 = a.bytes;
  } else if (integer) {
    if (a.dtype != DType::kInt8) {
      throw CompileError(path + ": dtype " + dtype_name(a.dtype) + ", expected int8 ('|i1'; use --float for float32)");
    }
    t.values_s8 = a.as_int8(path);
  } else {
    if (a.dtype != DType::kFloat32 && a.dtype != DType::kFloat64) {
      throw CompileError(path + ": dtype " + std::string(dtype_name(a.dtype)) +
                         ", expected float32 ('<f4') or float64 ('<f8', numpy's default)");
    }
    t.values = a.as_float(path);  // float64 converted once, each value checked to fit float32
  }
  return t;
}

SequenceTensor read_sequences(const std::string& path, int32_t input_size, bool batch_first, bool integer,
                              int32_t element_type) {
  return sequences_from_array(read_npy(path), path, input_size, batch_first, integer, element_type);
}

std::vector<int64_t> output_shape(const CompiledModel& m, const SequenceTensor& x) {
  const int32_t W = m.output_size();
  if (m.output_is_one_step()) {
    // Several selected steps per batch row keep their time axis, in the input's layout.
    const int32_t rows = m.output_rows();
    if (rows > 1) {
      if (x.rank == 2) return {rows, W / rows};
      return npy_shape({x.shape.batch, rows, x.shape.layout}, W / rows);
    }
    if (x.rank == 2) return {W};
    return {x.shape.batch, W};
  }
  if (x.rank == 2) return {x.shape.time_steps, W};
  return npy_shape(x.shape, W);
}

std::vector<int8_t> quantize_input(const CompiledModel& m, const SequenceTensor& x, const std::string& path) {
  std::vector<int8_t> x8(x.values.size());
  for (size_t k = 0; k < x.values.size(); ++k) {
    if (!std::isfinite(x.values[k])) throw CompileError(path + ": non-finite value at index " + std::to_string(k));
    x8[k] = m.input_quant().quantize(x.values[k]);
  }
  return x8;
}

std::vector<float> dequantize_output(const CompiledModel& m, const std::vector<int8_t>& y8) {
  std::vector<float> y(y8.size());
  for (size_t k = 0; k < y8.size(); ++k) y[k] = static_cast<float>(m.output_quant().dequantize(y8[k]));
  return y;
}

ModelFiles model_files(const CompiledModel& m, const nlohmann::json& report, int32_t batch, int32_t max_time_steps,
                       const std::string& model_path) {
  ModelFiles f;
  f.name = m.name;
  f.model_bytes = serialize_model(m);
  EmittedSource src = emit_cpp(m, m.name, batch, max_time_steps, fs::path(model_path).filename().string());
  f.header = std::move(src.header);
  f.source = std::move(src.source);
  f.report = report.dump(1) + "\n";
  return f;
}

void write_model_files(const ModelFiles& files, const std::string& outdir) {
  std::error_code ec;
  fs::create_directories(outdir, ec);
  if (ec) throw CompileError(outdir + ": cannot create the output folder: " + ec.message());
  const fs::path out(outdir);
  write_file_atomically((out / (files.name + ".qlstm")).string(), files.model_bytes);
  write_file_atomically((out / (files.name + "_model.h")).string(), files.header);
  write_file_atomically((out / (files.name + "_model.cc")).string(), files.source);
  write_file_atomically((out / (files.name + "_report.json")).string(), files.report);
}

}  // namespace cli
}  // namespace qlstm
