// Shape and type rules of elementwise.cc, elementwise_cast.cc, elementwise_logic.cc and
// elementwise_unary.cc.

#include "ops/builtin_ops.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "graph/graph.h"
#include "graph/inference.h"
#include "graph/op_registry.h"
#include "gtest/gtest.h"
#include "ops/builtin_ops_test_util.h"

namespace graphopt {
namespace {

TEST_F(BuiltinOpsTest, UnaryKeepsShapeAndSymbols) {
  In("x", "float32[batch,3,?]");
  Node("Relu", {"x"}, {"a"});
  Node("Sqrt", {"a"}, {"b"});
  Node("LeakyRelu", {"b"}, {"c"}, {{"alpha", AFloat(0.1f)}});
  Node("Erf", {"c"}, {"d"});
  RUN_OK();
  EXPECT_EQ(T("d"), "float32[batch,3,?]");
}

TEST_F(BuiltinOpsTest, UnaryOfUnknownInputIsUnknown) {
  In("x", "?");
  Node("Tanh", {"x"}, {"y"});
  RUN_OK();
  EXPECT_EQ(T("y"), "undefined[?..]");
}

TEST_F(BuiltinOpsTest, AddBroadcastsSymbols) {
  In("a", "float32[batch,1,4]");
  In("b", "float32[3,1]");
  Node("Add", {"a", "b"}, {"c"});
  RUN_OK();
  EXPECT_EQ(T("c"), "float32[batch,3,4]");
}

TEST_F(BuiltinOpsTest, BroadcastSymbolAgainstKnownAndOtherSymbol) {
  In("a", "float32[batch,seq,n]");
  In("b", "float32[5,seq,m]");
  Node("Mul", {"a", "b"}, {"c"});
  RUN_OK();
  EXPECT_EQ(T("c"), "float32[5,seq,?]");
}

TEST_F(BuiltinOpsTest, BroadcastMismatchNamesNodeAndShapes) {
  In("a", "float32[2,3]");
  In("b", "float32[4]");
  Node("Sub", {"a", "b"}, {"c"});
  ExpectError({"n0_Sub", "[2,3]", "[4]"});
}

TEST_F(BuiltinOpsTest, TypeConstraintViolationNamesNode) {
  In("a", "float32[2]");
  In("b", "int64[2]");
  Node("Add", {"a", "b"}, {"c"});
  ExpectError({"n0_Add", "int64", "float32"});
}

TEST_F(BuiltinOpsTest, DisallowedTypeIsRejected) {
  In("a", "int64[2]");
  Node("Sqrt", {"a"}, {"b"});
  ExpectError({"n0_Sqrt", "int64"});
}

TEST_F(BuiltinOpsTest, ComparisonsProduceBool) {
  In("a", "float32[batch,4]");
  In("b", "float32[4]");
  Node("Less", {"a", "b"}, {"lt"});
  Node("Equal", {"a", "b"}, {"eq"});
  Node("Greater", {"a", "b"}, {"gt"});
  Node("Not", {"lt"}, {"nlt"});
  RUN_OK();
  EXPECT_EQ(T("lt"), "bool[batch,4]");
  EXPECT_EQ(T("eq"), "bool[batch,4]");
  EXPECT_EQ(T("gt"), "bool[batch,4]");
  EXPECT_EQ(T("nlt"), "bool[batch,4]");
}

TEST_F(BuiltinOpsTest, WhereBroadcastsThree) {
  In("c", "bool[batch,1,1]");
  In("x", "float16[1,3,1]");
  In("y", "float16[4]");
  Node("Where", {"c", "x", "y"}, {"z"});
  RUN_OK();
  EXPECT_EQ(T("z"), "float16[batch,3,4]");
}

TEST_F(BuiltinOpsTest, WhereRejectsNonBoolCondition) {
  In("c", "float32[3]");
  In("x", "float32[3]");
  Node("Where", {"c", "x", "x"}, {"z"});
  ExpectError({"n0_Where", "input 0", "float32", "bool"});
}

TEST_F(BuiltinOpsTest, PowAllowsDifferentExponentType) {
  In("x", "float32[2,3]");
  In("e", "int64[]");
  Node("Pow", {"x", "e"}, {"y"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[2,3]");
}

TEST_F(BuiltinOpsTest, ClipOldAndNewForms) {
  In("x", "float32[batch,8]");
  Init("lo", FloatTensor({0.f}, {}));
  Node("Clip", {"x", "lo", ""}, {"a"});
  Node("Clip", {"x"}, {"b"}, {{"min", AFloat(0.f)}, {"max", AFloat(6.f)}});
  RUN_OK();
  EXPECT_EQ(T("a"), "float32[batch,8]");
  EXPECT_EQ(T("b"), "float32[batch,8]");
}

TEST_F(BuiltinOpsTest, ClipRejectsNonScalarBound) {
  In("x", "float32[8]");
  In("lo", "float32[8]");
  Node("Clip", {"x", "lo"}, {"y"});
  ExpectError({"n0_Clip", "min", "scalar"});
}

TEST_F(BuiltinOpsTest, MinMaxVariadic) {
  In("a", "float32[3,1]");
  In("b", "float32[4]");
  In("c", "float32[1]");
  Node("Max", {"a", "b", "c"}, {"y"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[3,4]");
}

TEST_F(BuiltinOpsTest, CastSetsDtypeFromTo) {
  In("x", "float32[batch,3]");
  Node("Cast", {"x"}, {"y"}, {{"to", AInt(v1::DT_FLOAT16)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float16[batch,3]");
}

TEST_F(BuiltinOpsTest, CastRejectsInvalidTo) {
  In("x", "float32[3]");
  Node("Cast", {"x"}, {"y"}, {{"to", AInt(999)}});
  ExpectError({"n0_Cast", "to"});
}

TEST_F(BuiltinOpsTest, DropoutOutputsAndMask) {
  In("x", "float32[batch,16]");
  Node("Dropout", {"x", "", ""}, {"y", "mask"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,16]");
  EXPECT_EQ(T("mask"), "bool[batch,16]");
}

TEST_F(BuiltinOpsTest, IdentityForwardsDimsValue) {
  In("x", "float32[batch,3]");
  Node("Shape", {"x"}, {"s"});
  Node("Identity", {"s"}, {"t"});
  RUN_OK();
  EXPECT_EQ(T("t"), "int64[2]");
  EXPECT_EQ(DimsValue("t"), "[batch,3]");
}

TEST_F(BuiltinOpsTest, CastOfShapeKeepsDimsValue) {
  In("x", "float32[batch,4]");
  Node("Shape", {"x"}, {"s"});
  Node("Cast", {"s"}, {"s32"}, {{"to", AInt(v1::DT_INT32)}});
  Node("Cast", {"s"}, {"sf"}, {{"to", AInt(v1::DT_FLOAT32)}});
  RUN_OK();
  EXPECT_EQ(DimsValue("s32"), "[batch,4]");
  EXPECT_EQ(DimsValue("sf"), "none");
}

TEST_F(BuiltinOpsTest, LegacyBroadcastBeforeOpset7) {
  SetOpset(graph_, 6);
  In("a", "float32[2,3,4,5]");
  In("b", "float32[3,4]");
  In("s", "float32[n,n]");
  In("k", "float32[2,2]");
  In("x", "float32[2,3]");
  In("col", "float32[2,1]");
  Node("Add", {"a", "b"}, {"c"}, {{"broadcast", AInt(1)}, {"axis", AInt(1)}});
  Node("Mul", {"s", "k"}, {"sk"});  // no broadcast: equal shapes, A's dims win
  Node("Sub", {"x", "col"}, {"xc"}, {{"broadcast", AInt(1)}, {"axis", AInt(0)}});
  Node("Div", {"x", "x"}, {"one"}, {{"consumed_inputs", AInts({0, 0})}});
  Node("Pow", {"a", "b"}, {"p"}, {{"broadcast", AInt(1)}, {"axis", AInt(1)}});
  Node("Equal", {"a", "b"}, {"e"}, {{"broadcast", AInt(1)}, {"axis", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("c"), "float32[2,3,4,5]");
  EXPECT_EQ(T("sk"), "float32[n,n]");
  EXPECT_EQ(T("xc"), "float32[2,3]");
  EXPECT_EQ(T("one"), "float32[2,3]");
  EXPECT_EQ(T("p"), "float32[2,3,4,5]");
  EXPECT_EQ(T("e"), "bool[2,3,4,5]");
}

TEST_F(BuiltinOpsTest, NumpyBroadcastFromOpset7) {
  SetOpset(graph_, 7);
  In("s", "float32[n,n]");
  In("k", "float32[2,2]");
  Node("Mul", {"s", "k"}, {"sk"});
  RUN_OK();
  EXPECT_EQ(T("sk"), "float32[2,2]");
}

TEST_F(BuiltinOpsTest, LegacyBroadcastWithoutFlagNeedsEqualShapes) {
  SetOpset(graph_, 6);
  In("x", "float32[2,3]");
  In("y", "float32[3]");
  Node("Add", {"x", "y"}, {"z"});
  ExpectError({"n0_Add", "input B [3] must have the shape of A [2,3]", "broadcast=0"});
}

TEST_F(BuiltinOpsTest, LegacyBroadcastChecksAlignedDims) {
  SetOpset(graph_, 6);
  In("a", "float32[2,3,4,5]");
  In("b", "float32[4]");
  Node("Add", {"a", "b"}, {"c"}, {{"broadcast", AInt(1)}, {"axis", AInt(1)}});
  ExpectError({"n0_Add", "input B [4] does not match from axis 1 of A [2,3,4,5]"});
}

TEST_F(BuiltinOpsTest, LegacyBroadcastChecksFit) {
  SetOpset(graph_, 6);
  In("a", "float32[2,3]");
  In("b", "float32[3,1]");
  Node("Add", {"a", "b"}, {"c"}, {{"broadcast", AInt(1)}, {"axis", AInt(1)}});
  ExpectError({"n0_Add", "does not fit from axis 1"});
}

TEST_F(BuiltinOpsTest, MinMaxBeforeOpset8KeepFirstShape) {
  SetOpset(graph_, 6);
  In("s", "float32[n]");
  In("k", "float32[2]");
  Node("Max", {"s", "k"}, {"m"});
  Node("Min", {"s", "k", "s"}, {"m2"}, {{"consumed_inputs", AInts({0})}});
  RUN_OK();
  EXPECT_EQ(T("m"), "float32[n]");
  EXPECT_EQ(T("m2"), "float32[n]");
}

TEST_F(BuiltinOpsTest, MinMaxBeforeOpset8RejectBroadcasting) {
  SetOpset(graph_, 7);
  In("a", "float32[2,3]");
  In("b", "float32[3]");
  Node("Max", {"a", "b"}, {"m"});
  ExpectError({"n0_Max", "input 1 [3] differs from input 0 [2,3]", "opsets < 8"});
}

TEST_F(BuiltinOpsTest, MinMaxBroadcastFromOpset8) {
  SetOpset(graph_, 8);
  In("a", "float32[2,3]");
  In("b", "float32[3]");
  Node("Max", {"a", "b"}, {"m"});
  RUN_OK();
  EXPECT_EQ(T("m"), "float32[2,3]");
}

TEST_F(BuiltinOpsTest, DropoutMaskTypeFollowsOpset) {
  In("x", "float32[2,3]");
  SetOpset(graph_, 7);
  Node("Dropout", {"x"}, {"y", "mask"}, {{"is_test", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("mask"), "float32[2,3]");
  SetOpset(graph_, 10);
  RUN_OK();
  EXPECT_EQ(T("mask"), "bool[2,3]");
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

TEST_F(BuiltinOpsTest, QuantizeLinearTypeComesFromTheZeroPoint) {
  In("x", "float32[batch,3]");
  In("scale", "float32[]");
  In("zp", "int8[]");
  Node("QuantizeLinear", {"x", "scale"}, {"u8"});
  Node("QuantizeLinear", {"x", "scale", "zp"}, {"i8"});
  Node("DequantizeLinear", {"i8", "scale", "zp"}, {"back"});
  RUN_OK();
  EXPECT_EQ(T("u8"), "uint8[batch,3]");
  EXPECT_EQ(T("i8"), "int8[batch,3]");
  EXPECT_EQ(T("back"), "float32[batch,3]");
}

TEST_F(BuiltinOpsTest, QuantizeLinearPerAxisScaleMustMatchTheAxis) {
  In("x", "float32[2,3]");
  In("scale", "float32[2]");
  Node("QuantizeLinear", {"x", "scale"}, {"y"});
  ExpectError({"n0_QuantizeLinear", "scale", "[2]"});
}

TEST_F(BuiltinOpsTest, QuantizeLinearPerAxisScale) {
  In("x", "float32[2,3]");
  In("scale", "float32[2]");
  In("zp", "uint8[2]");
  Node("QuantizeLinear", {"x", "scale", "zp"}, {"y"}, {{"axis", AInt(0)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "uint8[2,3]");
}

TEST_F(BuiltinOpsTest, DynamicQuantizeLinearGivesScalarParameters) {
  In("x", "float32[n,4]");
  Node("DynamicQuantizeLinear", {"x"}, {"y", "scale", "zp"});
  RUN_OK();
  EXPECT_EQ(T("y"), "uint8[n,4]");
  EXPECT_EQ(T("scale"), "float32[]");
  EXPECT_EQ(T("zp"), "uint8[]");
}

}  // namespace
}  // namespace graphopt
