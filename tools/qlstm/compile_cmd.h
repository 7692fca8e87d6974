// qlstm compile, run and eval (README.md, docs/model-format.md).
#ifndef QLSTM_TOOLS_COMPILE_CMD_H_
#define QLSTM_TOOLS_COMPILE_CMD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "compile_run.h"

namespace qlstm {
namespace cli {

// CompileArgs: compile_run.h.
// Exit status: 0 written; 1 any error (nothing written).
int compile_command(const CompileArgs& args);

struct RunArgs {
  std::string model, input, output;
  bool float_io = false;
  std::string target;  // empty: the host; else a CPU name (the emulated device, tools/qlstm/device.h)
  int32_t chunk = 0;   // > 0: streamed in stateful calls of this many steps
  std::string h0, c0;    // initial state files ([ops][B][H]); empty = the model's own
  std::string h_n, c_n;  // final state files to write; empty = not written
};
int run_command(const RunArgs& args);

struct EvalArgs {
  std::string onnx, model, data, plot;
  std::string labels;   // a classifier's class per sequence: top-1 accuracy float vs int8
  std::string targets;  // a forecaster's expected outputs: its error float vs int8
  std::string units;    // a JSON file whose "output_units" convert that error (eval_metrics.h)
  std::string h0, c0;   // float32 [ops][B][H] initial state of both runs; empty = the model's own (zero for an input)
  std::string json;     // write every figure printed as JSON; empty = not written
};
// int8 against float on DATA, from the same initial state: SQNR and max abs error of every model
// output (y, and h_n / c_n per LSTM op when the model returns them), the error per time step (an
// output per step) or the argmax agreement (a classifier: one row per sequence); with labels the
// top-1 accuracy of both, with targets the forecast error of both; the saturation (float values
// outside the calibrated ranges: input, output, each op's cell and hidden); --plot writes an SVG,
// --json every figure. Files are written, and the text printed, only when everything succeeded.
int eval_command(const EvalArgs& args);

}  // namespace cli
}  // namespace qlstm

#endif  // QLSTM_TOOLS_COMPILE_CMD_H_
