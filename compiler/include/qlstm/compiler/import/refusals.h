// What the importer says of the nodes and shapes it refuses (compiler/src/import/refusals.cc):
// each text is the reason after "node 'x' (Op): ".
#ifndef QLSTM_COMPILER_IMPORT_REFUSALS_H_
#define QLSTM_COMPILER_IMPORT_REFUSALS_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace qlstm {
namespace compiler {
namespace import {

// A node that stands where an LSTM or GRU was expected, or that no ONNX runtime without its
// framework runs: an RNN, a Loop or Scan (a recurrence written step by step), an op of another
// domain. Empty for any other node.
std::string describe_foreign_node(const onnx::NodeProto& n);

// A reduction (ReduceMean, ReduceMax, ...) over the axes of `labels` (the importer's axis labels:
// T time, B batch, F features, ...) named `reduced`; empty when it is not over time (a mean over
// the features is a LayerNorm's, described by the caller).
std::string describe_reduction_over_time(const onnx::NodeProto& n, const std::string& reduced);

}  // namespace import
}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_IMPORT_REFUSALS_H_
