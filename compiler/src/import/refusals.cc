#include "qlstm/compiler/import/refusals.h"

namespace qlstm {
namespace compiler {
namespace import {
std::string describe_foreign_node(const onnx::NodeProto& n) {
  if (!n.domain().empty() && n.domain() != "ai.onnx") {
    return "an op of domain '" + n.domain() + "' (a custom op, or one of another framework such as a TensorFlow op "
           "left in the file, or ONNX-ML): not supported (only default-domain ONNX ops are); convert the model with "
           "standard ONNX ops only (tf2onnx without --custom-ops)";
  }
  const std::string& op = n.op_type();
  if (op == "Loop" && n.name().find("while") != std::string::npos) {
    // TensorFlow's while_loop, as tf2onnx writes a Keras layer its RNN rewriters did not match.
    return "a Loop from TensorFlow's while_loop: a Keras recurrent layer tf2onnx wrote step by step (it does so "
           "for a GRU, and for an LSTM whose activation is not tanh, when its rewriters do not match the layer) is "
           "not supported; an LSTM with the default activations converts to one ONNX LSTM node, or rebuild the "
           "layer as torch's nn.GRU/nn.LSTM with the same weights, or cut the model before it and run the layer on "
           "the host";
  }
  if (op == "Loop" || op == "Scan") {
    return "a " + op + ": a recurrence written step by step (e.g. an LSTMCell or GRUCell stepped in Python, exported "
           "as a " + op + ") is not supported; run nn.LSTM or nn.GRU over the whole sequence, which exports one LSTM "
           "or GRU node per layer";
  }
  return "";
}

std::string describe_reduction_over_time(const onnx::NodeProto& n, const std::string& reduced) {
  if (reduced.find('T') == std::string::npos) return "";
  const std::string& op = n.op_type();
  const std::string what = op == "ReduceMean" ? "a mean" : op == "ReduceMax" ? "a max" : op == "ReduceSum" ? "a sum"
                                                                                          : "a reduction";
  return what + " over time (" + op + " over the time axis" + (reduced == "T" ? "" : " and others") +
         "): not supported (a mean or a max over the time axis alone is: y.mean(dim=1), y.max(dim=1).values)";
}

}  // namespace import
}  // namespace compiler
}  // namespace qlstm
