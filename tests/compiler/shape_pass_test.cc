// The import's shape pass (compiler/src/import/shapes.h) on torch's dynamic-axes exports: the
// shape arithmetic that builds zero states and Reshape targets is folded away, with the axis
// names kept.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include <onnx/onnx_pb.h>

#include "import/onnx_model.h"
#include "import/shapes.h"

namespace {

using namespace qlstm::compiler::import;

onnx::ModelProto load(const std::string& name) {
  onnx::ModelProto m;
  std::ifstream in(std::string(QLSTM_ONNX_FIXTURES) + "/" + name + ".onnx", std::ios::binary);
  EXPECT_TRUE(m.ParseFromIstream(&in)) << name;
  return m;
}

std::multiset<std::string> ops(const onnx::ModelProto& m) {
  std::multiset<std::string> out;
  for (const auto& n : m.graph().node()) out.insert(n.op_type());
  return out;
}

TEST(ShapePass, FoldsTheZeroStatesOfTwoModulesWithTheirAxisNames) {
  onnx::ModelProto m = load("import_two_lstm_modules_dynamic");
  ASSERT_EQ(ops(m).count("Shape"), 2u);
  const ShapeFacts facts = fold_shapes(&m, passes_checker(&m));
  const auto left = ops(m);
  // The Shape reads, their Gather/Unsqueeze/Concat, the ConstantOfShape and the Transpose only a
  // Shape read are gone; the data path stays.
  for (const char* op : {"Shape", "Gather", "Concat", "ConstantOfShape"}) EXPECT_EQ(left.count(op), 0u) << op;
  EXPECT_EQ(left.count("LSTM"), 2u);
  EXPECT_EQ(left.count("Transpose"), 2u);  // the input's and the output's
  std::vector<std::string> states;
  for (const auto& n : m.graph().node()) {
    if (n.op_type() == "LSTM") states.push_back(n.input(5));
  }
  ASSERT_EQ(states.size(), 2u);
  const char* expected[] = {"[1, batch, 4]", "[1, batch, 5]"};
  for (size_t k = 0; k < 2; ++k) {
    const UniformValue* u = facts.uniform_value(states[k]);
    ASSERT_NE(u, nullptr) << states[k];
    EXPECT_EQ(u->value, 0.0);
    EXPECT_TRUE(u->shape_known);
    EXPECT_EQ(shape_string(u->shape), expected[k]);
    EXPECT_NE(u->origin.find("(ConstantOfShape)"), std::string::npos) << u->origin;
  }
  // The first LSTM's Y, inferred from the input's declared axes.
  const Shape* y = facts.shape("/rnn1/LSTM_output_0");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(shape_string(*y), "[time, 1, batch, 4]");
}

TEST(ShapePass, GivesAReshapeTargetComputedFromShapeAConstantOne) {
  onnx::ModelProto m = load("import_reshape_target_from_shape");
  fold_shapes(&m, passes_checker(&m));
  EXPECT_EQ(ops(m), (std::multiset<std::string>{"LSTM", "LSTM", "Transpose", "Transpose", "Reshape", "Reshape"}));
  int reshapes = 0;
  for (const auto& n : m.graph().node()) {
    if (n.op_type() != "Reshape") continue;
    ++reshapes;
    const onnx::TensorProto* target = nullptr;
    for (const auto& t : m.graph().initializer()) {
      if (t.name() == n.input(1)) target = &t;
    }
    ASSERT_NE(target, nullptr) << n.name();
    // [time, batch, 128] from [time, batch, 2, 64]: the two axes copied, the width a number.
    EXPECT_EQ(std::vector<int64_t>(target->int64_data().begin(), target->int64_data().end()),
              (std::vector<int64_t>{0, 0, 128}));
  }
  EXPECT_EQ(reshapes, 2);
}

TEST(ShapePass, KeepsADeadEndAndWhatItCannotKnow) {
  // A Shape nothing reads stays (the importer names dead ends).
  onnx::ModelProto m = load("import_two_lstm_modules_dynamic");
  onnx::NodeProto* dead = m.mutable_graph()->add_node();
  dead->set_op_type("Shape");
  dead->add_input("y");
  dead->add_output("unused_shape");
  fold_shapes(&m, passes_checker(&m));
  EXPECT_EQ(ops(m).count("Shape"), 1u);

  // A model ONNX's checker refuses (an LSTM with a ninth input) gets no inferred shapes: the first
  // module's zero state still folds from the input's declared axes, the second's Shape read (of a
  // value whose shape is not known) stays.
  onnx::ModelProto bad = load("import_two_lstm_modules_dynamic");
  for (auto& n : *bad.mutable_graph()->mutable_node()) {
    if (n.op_type() == "LSTM") {
      while (n.input_size() < 9) n.add_input("");
    }
  }
  EXPECT_FALSE(passes_checker(&bad));
  const ShapeFacts facts = fold_shapes(&bad, passes_checker(&bad));
  EXPECT_EQ(facts.shape("/rnn1/LSTM_output_0"), nullptr);  // only the declared shapes
  EXPECT_EQ(ops(bad).count("Shape"), 1u);
  const UniformValue* first = facts.uniform_value("/rnn1/ConstantOfShape_output_0");
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(shape_string(first->shape), "[1, batch, 4]");
  const UniformValue* second = facts.uniform_value("/rnn2/ConstantOfShape_output_0");
  ASSERT_NE(second, nullptr);
  EXPECT_FALSE(second->shape_known);
}

TEST(ShapePass, LeavesShapeArithmeticOfOtherFormsToTheImporter) {
  // A Concat of shapes along axis 2 (on 1-D values: invalid; ONNX's own data propagation crashes on
  // it) is not evaluated, and the zero state it sizes has no known shape.
  onnx::ModelProto m = load("import_two_lstm_modules_dynamic");
  for (auto& n : *m.mutable_graph()->mutable_node()) {
    if (n.op_type() != "Concat") continue;
    for (auto& a : *n.mutable_attribute()) {
      if (a.name() == "axis") a.set_i(2);
    }
  }
  const ShapeFacts facts = fold_shapes(&m, passes_checker(&m));
  EXPECT_EQ(ops(m).count("Concat"), 2u);
  const UniformValue* u = facts.uniform_value("/rnn1/ConstantOfShape_output_0");
  ASSERT_NE(u, nullptr);
  EXPECT_FALSE(u->shape_known);
}

}  // namespace

