// The import pass that fuses recurrent cells stepped in a Python loop back into one recurrent node
// (internal to compiler/src/import/). torch.onnx.export traces `for t in ...: h, c = cell(x[:, t],
// (h, c))` with an nn.LSTMCell or nn.GRUCell into the cell's graph once per step: two projections,
// a Split into gates, the gate activations and the state update. This pass finds those steps,
// chains them by their state into loops and writes each loop as the ONNX LSTM or GRU node
// nn.LSTM / nn.GRU would have exported, so the rest of the import reads it as it reads those.
#ifndef QLSTM_COMPILER_SRC_IMPORT_CELL_LOOPS_H_
#define QLSTM_COMPILER_SRC_IMPORT_CELL_LOOPS_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

#include "import/shapes.h"

namespace qlstm {
namespace compiler {
namespace import {

// Rewrites every cell loop of `model` (after fold_shapes, whose facts it reads and extends with
// the shapes of the values it adds) into one LSTM or GRU node per loop:
//   - a step is nn.LSTMCell's graph (Add of the input and hidden projections, Split into i, f, g,
//     o, Sigmoid/Tanh, c' = f*c + i*g, h' = o*tanh(c')) or nn.GRUCell's (two Splits into r, z, n,
//     n = tanh(x_n + r*h_n), h' = (h - n)*z + n); a projection is a Gemm, or a MatMul with or
//     without an Add of its bias;
//   - steps chain by their state (c for an LSTM, h for a GRU) and all hold the same weights;
//   - step k reads x[:, k] (or x[k], or x[:, T-1-k]: a reverse loop) of one input, or step k's h of
//     another loop (a stacked cell: its layers become stacked nodes);
//   - it starts from a zero state or from model inputs [B, H] (then initial_h / initial_c,
//     declared [1, B, H]); its last h and c may be read by anything (a returned one becomes Y_h /
//     Y_c under its output's name, [1, B, H]), every step's h stacked along time
//     (torch.stack(outs, 1)) becomes the node's Y.
// A loop that reads or exposes anything else is left out with a reason in `problems`, naming the
// node. Returns the number of loops fused; `notes` gets one line per loop for the report.
int fuse_cell_loops(onnx::ModelProto* model, int64_t opset, ShapeFacts* facts, std::vector<std::string>* notes,
                    std::vector<std::string>* problems);

}  // namespace import
}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_SRC_IMPORT_CELL_LOOPS_H_
