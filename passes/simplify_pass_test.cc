#include "passes/simplify_pass.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "graph/proto_convert.h"
#include "gtest/gtest.h"
#include "passes/pass_test_util.h"
#include "passes/runtime_test_util.h"

namespace graphopt {
namespace {

using ::graphopt::testing::FloatTensor;
using ::graphopt::testing::FloatTensorProto;
using ::graphopt::testing::Int64TensorProto;
using ::graphopt::testing::OpTypes;
using ::graphopt::testing::PassTestEnv;
using ::graphopt::testing::SeededFloats;
using ::graphopt::testing::TestRuntime;
using ::graphopt::testing::WithInitializers;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

using Inputs = std::vector<std::pair<std::string, runtime::Tensor>>;

// Runs simplify (with `options`) over `text` and checks that the result computes the same bits
// as the original on `inputs`; returns the simplified graph.
v1::Graph SimplifyAndCompare(const std::string& text, const Inputs& inputs,
                             PassOptions options = {}, std::string* messages = nullptr) {
  PassTestEnv env;
  PipelineResult result;
  auto out = testing::OptimizeAndCompare(env, text, {{"simplify", std::move(options)}}, inputs,
                                         /*bit_exact=*/true, 0, &result);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return v1::Graph();
  if (messages != nullptr) {
    for (const PassRun& run : result.runs) {
      for (const std::string& m : run.messages) absl::StrAppend(messages, m, "\n");
    }
  }
  return *std::move(out);
}

std::string FloatInput(const std::string& name, const std::vector<int64_t>& dims) {
  std::string shape;
  for (int64_t d : dims) absl::StrAppend(&shape, "dims { size: ", d, " } ");
  return absl::StrCat("inputs { name: \"", name, "\" type { dtype: DT_FLOAT32 shape { ", shape,
                      "} } }");
}

// x of [2, 3] with a negative zero among its elements.
Inputs X23() {
  std::vector<float> x = SeededFloats(6, 7);
  x[1] = -0.0f;
  return {{"x", FloatTensor({2, 3}, x)}};
}

TEST(SimplifyPassTest, RemovesNeutralOperands) {
  const std::string text = WithInitializers(
      FloatInput("x", {2, 3}) + R"pb(
        nodes { op_type: "Add" inputs: "x" inputs: "negzero" outputs: "a" }
        nodes { op_type: "Mul" inputs: "one" inputs: "a" outputs: "b" }
        nodes { op_type: "Div" inputs: "b" inputs: "ones3" outputs: "c" }
        nodes { op_type: "Pow" inputs: "c" inputs: "one" outputs: "d" }
        nodes { op_type: "Sub" inputs: "d" inputs: "zero" outputs: "e" }
        nodes { op_type: "Relu" inputs: "e" outputs: "y" }
        outputs { name: "y" })pb",
      {FloatTensorProto("negzero", {}, {-0.0f}), FloatTensorProto("one", {1, 1}, {1.0f}),
       FloatTensorProto("ones3", {3}, {1, 1, 1}), FloatTensorProto("zero", {}, {0.0f})});
  std::string messages;
  v1::Graph out = SimplifyAndCompare(text, X23(), {}, &messages);
  EXPECT_THAT(OpTypes(out), ElementsAre("Relu"));
  EXPECT_EQ(out.nodes(0).inputs(0), "x");
  EXPECT_THAT(messages, HasSubstr("simplified 5: neutral_operand 5"));
  // The constants nothing reads any more are gone.
  EXPECT_THAT(out.initializers(), IsEmpty());
}

TEST(SimplifyPassTest, RemovesInvolutionPairs) {
  const std::string text = FloatInput("x", {2, 3}) + R"pb(
    nodes { op_type: "Neg" inputs: "x" outputs: "a" }
    nodes { op_type: "Neg" inputs: "a" outputs: "b" }
    nodes { op_type: "Relu" inputs: "b" outputs: "c" }
    nodes { op_type: "Neg" inputs: "c" outputs: "y" }
    nodes { op_type: "Greater" inputs: "x" inputs: "c" outputs: "g" }
    nodes { op_type: "Not" inputs: "g" outputs: "ng" }
    nodes { op_type: "Not" inputs: "ng" outputs: "z" }
    outputs { name: "y" }
    outputs { name: "z" })pb";
  std::string messages;
  v1::Graph out = SimplifyAndCompare(text, X23(), {}, &messages);
  // The pairs go with their inner nodes; a single Neg stays; g takes over the output name z.
  EXPECT_THAT(OpTypes(out), ElementsAre("Relu", "Neg", "Greater"));
  EXPECT_EQ(out.nodes(0).inputs(0), "x");
  EXPECT_THAT(messages, HasSubstr("simplified 2: involution_pair 2"));
}

