#include "tools/shape_agreement/agreement.h"

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/inference.h"
#include "graph/op_registry.h"
#include "graph/test_ops.h"
#include "gtest/gtest.h"
#include "ops/builtin_ops.h"

namespace graphopt {
namespace shape_agreement {
namespace {

using ::testing::HasSubstr;

onnx::ModelProto ParseModel(const std::string& text) {
  onnx::ModelProto m;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &m)) << text;
  return m;
}

// X: float[<x_dims>], Y = Relu(X), Z = Relu(Y); Y is a graph output with a (wrong) declared
// type that both sides must ignore.
onnx::ModelProto ReluChain(const std::string& x_dims) {
  return ParseModel(R"pb(
    ir_version: 8
    opset_import { version: 13 }
    graph {
      node { input: "X" output: "Y" op_type: "Relu" name: "r1" }
      node { input: "Y" output: "Z" op_type: "Relu" }
      input { name: "X" type { tensor_type { elem_type: 1 shape { )pb" +
                    x_dims + R"pb( } } } }
      output { name: "Y" type { tensor_type { elem_type: 7 shape { dim { dim_value: 9 } } } } }
      output { name: "Z" }
      value_info { name: "Y" type { tensor_type { elem_type: 6 } } }
    })pb");
}

constexpr char kStatic[] = "dim { dim_value: 2 } dim { dim_value: 3 }";
constexpr char kSymbolic[] = "dim { dim_param: \"N\" } dim { dim_value: 3 }";

// A registry whose only op is a "Relu" with the given rules.
std::unique_ptr<OpRegistry> RegistryWithRelu(ShapeInferenceFn shape,
                                             TypeInferenceFn type = nullptr) {
  auto registry = std::make_unique<OpRegistry>();
  OpDef relu = testing::MakeTestOp("Relu", {"X"}, {"Y"});
  relu.shape_fn = std::move(shape);
  relu.type_fn = std::move(type);
  EXPECT_TRUE(registry->Register(std::move(relu)).ok());
  return registry;
}

ShapeInferenceFn SameShapeFn() {
  return [](InferenceContext& ctx) {
    ctx.set_output_shape(0, ctx.input_shape(0));
    return absl::OkStatus();
  };
}

ShapeInferenceFn FixedShape(Dims dims) {
  return [dims](InferenceContext& ctx) {
    ctx.set_output_shape(0, dims);
    return absl::OkStatus();
  };
}

class AgreementTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(RegisterBuiltinOps(&builtins_).ok()); }
  OpRegistry builtins_;
};

TEST_F(AgreementTest, BuiltinsAgreeWithOnnx) {
  ModelResult r = CompareModel("m", ReluChain(kSymbolic), builtins_);
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.import_error, "");
  EXPECT_EQ(r.onnx_error, "");
  EXPECT_EQ(r.agreed, 2);
  EXPECT_EQ(r.disagreed, 0);
  EXPECT_EQ(r.unsupported + r.graphopt_only + r.onnx_only + r.neither, 0);
  EXPECT_TRUE(r.disagreements.empty());
}

TEST_F(AgreementTest, RecordsEveryValue) {
  CompareOptions options;
  options.record_values = true;
  ModelResult r = CompareModel("m", ReluChain(kSymbolic), builtins_, options);
  ASSERT_EQ(r.values.size(), 2u);
  EXPECT_EQ(r.values[0].value, "Y");
  EXPECT_EQ(r.values[0].node, "r1");
  EXPECT_EQ(r.values[1].node, "#1");
  EXPECT_EQ(r.values[1].onnx, "float32[N,3]");
  EXPECT_EQ(r.values[1].graphopt, "float32[N,3]");
}

TEST_F(AgreementTest, DifferentSizeIsADisagreement) {
  auto ops = RegistryWithRelu(FixedShape({Dim::Known(2), Dim::Known(7)}));
  ModelResult r = CompareModel("m", ReluChain(kStatic), *ops);
  EXPECT_EQ(r.disagreed, 2);
  ASSERT_EQ(r.disagreements.size(), 2u);
  const Disagreement& d = r.disagreements[0];
  EXPECT_EQ(d.model, "m");
  EXPECT_EQ(d.value, "Y");
  EXPECT_EQ(d.node, "r1");
  EXPECT_EQ(d.op, "Relu");
  EXPECT_EQ(d.onnx, "float32[2,3]");
  EXPECT_EQ(d.graphopt, "float32[2,7]");
}

TEST_F(AgreementTest, DifferentRankIsADisagreement) {
  auto ops = RegistryWithRelu(FixedShape({Dim::Known(6)}));
  EXPECT_EQ(CompareModel("m", ReluChain(kStatic), *ops).disagreed, 2);
}

TEST_F(AgreementTest, DifferentDtypeIsADisagreement) {
  auto ops = RegistryWithRelu(SameShapeFn(), [](InferenceContext& ctx) {
    ctx.set_output_dtype(0, v1::DT_INT64);
    return absl::OkStatus();
  });
  ModelResult r = CompareModel("m", ReluChain(kStatic), *ops);
  // Y disagrees; Z's input is then int64 on graphopt's side, which it passes on.
  ASSERT_GE(r.disagreements.size(), 1u);
  EXPECT_EQ(r.disagreements[0].graphopt, "int64[2,3]");
}

TEST_F(AgreementTest, KnownSizeAgainstSymbolIsADisagreement) {
  auto ops = RegistryWithRelu(FixedShape({Dim::Known(2), Dim::Known(3)}));
  ModelResult r = CompareModel("m", ReluChain(kSymbolic), *ops);
  EXPECT_EQ(r.disagreed, 2);
  EXPECT_EQ(r.disagreements[0].onnx, "float32[N,3]");
}

TEST_F(AgreementTest, TwoSymbolsAreADisagreement) {
  auto ops = RegistryWithRelu(FixedShape({Dim::Symbol("M"), Dim::Known(3)}));
  EXPECT_EQ(CompareModel("m", ReluChain(kSymbolic), *ops).disagreed, 2);
}

TEST_F(AgreementTest, OneSidedKnowledgeIsNotADisagreement) {
  // graphopt forgets the symbol: ONNX knows more.
  auto forgets = RegistryWithRelu(FixedShape({Dim::Unknown(), Dim::Known(3)}));
  ModelResult r = CompareModel("m", ReluChain(kSymbolic), *forgets);
  EXPECT_EQ(r.disagreed, 0);
  EXPECT_EQ(r.agreed, 2);
  EXPECT_EQ(r.onnx_knows_more, 2);
  // graphopt gives no shape at all.
  auto nothing = RegistryWithRelu([](InferenceContext& ctx) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  });
  r = CompareModel("m", ReluChain(kSymbolic), *nothing);
  EXPECT_EQ(r.disagreed, 0);
  EXPECT_EQ(r.onnx_knows_more, 2);
}