TEST(ShapePass, InferenceLeavesTheModelAsItWas) {
  // ONNX's inference runs on the model itself (no copy of its weights): its value_info, inputs and
  // outputs are restored after the read, and a model not checked gets no inference at all.
  onnx::ModelProto m = load("import_two_lstm_modules_dynamic");
  const std::string before = m.SerializeAsString();
  size_t inferred = 0;
  ASSERT_TRUE(with_inferred_shapes(&m, true, [&](const onnx::GraphProto& g) { inferred = g.value_info_size(); }));
  EXPECT_GT(inferred, static_cast<size_t>(m.graph().value_info_size()));
  EXPECT_EQ(m.SerializeAsString(), before);
  bool called = false;
  EXPECT_FALSE(with_inferred_shapes(&m, false, [&](const onnx::GraphProto&) { called = true; }));
  EXPECT_FALSE(called);
}

TEST(ShapePass, OutputsDeclaredWithoutAShapeStillGetInference) {
  // ONNX's checker refuses a graph output declared without a shape (hand-built graphs and some
  // exporters write them); it is set aside while the checker and the inference run, and its
  // inferred shape comes as value_info. The model is left as it was.
  onnx::ModelProto m = load("import_two_lstm_modules_dynamic");
  m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  const std::string y = m.graph().output(0).name(), before = m.SerializeAsString();
  ASSERT_TRUE(passes_checker(&m));
  EXPECT_EQ(m.SerializeAsString(), before);
  std::string inferred;
  ASSERT_TRUE(with_inferred_shapes(&m, true, [&](const onnx::GraphProto& g) {
    for (const auto& v : g.value_info()) {
      if (v.name() == y && v.type().tensor_type().has_shape()) inferred = std::to_string(v.type().tensor_type().shape().dim_size());
    }
  }));
  EXPECT_EQ(inferred, "3");
  EXPECT_EQ(m.SerializeAsString(), before);
  const ShapeFacts facts = fold_shapes(&m, true);
  ASSERT_NE(facts.shape(y), nullptr);
  EXPECT_EQ(shape_string(*facts.shape(y)), "[batch, time, 5]");  // the second module's H = 5
}