TEST(SimplifyPassTest, KeepsOperandsThatChangeBitsOrShapes) {
  const std::string text = WithInitializers(
      FloatInput("x", {2, 3}) + R"pb(
        nodes { op_type: "Add" inputs: "x" inputs: "zero" outputs: "a" }
        nodes { op_type: "Sub" inputs: "a" inputs: "negzero" outputs: "b" }
        nodes { op_type: "Mul" inputs: "b" inputs: "one3d" outputs: "c" }
        nodes { op_type: "Sub" inputs: "zero" inputs: "x" outputs: "d" }
        nodes { op_type: "Mul" inputs: "x" inputs: "two" outputs: "e" }
        outputs { name: "c" } outputs { name: "d" } outputs { name: "e" })pb",
      {FloatTensorProto("zero", {}, {0.0f}), FloatTensorProto("negzero", {}, {-0.0f}),
       FloatTensorProto("one3d", {1, 1, 1}, {1.0f}), FloatTensorProto("two", {}, {2.0f})});
  // x + (+0) turns -0 into +0; x - (-0) too; a [1,1,1] one raises the rank; 0 - x is not x.
  v1::Graph out = SimplifyAndCompare(text, X23());
  EXPECT_THAT(OpTypes(out), ElementsAre("Add", "Sub", "Mul", "Sub", "Mul"));

  // Unless signed zeros may be ignored.
  PassTestEnv env;
  auto relaxed = env.RunSpecs(text, {{"simplify", {{"ignore_signed_zeros", "true"}}}});
  ASSERT_TRUE(relaxed.ok()) << relaxed.status();
  EXPECT_THAT(OpTypes(*relaxed), ElementsAre("Mul", "Sub", "Mul"));
}

TEST(SimplifyPassTest, IgnoringSignedZerosChangesTheBitsOfNegativeZero) {
  const std::string text = WithInitializers(FloatInput("x", {2, 3}) + R"pb(
    nodes { op_type: "Add" inputs: "x" inputs: "zero" outputs: "a" }
    nodes { op_type: "Relu" inputs: "a" outputs: "y" }
    outputs { name: "y" })pb",
                                            {FloatTensorProto("zero", {}, {0.0f})});
  PassTestEnv env;
  // x has a -0.0: Relu(-0.0 + 0.0) is +0.0, Relu(-0.0) is -0.0.
  auto out = testing::OptimizeAndCompare(
      env, text, {{"simplify", {{"ignore_signed_zeros", "true"}}}}, X23(), /*bit_exact=*/true);
  EXPECT_THAT(out.status().message(), HasSubstr("outputs differ: output 0[1]"));
  // Equal as numbers.
  EXPECT_TRUE(testing::OptimizeAndCompare(env, text,
                                          {{"simplify", {{"ignore_signed_zeros", "true"}}}},
                                          X23(), /*bit_exact=*/false)
                  .ok());
}

TEST(SimplifyPassTest, PositiveZeroAfterMatMulIsNeutral) {
  // Row 0 of x is [-0, -0]: every product with w's positive column is -0.0, and the MatMul
  // still gives +0.0 (its sum starts from +0.0), so the bias of zeros changes no bit.
  const std::string text = WithInitializers(
      FloatInput("x", {2, 2}) + R"pb(
        nodes { op_type: "MatMul" inputs: "x" inputs: "w" outputs: "m" }
        nodes { op_type: "Add" inputs: "zeros" inputs: "m" outputs: "y" }
        nodes { op_type: "Add" inputs: "x" inputs: "zeros" outputs: "a" }
        nodes { op_type: "Relu" inputs: "a" outputs: "z" }
        outputs { name: "y" } outputs { name: "z" })pb",
      {FloatTensorProto("w", {2, 2}, {1.0f, -2.0f, 3.0f, 0.5f}),
       FloatTensorProto("zeros", {2}, {0.0f, 0.0f})});
  v1::Graph out = SimplifyAndCompare(
      text, {{"x", FloatTensor({2, 2}, {-0.0f, -0.0f, 1.5f, -0.0f})}});
  // The Add of x itself stays: x may be -0.0.
  EXPECT_THAT(OpTypes(out), ElementsAre("MatMul", "Add", "Relu"));
  EXPECT_EQ(out.nodes(1).inputs(0), "x");
}

