// The walks along the data path around the recurrent stack (internal to compiler/src/import/ and
// compiler/src/recognize/): PathWalker recognizes, node by node, the layers of the front (from the
// graph input to the first LSTM's X) and of the head (from the last LSTM's output to the graph
// output). Its recognizers live one group of patterns per file:
//   path_walker.cc     the walk, the dispatch on the op and the refusals (what_it_is);
//   layout_view.cc     the layout ops (Identity, Dropout, Transpose, Squeeze, Unsqueeze, Flatten,
//                      Reshape): views, not layers (recognize/layout_view.h);
//   step_selection.cc  one time step: Gather, Slice;
//   linear.cc          Gemm, MatMul and the Add of a Linear's bias;
//   activations.cc     the unary activations, Clip, Softmax and the multi-node activations;
//   residual.cc        a residual Add of a layer's output and input (recognize/residual.h);
//   unrolled_steps.cc  per-step layers exported once per step, then concatenated;
//   pooled_concat.cc   poolings over time concatenated along the features;
//   layer_norm.cc      a LayerNorm over the features (LayerNormalization, or its opset < 17 form);
//   attention_pool.cc  attention pooling over time: softmax(Linear(y), dim=1) * y, summed over time.
#ifndef QLSTM_COMPILER_SRC_RECOGNIZE_PATH_WALKER_H_
#define QLSTM_COMPILER_SRC_RECOGNIZE_PATH_WALKER_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "import/graph.h"
#include "recognize/layout_view.h"
#include "qlstm/compiler/float/float_layers.h"

namespace qlstm {
namespace compiler {
namespace import {

// Ops that only move data (the layout around the LSTM) or build constants (the initial state).
extern const std::set<std::string> kStructuralOps;

// ------------------------------------------------------------------ the layers around the stack
// A walk along the data path: from the graph input to the first LSTM's X (the front), and from
// the last LSTM's output to the graph output (the head). Each node is a layout op (it moves
// size-1 axes, or the axes the layouts need), a step selection, or a per-position layer on the
// feature axis; anything else is refused with what it is.

// Where a walk is: the value reached, its axes and the layers taken so far.
struct PathState {
  std::string value;
  LayoutView view;                 // the value's axes
  std::vector<FloatLayer> layers;  // per-position layers, in order
  bool selected = false;           // a step selection was taken (kept apart: it commutes with them)
  FloatLayer select;
  bool range_merged = false;       // a selection of several steps was merged into the features
  bool last_is_linear = false;     // the value is a Linear's output (an Add of a constant is its bias)
  // The last layer is a BatchNorm's per-feature affine as a diagonal Linear, which the next Linear
  // takes in (recognize/linear.cc).
  bool last_is_batch_norm = false;
  bool residual = false;           // the head starts with the last layer's residual add (recognize/residual.h)
  bool ids = false;                // the value is the model's token ids (an integer input): an embedding reads them
  std::string last_good;           // the last value reached without a problem
  bool failed = false;
};

// Per-position layers on the features (a Linear, its activation, a LayerNorm) from s->value to the
// value `stop`, by a walk of the head's kind: for the paths between two recurrent layers and on a
// repeated final state. *nodes gains the nodes taken. False, with *problem naming the node, where
// a node on the way is not such a layer (a step selection, a pooling, a residual add among them).
bool walk_position_layers(const PathContext& c, const std::string& stop, PathState* s,
                          std::vector<const onnx::NodeProto*>* nodes, std::string* problem);

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
  bool embedding(const onnx::NodeProto& n, PathState* s);
  bool reduction(const onnx::NodeProto& n, PathState* s);
  bool residual(const onnx::NodeProto& n, const ResidualAdd& r, PathState* s);
  // unrolled_steps.cc
  bool match_unrolled_steps(PathState* s);
  // pooled_concat.cc
  bool match_pooled_concat(PathState* s);
  // attention_pool.cc
  bool match_attention_pool(PathState* s);
  // layer_norm.cc
  bool layer_normalization(const onnx::NodeProto& n, PathState* s);
  bool match_layer_norm(PathState* s);
  // step_selection.cc
  bool select_step(const onnx::NodeProto& n, PathState* s, int64_t step, size_t axis, bool keep_axis,
                   int64_t count = 1);
  bool step_range(const onnx::NodeProto& n, PathState* s, double b, double e, size_t axis);
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
  bool batch_norm(const onnx::NodeProto& n, PathState* s);
  bool scale_features(const onnx::NodeProto& n, PathState* s);
  void take_feature_affine(const onnx::NodeProto& n, PathState* s, const std::vector<double>& scale,
                           const std::vector<double>& shift);
  bool flatten_time(const onnx::NodeProto& n, PathState* s);
  // commutes: the per-step layers taken so far commute with it (they then run after it); which
  // ones would (`commuting`), for the refusal.
  bool read_whole_sequence(const onnx::NodeProto& n, PathState* s, FloatLayerKind kind, const std::string& what,
                           const std::string& verb, bool commutes = false, const std::string& commuting = "");
  bool resolve_flattened_steps(const onnx::NodeProto& n, const std::string& w_name, bool transposed, PathState* s);
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
