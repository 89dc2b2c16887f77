// Shape and type rules of reduction.cc: the Reduce* ops, Einsum, Softmax and the losses.

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ops/builtin_ops_test_util.h"

namespace graphopt {
namespace {

TEST_F(BuiltinOpsTest, EinsumExplicitImplicitAndEllipsis) {
  In("a", "float32[batch,m,4]");
  In("b", "float32[batch,4,n]");
  In("c", "float32[5,1,2,3]");
  In("d", "float32[7,3,6]");
  Node("Einsum", {"a", "b"}, {"bmm"}, {{"equation", AString("bij, bjk -> bik")}});
  Node("Einsum", {"a", "b"}, {"implicit"}, {{"equation", AString("bij,bjk")}});
  Node("Einsum", {"c", "d"}, {"ell"}, {{"equation", AString("...ij,...jk->...ik")}});
  Node("Einsum", {"a"}, {"trace"}, {{"equation", AString("bii->b")}});
  RUN_OK();
  EXPECT_EQ(T("bmm"), "float32[batch,m,n]");
  // Labels seen once, alphabetically: i, k.
  EXPECT_EQ(T("implicit"), "float32[m,n]");
  EXPECT_EQ(T("ell"), "float32[5,7,2,6]");
  EXPECT_EQ(T("trace"), "float32[batch]");
}

TEST_F(BuiltinOpsTest, EinsumLabelSizesMustAgree) {
  In("a", "float32[2,3]");
  In("b", "float32[4,5]");
  Node("Einsum", {"a", "b"}, {"c"}, {{"equation", AString("ij,jk->ik")}});
  ExpectError({"n0_Einsum", "label 'j'", "3", "4"});
}

TEST_F(BuiltinOpsTest, EinsumOperandCountMustMatch) {
  In("a", "float32[2,3]");
  Node("Einsum", {"a"}, {"c"}, {{"equation", AString("ij,jk->ik")}});
  ExpectError({"n0_Einsum", "2 operands", "1 inputs"});
}

TEST_F(BuiltinOpsTest, LogSoftmaxAndHardmaxCheckTheAxis) {
  In("x", "float32[batch,10]");
  Node("LogSoftmax", {"x"}, {"y"});
  Node("Hardmax", {"y"}, {"z"}, {{"axis", AInt(0)}});
  RUN_OK();
  EXPECT_EQ(T("z"), "float32[batch,10]");
}

TEST_F(BuiltinOpsTest, LogSoftmaxAxisOutOfRange) {
  In("x", "float32[2,10]");
  Node("LogSoftmax", {"x"}, {"y"}, {{"axis", AInt(2)}});
  ExpectError({"n0_LogSoftmax", "axis"});
}

TEST_F(BuiltinOpsTest, MoreReductionsByAttributeAndInput) {
  In("x", "float32[batch,3,4]");
  Ints("axes", {-1});
  Node("ReduceL2", {"x"}, {"l2"}, {{"axes", AInts({1})}, {"keepdims", AInt(0)}});
  Node("ReduceProd", {"x", "axes"}, {"prod"});
  Node("ReduceLogSumExp", {"x"}, {"all"}, {{"keepdims", AInt(0)}});
  RUN_OK();
  EXPECT_EQ(T("l2"), "float32[batch,4]");
  EXPECT_EQ(T("prod"), "float32[batch,3,1]");
  EXPECT_EQ(T("all"), "float32[]");
}

TEST_F(BuiltinOpsTest, LossesReduceOrKeepTheSamples) {
  In("scores", "float32[batch,5,d]");
  In("labels", "int64[batch,d]");
  In("weights", "float32[5]");
  Node("NegativeLogLikelihoodLoss", {"scores", "labels", "weights"}, {"none"},
       {{"reduction", AString("none")}});
  Node("NegativeLogLikelihoodLoss", {"scores", "labels"}, {"mean"});
  Node("SoftmaxCrossEntropyLoss", {"scores", "labels"}, {"sum", "log_prob"},
       {{"reduction", AString("sum")}});
  RUN_OK();
  EXPECT_EQ(T("none"), "float32[batch,d]");
  EXPECT_EQ(T("mean"), "float32[]");
  EXPECT_EQ(T("sum"), "float32[]");
  EXPECT_EQ(T("log_prob"), "float32[batch,5,d]");
}

TEST_F(BuiltinOpsTest, LossRejectsAnUnknownReduction) {
  In("scores", "float32[2,5]");
  In("labels", "int64[2]");
  Node("SoftmaxCrossEntropyLoss", {"scores", "labels"}, {"loss"},
       {{"reduction", AString("max")}});
  ExpectError({"n0_SoftmaxCrossEntropyLoss", "'reduction'", "max"});
}

TEST_F(BuiltinOpsTest, LossTargetsMustMatchTheSamples) {
  In("scores", "float32[2,5,3]");
  In("labels", "int64[2,4]");
  Node("NegativeLogLikelihoodLoss", {"scores", "labels"}, {"loss"});
  ExpectError({"n0_NegativeLogLikelihoodLoss", "[2,4]", "[2,5,3]"});
}

TEST_F(BuiltinOpsTest, SoftmaxAxisRange) {
  In("x", "float32[batch,10]");
  Node("Softmax", {"x"}, {"y"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,10]");
  Node("Softmax", {"x"}, {"z"}, {{"axis", AInt(2)}});
  ExpectError({"n1_Softmax", "attribute 'axis' value 2", "rank 2"});
}

TEST_F(BuiltinOpsTest, ReduceMeanAttributeAxesKeepdims) {
  In("x", "float32[batch,seq,64]");
  Node("ReduceMean", {"x"}, {"k"}, {{"axes", AInts({-1})}});
  Node("ReduceMean", {"x"}, {"d"}, {{"axes", AInts({1, 2})}, {"keepdims", AInt(0)}});
  RUN_OK();
  EXPECT_EQ(T("k"), "float32[batch,seq,1]");
  EXPECT_EQ(T("d"), "float32[batch]");
}

TEST_F(BuiltinOpsTest, ReduceSumAxesInputAndEmptyAxes) {
  In("x", "float32[2,3,4]");
  Ints("axes", {0, 2});
  Ints("none", {});
  In("dyn", "int64[1]");
  Node("ReduceSum", {"x", "axes"}, {"a"}, {{"keepdims", AInt(0)}});
  Node("ReduceSum", {"x"}, {"all"});
  Node("ReduceSum", {"x", "none"}, {"noop"}, {{"noop_with_empty_axes", AInt(1)}});
  Node("ReduceSum", {"x", "dyn"}, {"unknown"});
  Node("ReduceSum", {"x"}, {"scalar"}, {{"keepdims", AInt(0)}});
  RUN_OK();
  EXPECT_EQ(T("a"), "float32[3]");
  EXPECT_EQ(T("all"), "float32[1,1,1]");
  EXPECT_EQ(T("noop"), "float32[2,3,4]");
  EXPECT_EQ(T("unknown"), "float32[?,?,?]");
  EXPECT_EQ(T("scalar"), "float32[]");
}

TEST_F(BuiltinOpsTest, ReduceAxisOutOfRange) {
  In("x", "float32[2,3]");
  Node("ReduceMean", {"x"}, {"y"}, {{"axes", AInts({2})}});
  ExpectError({"n0_ReduceMean", "attribute 'axes' value 2"});
}

TEST_F(BuiltinOpsTest, ArgMaxAndTopK) {
  In("x", "float32[batch,10]");
  Scalar("k0", 0);
  Ints("k", {3});
  Node("ArgMax", {"x"}, {"am"}, {{"axis", AInt(1)}, {"keepdims", AInt(0)}});
  Node("TopK", {"x", "k"}, {"v", "i"});
  RUN_OK();
  EXPECT_EQ(T("am"), "int64[batch]");
  EXPECT_EQ(T("v"), "float32[batch,3]");
  EXPECT_EQ(T("i"), "int64[batch,3]");
}

TEST_F(BuiltinOpsTest, ReduceAxesBothAttributeAndInput) {
  In("x", "float32[2,3]");
  Ints("axes", {0});
  Node("ReduceSum", {"x", "axes"}, {"y"}, {{"axes", AInts({0})}});
  ExpectError({"n0_ReduceSum", "axes", "both"});
}

TEST_F(BuiltinOpsTest, SoftmaxDefaultAxisFollowsOpset) {
  In("x", "float32[5]");
  Node("Softmax", {"x"}, {"y"});
  SetOpset(graph_, 13);  // default -1
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[5]");
  SetOpset(graph_, 11);  // default 1, out of range for rank 1
  ExpectError({"n0_Softmax", "'axis' value 1 is out of range for rank 1"});
  SetOpset(graph_, 1);  // before opset 11 the coercion to 2-D accepts axis == rank
  RUN_OK();
}

TEST_F(BuiltinOpsTest, ArgMaxTakes16BitIntegers) {
  In("x", "int16[2,3]");
  Node("ArgMax", {"x"}, {"i"}, {{"axis", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("i"), "int64[2,1]");
}


TEST_F(BuiltinOpsTest, SumToShapeTakesTheShapeOperand) {
  In("g", "float32[batch,3,4]");
  In("like", "float32[m,1]");
  Node("Shape", {"like"}, {"s"});
  DomainNode("graphopt", "SumToShape", {"g", "s"}, {"out"});
  Ints("c", {3, 1});
  DomainNode("graphopt", "SumToShape", {"g", "c"}, {"known"});
  RUN_OK();
  EXPECT_EQ(T("out"), "float32[m,1]");
  EXPECT_EQ(T("known"), "float32[3,1]");
}

TEST_F(BuiltinOpsTest, SumToShapeRejectsAShapeGradDoesNotBroadcastFrom) {
  In("g", "float32[2,3]");
  Ints("bad", {4});
  DomainNode("graphopt", "SumToShape", {"g", "bad"}, {"out"});
  ExpectError({"SumToShape", "is not a broadcast of input 1"});
}

TEST_F(BuiltinOpsTest, SumToShapeRejectsALongerShape) {
  In("g", "float32[3]");
  Ints("long", {1, 3});
  DomainNode("graphopt", "SumToShape", {"g", "long"}, {"out"});
  ExpectError({"SumToShape", "more than input 0"});
}

}  // namespace
}  // namespace graphopt
