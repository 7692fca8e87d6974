// The compiler's entry point: an ONNX LSTM (its bytes, or the imported program) and calibration
// sequences in, the compiled program and its report out. It calibrates and quantizes every op
// (compile_program), sizes the program's memory (program_memory), measures int8 against float
// on the calibration set and builds the report that `qlstm compile` writes and the model file
// embeds. It writes nothing: serialize_model / emit_cpp and the files are the caller's.
#ifndef QLSTM_COMPILER_COMPILE_H_
#define QLSTM_COMPILER_COMPILE_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "qlstm/compiler/search/held_out.h"
#include "qlstm/compiler/import/onnx_import.h"
#include "qlstm/compiler/program/program.h"
#include "qlstm/compiler/lower/compile_program.h"

namespace qlstm {
namespace compiler {

// A float32 calibration tensor in the model's layout: `shape` says how many sequences of how
// many steps, batch-major ([B][T][I]) or time-major ([T][B][I]).
struct CalibrationTensor {
  std::vector<float> values;
  SequenceShape shape;
};

struct ModelCompileOptions {
  CompileOptions quantization;  // observers, cell scale, weights, search, progress
  std::string name;             // the model's C identifier (CompiledModel::name)
  int32_t batch = 1;            // the firmware's batch: the memory is sized for it
  int32_t max_time_steps = 0;   // a call's longest sequence; 0: the length the ONNX input declares
  // For the report only: where the model and the calibration tensors came from.
  std::string model_origin;
  std::vector<std::string> calibration_files;
  // A validation set: the search scores on it instead of k-fold over the calibration set, and
  // the report's held-out SQNR is measured on it. Never observed.
  std::vector<CalibrationTensor> validation;
  std::vector<std::string> validation_files;
  // Called with each calibration warning as soon as it is found (before the long work); may be empty.
  std::function<void(const std::string&)> warn;
};

// Fewer calibration sequences than this, with layers after one step of the LSTM (a classifier on
// y[:, -1] or h_n): compile warns, since each of those layers' ranges rests on one value per
// sequence (with 48 sequences a random h_n head measured 12 dB on held-out data, with 256 26 dB).
constexpr size_t kOneStepHeadCalibrationSequences = 200;

struct ModelCompileResult {
  CompiledModel model;                  // name, batch_first and report_json set
  std::vector<CalibrationStats> stats;  // per op
  std::vector<std::string> warnings;    // calibration_warnings
  ProgramMemory memory;                 // program_memory(model, batch, max_time_steps)
  int32_t max_time_steps = 0;           // as used (0: symbolic, single-layer)
  int64_t calibration_sequences = 0;
  double sqnr_db = 0;                   // int8 against float on the calibration set; +inf if equal
  HeldOutEstimate held_out;             // the same on data the derivation did not see
  nlohmann::json report;                // what model.report_json holds (dump())
};

// Throws CompileError for an invalid program, bad calibration data (no feature varies,
// non-finite values, an empty set), a stacked model without max_time_steps when the ONNX input's
// sequence length is symbolic, and every derivation error.
ModelCompileResult compile_model(const OnnxLstm& onnx, const std::vector<CalibrationTensor>& calibration,
                                 const ModelCompileOptions& options);
// The same from the ONNX bytes (options.model_origin names the model in messages).
ModelCompileResult compile_model(const std::string& onnx_bytes, const std::vector<CalibrationTensor>& calibration,
                                 const ModelCompileOptions& options);

// The sequence length the ONNX input declares, or 0 when it is symbolic.
int32_t declared_time_steps(const OnnxLstm& onnx);

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_COMPILE_H_
