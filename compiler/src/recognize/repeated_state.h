// A recurrent layer's final hidden state repeated over time as the next layer's input (an LSTM
// autoencoder: the encoder's h_n[-1] or y[:, -1], repeat or expand over the steps, the decoder;
// Keras' RepeatVector). Internal to compiler/src/import/ and compiler/src/recognize/.
#ifndef QLSTM_COMPILER_SRC_RECOGNIZE_REPEATED_STATE_H_
#define QLSTM_COMPILER_SRC_RECOGNIZE_REPEATED_STATE_H_

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "import/graph.h"
#include "import/recurrent_nodes.h"
#include "import/shapes.h"
#include "qlstm/compiler/float/float_layers.h"
#include "recognize/layout_view.h"

namespace qlstm {
namespace compiler {
namespace import {

// The walk from node `n`'s final hidden state to the next recurrent node's X.
struct RepeatedState {
  const onnx::NodeProto* next = nullptr;       // the node that reads it repeated (set on success)
  std::vector<const onnx::NodeProto*> nodes;   // the nodes on the way
  // The layers below whose Y_h torch stacked with this one's into h_n (only h_n[-1] is read).
  std::vector<const onnx::NodeProto*> stacked;
  // Per-position layers on the state, before or after the repetition (a Linear bottleneck and its
  // activation): the program runs them once, on the one-step state. `width`: what the next reads.
  std::vector<FloatLayer> layers;
  int32_t width = 0;
  std::string problem;                         // why it is not one, when the walk recognized its start
};

// Follows `n`'s Y_h (or, from_y, the last step of its Y), through layout ops and per-position
// layers on the features, to a single repetition over a new time axis (Expand or Tile; torch's
// repeat and expand, Keras' RepeatVector) and on to another recurrent node's X, read as a
// sequence of `time` steps (the model input's time axis). False when the path is not such a walk:
// with `problem` set when it started as one (a selection of the final state) but could not be
// followed, naming the node.
bool follow_repeated_state(const PathContext& c, const NodeInfo& n, bool from_y, const Dim& time, RepeatedState* out);

}  // namespace import
}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_SRC_RECOGNIZE_REPEATED_STATE_H_
