// The import's shape pass (internal to compiler/src/import/ and compiler/src/recognize/): every
// value's shape, symbolic where the export is dynamic, and the shape arithmetic folded away.
#ifndef QLSTM_COMPILER_SRC_IMPORT_SHAPES_H_
#define QLSTM_COMPILER_SRC_IMPORT_SHAPES_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace qlstm {
namespace compiler {
namespace import {

// One axis's size: a number, a dynamic axis's name (ONNX's dim_param), or unknown.
struct Dim {
  int64_t value = -1;  // >= 0 when known
  std::string symbol;  // when value < 0: the name, or empty for unknown
  bool known() const { return value >= 0; }
  bool unknown() const { return value < 0 && symbol.empty(); }
};
using Shape = std::vector<Dim>;

// a and b are the same size at run time: equal numbers or the same name (unknown matches nothing).
bool same_dim(const Dim& a, const Dim& b);
// "4", "batch" or "?" (unknown).
std::string dim_string(const Dim& d);
// "[1, batch, 4]".
std::string shape_string(const Shape& s);

// A value whose elements are all one number, whatever the run-time shape: a ConstantOfShape (and
// copies of it: Expand, Reshape, ...) of a shape computed from the input's. The exporters build a
// zero initial state so.
struct UniformValue {
  double value = 0.0;
  bool shape_known = false;  // `shape` holds every axis (numbers or names)
  Shape shape;
  std::string origin;  // the ConstantOfShape's node_label, for messages
};

// What the shape pass found, read by import/graph.h's Graph.
struct ShapeFacts {
  std::map<std::string, Shape> shapes;         // every value whose rank is known
  std::map<std::string, UniformValue> uniform;  // values filled with one number
  // The names of the graph inputs' dynamic axes: what the exporter declared as distinct axes. Two
  // of these that differ are taken as different sizes; any other two names (an exporter's own
  // placeholders, "unk__3") may still be equal.
  std::set<std::string> input_axes;
  const Shape* shape(const std::string& name) const {
    const auto it = shapes.find(name);
    return it == shapes.end() ? nullptr : &it->second;
  }
  const UniformValue* uniform_value(const std::string& name) const {
    const auto it = uniform.find(name);
    return it == uniform.end() ? nullptr : &it->second;
  }
};

// The pass, after the constant folder: ONNX's shape inference with data propagation (so a shape
// computed from Shape reads keeps the input's axis names), then the shape arithmetic folded:
//   - a ConstantOfShape, and an element-preserving op of one (Expand, Identity, Cast, Reshape,
//     Squeeze, Unsqueeze, Transpose, Tile, Slice), whose shape is fully known becomes a
//     UniformValue and leaves the graph;
//   - a Reshape whose target is computed from Shape reads gets a constant target written from its
//     inferred output shape (0 to copy an input axis, -1 for one unresolved axis), when that
//     target is unambiguous;
//   - Shape nodes, and the shape arithmetic and layout ops nothing reads any more, leave the graph.
// `checked`: the model as read passed ONNX's checker (see with_inferred_shapes); without it, or
// where the inference refuses, the shapes are the ones the model declares.
// A graph ONNX's inference cannot process keeps its nodes (the importer's checks name them).
ShapeFacts fold_shapes(onnx::ModelProto* model, bool checked);

}  // namespace import
}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_SRC_IMPORT_SHAPES_H_
