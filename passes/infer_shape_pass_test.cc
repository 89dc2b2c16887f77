#include "passes/infer_shape_pass.h"

#include "gmock/gmock.h"
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

}  // namespace
}  // namespace graphopt