TEST(SimplifyPassTest, IntegerZeroIsNeutral) {
  const std::string text = WithInitializers(R"pb(
    inputs { name: "i" type { dtype: DT_INT64 shape { dims { size: 3 } } } }
    nodes { op_type: "Add" inputs: "zero" inputs: "i" outputs: "a" }
    nodes { op_type: "Neg" inputs: "a" outputs: "y" }
    outputs { name: "y" })pb",
                                            {Int64TensorProto("zero", {1}, {0})});
  v1::Graph out = SimplifyAndCompare(
      text, {{"i", runtime::Tensor::FromVector<int64_t>(v1::DT_INT64, {1, -2, 3}, {3})}});
  EXPECT_THAT(OpTypes(out), ElementsAre("Neg"));
}

TEST(SimplifyPassTest, ComposesTransposes) {
  const std::string text = FloatInput("x", {2, 3, 4}) + R"pb(
    nodes { op_type: "Transpose" inputs: "x" outputs: "t1"
            attributes { name: "perm" ints { values: [ 1, 0, 2 ] } } }
    nodes { op_type: "Transpose" inputs: "t1" outputs: "t2"
            attributes { name: "perm" ints { values: [ 0, 2, 1 ] } } }
    nodes { op_type: "Transpose" inputs: "x" outputs: "u1" }
    nodes { op_type: "Transpose" inputs: "u1" outputs: "u2" }
    nodes { op_type: "Transpose" inputs: "x" outputs: "v"
            attributes { name: "perm" ints { values: [ 0, 1, 2 ] } } }
    nodes { op_type: "Neg" inputs: "v" outputs: "w" }
    outputs { name: "t2" } outputs { name: "u2" } outputs { name: "w" })pb";
  std::string messages;
  v1::Graph out = SimplifyAndCompare(
      text, {{"x", FloatTensor({2, 3, 4}, SeededFloats(24, 1))}}, {}, &messages);
  // t2 = one Transpose of x; u2 (reverse of reverse) is x itself, but x is a graph input and
  // u2 a graph output, so u2 stays as an identity Transpose of x.
  EXPECT_THAT(OpTypes(out), ElementsAre("Transpose", "Transpose", "Neg"));
  EXPECT_EQ(out.nodes(0).inputs(0), "x");
  EXPECT_EQ(out.nodes(1).inputs(0), "x");
  EXPECT_EQ(out.nodes(2).inputs(0), "x");
  EXPECT_THAT(messages, HasSubstr("transpose_chain 2, transpose_identity 1"));
}

TEST(SimplifyPassTest, TransposePairInsideTheGraphDisappears) {
  const std::string text = FloatInput("x", {2, 3}) + R"pb(
    nodes { op_type: "Relu" inputs: "x" outputs: "r" }
    nodes { op_type: "Transpose" inputs: "r" outputs: "t1" }
    nodes { op_type: "Transpose" inputs: "t1" outputs: "y" }
    outputs { name: "y" })pb";
  v1::Graph out = SimplifyAndCompare(text, X23());
  EXPECT_THAT(OpTypes(out), ElementsAre("Relu"));
  // The graph output keeps its name: the Relu now produces "y".
  EXPECT_EQ(out.nodes(0).outputs(0), "y");
  EXPECT_EQ(out.outputs(0).name(), "y");
}

