// The data path from one recurrent layer's output Y to the next layer's X, or to a graph output:
// layout ops only (internal to compiler/src/import/ and compiler/src/recognize/).
#ifndef QLSTM_COMPILER_SRC_RECOGNIZE_BETWEEN_LAYERS_H_
#define QLSTM_COMPILER_SRC_RECOGNIZE_BETWEEN_LAYERS_H_

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "recognize/layout_view.h"

namespace qlstm {
namespace compiler {
namespace import {

// Follows the single-consumer chain of layout ops from `value` (whose view is *view; c the axes of
// the layer that writes it) to a graph output (*graph_output then set) or to the X of another
// recurrent node (*next_lstm then set), leaving *view the view it reaches; *residual: it crossed
// the layer's residual Add (recognize/residual.h). False, with problems, where the chain is not
// layout ops (and one residual Add) only.
bool follow_output(const PathContext& c, std::string value, LayoutView* view, std::string* graph_output,
                   const onnx::NodeProto** next_lstm, bool* residual, std::vector<std::string>* problems);

}  // namespace import
}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_SRC_RECOGNIZE_BETWEEN_LAYERS_H_
