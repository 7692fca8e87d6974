// ONNX import: finds the one LSTM of a graph exported from nn.LSTM (or a plain ONNX LSTM graph),
// checks that it is inside the kernel's scope, and returns it as a FloatLstm. Host only.
#ifndef QLSTM_COMPILER_ONNX_IMPORT_H_
#define QLSTM_COMPILER_ONNX_IMPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "qlstm/compiler/float_lstm.h"

namespace qlstm {
namespace compiler {

struct OnnxLstm {
  FloatLstm lstm;           // weights translated from ONNX's i, o, f, c gate order
  std::string node_name;    // the LSTM node
  std::string input_name;   // graph input feeding X
  std::string output_name;  // graph output carrying the hidden sequence
  bool batch_first = false; // graph input/output layout [B][T][F] (else [T][B][F])
  bool unbatched = false;   // graph input [T][F] and output [T][H]: one sequence (batch_first set)
  int64_t opset = 0;
  std::vector<int64_t> input_shape;  // as declared; -1 for a symbolic dimension
};

// Throws CompileError. For a model outside the scope, the message has one line per problem,
// each naming the node (or the graph) and the reason; nothing is partially returned.
OnnxLstm import_onnx(const std::string& path);
// The same from the serialized bytes; `origin` names the model in messages.
OnnxLstm import_onnx_bytes(const std::string& bytes, const std::string& origin);

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_ONNX_IMPORT_H_
