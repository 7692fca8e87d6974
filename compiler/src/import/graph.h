// The graph as the importer reads it (internal to compiler/src/import/ and compiler/src/recognize/):
// the producer and consumers of each value, constant tensors and attributes read as numbers.
#ifndef QLSTM_COMPILER_SRC_IMPORT_GRAPH_H_
#define QLSTM_COMPILER_SRC_IMPORT_GRAPH_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "import/shapes.h"

namespace qlstm {
namespace compiler {
namespace import {

// "[1, 2, 3]".
std::string join(const std::vector<int64_t>& v);
// A number as the messages print it (an ostream's default format).
std::string fmt(double v);

class Graph {
 public:
  // `facts`: the shape pass's, when it ran (null: no shapes, no uniform values).
  explicit Graph(const onnx::GraphProto& g, const ShapeFacts* facts = nullptr) : g_(g), facts_(facts) {
    for (const auto& t : g.initializer()) initializers_[t.name()] = &t;
    for (int k = 0; k < g.node_size(); ++k) {
      for (const auto& out : g.node(k).output()) {
        if (!out.empty()) producer_[out] = k;
      }
      for (const auto& in : g.node(k).input()) {
        if (!in.empty()) consumers_[in].push_back(k);
      }
    }
    for (const auto& i : g.input()) inputs_.insert(i.name());
    for (const auto& o : g.output()) outputs_.insert(o.name());
  }
  const onnx::GraphProto& proto() const { return g_; }
  const onnx::TensorProto* initializer(const std::string& n) const {
    const auto it = initializers_.find(n);
    return it == initializers_.end() ? nullptr : it->second;
  }
  const onnx::NodeProto* producer(const std::string& n) const {
    const auto it = producer_.find(n);
    return it == producer_.end() ? nullptr : &g_.node(it->second);
  }
  // The nodes reading `n`'s values: all but Shape nodes, which read only its shape (the shape
  // pass folded those it could; import/shapes.h).
  std::vector<const onnx::NodeProto*> data_consumers(const std::string& n) const {
    std::vector<const onnx::NodeProto*> out;
    for (const auto* c : consumers(n)) {
      if (c->op_type() != "Shape") out.push_back(c);
    }
    return out;
  }
  std::vector<const onnx::NodeProto*> consumers(const std::string& n) const {
    std::vector<const onnx::NodeProto*> out;
    const auto it = consumers_.find(n);
    if (it != consumers_.end()) {
      for (int k : it->second) out.push_back(&g_.node(k));
    }
    return out;
  }
  // The value's shape (symbolic where the export is dynamic), or null when its rank is unknown.
  const Shape* shape(const std::string& n) const { return facts_ ? facts_->shape(n) : nullptr; }
  // A value filled with one number by the shape arithmetic the shape pass folded, or null.
  const UniformValue* uniform(const std::string& n) const { return facts_ ? facts_->uniform_value(n) : nullptr; }
  // Two axis sizes that differ for certain: two numbers, or two of the graph inputs' declared
  // dynamic axes (ShapeFacts::input_axes).
  bool sizes_differ(const Dim& a, const Dim& b) const {
    if (a.known() && b.known()) return a.value != b.value;
    return facts_ != nullptr && !a.symbol.empty() && !b.symbol.empty() && a.symbol != b.symbol &&
           facts_->input_axes.count(a.symbol) && facts_->input_axes.count(b.symbol);
  }
  bool is_graph_input(const std::string& n) const { return inputs_.count(n) && !initializer(n); }
  bool is_graph_output(const std::string& n) const { return outputs_.count(n) > 0; }

 private:
  const onnx::GraphProto& g_;
  const ShapeFacts* facts_;
  std::map<std::string, const onnx::TensorProto*> initializers_;
  std::map<std::string, int> producer_;
  std::map<std::string, std::vector<int>> consumers_;
  std::set<std::string> inputs_, outputs_;
};

// "node 'name' (Op)" (its first output when it has no name): how every message names a node.
std::string node_label(const onnx::NodeProto& n);
const onnx::AttributeProto* attribute(const onnx::NodeProto& n, const char* name);
double float_attribute(const onnx::NodeProto& n, const char* name, double fallback);
int64_t int_attribute(const onnx::NodeProto& n, const char* name, int64_t fallback);

// Reads a float, double, int64 or int32 tensor; false for other types or inconsistent sizes.
bool tensor_values(const onnx::TensorProto& t, std::vector<double>* out);
// A constant tensor value: an initializer, or a Constant node's value (through Identity).
const onnx::TensorProto* constant_tensor(const Graph& g, const std::string& name);
bool is_const(const Graph& g, const std::string& name);
// A constant's values and dims; false when `name` is not a readable constant.
bool constant_values(const Graph& g, const std::string& name, std::vector<double>* v,
                     std::vector<int64_t>* dims = nullptr);
bool constant_scalar(const Graph& g, const std::string& name, double* x);
// Is every element of `name` the same known value, whatever the (possibly input-dependent)
// shape? A constant whose elements are equal, or a uniform value of the shape pass. That is all
// "zero initial state" needs.
bool uniform_value(const Graph& g, const std::string& name, double* value);

// A constant read as a count, index or axis: an integer of sane magnitude (a damaged model may
// hold anything, and converting a huge double to int64 is undefined).
bool small_int(double v, int64_t* out);
// a and b equal up to a relative 1e-6 (the constants of a recognized pattern).
bool near(double a, double b);

bool axes_of(const Graph& g, const onnx::NodeProto& n, std::vector<int64_t>* axes);

bool reshape_target(const Graph& g, const onnx::NodeProto& n, std::vector<int64_t>* target);


// The other input of a two-input node, or "" when `name` is not one of them.
std::string other_input(const onnx::NodeProto& n, const std::string& name);
// The one node reading `name`, or null; null too when that node has no output (the pattern
// matchers read output(0) of what they find).
const onnx::NodeProto* only_consumer(const Graph& g, const std::string& name);
// The same, when that node is an `op`.
const onnx::NodeProto* only_consumer_of_type(const Graph& g, const std::string& name, const char* op);
// `n` is an `op` of `x` and a constant scalar equal to c (up to near()).
bool is_binary_with_const(const Graph& g, const onnx::NodeProto* n, const char* op, const std::string& x, double c);

}  // namespace import
}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_SRC_IMPORT_GRAPH_H_
