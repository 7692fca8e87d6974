// A LayerNorm over the features (internal to compiler/src/import/ and compiler/src/recognize/):
// ONNX LayerNormalization on the last axis (opset 17, what torch exports from nn.LayerNorm), or
// torch's form before opset 17: ReduceMean, Sub, Pow, ReduceMean, Add of epsilon, Sqrt, Div, then
// a Mul by gamma and an Add of beta when the LayerNorm has them (elementwise_affine). The head's
// and the front's walks (recognize/path_walker.h) and the walk between two recurrent layers
// (recognize/between_layers.h) take it as a kLayerNorm layer.
#ifndef QLSTM_COMPILER_SRC_RECOGNIZE_LAYER_NORM_H_
#define QLSTM_COMPILER_SRC_RECOGNIZE_LAYER_NORM_H_

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "import/graph.h"
#include "qlstm/compiler/float/float_layers.h"

namespace qlstm {
namespace compiler {
namespace import {

// What a LayerNorm match found: the layer (input and output size F), the value after it and its
// nodes; or, where the nodes are a LayerNorm that cannot be taken, the node and why.
struct LayerNormMatch {
  FloatLayer layer;
  std::string out;
  std::vector<const onnx::NodeProto*> nodes;
  const onnx::NodeProto* refused = nullptr;
  std::string why;
};

// n, a LayerNormalization reading x (rank axes, the features last, F of them). True with the
// layer, or true with `refused` set (a LayerNorm over other axes, non-constant gamma, ...).
bool match_layer_normalization(const Graph& g, const onnx::NodeProto& n, const std::string& x, size_t rank,
                               int32_t F, LayerNormMatch* m);
// torch's form before opset 17 from x (read by its ReduceMean and its Sub): true with the layer or
// with `refused` set; false when x's readers are not that pattern.
bool match_decomposed_layer_norm(const Graph& g, const std::string& x, size_t rank, int32_t F, LayerNormMatch* m);

}  // namespace import
}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_SRC_RECOGNIZE_LAYER_NORM_H_
