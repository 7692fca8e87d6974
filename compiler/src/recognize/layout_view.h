// One layout view per value on the data path (internal to compiler/src/import/ and
// compiler/src/recognize/): what its axes are (labels), how wide its feature axis is, and which
// size-1 axes of the model's output it dropped. The layout ops (Identity, Dropout, Transpose,
// Squeeze, Unsqueeze, Flatten, Reshape) are not layers: each maps its input's view to its
// output's, here and only here, for the walks in front of, between and after the recurrent layers.
#ifndef QLSTM_COMPILER_SRC_RECOGNIZE_LAYOUT_VIEW_H_
#define QLSTM_COMPILER_SRC_RECOGNIZE_LAYOUT_VIEW_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "import/graph.h"

namespace qlstm {
namespace compiler {
namespace import {

// Axis labels of a tensor on the data path: 'T' time, 'B' batch, 'F' features, 'D' directions,
// 't' one selected step and '1' an inserted axis (both of size 1).
using Labels = std::string;

// What the walks know about the axes: their sizes where the graph input declares them.
struct ResidualAdd;
struct LayoutView;

struct PathContext {
  const Graph* g = nullptr;
  // The residual Adds of the graph (recognize/residual.h), and the view of each value the walks
  // reached, for the Adds' operands; null: none.
  const std::map<const onnx::NodeProto*, ResidualAdd>* residuals = nullptr;
  std::map<std::string, LayoutView>* views = nullptr;
  const char* cell = "LSTM";  // the stack's op, for messages
  int64_t opset = 0;
  int32_t directions = 1;
  bool unbatched = false;
  int64_t time_size = -1, batch_size = -1;  // as declared by the graph input; -1 unknown
};

// The size of the axis `label` (-1 unknown); `width` is the feature axis's.
int64_t axis_size(const PathContext& c, char label, int64_t width);
// A size-1 axis that layout ops may drop, insert or move freely.
bool unit_axis(const PathContext& c, char label);
// The axis's name in messages ("time", "batch", ...).
const char* axis_name(char label);
// Labels without the size-1 axes: the order of the data.
Labels data_axes(const PathContext& c, const Labels& l);

struct LayoutView {
  Labels labels;
  int32_t width = 0;               // elements on the feature axis
  bool features_squeezed = false;  // a feature axis of width 1 was squeezed away (the head only)
  bool batch_squeezed = false;     // the batch axis of an export with a static batch of 1 was squeezed away (the head only)
  // The head only: the time axis was merged into the features (y.reshape(B, -1), Flatten): T steps
  // of step_width each, width T x step_width; -1 while T is unknown (a dynamic time axis: the
  // Linear that reads it tells, and width is 0 until then).
  int32_t flattened_steps = 0;
  int32_t step_width = 0;
  // The head only: the time axis holds a selected range of this many consecutive steps (y[:, -k:]);
  // 0: the whole sequence, or no time axis.
  int32_t range_steps = 0;
};

// Where on the data path a view is: the head alone may squeeze the model output's feature axis of
// width 1 ([B, T, 1] -> [B, T]) and the batch axis of an export whose batch is static 1.
enum class PathPart { kFront, kBetweenLayers, kHead };

// The ops that only change a view.
extern const std::set<std::string> kLayoutOps;

// Maps the view of n's data input (its input 0; n's op one of kLayoutOps) to its output's. False,
// with *why, for an op that mixes positions with features, drops an axis that is not of size 1,
// or does not fit the input.
bool apply_layout_op(const PathContext& c, PathPart part, const onnx::NodeProto& n, LayoutView* v, std::string* why);

}  // namespace import
}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_SRC_RECOGNIZE_LAYOUT_VIEW_H_
