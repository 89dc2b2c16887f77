#include "passes/infer_shape_pass.h"

#include "gmock/gmock.h"
#include "graph/inference.h"
#include "graph/test_ops.h"
#include "gtest/gtest.h"
#include "passes/pass_test_util.h"

namespace graphopt {
namespace {

using ::graphopt::testing::PassTestEnv;
using ::graphopt::testing::TypeOf;
using ::testing::HasSubstr;

// An MLP slice with a symbolic batch and a Reshape computed from Shape, as exporters write it.
constexpr char kGraph[] = R"pb(
  inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { symbol: "batch" } dims { size: 2 } dims { size: 4 } } } }
  initializers { name: "w" dtype: DT_FLOAT32 dims: 8 dims: 3 raw_data: "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000" }
  initializers { name: "zero" dtype: DT_INT64 dims: 1 raw_data: "\000\000\000\000\000\000\000\000" }
  initializers { name: "minus_one" dtype: DT_INT64 dims: 1 raw_data: "\377\377\377\377\377\377\377\377" }
  nodes { name: "shape" op_type: "Shape" inputs: "x" outputs: "sh" }
  nodes { name: "gather" op_type: "Gather" inputs: "sh" inputs: "zero" outputs: "b" attributes { name: "axis" i: 0 } }
  nodes { name: "concat" op_type: "Concat" inputs: "b" inputs: "minus_one" outputs: "target" attributes { name: "axis" i: 0 } }
  nodes { name: "reshape" op_type: "Reshape" inputs: "x" inputs: "target" outputs: "flat" }
  nodes { name: "matmul" op_type: "MatMul" inputs: "flat" inputs: "w" outputs: "y" }
  nodes { name: "relu" op_type: "Relu" inputs: "y" outputs: "out" }
  outputs { name: "out" }
)pb";

TEST(InferShapePassTest, SymbolicBatchFlowsThroughShapeArithmetic) {
  PassTestEnv env;
  graphopt::PipelineResult result;
  auto out = env.Run(kGraph, {"infer_shape"}, &result);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(TypeOf(*out, "sh"), "int64[3]");
  EXPECT_EQ(TypeOf(*out, "flat"), "float32[batch,8]");
  EXPECT_EQ(TypeOf(*out, "y"), "float32[batch,3]");
  EXPECT_EQ(TypeOf(*out, "out"), "float32[batch,3]");
  // infer_type was added for infer_shape, and the report says so.
  ASSERT_EQ(result.runs.size(), 2u);
  EXPECT_EQ(result.runs[0].name, "infer_type");
  EXPECT_EQ(result.runs[0].added_for, "infer_shape");
  EXPECT_EQ(result.runs[1].name, "infer_shape");
  EXPECT_EQ(result.runs[1].added_for, "");
  // sh, b, target are static (int64[3], int64[1], int64[2]); flat, y, out symbolic.
  EXPECT_THAT(result.runs[1].messages,
              ::testing::Contains("shapes of node outputs: 3 static, 3 symbolic, 0 partially "
                                  "known, 0 of unknown rank"));
}

TEST(InferShapePassTest, BroadcastMismatchNamesTheNode) {
  PassTestEnv env;
  auto out = env.Run(R"pb(
    inputs { name: "a" type { dtype: DT_FLOAT32 shape { dims { size: 3 } } } }
    inputs { name: "b" type { dtype: DT_FLOAT32 shape { dims { size: 4 } } } }
    nodes { name: "add" op_type: "Add" inputs: "a" inputs: "b" outputs: "c" }
    outputs { name: "c" })pb",
                     {"infer_shape"});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("pass 'infer_shape': node 'add' (Add)"));
}

TEST(InferShapePassTest, UnknownRankStaysUnknown) {
  PassTestEnv env;
  auto out = env.Run(R"pb(
    inputs { name: "a" type { dtype: DT_FLOAT32 } }
    nodes { op_type: "Relu" inputs: "a" outputs: "r" }
    outputs { name: "r" })pb",
                     {"infer_shape"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(TypeOf(*out, "r"), "float32[?..]");
}

TEST(InferShapePassTest, OpWithoutShapeRuleLeavesItsOutputsAsTheyAre) {
  // An op known only by its decomposition body (no shape_fn) until inline_functions expands it:
  // shape inference before inlining says nothing about its outputs and does not fail.
  OpRegistry registry;
  ASSERT_TRUE(registry.Register(testing::MakeTestOp("BodyOnly", {"x"}, {"y", "z"})).ok());
  // A copy without the rule (its derived tables still point into the registered descriptor).
  OpDef op = *registry.Find("", "BodyOnly");
  op.shape_fn = nullptr;
  Graph g;
  ValueId x = *g.AddValue("x");
  g.mutable_value(x).type = TensorType{v1::DT_FLOAT32, Dims{Dim::Known(4)}};
  g.AddGraphInput(x);
  ValueId y = *g.AddValue("y");
  ValueId z = *g.AddValue("z");
  g.mutable_value(z).type.shape = Dims{Dim::Symbol("declared")};
  NodeId n = *g.AddNode("b", "BodyOnly", "", {x}, {y, z});
  DimsValueTable dims(g.num_value_slots());
  ASSERT_TRUE(InferNodeShapes(g, n, op, &dims).ok());
  EXPECT_FALSE(g.value(y).type.shape.has_value());
  ASSERT_TRUE(g.value(z).type.shape.has_value());
  EXPECT_EQ(*g.value(z).type.shape, Dims{Dim::Symbol("declared")});
  // Types still follow the descriptor's constraints.
  ASSERT_TRUE(InferNodeTypes(g, n, op).ok());
  EXPECT_EQ(g.value(y).type.dtype, v1::DT_FLOAT32);
}

}  // namespace
}  // namespace graphopt
