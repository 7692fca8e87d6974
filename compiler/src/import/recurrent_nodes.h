// The recurrent nodes (LSTM, GRU) as the importer reads them (internal to compiler/src/import/):
// what differs between the two ops, one node's attributes and weights checked and read into its
// float layers, and where its initial and final states come from and go.
#ifndef QLSTM_COMPILER_SRC_IMPORT_RECURRENT_NODES_H_
#define QLSTM_COMPILER_SRC_IMPORT_RECURRENT_NODES_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

#include "graph.h"
#include "qlstm/compiler/float/float_lstm.h"
#include "qlstm/compiler/program/program.h"

namespace qlstm {
namespace compiler {
namespace import {

// LSTM and GRU input and output positions (ONNX operator spec; a GRU's stop at initial_h and Y_h).
enum LstmInput { kX = 0, kW, kR, kB, kSequenceLens, kInitialH, kInitialC, kP };
enum LstmOutputIndex { kY = 0, kYH, kYC };

// What the importer needs to know of each recurrent op; everything else is shared.
struct CellSpec {
  CellKind cell;
  const char* op;              // its op_type
  int32_t gates;               // blocks stacked in W and R (B holds 2 x gates: Wb, then Rb)
  const int32_t* stack_index;  // the ONNX block of each FloatLstm gate
  int inputs, outputs;         // how many the operator has
  std::vector<std::string> activations;  // the default per direction: the kernel's only ones
};

extern const CellSpec kLstmSpec, kGruSpec, kRnnSpec;

// The spec of an LSTM or GRU node; null for any other op.
const CellSpec* cell_spec(const onnx::NodeProto& n);
// An LSTM or GRU node.
bool recurrent(const onnx::NodeProto& n);

// The largest hidden or input size read from a model: 8H and 4H x I stay far inside int64 and
// every size the compiler derives fits its int32 fields.
constexpr int64_t kMaxLayerSize = int64_t{1} << 20;

// One LSTM or GRU node, checked and read.
struct NodeInfo {
  const onnx::NodeProto* node = nullptr;
  const CellSpec* spec = &kLstmSpec;
  std::string label;
  int64_t hidden = -1, layout = 0, input_size = -1;
  int32_t directions = 1;
  bool reverse = false;  // one direction, walking time backwards (the kernel does so; no copy)
  std::vector<float> W, R, B;
  std::array<GateSigmoid, 2> gate_sigmoid;  // per direction: an LSTM's f activation (Sigmoid or HardSigmoid)
  std::array<bool, 2> relu{};                // per direction: an RNN's activation is Relu (else Tanh)
};

// Input k of `n` is given; output k of `n` is read (by a node or as a graph output).
bool present(const onnx::NodeProto& n, int k);
bool used(const Graph& g, const onnx::NodeProto& n, int k);

// Attributes, inputs and weights of one node; false (with problems) when it cannot be read.
bool read_node(const Graph& g, const onnx::NodeProto& lstm, NodeInfo* info, std::vector<std::string>* problems);
// One op's float layer: direction d of the node's weights, gates from the ONNX stacking order.
FloatLstm node_op(const NodeInfo& n, int32_t d);

// Where one node's initial_h or initial_c comes from.
struct StateOrigin {
  StateSource source = StateSource::kZero;
  std::vector<std::vector<float>> constant;  // kConstant: per direction, [H]
  std::string graph_input;                   // kInput
  int64_t first_row = 0;                     // kInput: the node's first row of the graph input
};

// Where `n`'s initial_h (k = kInitialH) or initial_c comes from: absent or zero, a constant, or rows
// of a graph input; false (with problems) for anything else. `batch`: the input's, < 0 unknown.
bool trace_state(const Graph& g, const NodeInfo& n, int k, StateOrigin* o, std::vector<std::string>* problems,
                 int64_t batch);
// The graph output Y_h / Y_c reach: directly (through Identity) for one node; one Concat along
// axis 0 of every node's, in layer order, for several.
bool trace_final_state(const Graph& g, const std::vector<NodeInfo>& nodes, int k, std::string* out,
                       std::vector<std::string>* problems);

}  // namespace import
}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_SRC_IMPORT_RECURRENT_NODES_H_
