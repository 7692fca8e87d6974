// The walks along the data path around the recurrent stack (internal to compiler/src/import/ and
// compiler/src/recognize/): PathWalker recognizes, node by node, the layers of the front (from the
// graph input to the first LSTM's X) and of the head (from the last LSTM's output to the graph
// output). Its recognizers live one group of patterns per file:
//   path_walker.cc     the walk, the dispatch on the op and the refusals (what_it_is);
//   layout_ops.cc      Transpose, Squeeze, Unsqueeze, Flatten, Reshape;
//   step_selection.cc  one time step: Gather, Slice;
//   linear.cc          Gemm, MatMul and the Add of a Linear's bias;
//   activations.cc     the unary activations, Clip, Softmax and the multi-node activations.
#ifndef QLSTM_COMPILER_SRC_RECOGNIZE_PATH_WALKER_H_
#define QLSTM_COMPILER_SRC_RECOGNIZE_PATH_WALKER_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "import/graph.h"
#include "qlstm/compiler/float/float_layers.h"

namespace qlstm {
namespace compiler {
namespace import {

// Axis labels of a tensor on the data path: 'T' time, 'B' batch, 'F' features, 'D' directions.
using Labels = std::string;

// Ops that only move data (the layout around the LSTM) or build constants (the initial state).
extern const std::set<std::string> kStructuralOps;

// Applies a Transpose's perm (reversed when absent) to the labels; false when it does not fit.
bool apply_transpose(const onnx::NodeProto& n, Labels* l);

// ------------------------------------------------------------------ the layers around the stack
// A walk along the data path: from the graph input to the first LSTM's X (the front), and from
// the last LSTM's output to the graph output (the head). Each node is a layout op (it moves
// size-1 axes, or the axes the layouts need), a step selection, or a per-position layer on the
// feature axis; anything else is refused with what it is.

// What the walk knows about the axes: their labels (Labels above, plus 't' one selected step and
// '1' an inserted axis, both of size 1) and sizes.
struct PathContext {
  const Graph* g = nullptr;
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

// Where a walk is: the value reached, its axes and the layers taken so far.
struct PathState {
  std::string value;
  Labels labels;
  int32_t width = 0;               // elements on the feature axis
  std::vector<FloatLayer> layers;  // per-position layers, in order
  bool selected = false;           // a step selection was taken (kept apart: it commutes with them)
  FloatLayer select;
  bool last_is_linear = false;     // the value is a Linear's output (an Add of a constant is its bias)
  bool features_squeezed = false;  // a feature axis of width 1 was squeezed away
  bool batch_squeezed = false;     // the batch axis of an export with a static batch of 1 was squeezed away
  std::string last_good;           // the last value reached without a problem
  bool failed = false;
};

// What an op is, for a refusal of a node the walk cannot take (or that is not on its path).
std::string what_it_is(const Graph& g, const onnx::NodeProto& n, const char* cell);

// The ops a walk takes (some only in some forms); past a refusal they are not reported again.
extern const std::set<std::string> kPathOps;

class PathWalker {
 public:
  PathWalker(const PathContext& c, bool front, std::vector<std::string>* problems, std::set<const onnx::NodeProto*>* used)
      : c_(c), g_(*c.g), front_(front), problems_(problems), used_(used) {}

  // Walks from s->value until the value `stop` (front: the first LSTM's X) or a graph output
  // (head: stop empty). False when a node was refused (every problem found is reported).
  bool walk(PathState* s, const std::string& stop);

 private:
  // path_walker.cc
  void problem(const onnx::NodeProto* n, const std::string& why);
  bool reads_at(const onnx::NodeProto& n, const PathState& s, int k);
  bool features_last(const onnx::NodeProto& n, const PathState& s, const char* what);
  void add_layer(PathState* s, FloatLayer l, bool linear);
  FloatLayer activation(const onnx::NodeProto& n, ActivationFn fn);
  bool take(const onnx::NodeProto& n, PathState* s);
  bool reduction(const onnx::NodeProto& n, const PathState& s);
  // layout_ops.cc
  bool transpose(const onnx::NodeProto& n, PathState* s);
  bool one_row_batch(char label) const;  // the batch axis, squeezable in the head: a static batch of 1
  bool squeeze(const onnx::NodeProto& n, PathState* s);
  bool unsqueeze(const onnx::NodeProto& n, PathState* s);
  bool flatten(const onnx::NodeProto& n, PathState* s);
  bool reshape(const onnx::NodeProto& n, PathState* s);
  // step_selection.cc
  bool select_step(const onnx::NodeProto& n, PathState* s, int64_t step, size_t axis, bool keep_axis);
  bool gather(const onnx::NodeProto& n, PathState* s);
  bool slice(const onnx::NodeProto& n, PathState* s);
  // linear.cc
  bool linear_weights(const onnx::NodeProto& n, const std::string& w_name, bool transposed, double alpha,
                      FloatLayer* l, const PathState& s);
  bool bias_values(const onnx::NodeProto& n, const std::string& name, int32_t outputs, double beta,
                   std::vector<float>* bias);
  bool gemm(const onnx::NodeProto& n, PathState* s);
  bool matmul(const onnx::NodeProto& n, PathState* s);
  bool add_bias(const onnx::NodeProto& n, PathState* s);
  // activations.cc
  static bool unary_activation_fn(const std::string& op, ActivationFn* fn);
  bool unary_activation(const onnx::NodeProto& n, ActivationFn fn, PathState* s);
  bool clip_bounds(const onnx::NodeProto& n, FloatLayer* l);
  bool softmax(const onnx::NodeProto& n, PathState* s);
  bool match_activation_pattern(PathState* s);
  bool features_last_quiet(const PathState& s) const;
  bool match_gated(const std::string& x, const std::vector<const onnx::NodeProto*>& cs, FloatLayer* l,
                   std::string* out, std::vector<const onnx::NodeProto*>* nodes);
  bool match_gelu_erf(const std::string& x, const std::vector<const onnx::NodeProto*>& cs, FloatLayer* l,
                      std::string* out, std::vector<const onnx::NodeProto*>* nodes);
  bool match_gelu_tanh(const std::string& x, const std::vector<const onnx::NodeProto*>& cs, FloatLayer* l,
                       std::string* out, std::vector<const onnx::NodeProto*>* nodes);

  const PathContext& c_;
  const Graph& g_;
  bool front_;
  std::vector<std::string>* problems_;
  std::set<const onnx::NodeProto*>* used_;
};

}  // namespace import
}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_SRC_RECOGNIZE_PATH_WALKER_H_