TEST(SimplifyPassTest, ReshapeChainsAndSameShapeReshapes) {
  const std::string text = WithInitializers(
      FloatInput("x", {2, 3}) + R"pb(
        nodes { op_type: "Reshape" inputs: "x" inputs: "s6" outputs: "r1" }
        nodes { op_type: "Reshape" inputs: "r1" inputs: "s32" outputs: "r2" }
        nodes { op_type: "Neg" inputs: "r2" outputs: "n" }
        nodes { op_type: "Reshape" inputs: "n" inputs: "s32" outputs: "r3" }
        nodes { op_type: "Relu" inputs: "r3" outputs: "y" }
        nodes { op_type: "Reshape" inputs: "x" inputs: "s6" outputs: "k1" }
        nodes { op_type: "Reshape" inputs: "k1" inputs: "s0" outputs: "k2" }
        outputs { name: "y" } outputs { name: "k2" })pb",
      {Int64TensorProto("s6", {1}, {6}), Int64TensorProto("s32", {2}, {3, 2}),
       Int64TensorProto("s0", {2}, {0, -1})});
  std::string messages;
  v1::Graph out = SimplifyAndCompare(text, X23(), {}, &messages);
  // r2 reads x directly; r3 reshapes to the shape n has and goes. k2 copies a dim of k1 (the 0
  // in its target), so that chain stays.
  EXPECT_THAT(OpTypes(out), ElementsAre("Reshape", "Neg", "Relu", "Reshape", "Reshape"));
  EXPECT_EQ(out.nodes(0).inputs(0), "x");
  EXPECT_EQ(out.nodes(2).inputs(0), "n");
  EXPECT_EQ(out.nodes(4).inputs(0), "k1");
  EXPECT_THAT(messages, HasSubstr("reshape_chain 1, reshape_same_shape 1"));
}

TEST(SimplifyPassTest, CastsToTheSameTypeAndLosslessChains) {
  const std::string text = R"pb(
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 3 } } } }
    inputs { name: "i" type { dtype: DT_INT32 shape { dims { size: 3 } } } }
    nodes { op_type: "Cast" inputs: "x" outputs: "same" attributes { name: "to" i: 1 } }
    nodes { op_type: "Cast" inputs: "same" outputs: "wide" attributes { name: "to" i: 11 } }
    nodes { op_type: "Cast" inputs: "wide" outputs: "back" attributes { name: "to" i: 1 } }
    nodes { op_type: "Relu" inputs: "back" outputs: "y" }
    nodes { op_type: "Cast" inputs: "i" outputs: "i64" attributes { name: "to" i: 7 } }
    nodes { op_type: "Cast" inputs: "i64" outputs: "d" attributes { name: "to" i: 11 } }
    nodes { op_type: "Cast" inputs: "x" outputs: "h" attributes { name: "to" i: 10 } }
    nodes { op_type: "Cast" inputs: "h" outputs: "hf" attributes { name: "to" i: 1 } }
    outputs { name: "y" } outputs { name: "d" } outputs { name: "hf" })pb";
  std::vector<float> x = {1.5f, -0.0f, 3.14159f};
  std::string messages;
  v1::Graph out = SimplifyAndCompare(
      text,
      {{"x", FloatTensor({3}, x)},
       {"i", runtime::Tensor::FromVector<int32_t>(v1::DT_INT32, {7, -8, 1 << 30}, {3})}},
      {}, &messages);
  // x -> same type (gone) -> f64 -> f32 (round trip, gone); i32 -> i64 -> f64 becomes one
  // Cast of i; the lossy f32 -> f16 -> f32 stays.
  EXPECT_THAT(OpTypes(out), ElementsAre("Relu", "Cast", "Cast", "Cast"));
  EXPECT_EQ(out.nodes(0).inputs(0), "x");
  EXPECT_EQ(out.nodes(1).inputs(0), "i");
  EXPECT_EQ(out.nodes(1).outputs(0), "d");
  EXPECT_THAT(messages, HasSubstr("cast_chain 1"));
  EXPECT_THAT(messages, HasSubstr("cast_round_trip 1"));
  EXPECT_THAT(messages, HasSubstr("cast_same_type 1"));
}

