// The data path from one recurrent layer's output Y to the next layer's X, or to a graph output:
// layout ops only (internal to compiler/src/import/ and compiler/src/recognize/).
#ifndef QLSTM_COMPILER_SRC_RECOGNIZE_BETWEEN_LAYERS_H_
#define QLSTM_COMPILER_SRC_RECOGNIZE_BETWEEN_LAYERS_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

#include "recognize/path_walker.h"

namespace qlstm {
namespace compiler {
namespace import {

// Follows the single-consumer chain of layout ops from `start` (with labels) to a graph output.
// Or to the X of another LSTM node (*next_lstm is then set).
bool follow_output(const Graph& g, std::string value, Labels labels, bool unbatched, int32_t directions,
                   std::string* graph_output, Labels* out_labels, const onnx::NodeProto** next_lstm,
                   std::vector<std::string>* problems, int64_t hidden = -1);

}  // namespace import
}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_SRC_RECOGNIZE_BETWEEN_LAYERS_H_
