// ONNX import: finds the chain of LSTM (or GRU) nodes of a graph exported from nn.LSTM or nn.GRU
// (one per layer; or a plain ONNX LSTM / GRU graph) and the layers around it as torch.onnx.export writes them (per-step
// layers in front; a step selection or h_n[-1], Linear layers, activations and a softmax after),
// checks that it is inside the compiler's scope, and returns it as a FloatProgram. Host only.
#ifndef QLSTM_COMPILER_ONNX_IMPORT_H_
#define QLSTM_COMPILER_ONNX_IMPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "qlstm/compiler/float/float_lstm.h"
#include "qlstm/compiler/program/program.h"

namespace qlstm {
namespace compiler {

struct OnnxLstm {
  // One op per LSTM (or GRU) node and direction, in chain order; weights translated from ONNX's
  // i, o, f, c gate order (a GRU's z, r, h: a layer of cell kGru); the initial state's source and
  // constants; whether Y_h / Y_c are outputs (a GRU has no c).
  FloatProgram program;
  std::vector<std::string> node_names;  // the LSTM or GRU nodes, layer by layer
  std::string input_name;   // graph input the first X is computed from (through the front layers)
  std::string output_name;  // graph output carrying the model's output (the head's, or the last hidden sequence)
  // The ONNX output squeezes the head's one feature away ([B, T] for [B, T, 1], [B] for [B, 1]);
  // the compiled model's output keeps that size-1 axis: the same values in the same order.
  bool output_squeezes_features = false;
  // The ONNX output squeezes away the batch axis of an export whose batch is static 1 ([T, F] for
  // [1, T, F]); the compiled model's output keeps it (a row per batch row, any batch).
  bool output_squeezes_batch = false;
  std::string initial_h_name, initial_c_name;  // graph inputs of a state the caller feeds
  std::string h_n_name, c_n_name;              // graph outputs of the final state
  bool batch_first = false; // graph input/output layout [B][T][F] (else [T][B][F])
  bool unbatched = false;   // graph input [T][F] and output [T][W] (or [W] per row): one sequence (batch_first set)
  int64_t opset = 0;
  std::vector<int64_t> input_shape;  // as declared; -1 for a symbolic dimension
  // What the import rewrote before reading the graph, one line each (an nn.LSTMCell loop fused).
  std::vector<std::string> notes;
};

// Throws CompileError. For a model outside the scope, the message has one line per problem,
// each naming the node (or the graph) and the reason; nothing is partially returned.
OnnxLstm import_onnx(const std::string& path);
// The same from the serialized bytes; `origin` names the model in messages.
OnnxLstm import_onnx_bytes(const std::string& bytes, const std::string& origin);

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_ONNX_IMPORT_H_