TEST(SimplifyPassTest, ShapeOfAStaticShapeIsAConstant) {
  const std::string text = R"pb(
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 2 } dims { size: 3 } } } }
    inputs { name: "b" type { dtype: DT_FLOAT32 shape { dims { symbol: "batch" } } } }
    nodes { op_type: "Shape" inputs: "x" outputs: "s" }
    nodes { op_type: "Shape" inputs: "x" outputs: "tail" attributes { name: "start" i: -1 } }
    nodes { op_type: "Size" inputs: "x" outputs: "n" }
    nodes { op_type: "Shape" inputs: "b" outputs: "sb" }
    outputs { name: "s" } outputs { name: "tail" } outputs { name: "n" } outputs { name: "sb" })pb";
  v1::Graph out = SimplifyAndCompare(
      text, {{"x", FloatTensor({2, 3}, SeededFloats(6, 2))}, {"b", FloatTensor({5}, SeededFloats(5, 3))}});
  EXPECT_THAT(OpTypes(out), ElementsAre("Shape"));
  ASSERT_EQ(out.initializers_size(), 3);
  EXPECT_EQ(out.initializers(0).name(), "s");
  EXPECT_EQ(out.outputs(0).name(), "s");
}

TEST(SimplifyPassTest, UnsqueezeSqueezePairs) {
  const std::string text = WithInitializers(R"pb(
    opset_imports { domain: "" version: 13 }
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 2 } dims { size: 1 } dims { size: 3 } } } }
    nodes { op_type: "Relu" inputs: "x" outputs: "r" }
    nodes { op_type: "Unsqueeze" inputs: "r" inputs: "ax0" outputs: "u" }
    nodes { op_type: "Squeeze" inputs: "u" inputs: "ax0" outputs: "s" }
    nodes { op_type: "Squeeze" inputs: "s" inputs: "ax1" outputs: "q" }
    nodes { op_type: "Unsqueeze" inputs: "q" inputs: "axm2" outputs: "y" }
    nodes { op_type: "Unsqueeze" inputs: "r" inputs: "ax0" outputs: "u2" }
    nodes { op_type: "Squeeze" inputs: "u2" inputs: "ax2" outputs: "z" }
    outputs { name: "y" } outputs { name: "z" })pb",
                                            {Int64TensorProto("ax0", {1}, {0}),
                                             Int64TensorProto("ax1", {1}, {1}),
                                             Int64TensorProto("ax2", {1}, {2}),
                                             Int64TensorProto("axm2", {1}, {-2})});
  std::string messages;
  v1::Graph out = SimplifyAndCompare(
      text, {{"x", FloatTensor({2, 1, 3}, SeededFloats(6, 4))}}, {}, &messages);
  // Unsqueeze(0) then Squeeze(0) is r; Squeeze(1) then Unsqueeze(-2 = 1) is r again (its dim 1
  // is 1); Unsqueeze(0) then Squeeze(2) squeezes another axis and stays.
  EXPECT_THAT(OpTypes(out), ElementsAre("Relu", "Unsqueeze", "Squeeze"));
  EXPECT_EQ(out.nodes(0).outputs(0), "y");
  EXPECT_THAT(messages, HasSubstr("unsqueeze_squeeze 1"));
  EXPECT_THAT(messages, HasSubstr("squeeze_unsqueeze 1"));
}

TEST(SimplifyPassTest, NoOpExpandSlicePadConcat) {
  const std::string text = WithInitializers(
      R"pb(opset_imports { domain: "" version: 18 })pb" + FloatInput("x", {2, 3}) + R"pb(
        nodes { op_type: "Relu" inputs: "x" outputs: "r" }
        nodes { op_type: "Expand" inputs: "r" inputs: "shape13" outputs: "e" }
        nodes { op_type: "Slice" inputs: "e" inputs: "starts" inputs: "ends" outputs: "s" }
        nodes { op_type: "Pad" inputs: "s" inputs: "pads0" outputs: "p" }
        nodes { op_type: "Concat" inputs: "p" outputs: "c" attributes { name: "axis" i: 0 } }
        nodes { op_type: "Expand" inputs: "c" inputs: "shape23x" outputs: "big" }
        nodes { op_type: "Slice" inputs: "c" inputs: "starts" inputs: "ends" inputs: "axes"
                inputs: "steps" outputs: "rev" }
        outputs { name: "big" } outputs { name: "rev" })pb",
      {Int64TensorProto("shape13", {2}, {1, 3}), Int64TensorProto("starts", {1}, {0}),
       Int64TensorProto("ends", {1}, {100}), Int64TensorProto("pads0", {4}, {0, 0, 0, 0}),
       Int64TensorProto("shape23x", {3}, {2, 2, 3}), Int64TensorProto("axes", {1}, {1}),
       Int64TensorProto("steps", {1}, {-1})});
  std::string messages;
  v1::Graph out = SimplifyAndCompare(text, X23(), {}, &messages);
  // Expand to [1,3], the full Slice, the zero Pad and the one-input Concat go; the growing
  // Expand and the reversing Slice stay.
  EXPECT_THAT(OpTypes(out), ElementsAre("Relu", "Expand", "Slice"));
  EXPECT_EQ(out.nodes(1).inputs(0), "r");
  EXPECT_THAT(messages, HasSubstr("concat_single 1, expand_same_shape 1, pad_zero 1, "
                                  "slice_whole 1"));
}

