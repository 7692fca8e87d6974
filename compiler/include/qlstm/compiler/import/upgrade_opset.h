// Older opsets' attribute forms rewritten into the input forms the importer reads
// (compiler/src/import/upgrade_opset.cc).
#ifndef QLSTM_COMPILER_IMPORT_UPGRADE_OPSET_H_
#define QLSTM_COMPILER_IMPORT_UPGRADE_OPSET_H_

#include <onnx/onnx_pb.h>

#include <cstdint>

namespace qlstm {
namespace compiler {
namespace import {

// Before opset 10 a Slice has its starts, ends and axes as attributes (tf2onnx --opset 9 writes
// its last-step selection so); each such Slice gets them as initializer inputs instead, the form
// opset 10 defined. The other attribute forms of opsets 7-12 the importer meets are read where
// they are used: Squeeze/Unsqueeze axes (before 13), Clip bounds (before 11), Split's split
// (before 13, by the constant folder), ReduceMean's axes (before 18).
void upgrade_attribute_forms(onnx::ModelProto* model, int64_t opset);

}  // namespace import
}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_IMPORT_UPGRADE_OPSET_H_
