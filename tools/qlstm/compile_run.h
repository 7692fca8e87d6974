// What `qlstm compile` and `qlstm run` do without the command line: the compile options from the
// CLI's arguments, sequence tensors from .npy files or in-memory arrays, the float input and output
// of the int8 program, and the files `qlstm compile` writes. Shared by the CLI (compile_cmd.cc)
// and the Python module (python/qlstm_module.cc), so both give the same files and outputs.
#ifndef QLSTM_TOOLS_COMPILE_RUN_H_
#define QLSTM_TOOLS_COMPILE_RUN_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "qlstm/compiler/compile.h"
#include "qlstm/compiler/io/npy.h"
#include "qlstm/compiler/import/onnx_import.h"
#include "qlstm/compiler/lower/compile_program.h"

namespace qlstm {
namespace cli {

struct CompileArgs {
  std::string model;
  std::vector<std::string> calibration;
  std::vector<std::string> validation;  // the search's held-out data instead of k-fold; never observed
  std::string outdir = ".";
  std::string name;
  int32_t batch = 0;  // 0: the batch the model fixes (a learned per-row initial state), else 1
  std::string input_observer = "minmax";
  std::string output_observer = "minmax";
  std::string weights = "maxabs";
  std::string weight_rounding = "nearest";
  std::string cell_scale = "calibrated:1.25";
  bool search = true;
  std::string activations = "int8";  // or "int16": 16x8 (int16 activations, int8 weights)
  int32_t int16_headroom = 2;  // bits above the calibrated max |v| of every 16x8 boundary
  bool bias_correction = false;
  // The options given on the command line: kept as given, the search tunes only the others.
  compiler::UserFixedChoices user_fixed;
  int32_t max_time_steps = 0;  // a stacked model's activation buffers; 0 = the ONNX input's T
  // A Cortex-M CPU the firmware is for (tools/qlstm/device.h): the report and the summary give the
  // runtime code its firmware keeps there. Empty: not given.
  std::string target;
};

constexpr size_t kLargeCalibrationSet = 256;  // sequences from which compile shows its progress

// The compile options of `args` for `onnx`: the batch (args.batch, else the one a learned per-row
// initial state fixes, else 1), the parsed observers and policies, the search, the name (args.name,
// else the model file's stem as a C identifier; throws CompileError for one that is not), the
// model and calibration file names for the report, and the validation files read. Neither the
// calibration data, nor a warning or progress callback.
compiler::ModelCompileOptions model_compile_options(const CompileArgs& args, const compiler::OnnxLstm& onnx);

// A float32 (or float64, converted) sequence tensor in the model's layout: rank 3 ([B][T][I] batch-first, [T][B][I]
// otherwise) or rank 2 ([T][I], one sequence); integers when asked for (run without --float): int8,
// or int16 for a 16x8 model's int16 input.
struct SequenceTensor {
  std::vector<float> values;
  std::vector<int8_t> values_s8;
  std::vector<uint8_t> values_s16;  // int16 input: its bytes, as run_program_raw takes them
  compiler::SequenceShape shape;
  size_t rank = 3;
};
// The element type of the model's input: QLSTM_ELEMENT_S32 (token ids) when an embedding reads it.
int32_t model_input_type(const compiler::OnnxLstm& onnx);
// From an array (a .npy file's, or an in-memory one); errors name `origin`.
// element_type QLSTM_ELEMENT_S32: token ids of any integer dtype, [B, T] / [T, B] or [T] ([T] is
// one sequence; rank is then 2, as for [T, I]), in `values`, whether integer or not.
// integer: int8 (element_type QLSTM_ELEMENT_S8) or int16 (QLSTM_ELEMENT_S16) values, else floats.
SequenceTensor sequences_from_array(const compiler::NpyArray& a, const std::string& origin, int32_t input_size,
                                    bool batch_first, bool integer, int32_t element_type = QLSTM_ELEMENT_S8);
SequenceTensor read_sequences(const std::string& path, int32_t input_size, bool batch_first, bool integer,
                              int32_t element_type = QLSTM_ELEMENT_S8);

// The model's output for input x, as .npy: [B][W] for one row per sequence ([W] for a rank-2
// input: one sequence), else the sequence in the input's layout ([T][W] for a rank-2 input).
std::vector<int64_t> output_shape(const compiler::CompiledModel& m, const SequenceTensor& x);
// Float input to the model's int8 input; throws naming `origin` for a non-finite value.
std::vector<int8_t> quantize_input(const compiler::CompiledModel& m, const SequenceTensor& x,
                                   const std::string& origin);
std::vector<float> dequantize_output(const compiler::CompiledModel& m, const std::vector<int8_t>& y8);

// The four files of `qlstm compile`: NAME.qlstm, NAME_model.h, NAME_model.cc, NAME_report.json.
struct ModelFiles {
  std::string name;  // the model's
  std::string model_bytes, header, source, report;
};
// `batch` and `max_time_steps` size the firmware source; `model_path` is the model as given
// (the source names its file).
ModelFiles model_files(const compiler::CompiledModel& m, const nlohmann::json& report, int32_t batch,
                       int32_t max_time_steps, const std::string& model_path);
// Creates `outdir` if needed and writes each file atomically; throws CompileError or FileError.
void write_model_files(const ModelFiles& files, const std::string& outdir);

}  // namespace cli
}  // namespace qlstm

#endif  // QLSTM_TOOLS_COMPILE_RUN_H_
