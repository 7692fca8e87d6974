// The data path from one recurrent layer's output Y to the next layer's X, or to a graph output:
// layout ops only (internal to compiler/src/import/ and compiler/src/recognize/).
#ifndef QLSTM_COMPILER_SRC_RECOGNIZE_BETWEEN_LAYERS_H_
#define QLSTM_COMPILER_SRC_RECOGNIZE_BETWEEN_LAYERS_H_

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "qlstm/compiler/float/float_layers.h"
#include "recognize/layout_view.h"

namespace qlstm {
namespace compiler {
namespace import {

// A per-feature affine between two layers, y = scale * x + shift (a BatchNorm in inference, as
// torch exports it or as tf2onnx writes Keras' as a Mul and an Add): the next layer takes it into
// its input weights and bias. Empty: none.
struct FeatureAffine {
  std::vector<double> scale, shift;
  std::string node;  // the first node of it, for messages
};

// Follows the single-consumer chain of layout ops from `value` (whose view is *view; c the axes of
// the layer that writes it) to a graph output (*graph_output then set) or to the X of another
// recurrent node (*next_lstm then set), leaving *view the view it reaches; *residual: it crossed
// the layer's residual Add (recognize/residual.h); *norms: the LayerNorms over the features it
// crossed after that (recognize/layer_norm.h), kLayerNorm layers, and their nodes in *norm_nodes; *affine: the per-feature affine
// it crossed on the way to the next node after those (a Mul or an Add of a constant per feature, a
// BatchNormalization). False, with problems, where the chain is not layout ops (and one residual
// Add, LayerNorms, an affine) only.
bool follow_output(const PathContext& c, std::string value, LayoutView* view, std::string* graph_output,
                   const onnx::NodeProto** next_lstm, bool* residual, std::vector<FloatLayer>* norms,
                   std::vector<const onnx::NodeProto*>* norm_nodes, FeatureAffine* affine,
                   std::vector<std::string>* problems);

}  // namespace import
}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_SRC_RECOGNIZE_BETWEEN_LAYERS_H_
