// Residual connections between recurrent layers (internal to compiler/src/import/ and
// compiler/src/recognize/): an Add of a layer's output y (reached from its Y through layout ops)
// and the layer's input x, y + x in either order. x is reached through layout ops from a value on
// the data path into the layer (the branch: the layer's X is reached from it too). The walks leave
// that side branch alone, take the Add from its y side as a view of the same axes, and the layer
// then gets FloatProgram::residual.
#ifndef QLSTM_COMPILER_SRC_RECOGNIZE_RESIDUAL_H_
#define QLSTM_COMPILER_SRC_RECOGNIZE_RESIDUAL_H_

#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

#include "import/graph.h"
#include "recognize/layout_view.h"

namespace qlstm {
namespace compiler {
namespace import {

struct ResidualAdd {
  const onnx::NodeProto* add = nullptr;
  const onnx::NodeProto* layer = nullptr;  // the recurrent node whose output and input it adds
  std::string from_y;                      // the Add's operand from the layer's Y
  std::string skip;                        // its other operand, the layer's input
  std::string branch;                      // where skip's path leaves the path into the layer
  const onnx::NodeProto* branch_reader = nullptr;   // the first node of skip's path (the Add when skip is branch)
  std::vector<const onnx::NodeProto*> skip_ops;     // the layout ops from branch to skip
};

// Every Add of the graph that is a residual connection, by node.
std::map<const onnx::NodeProto*, ResidualAdd> find_residual_adds(const Graph& g);

// The nodes that read `value` on the data path: its data consumers but the first node of a
// residual Add's skip path (the walks reach that Add from the layer's output).
std::vector<const onnx::NodeProto*> path_consumers(const PathContext& c, const std::string& value);

// n as a residual Add reached from its layer's output `value`, or null.
const ResidualAdd* residual_from(const PathContext& c, const onnx::NodeProto& n, const std::string& value);

// Records the view of a value a walk reached (the residual Add checks its skip operand's).
void record_view(const PathContext& c, const std::string& value, const LayoutView& view);

// Whether the Add's two operands have the same axes: its skip operand's view (the branch's
// recorded view through the skip path's layout ops) against `view` (the operand from the layer's
// output); false with *why.
bool same_axes_as_skip(const PathContext& c, const ResidualAdd& r, const LayoutView& view, std::string* why);

}  // namespace import
}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_SRC_RECOGNIZE_RESIDUAL_H_