TEST(SimplifyPassTest, KeepsNoOpsBetweenGraphInputsAndOutputs) {
  const std::string text = R"pb(
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 3 } } } }
    nodes { op_type: "Cast" inputs: "x" outputs: "y" attributes { name: "to" i: 1 } }
    outputs { name: "y" })pb";
  PassTestEnv env;
  PipelineResult result;
  auto out = env.Run(text, {"simplify"}, &result);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("Cast"));
  EXPECT_FALSE(result.runs.back().changed);
  EXPECT_THAT(result.runs.back().messages,
              ElementsAre("simplified 0; refused 1: connects graph inputs/initializers and "
                          "outputs 1"));
}

TEST(SimplifyPassTest, UnknownShapesAreLeftAlone) {
  const std::string text = WithInitializers(R"pb(
    inputs { name: "x" type { dtype: DT_FLOAT32 } }
    nodes { op_type: "Mul" inputs: "x" inputs: "ones" outputs: "a" }
    nodes { op_type: "Reshape" inputs: "a" inputs: "s" outputs: "y" }
    outputs { name: "y" })pb",
                                            {FloatTensorProto("ones", {2}, {1, 1}),
                                             Int64TensorProto("s", {1}, {-1})});
  PassTestEnv env;
  auto out = env.Run(text, {"simplify"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("Mul", "Reshape"));
}

TEST(SimplifyPassTest, RejectsMalformedOptions) {
  PassTestEnv env;
  auto out = env.RunSpecs(R"pb(inputs { name: "x" } outputs { name: "x" })pb",
                          {{"simplify", {{"ignore_signed_zeros", "yes"}}}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

// A subgraph reads 'm' by name: the Mul producing it and the Cast reading it stay (the Mul's
// output would disappear; the graph's edges do not show the read).
TEST(SimplifyPassTest, LeavesValuesASubgraphReadsByName) {
  const std::string text = WithInitializers(R"pb(
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 3 } } } }
    inputs { name: "c" type { dtype: DT_BOOL shape {} } }
    nodes { op_type: "Mul" inputs: "x" inputs: "one" outputs: "m" }
    nodes { op_type: "Cast" inputs: "m" outputs: "y" attributes { name: "to" i: 1 } }
    nodes {
      op_type: "If" inputs: "c" outputs: "o"
      attributes { name: "then_branch" g {
        nodes { op_type: "Neg" inputs: "m" outputs: "t" }
        outputs { name: "t" type { dtype: DT_FLOAT32 } } } }
      attributes { name: "else_branch" g {
        nodes { op_type: "Neg" inputs: "x" outputs: "e" }
        outputs { name: "e" type { dtype: DT_FLOAT32 } } } }
    }
    outputs { name: "y" } outputs { name: "o" })pb",
                                            {FloatTensorProto("one", {}, {1.0f})});
  v1::Graph out = SimplifyAndCompare(
      text, {{"x", FloatTensor({3}, {1, -2, 3})},
             {"c", runtime::Tensor::FromVector<uint8_t>(v1::DT_BOOL, {1}, {})}});
  EXPECT_THAT(OpTypes(out), ElementsAre("Mul", "Cast", "If"));
}

}  // namespace
}  // namespace graphopt