TEST_F(AgreementTest, OnnxGeneratedSymbolsCountAsUnknown) {
  // ONNX names the broadcast of two different symbols "unk__0"; graphopt's own rule knows 5.
  onnx::ModelProto m = ParseModel(R"pb(
    ir_version: 8
    opset_import { version: 13 }
    graph {
      node { input: "A" input: "B" output: "C" op_type: "Add" }
      input { name: "A" type { tensor_type { elem_type: 1 shape { dim { dim_param: "a" } } } } }
      input { name: "B" type { tensor_type { elem_type: 1 shape { dim { dim_param: "b" } } } } }
      output { name: "C" }
    })pb");
  CompareOptions options;
  options.record_values = true;
  ModelResult builtin = CompareModel("m", m, builtins_, options);
  EXPECT_EQ(builtin.agreed, 1);
  EXPECT_EQ(builtin.onnx_knows_more, 0);
  EXPECT_EQ(builtin.values[0].onnx, "float32[?]");

  OpRegistry ops;
  OpDef add = testing::MakeTestOp("Add", {"A", "B"}, {"C"});
  add.shape_fn = FixedShape({Dim::Known(5)});
  ASSERT_TRUE(ops.Register(std::move(add)).ok());
  ModelResult custom = CompareModel("m", m, ops);
  EXPECT_EQ(custom.disagreed, 0);
  EXPECT_EQ(custom.graphopt_knows_more, 1);
}

TEST_F(AgreementTest, GraphoptErrorOnAcceptedNodeIsADisagreement) {
  auto ops = RegistryWithRelu([](InferenceContext& ctx) { return ctx.Error("no, thanks"); });
  ModelResult r = CompareModel("m", ReluChain(kStatic), *ops);
  ASSERT_EQ(r.disagreements.size(), 2u);  // Y and Z
  EXPECT_EQ(r.disagreements[0].value, "Y");
  EXPECT_THAT(r.disagreements[0].graphopt, HasSubstr("error: node 'r1' (Relu): no, thanks"));
  EXPECT_EQ(r.disagreements[0].onnx, "float32[2,3]");
}

TEST_F(AgreementTest, UnknownOpsAreSkippedAndTheRestIsInferred) {
  onnx::ModelProto m = ParseModel(R"pb(
    ir_version: 8
    opset_import { version: 13 }
    opset_import { domain: "com.example" version: 1 }
    graph {
      node { input: "X" output: "F" op_type: "Foo" }
      node { input: "F" output: "G" op_type: "Relu" }
      node { input: "X" output: "H" op_type: "Relu" }
      node { input: "X" output: "I" op_type: "Bar" domain: "com.example" }
      input { name: "X" type { tensor_type { elem_type: 1 shape { dim { dim_value: 4 } } } } }
      output { name: "G" }
      output { name: "H" }
      output { name: "I" }
    })pb");
  ModelResult r = CompareModel("m", m, builtins_);
  EXPECT_EQ(r.import_error, "");
  EXPECT_EQ(r.onnx_error, "");
  EXPECT_EQ(r.unsupported, 2);
  EXPECT_EQ(r.unsupported_ops.at("Foo"), 1);
  EXPECT_EQ(r.unsupported_ops.at("com.example::Bar"), 1);
  EXPECT_EQ(r.neither, 1);  // G: Relu of an unknown value
  EXPECT_EQ(r.agreed, 1);   // H
  EXPECT_EQ(r.disagreed, 0);
}

