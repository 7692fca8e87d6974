// What `qlstm run` and `qlstm eval` do on data in memory: a run from a given initial state (on the
// host, streamed, or on the emulated device) returning the final state, and int8 against float
// with every figure eval prints. Shared by the CLI (compile_cmd.cc reads and writes the files) and
// the Python module (python/qlstm_module.cc passes numpy arrays), so both give the same outputs,
// figures and messages.
#ifndef QLSTM_TOOLS_RUN_EVAL_H_
#define QLSTM_TOOLS_RUN_EVAL_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compile_run.h"
#include "eval_metrics.h"
#include "qlstm/compiler/io/npy.h"
#include "qlstm/compiler/import/onnx_import.h"
#include "qlstm/compiler/program/program.h"

namespace qlstm {
namespace cli {

// The recurrent (LSTM and GRU) ops of m in state order (layer-major, forward first): row k of a
// [ops][B][H] state.
std::vector<const compiler::ProgramOp*> lstm_ops(const compiler::CompiledModel& m);
// "layer L forward" or "layer L reverse": recurrent op k (lstm_ops order) in the user's terms.
std::string lstm_op_label(const compiler::CompiledModel& m, size_t k);

// What the recurrent ops' states are: LSTMs' (hidden and cell), GRUs' (a hidden state only, Q0.15
// int16 in the cell rows), or both kinds.
enum class StateCells { kLstm, kGru, kMixed };
StateCells state_cells(const compiler::CompiledModel& m);

// How the caller spells the state arguments in its messages: the CLI's flags, Python's keywords.
struct StateNames {
  std::string h0 = "--h0", c0 = "--c0", h_n = "--h-n", c_n = "--c-n";
  std::string float_io = "use --float";  // what a mixed LSTM/GRU model's int state needs instead
};

// One run of a compiled model, as `qlstm run`: the input (int8 in values_s8, or float with
// float_io), the initial state (null: the model's own) and which final state is wanted.
struct RunRequest {
  std::string model_name;  // what messages call the model (the CLI: its .qlstm path)
  std::string input_name;  // and the input
  SequenceTensor x;
  bool float_io = false;
  std::string target;  // empty: the host; else the emulated CPU (device.h)
  int32_t chunk = 0;   // > 0 (host only): stateful calls of this many steps
  // [ops][B][H]: float32 with float_io, else int8 hidden (a GRU model's int16 Q0.15) and int16 cell.
  const compiler::NpyArray* h0 = nullptr;
  const compiler::NpyArray* c0 = nullptr;
  std::string h0_name, c0_name;  // the arrays' names in messages (the CLI: their paths)
  bool want_h_n = false, want_c_n = false;
  StateNames names;
  std::function<void(const std::string&)> warn;  // a given float state clipped (null: not said)
};
// The checks of a request that need no model: --chunk on the host only. Throws UsageError.
void check_run_flags(const RunRequest& r);
// The usage checks of a request before any file is read: a state input the model needs and was
// not given, a cell state of a GRU model, an int state of a mixed model. Throws UsageError.
void check_run_request(const compiler::CompiledModel& m, const RunRequest& r);

struct RunOutput {
  std::vector<int64_t> shape;        // the output's (output_shape)
  std::vector<int8_t> y8;            // the int8 output (an int8 model's)
  compiler::NpyArray y_int;          // without float_io: the output as the model gives it, int8 or int16
  std::vector<float> y;              // dequantized (float_io)
  std::vector<int64_t> state_shape;  // [ops, B, H]
  // The final state as the CLI writes it: float32 with float_io, else int8 hidden (a GRU model's
  // int16 Q0.15) and int16 cell; empty when not wanted.
  compiler::NpyArray h_n, c_n;
};
// Checks the request (check_run_request, the state arrays' shapes and dtypes), then runs it.
// Throws UsageError, CompileError, device::DeviceError.
RunOutput run_model(const compiler::CompiledModel& m, const RunRequest& r);

// `qlstm eval` on data in memory: the float model (the ONNX program) and the int8 one from the same
// initial state.
struct EvalRequest {
  std::string model_name, onnx_name, data_name;  // as the text and the JSON name them
  SequenceTensor x;                              // float
  std::vector<int64_t> labels;                   // a classifier's class per sequence; empty: none
  std::vector<float> targets;                    // a forecaster's expected outputs; empty: none
  std::string targets_name;
  OutputUnits units;
  const compiler::NpyArray* h0 = nullptr;  // float32 [ops][B][H]; null: the model's own (zero for an input)
  const compiler::NpyArray* c0 = nullptr;
  std::string h0_name, c0_name;
  StateNames names;
};
struct Evaluation {
  std::string text;     // what `qlstm eval` prints
  nlohmann::json json;  // what `qlstm eval --json` writes
  std::vector<float> ref, got;  // the float and the int8 (dequantized) outputs
};
// Throws CompileError when m is not compiled from onnx (sizes, layers, layout, outputs, op kinds).
void check_eval_pair(const compiler::OnnxLstm& onnx, const compiler::CompiledModel& m, const std::string& model_name,
                     const std::string& onnx_name);
// Throws UsageError unless m is a classifier (one row of at least two scores per sequence).
void check_labels_usable(const compiler::CompiledModel& m, const std::string& model_name);
// Throws UsageError for a cell state given to a model with GRU ops.
void check_c0_usable(const compiler::CompiledModel& m, const std::string& c0_name, const StateNames& names);
// Every check above (labels: their count and range too), then both runs and every figure.
Evaluation evaluate(const compiler::OnnxLstm& onnx, const compiler::CompiledModel& m, const EvalRequest& r);

}  // namespace cli
}  // namespace qlstm

#endif  // QLSTM_TOOLS_RUN_EVAL_H_
