// The import pass that reads a bidirectional layer's directions split and concatenated again as
// the one view they are (internal to compiler/src/import/). tf2onnx writes a Keras
// Bidirectional(LSTM(..., return_sequences=True)) as one bidirectional LSTM node whose output Y
// [T, 2, B, H] is cut into its two directions (Slice along axis 1 and Squeeze, or Gather) and
// joined along the features (Concat on axis 2): the [T, B, 2H] that torch's exports write as a
// Transpose and a Reshape. This pass writes it so, and the layout rules read it as they read those.
#ifndef QLSTM_COMPILER_SRC_IMPORT_DIRECTION_CONCAT_H_
#define QLSTM_COMPILER_SRC_IMPORT_DIRECTION_CONCAT_H_

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "import/shapes.h"

namespace qlstm {
namespace compiler {
namespace import {

// Rewrites each Concat(forward, backward) along the features of the two directions of a
// bidirectional LSTM or GRU node's Y into Transpose(Y, [0, 2, 1, 3]) and Reshape to [0, 0, 2H],
// under the Concat's output name. The two picks must be Y's only readers (Shape reads aside), each
// read only by the Concat, forward first. Anything else is left as it is (the importer names it).
// After fold_shapes: `facts` gets the shape of the value it adds. Returns the number rewritten;
// `notes` gets one line each for the report.
int join_split_directions(onnx::ModelProto* model, ShapeFacts* facts, std::vector<std::string>* notes);

}  // namespace import
}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_SRC_IMPORT_DIRECTION_CONCAT_H_