TEST_F(AgreementTest, NodesOnnxRejectsAreReportedNotCompared) {
  onnx::ModelProto m = ParseModel(R"pb(
    ir_version: 8
    opset_import { version: 13 }
    graph {
      node { input: "A" input: "B" output: "C" op_type: "MatMul" name: "mm" }
      input { name: "A" type { tensor_type { elem_type: 1 shape { dim { dim_value: 2 } dim { dim_value: 3 } } } } }
      input { name: "B" type { tensor_type { elem_type: 1 shape { dim { dim_value: 4 } dim { dim_value: 5 } } } } }
      output { name: "C" }
    })pb");
  // Both reject the node.
  ModelResult both = CompareModel("m", m, builtins_);
  EXPECT_EQ(both.disagreed, 0);
  EXPECT_EQ(both.neither, 1);
  ASSERT_EQ(both.onnx_node_errors.size(), 1u);
  EXPECT_THAT(both.onnx_node_errors[0], HasSubstr("mm (MatMul): "));
  EXPECT_THAT(both.onnx_node_errors[0], HasSubstr("Incompatible dimensions"));
  // Only ONNX rejects it: graphopt's answer counts as its own knowledge.
  OpRegistry lenient;
  ASSERT_TRUE(lenient.Register(testing::MakeTestOp("MatMul", {"A", "B"}, {"C"})).ok());
  ModelResult one = CompareModel("m", m, lenient);
  EXPECT_EQ(one.disagreed, 0);
  EXPECT_EQ(one.graphopt_only, 1);
}

TEST_F(AgreementTest, VerifierRejectionsOfAcceptedNodesAreReported) {
  onnx::ModelProto m = ReluChain(kStatic);
  onnx::AttributeProto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("bogus");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
  ModelResult r = CompareModel("m", m, builtins_);
  EXPECT_EQ(r.disagreed, 0);
  ASSERT_EQ(r.verifier_errors.size(), 1u);
  EXPECT_THAT(r.verifier_errors[0], HasSubstr("unknown attribute 'bogus'"));
}

TEST_F(AgreementTest, ModelLevelOnnxFailuresAreReported) {
  onnx::ModelProto m = ReluChain(kStatic);
  m.mutable_graph()->mutable_node(0)->set_domain("com.example");  // no opset import for it
  ModelResult r = CompareModel("m", m, builtins_);
  EXPECT_THAT(r.onnx_error, HasSubstr("No opset import for domain"));
  EXPECT_EQ(r.agreed + r.disagreed, 0);
}

TEST_F(AgreementTest, ModelsGraphoptCannotCarryAreNotCompared) {
  onnx::ModelProto m = ParseModel(R"pb(
    ir_version: 8
    opset_import { version: 13 }
    graph {
      node { input: "S" output: "T" op_type: "Identity" }
      input { name: "S" type { map_type { key_type: 7 value_type { tensor_type { elem_type: 1 } } } } }
      output { name: "T" }
    })pb");
  ModelResult r = CompareModel("map", m, builtins_);
  EXPECT_TRUE(r.unimplemented);
  EXPECT_THAT(r.import_error, HasSubstr("map"));
  EXPECT_EQ(r.agreed + r.disagreed + r.unsupported, 0);
}

TEST_F(AgreementTest, SymbolizeInputsKeepsInitializers) {
  onnx::ModelProto m = ReluChain(kStatic);
  onnx::ValueInfoProto* w = m.mutable_graph()->add_input();
  w->set_name("W");
  w->mutable_type()->mutable_tensor_type()->set_elem_type(1);
  w->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(4);
  onnx::TensorProto* t = m.mutable_graph()->add_initializer();
  t->set_name("W");
  t->set_data_type(1);
  t->add_dims(4);
  for (int i = 0; i < 4; ++i) t->add_float_data(0);
  onnx::ModelProto s = SymbolizeInputs(m);
  EXPECT_EQ(OnnxTypeToString(s.graph().input(0).type()), "float32[d2,d3]");
  EXPECT_EQ(OnnxTypeToString(s.graph().input(1).type()), "float32[4]");
  ModelResult r = CompareModel("m@sym", s, builtins_);
  EXPECT_EQ(r.agreed, 2);
}

TEST_F(AgreementTest, SummaryAddsUp) {
  Summary summary;
  summary.Add(CompareModel("a", ReluChain(kStatic), builtins_));
  auto ops = RegistryWithRelu(FixedShape({Dim::Known(1)}));
  summary.Add(CompareModel("b", ReluChain(kStatic), *ops));
  EXPECT_EQ(summary.models, 2);
  EXPECT_EQ(summary.agreed, 2);
  EXPECT_EQ(summary.disagreed, 2);
  EXPECT_EQ(summary.disagreements.size(), 2u);
  EXPECT_EQ(summary.disagreements[0].model, "b");
}

}  // namespace
}  // namespace shape_agreement
}  // namespace graphopt
