// Shape and type rules of elementwise_math.cc.

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ops/builtin_ops_test_util.h"

namespace graphopt {
namespace {

TEST_F(BuiltinOpsTest, MathOpsAreRegisteredWithTheirPatterns) {
  for (const char* name :
       {"Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
        "Softsign", "Round", "HardSwish", "Elu", "Selu", "Celu", "ThresholdedRelu", "Shrink"}) {
    const OpDef* op = registry_.Find("", name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(op->descriptor.fusion_pattern(), v1::FUSION_ELEMWISE) << name;
    ASSERT_EQ(op->descriptor.inplace_size(), 1) << name;
  }
  for (const char* name : {"And", "Or", "Xor", "GreaterOrEqual", "LessOrEqual", "BitShift",
                           "Mod", "PRelu", "Sum", "Mean"}) {
    const OpDef* op = registry_.Find("", name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(op->descriptor.fusion_pattern(), v1::FUSION_BROADCAST) << name;
  }
  for (const char* name : {"IsNaN", "IsInf", "CastLike", "CumSum", "Det", "Einsum"}) {
    EXPECT_NE(registry_.Find("", name), nullptr) << name;
  }
  EXPECT_EQ(registry_.Find("", "IsNaN")->descriptor.inplace_size(), 0);
  EXPECT_EQ(registry_.Find("", "Einsum")->descriptor.inputs(0).arity(), v1::ARITY_VARIADIC);
}

TEST_F(BuiltinOpsTest, TrigAndActivationsKeepSymbolicShapes) {
  In("x", "float32[batch,3,?]");
  Node("Cos", {"x"}, {"a"});
  Node("Atanh", {"a"}, {"b"});
  Node("Selu", {"b"}, {"c"}, {{"alpha", AFloat(1.5f)}});
  Node("Shrink", {"c"}, {"d"}, {{"lambd", AFloat(0.25f)}});
  Node("IsNaN", {"d"}, {"nan"});
  RUN_OK();
  EXPECT_EQ(T("c"), "float32[batch,3,?]");
  EXPECT_EQ(T("nan"), "bool[batch,3,?]");
}

TEST_F(BuiltinOpsTest, CeluTakesOnlyFloat32) {
  In("x", "float64[2]");
  Node("Celu", {"x"}, {"y"});
  ExpectError({"n0_Celu", "float64"});
}

TEST_F(BuiltinOpsTest, LogicalOpsBroadcastLegacyStyleBeforeOpset7) {
  Opset(6);
  In("a", "bool[2,3,4]");
  In("b", "bool[3]");
  Node("And", {"a", "b"}, {"c"}, {{"broadcast", AInt(1)}, {"axis", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("c"), "bool[2,3,4]");
}

TEST_F(BuiltinOpsTest, ComparisonsAndXorBroadcastNumpyStyle) {
  In("a", "int32[batch,1]");
  In("b", "int32[4]");
  In("p", "bool[batch,1]");
  In("q", "bool[1,4]");
  Node("GreaterOrEqual", {"a", "b"}, {"ge"});
  Node("Xor", {"p", "q"}, {"x"});
  RUN_OK();
  EXPECT_EQ(T("ge"), "bool[batch,4]");
  EXPECT_EQ(T("x"), "bool[batch,4]");
}

TEST_F(BuiltinOpsTest, BitShiftNeedsADirection) {
  In("a", "uint8[4]");
  In("b", "uint8[1]");
  Node("BitShift", {"a", "b"}, {"c"}, {{"direction", AString("UP")}});
  ExpectError({"n0_BitShift", "'direction'", "UP"});
}

TEST_F(BuiltinOpsTest, ModOfFloatsNeedsFmod) {
  In("a", "float32[4]");
  In("b", "float32[4]");
  Node("Mod", {"a", "b"}, {"c"});
  ExpectError({"n0_Mod", "'fmod'", "float32"});
}

TEST_F(BuiltinOpsTest, ModBroadcasts) {
  In("a", "int64[n,1]");
  In("b", "int64[5]");
  Node("Mod", {"a", "b"}, {"c"});
  RUN_OK();
  EXPECT_EQ(T("c"), "int64[n,5]");
}

TEST_F(BuiltinOpsTest, PReluHasXsShapeAndChecksTheSlope) {
  In("x", "float32[batch,3,8,8]");
  In("slope", "float32[3,1,1]");
  Node("PRelu", {"x", "slope"}, {"y"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,3,8,8]");
}

TEST_F(BuiltinOpsTest, PReluSlopeMustBroadcastToX) {
  In("x", "float32[2,3]");
  In("slope", "float32[4]");
  Node("PRelu", {"x", "slope"}, {"y"});
  ExpectError({"n0_PRelu", "slope"});
}

TEST_F(BuiltinOpsTest, SumAndMeanBroadcastFromOpset8) {
  In("a", "float32[batch,1]");
  In("b", "float32[3]");
  In("c", "float32[1,3]");
  Node("Sum", {"a", "b", "c"}, {"s"});
  Node("Mean", {"a"}, {"m"});
  RUN_OK();
  EXPECT_EQ(T("s"), "float32[batch,3]");
  EXPECT_EQ(T("m"), "float32[batch,1]");
}

TEST_F(BuiltinOpsTest, SumBeforeOpset8NeedsEqualShapes) {
  Opset(6);
  In("a", "float32[2,3]");
  In("b", "float32[3]");
  Node("Sum", {"a", "b"}, {"s"});
  ExpectError({"n0_Sum", "opsets < 8"});
}

TEST_F(BuiltinOpsTest, CastLikeTakesTheTargetsTypeAndKeepsShapeContents) {
  In("x", "float32[batch,4]");
  In("like", "int32[]");
  Node("Shape", {"x"}, {"shape"});
  In("i32", "int32[1]");
  Node("CastLike", {"shape", "i32"}, {"c"});
  Node("CastLike", {"x", "like"}, {"y"});
  RUN_OK();
  EXPECT_EQ(T("y"), "int32[batch,4]");
  EXPECT_EQ(T("c"), "int32[2]");
  EXPECT_EQ(DimsValue("c"), "[batch,4]");
}

TEST_F(BuiltinOpsTest, CumSumKeepsShapeAndChecksTheAxis) {
  In("x", "float32[batch,5]");
  Scalar("axis", 1);
  Node("CumSum", {"x", "axis"}, {"y"}, {{"reverse", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,5]");
}

TEST_F(BuiltinOpsTest, CumSumAxisOutOfRange) {
  In("x", "float32[2,5]");
  Scalar("axis", 2);
  Node("CumSum", {"x", "axis"}, {"y"});
  ExpectError({"n0_CumSum", "input 'axis'", "out of range"});
}

TEST_F(BuiltinOpsTest, DetDropsTheMatrixDims) {
  In("x", "float32[batch,3,3]");
  In("m", "float64[n,n]");
  Node("Det", {"x"}, {"d"});
  Node("Det", {"m"}, {"e"});
  RUN_OK();
  EXPECT_EQ(T("d"), "float32[batch]");
  EXPECT_EQ(T("e"), "float64[]");
}

TEST_F(BuiltinOpsTest, DetNeedsSquareMatrices) {
  In("x", "float32[2,3]");
  Node("Det", {"x"}, {"d"});
  ExpectError({"n0_Det", "square"});
}

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

}  // namespace
}  // namespace graphopt
