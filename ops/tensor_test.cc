// Shape and type rules of tensor_index.cc, tensor_layout.cc, tensor_layout_resize.cc and
// tensor_shape.cc.

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

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST_F(BuiltinOpsTest, FlattenKeepsBatchSymbol) {
  In("x", "float32[batch,3,4,5]");
  Node("Flatten", {"x"}, {"y"});
  Node("Flatten", {"x"}, {"z"}, {{"axis", AInt(0)}});
  Node("Flatten", {"x"}, {"w"}, {{"axis", AInt(-2)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,60]");
  EXPECT_EQ(T("z"), "float32[1,?]");
  EXPECT_EQ(T("w"), "float32[?,20]");
}

TEST_F(BuiltinOpsTest, FlattenUnknownRankIsTwoD) {
  In("x", "float32[?..]");
  Node("Flatten", {"x"}, {"y"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[?,?]");
}

TEST_F(BuiltinOpsTest, ReshapeConstantShape) {
  In("x", "float32[batch,3,4]");
  Ints("s1", {0, -1});
  Ints("s2", {0, 2, -1, 2});
  Node("Reshape", {"x", "s1"}, {"a"});
  Node("Reshape", {"x", "s2"}, {"b"});
  RUN_OK();
  EXPECT_EQ(T("a"), "float32[batch,12]");
  EXPECT_EQ(T("b"), "float32[batch,2,3,2]");
}

TEST_F(BuiltinOpsTest, ReshapeErrors) {
  In("x", "float32[2,3,4]");
  Ints("two", {-1, -1});
  Node("Reshape", {"x", "two"}, {"a"});
  ExpectError({"n0_Reshape", "more than one -1"});
}

TEST_F(BuiltinOpsTest, ReshapeElementCountMismatch) {
  In("x", "float32[2,3,4]");
  Ints("s", {5, 5});
  Node("Reshape", {"x", "s"}, {"a"});
  ExpectError({"n0_Reshape", "[2,3,4]", "[5,5]"});
}

TEST_F(BuiltinOpsTest, ReshapeAllowZero) {
  In("x", "float32[0,4]");
  Ints("s", {4, 0});
  Node("Reshape", {"x", "s"}, {"a"}, {{"allowzero", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("a"), "float32[4,0]");
}

TEST_F(BuiltinOpsTest, ReshapeDynamicShapeOfKnownLength) {
  In("x", "float32[2,3,4]");
  In("s", "int64[3]");
  Node("Reshape", {"x", "s"}, {"a"});
  RUN_OK();
  EXPECT_EQ(T("a"), "float32[?,?,?]");
}

// The exporter pattern: Shape -> Gather -> Unsqueeze -> Concat -> Reshape keeps "batch".
TEST_F(BuiltinOpsTest, ShapeGatherUnsqueezeConcatReshapeChain) {
  In("x", "float32[batch,seq,768]");
  Scalar("i0", 0);
  Ints("ax0", {0});
  Ints("tail", {12, 64});
  Ints("minus1", {-1});
  Node("Shape", {"x"}, {"shape"});
  Node("Gather", {"shape", "i0"}, {"b"}, {{"axis", AInt(0)}});
  Node("Unsqueeze", {"b", "ax0"}, {"b1"});
  Node("Concat", {"b1", "minus1", "tail"}, {"target"}, {{"axis", AInt(0)}});
  Node("Reshape", {"x", "target"}, {"y"});
  RUN_OK();
  EXPECT_EQ(T("shape"), "int64[3]");
  EXPECT_EQ(DimsValue("shape"), "[batch,seq,768]");
  EXPECT_EQ(T("b"), "int64[]");
  EXPECT_EQ(DimsValue("b"), "[batch]");
  EXPECT_EQ(T("b1"), "int64[1]");
  EXPECT_EQ(T("target"), "int64[4]");
  EXPECT_EQ(DimsValue("target"), "[batch,-1,12,64]");
  EXPECT_EQ(T("y"), "float32[batch,seq,12,64]");
}

TEST_F(BuiltinOpsTest, ShapeArithmeticFoldsKnownInts) {
  In("x", "float32[batch,8,16]");
  Ints("i", {1, 2});
  Node("Shape", {"x"}, {"s"});
  Scalar("two", 2);
  Scalar("zero", 0);
  Node("Gather", {"s", "i"}, {"hw"});
  Node("Mul", {"hw", "hw"}, {"sq"});
  Node("Mul", {"hw", "two"}, {"dbl"});
  Node("Gather", {"s", "zero"}, {"b"});
  Node("Mul", {"b", "two"}, {"b2"});
  Node("Add", {"b", "zero"}, {"b0"});
  RUN_OK();
  EXPECT_EQ(DimsValue("hw"), "[8,16]");
  EXPECT_EQ(DimsValue("sq"), "[64,256]");
  EXPECT_EQ(DimsValue("dbl"), "[16,32]");
  // No symbolic arithmetic: batch * 2 is unknown, batch + 0 is batch.
  EXPECT_EQ(DimsValue("b2"), "[?]");
  EXPECT_EQ(DimsValue("b0"), "[batch]");
}

TEST_F(BuiltinOpsTest, ShapeStartEndAndDimsValueSlice) {
  In("x", "float32[batch,seq,4,5]");
  Ints("st", {1});
  Ints("en", {-1});
  Node("Shape", {"x"}, {"s"}, {{"start", AInt(-3)}, {"end", AInt(-1)}});
  Node("Shape", {"x"}, {"full"});
  Node("Slice", {"full", "st", "en"}, {"mid"});
  RUN_OK();
  EXPECT_EQ(T("s"), "int64[2]");
  EXPECT_EQ(DimsValue("s"), "[seq,4]");
  EXPECT_EQ(T("mid"), "int64[2]");
  EXPECT_EQ(DimsValue("mid"), "[seq,4]");
}

TEST_F(BuiltinOpsTest, ShapeOfUnknownRank) {
  In("x", "float32[?..]");
  Node("Shape", {"x"}, {"s"});
  RUN_OK();
  EXPECT_EQ(T("s"), "int64[?]");
  EXPECT_EQ(DimsValue("s"), "none");
}

TEST_F(BuiltinOpsTest, TransposeDefaultAndPerm) {
  In("x", "float32[batch,3,4]");
  Node("Transpose", {"x"}, {"r"});
  Node("Transpose", {"x"}, {"p"}, {{"perm", AInts({0, 2, 1})}});
  RUN_OK();
  EXPECT_EQ(T("r"), "float32[4,3,batch]");
  EXPECT_EQ(T("p"), "float32[batch,4,3]");
}

TEST_F(BuiltinOpsTest, TransposeRejectsNonPermutation) {
  In("x", "float32[2,3,4]");
  Node("Transpose", {"x"}, {"p"}, {{"perm", AInts({0, 0, 1})}});
  ExpectError({"n0_Transpose", "perm", "not a permutation"});
}

TEST_F(BuiltinOpsTest, ConcatAlongOtherAxisKeepsSymbols) {
  In("a", "float32[batch,3]");
  In("b", "float32[batch,5]");
  In("c", "float32[?,2]");
  Node("Concat", {"a", "b", "c"}, {"y"}, {{"axis", AInt(-1)}});
  Node("Concat", {"a", "a"}, {"z"}, {{"axis", AInt(0)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,10]");
  EXPECT_EQ(T("z"), "float32[?,3]");
}

TEST_F(BuiltinOpsTest, ConcatRankMismatch) {
  In("a", "float32[2,3]");
  In("b", "float32[2,3,1]");
  Node("Concat", {"a", "b"}, {"y"}, {{"axis", AInt(0)}});
  ExpectError({"n0_Concat", "rank 3", "rank 2"});
}

TEST_F(BuiltinOpsTest, ConcatNonAxisMismatch) {
  In("a", "float32[2,3]");
  In("b", "float32[2,4]");
  Node("Concat", {"a", "b"}, {"y"}, {{"axis", AInt(0)}});
  ExpectError({"n0_Concat", "axis 1"});
}

TEST_F(BuiltinOpsTest, SplitEqualAndSizes) {
  In("x", "float32[batch,12]");
  Ints("sizes", {2, 4, 6});
  Node("Split", {"x"}, {"a", "b"}, {{"axis", AInt(1)}});
  Node("Split", {"x", "sizes"}, {"c", "d", "e"}, {{"axis", AInt(-1)}});
  Node("Split", {"x"}, {"f", "g"}, {{"axis", AInt(1)}, {"split", AInts({5, 7})}});
  RUN_OK();
  EXPECT_EQ(T("a"), "float32[batch,6]");
  EXPECT_EQ(T("b"), "float32[batch,6]");
  EXPECT_EQ(T("c"), "float32[batch,2]");
  EXPECT_EQ(T("e"), "float32[batch,6]");
  EXPECT_EQ(T("g"), "float32[batch,7]");
}

TEST_F(BuiltinOpsTest, SplitSymbolicAndEmptySplitInput) {
  In("x", "float32[batch,12]");
  Ints("empty", {});
  Node("Split", {"x", "empty"}, {"a", "b", "c"}, {{"axis", AInt(1)}});
  Node("Split", {"x"}, {"d", "e"});
  Node("Split", {"x"}, {"f"});
  RUN_OK();
  EXPECT_EQ(T("a"), "float32[batch,4]");
  EXPECT_EQ(T("d"), "float32[?,12]");
  EXPECT_EQ(T("f"), "float32[batch,12]");
}

TEST_F(BuiltinOpsTest, SplitNumOutputsUneven) {
  In("x", "float32[10]");
  Node("Split", {"x"}, {"a", "b", "c"}, {{"num_outputs", AInt(3)}});
  RUN_OK();
  EXPECT_EQ(T("a"), "float32[4]");
  EXPECT_EQ(T("c"), "float32[2]");
}

TEST_F(BuiltinOpsTest, SplitSizesMustSum) {
  In("x", "float32[4,12]");
  Node("Split", {"x"}, {"a", "b"}, {{"axis", AInt(1)}, {"split", AInts({5, 5})}});
  ExpectError({"n0_Split", "sum", "12"});
}

TEST_F(BuiltinOpsTest, SplitUnevenWithoutNumOutputs) {
  In("x", "float32[10]");
  Node("Split", {"x"}, {"a", "b", "c"});
  ExpectError({"n0_Split", "evenly"});
}

TEST_F(BuiltinOpsTest, SliceNegativeIndicesAndSteps) {
  In("x", "float32[10,20,batch]");
  Ints("starts", {-3, 18});
  Ints("ends", {kMax, 2});
  Ints("axes", {0, -2});
  Ints("steps", {1, -4});
  Node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
  RUN_OK();
  // axis 0: [7, 10) -> 3; axis 1: 18, 14, 10, 6 -> 4.
  EXPECT_EQ(T("y"), "float32[3,4,batch]");
}

TEST_F(BuiltinOpsTest, SliceSymbolicFullRangeKeepsSymbol) {
  In("x", "float32[batch,seq]");
  Ints("s", {0, 1});
  Ints("e", {kMax, kMax});
  Node("Slice", {"x", "s", "e"}, {"y"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,?]");
}

TEST_F(BuiltinOpsTest, SliceOldAttributeForm) {
  In("x", "float32[8,8]");
  Node("Slice", {"x"}, {"y"}, {{"starts", AInts({2})}, {"ends", AInts({6})}, {"axes", AInts({1})}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[8,4]");
}

TEST_F(BuiltinOpsTest, SliceDynamicStartsKeepsRank) {
  In("x", "float32[8,8]");
  In("s", "int64[1]");
  Ints("e", {6});
  Ints("axes", {1});
  Node("Slice", {"x", "s", "e", "axes"}, {"y"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[8,?]");
}

TEST_F(BuiltinOpsTest, SliceZeroStep) {
  In("x", "float32[8]");
  Ints("s", {0});
  Ints("e", {4});
  Ints("a", {0});
  Ints("st", {0});
  Node("Slice", {"x", "s", "e", "a", "st"}, {"y"});
  ExpectError({"n0_Slice", "steps"});
}

TEST_F(BuiltinOpsTest, GatherShapes) {
  In("emb", "float32[30522,768]");
  In("ids", "int64[batch,seq]");
  Node("Gather", {"emb", "ids"}, {"y"});
  In("x", "float32[batch,seq,768]");
  Scalar("last", -1);
  Node("Gather", {"x", "last"}, {"z"}, {{"axis", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,seq,768]");
  EXPECT_EQ(T("z"), "float32[batch,768]");
}

TEST_F(BuiltinOpsTest, GatherAxisOutOfRange) {
  In("x", "float32[2,3]");
  In("i", "int64[4]");
  Node("Gather", {"x", "i"}, {"y"}, {{"axis", AInt(2)}});
  ExpectError({"n0_Gather", "attribute 'axis' value 2", "rank 2"});
}

TEST_F(BuiltinOpsTest, GatherConstantIndexOutOfRange) {
  In("x", "float32[2,3]");
  Ints("i", {0, 3});
  Node("Gather", {"x", "i"}, {"y"}, {{"axis", AInt(1)}});
  ExpectError({"n0_Gather", "indices value 3"});
}

TEST_F(BuiltinOpsTest, SqueezeOldAndNewForms) {
  In("x", "float32[1,batch,1,4]");
  Ints("axes", {0, -2});
  Node("Squeeze", {"x", "axes"}, {"a"});
  Node("Squeeze", {"x"}, {"b"}, {{"axes", AInts({0})}});
  RUN_OK();
  EXPECT_EQ(T("a"), "float32[batch,4]");
  EXPECT_EQ(T("b"), "float32[batch,1,4]");
}

TEST_F(BuiltinOpsTest, SqueezeWithoutAxes) {
  In("x", "float32[1,3,1]");
  In("s", "float32[1,batch]");
  Node("Squeeze", {"x"}, {"a"});
  Node("Squeeze", {"s"}, {"b"});
  RUN_OK();
  EXPECT_EQ(T("a"), "float32[3]");
  // "batch" may be 1: the rank is not known.
  EXPECT_EQ(T("b"), "float32[?..]");
}

TEST_F(BuiltinOpsTest, SqueezeNonUnitAxis) {
  In("x", "float32[2,3]");
  Node("Squeeze", {"x"}, {"a"}, {{"axes", AInts({1})}});
  ExpectError({"n0_Squeeze", "axis 1", "size 3"});
}

TEST_F(BuiltinOpsTest, UnsqueezeOldAndNewForms) {
  In("x", "float32[batch,4]");
  Ints("axes", {0, -1});
  Node("Unsqueeze", {"x", "axes"}, {"a"});
  Node("Unsqueeze", {"x"}, {"b"}, {{"axes", AInts({1})}});
  RUN_OK();
  EXPECT_EQ(T("a"), "float32[1,batch,4,1]");
  EXPECT_EQ(T("b"), "float32[batch,1,4]");
}

TEST_F(BuiltinOpsTest, UnsqueezeDuplicateAxes) {
  In("x", "float32[4]");
  Ints("axes", {0, 0});
  Node("Unsqueeze", {"x", "axes"}, {"a"});
  ExpectError({"n0_Unsqueeze", "input 'axes'", "repeats"});
}

TEST_F(BuiltinOpsTest, ExpandBroadcastsWithShapeInput) {
  In("x", "float32[3,1]");
  Ints("s", {2, 1, 6});
  Node("Expand", {"x", "s"}, {"y"});
  In("b", "float32[batch,1]");
  Node("Shape", {"b"}, {"bs"});
  In("v", "float32[1,4]");
  Node("Expand", {"v", "bs"}, {"z"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[2,3,6]");
  EXPECT_EQ(T("z"), "float32[batch,4]");
}

TEST_F(BuiltinOpsTest, ExpandIncompatible) {
  In("x", "float32[3]");
  Ints("s", {4});
  Node("Expand", {"x", "s"}, {"y"});
  ExpectError({"n0_Expand", "cannot expand"});
}

TEST_F(BuiltinOpsTest, TileAndPad) {
  In("x", "float32[batch,3]");
  Ints("r", {1, 4});
  Ints("p", {0, 1, 0, 2});
  Node("Tile", {"x", "r"}, {"t"});
  Node("Pad", {"x", "p"}, {"p1"});
  Node("Pad", {"x"}, {"p2"}, {{"pads", AInts({1, 0, 1, 0})}});
  RUN_OK();
  EXPECT_EQ(T("t"), "float32[batch,12]");
  EXPECT_EQ(T("p1"), "float32[batch,6]");
  EXPECT_EQ(T("p2"), "float32[?,3]");
}

TEST_F(BuiltinOpsTest, ConstantForms) {
  Node("Constant", {}, {"t"}, {{"value", ATensor(FloatTensor({1, 2, 3, 4, 5, 6}, {2, 3}))}});
  Node("Constant", {}, {"f"}, {{"value_float", AFloat(1.5f)}});
  Node("Constant", {}, {"is"}, {{"value_ints", AInts({4, -1})}});
  Node("Constant", {}, {"i"}, {{"value_int", AInt(7)}});
  RUN_OK();
  EXPECT_EQ(T("t"), "float32[2,3]");
  EXPECT_EQ(T("f"), "float32[]");
  EXPECT_EQ(T("is"), "int64[2]");
  EXPECT_EQ(DimsValue("is"), "[4,-1]");
  EXPECT_EQ(T("i"), "int64[]");
}

TEST_F(BuiltinOpsTest, ConstantNeedsExactlyOneValue) {
  Node("Constant", {}, {"t"}, {{"value_int", AInt(1)}, {"value_float", AFloat(1.f)}});
  ExpectError({"n0_Constant", "exactly one"});
}

TEST_F(BuiltinOpsTest, ConstantTensorFeedsReshape) {
  In("x", "float32[batch,6]");
  Node("Constant", {}, {"s"}, {{"value", ATensor(Int64Tensor({0, 2, 3}))}});
  Node("Reshape", {"x", "s"}, {"y"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,2,3]");
}

TEST_F(BuiltinOpsTest, ConstantOfShapeAndRange) {
  In("x", "float32[batch,4]");
  Node("Shape", {"x"}, {"s"});
  Node("ConstantOfShape", {"s"}, {"z"});
  v1::Tensor one = Int64Tensor({1}, false);
  Node("ConstantOfShape", {"s"}, {"o"}, {{"value", ATensor(one)}});
  Scalar("start", 2);
  Scalar("limit", 11);
  Scalar("delta", 3);
  Node("Range", {"start", "limit", "delta"}, {"r"});
  RUN_OK();
  EXPECT_EQ(T("z"), "float32[batch,4]");
  EXPECT_EQ(T("o"), "int64[batch,4]");
  EXPECT_EQ(T("r"), "int64[3]");
  EXPECT_EQ(DimsValue("r"), "[2,5,8]");
}

TEST_F(BuiltinOpsTest, ReshapeFromPartiallyKnownDimsValue) {
  In("x", "float32[batch,3,4]");
  In("dyn", "int64[1]");
  Ints("first", {0});
  Ints("m1", {-1});
  Node("Shape", {"x"}, {"s"});
  Node("Gather", {"s", "first"}, {"b"});
  Node("Concat", {"b", "dyn"}, {"t1"}, {{"axis", AInt(0)}});
  Node("Reshape", {"x", "t1"}, {"y1"});
  Node("Concat", {"dyn", "m1"}, {"t2"}, {{"axis", AInt(0)}});
  Node("Reshape", {"x", "t2"}, {"y2"});
  RUN_OK();
  EXPECT_EQ(DimsValue("t1"), "[batch,?]");
  EXPECT_EQ(T("y1"), "float32[batch,?]");
  EXPECT_EQ(DimsValue("t2"), "[?,-1]");
  EXPECT_EQ(T("y2"), "float32[?,?]");
}

TEST_F(BuiltinOpsTest, GatherOfDimsValueWithNegativeIndices) {
  In("x", "float32[batch,seq,768]");
  Ints("idx", {-1, 0});
  Node("Shape", {"x"}, {"s"});
  Node("Gather", {"s", "idx"}, {"g"});
  RUN_OK();
  EXPECT_EQ(T("g"), "int64[2]");
  EXPECT_EQ(DimsValue("g"), "[768,batch]");
}

TEST_F(BuiltinOpsTest, LargeConstantIsNoDimsValue) {
  std::vector<int64_t> many(65, 1);
  Ints("big", many);
  Node("Identity", {"big"}, {"y"});
  Ints("small", {1, 2});
  Node("Identity", {"small"}, {"z"});
  RUN_OK();
  EXPECT_EQ(T("y"), "int64[65]");
  EXPECT_EQ(DimsValue("y"), "none");
  EXPECT_EQ(DimsValue("z"), "[1,2]");
}

TEST_F(BuiltinOpsTest, FlattenAxisOutOfRangeNamesAttribute) {
  In("x", "float32[2,3]");
  Node("Flatten", {"x"}, {"y"}, {{"axis", AInt(3)}});
  ExpectError({"n0_Flatten", "attribute 'axis' value 3", "rank 2"});
}

TEST_F(BuiltinOpsTest, ConcatWithUnknownRankInputs) {
  In("a", "float32[?..]");
  In("b", "float32[batch,3]");
  Node("Concat", {"a", "a"}, {"y"}, {{"axis", AInt(0)}});
  Node("Concat", {"a", "b"}, {"z"}, {{"axis", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[?..]");
  EXPECT_EQ(T("z"), "float32[batch,?]");
}

TEST_F(BuiltinOpsTest, ConcatAxisSumOfKnownSizes) {
  In("a", "float32[2,batch]");
  In("b", "float32[5,batch]");
  In("e", "float32[0,batch]");
  In("c", "float32[seq,batch]");
  Node("Concat", {"a", "b"}, {"y"}, {{"axis", AInt(0)}});
  Node("Concat", {"c", "e"}, {"z"}, {{"axis", AInt(0)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[7,batch]");
  EXPECT_EQ(T("z"), "float32[seq,batch]");
}

TEST_F(BuiltinOpsTest, SqueezeAndUnsqueezeWithDynamicAxes) {
  In("x", "float32[1,3]");
  In("axes", "int64[1]");
  Node("Squeeze", {"x", "axes"}, {"a"});
  Node("Unsqueeze", {"x", "axes"}, {"b"});
  RUN_OK();
  EXPECT_EQ(T("a"), "float32[?..]");
  EXPECT_EQ(T("b"), "float32[?..]");
}

TEST_F(BuiltinOpsTest, ConcatAxisDefaultsToOneBeforeOpset4) {
  SetOpset(graph_, 3);
  In("a", "float32[2,3]");
  In("b", "float32[2,5]");
  Node("Concat", {"a", "b"}, {"c"});
  RUN_OK();
  EXPECT_EQ(T("c"), "float32[2,8]");
  SetOpset(graph_, 4);
  ExpectError({"n0_Concat", "missing required attribute 'axis'"});
}

TEST_F(BuiltinOpsTest, PadOpset1NamesPadsPaddings) {
  SetOpset(graph_, 1);
  In("x", "float32[2,3]");
  Node("Pad", {"x"}, {"y"}, {{"paddings", AInts({1, 0, 1, 2})}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[4,5]");
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

TEST_F(BuiltinOpsTest, IndexOpsAreRegisteredWithTheirPatterns) {
  for (const char* name : {"GatherElements", "GatherND", "Trilu", "DepthToSpace",
                           "SpaceToDepth"}) {
    const OpDef* op = registry_.Find("", name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(op->descriptor.fusion_pattern(), v1::FUSION_INJECTIVE) << name;
  }
  for (const char* name : {"Scatter", "ScatterElements", "ScatterND", "Compress", "NonZero",
                           "Unique", "OneHot", "ReverseSequence", "Size", "EyeLike", "Resize",
                           "Upsample"}) {
    const OpDef* op = registry_.Find("", name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(op->descriptor.fusion_pattern(), v1::FUSION_OPAQUE) << name;
  }
  EXPECT_EQ(registry_.Find("", "Size")->descriptor.ignored_inputs(0), 0);
}

TEST_F(BuiltinOpsTest, GatherElementsHasTheIndicesShape) {
  In("data", "float32[batch,5]");
  In("idx", "int64[batch,2]");
  Node("GatherElements", {"data", "idx"}, {"y"}, {{"axis", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,2]");
}

TEST_F(BuiltinOpsTest, GatherElementsRanksMustMatch) {
  In("data", "float32[3,5]");
  In("idx", "int64[2]");
  Node("GatherElements", {"data", "idx"}, {"y"});
  ExpectError({"n0_GatherElements", "rank"});
}

TEST_F(BuiltinOpsTest, GatherNdWithBatchDims) {
  In("data", "float32[batch,4,5,6]");
  In("idx", "int64[batch,7,2]");
  In("idx0", "int64[3,1]");
  Node("GatherND", {"data", "idx"}, {"y"}, {{"batch_dims", AInt(1)}});
  Node("GatherND", {"data", "idx0"}, {"z"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,7,6]");
  EXPECT_EQ(T("z"), "float32[3,4,5,6]");
}

TEST_F(BuiltinOpsTest, GatherNdIndexTupleTooLong) {
  In("data", "float32[4,5]");
  In("idx", "int64[2,3]");
  Node("GatherND", {"data", "idx"}, {"y"});
  ExpectError({"n0_GatherND", "[2,3]", "[4,5]"});
}

TEST_F(BuiltinOpsTest, ScattersKeepDataShape) {
  In("data", "float32[batch,8]");
  In("idx", "int64[batch,2]");
  In("upd", "float32[batch,2]");
  In("nd_idx", "int64[3,1]");
  In("nd_upd", "float32[3,8]");
  Node("ScatterElements", {"data", "idx", "upd"}, {"se"},
       {{"axis", AInt(1)}, {"reduction", AString("add")}});
  Node("ScatterND", {"data", "nd_idx", "nd_upd"}, {"nd"});
  RUN_OK();
  EXPECT_EQ(T("se"), "float32[batch,8]");
  EXPECT_EQ(T("nd"), "float32[batch,8]");
}

TEST_F(BuiltinOpsTest, ScatterNdUpdatesMustFit) {
  In("data", "float32[4,8]");
  In("idx", "int64[3,1]");
  In("upd", "float32[3,7]");
  Node("ScatterND", {"data", "idx", "upd"}, {"y"});
  ExpectError({"n0_ScatterND", "updates", "[3,7]"});
}

TEST_F(BuiltinOpsTest, ScatterElementsRejectsAnUnknownReduction) {
  In("data", "float32[4]");
  In("idx", "int64[2]");
  In("upd", "float32[2]");
  Node("ScatterElements", {"data", "idx", "upd"}, {"y"}, {{"reduction", AString("avg")}});
  ExpectError({"n0_ScatterElements", "'reduction'", "avg"});
}

TEST_F(BuiltinOpsTest, DataDependentSizesAreUnknown) {
  In("x", "float32[batch,4]");
  In("cond", "bool[4]");
  Node("Compress", {"x", "cond"}, {"c"}, {{"axis", AInt(1)}});
  Node("Compress", {"x", "cond"}, {"flat"});
  Node("NonZero", {"x"}, {"nz"});
  Node("Unique", {"x"}, {"u", "first", "inverse", "counts"});
  Node("Unique", {"x"}, {"rows", "", "row_inverse"}, {{"axis", AInt(0)}});
  RUN_OK();
  EXPECT_EQ(T("c"), "float32[batch,?]");
  EXPECT_EQ(T("flat"), "float32[?]");
  EXPECT_EQ(T("nz"), "int64[2,?]");
  EXPECT_EQ(T("u"), "float32[?]");
  EXPECT_EQ(T("first"), "int64[?]");
  EXPECT_EQ(T("inverse"), "int64[?]");  // batch * 4 elements
  EXPECT_EQ(T("counts"), "int64[?]");
  EXPECT_EQ(T("rows"), "float32[?,4]");
  EXPECT_EQ(T("row_inverse"), "int64[batch]");
}

TEST_F(BuiltinOpsTest, CompressWithAConstantConditionCounts) {
  In("x", "float32[2,4]");
  v1::Tensor cond;
  cond.set_dtype(v1::DT_BOOL);
  cond.add_dims(3);
  cond.set_raw_data(std::string("\1\0\1", 3));
  Init("cond", cond);
  Node("Compress", {"x", "cond"}, {"c"}, {{"axis", AInt(1)}});
  Node("Unique", {"x"}, {"u", "", "inverse"});
  RUN_OK();
  EXPECT_EQ(T("c"), "float32[2,2]");
  EXPECT_EQ(T("inverse"), "int64[8]");
}

TEST_F(BuiltinOpsTest, OneHotInsertsTheDepthAxis) {
  In("idx", "int64[batch,3]");
  Scalar("depth", 10);
  In("values", "float32[2]");
  In("any_depth", "int64[]");
  Node("OneHot", {"idx", "depth", "values"}, {"last"});
  Node("OneHot", {"idx", "any_depth", "values"}, {"first"}, {{"axis", AInt(0)}});
  RUN_OK();
  EXPECT_EQ(T("last"), "float32[batch,3,10]");
  EXPECT_EQ(T("first"), "float32[?,batch,3]");
}

TEST_F(BuiltinOpsTest, OneHotValuesHoldTwoElements) {
  In("idx", "int64[3]");
  Scalar("depth", 10);
  In("values", "float32[3]");
  Node("OneHot", {"idx", "depth", "values"}, {"y"});
  ExpectError({"n0_OneHot", "values", "[3]"});
}

TEST_F(BuiltinOpsTest, LayoutOpsKeepOrMoveDims) {
  In("x", "float32[batch,8,h,w]");
  In("lens", "int64[8]");
  In("m", "int32[n,n]");
  In("s", "float32[1,4,6,6]");
  Node("Trilu", {"x"}, {"tri"}, {{"upper", AInt(0)}});
  Node("ReverseSequence", {"x", "lens"}, {"rev"});
  Node("DepthToSpace", {"x"}, {"d2s"}, {{"blocksize", AInt(2)}, {"mode", AString("CRD")}});
  Node("SpaceToDepth", {"s"}, {"s2d"}, {{"blocksize", AInt(3)}});
  Node("EyeLike", {"m"}, {"eye"}, {{"dtype", AInt(v1::DT_FLOAT64)}});
  Node("EyeLike", {"m"}, {"eye_same"});
  RUN_OK();
  EXPECT_EQ(T("tri"), "float32[batch,8,h,w]");
  EXPECT_EQ(T("rev"), "float32[batch,8,h,w]");
  EXPECT_EQ(T("d2s"), "float32[batch,2,?,?]");
  EXPECT_EQ(T("s2d"), "float32[1,36,2,2]");
  EXPECT_EQ(T("eye"), "float64[n,n]");
  EXPECT_EQ(T("eye_same"), "int32[n,n]");
}

TEST_F(BuiltinOpsTest, DepthToSpaceChannelsMustDivide) {
  In("x", "float32[1,6,2,2]");
  Node("DepthToSpace", {"x"}, {"y"}, {{"blocksize", AInt(2)}});
  ExpectError({"n0_DepthToSpace", "6", "divisible by 4"});
}

TEST_F(BuiltinOpsTest, EyeLikeRejectsADtypeOutsideItsConstraint) {
  In("m", "float32[2,2]");
  Node("EyeLike", {"m"}, {"eye"}, {{"dtype", AInt(v1::DT_STRING)}});
  ExpectError({"n0_EyeLike", "string"});
}

TEST_F(BuiltinOpsTest, SizeIsAScalarCarryingTheCount) {
  In("x", "float32[2,3,4]");
  In("y", "float32[batch]");
  Node("Size", {"x"}, {"n"});
  Node("Size", {"y"}, {"m"});
  RUN_OK();
  EXPECT_EQ(T("n"), "int64[]");
  EXPECT_EQ(DimsValue("n"), "[24]");
  EXPECT_EQ(DimsValue("m"), "[batch]");
}

TEST_F(BuiltinOpsTest, ResizeByScalesOrSizes) {
  In("x", "float32[batch,3,10,10]");
  Init("scales", FloatTensor({1.0f, 1.0f, 2.0f, 0.55f}, {4}));
  Init("empty", FloatTensor({}, {0}));
  In("ref", "float32[batch,3,h,w]");
  Node("Shape", {"ref"}, {"sizes"});
  Node("Resize", {"x", "", "scales"}, {"scaled"});
  Node("Resize", {"x", "", "", "sizes"}, {"sized"}, {{"mode", AString("linear")}});
  Node("Resize", {"x", "empty", "empty", "sizes"}, {"sized11"});
  RUN_OK();
  EXPECT_EQ(T("scaled"), "float32[batch,3,20,5]");
  EXPECT_EQ(T("sized"), "float32[batch,3,h,w]");
  EXPECT_EQ(T("sized11"), "float32[batch,3,h,w]");
}

TEST_F(BuiltinOpsTest, ResizeOpset10TakesScalesSecond) {
  Opset(10);
  In("x", "float32[1,1,4,4]");
  Init("scales", FloatTensor({1.0f, 1.0f, 2.0f, 3.0f}, {4}));
  Node("Resize", {"x", "scales"}, {"y"});
  Node("Upsample", {"x", "scales"}, {"u"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[1,1,8,12]");
  EXPECT_EQ(T("u"), "float32[1,1,8,12]");
}

TEST_F(BuiltinOpsTest, ResizeRejectsBothScalesAndSizes) {
  In("x", "float32[1,1,4,4]");
  Init("scales", FloatTensor({1.0f, 1.0f, 2.0f, 3.0f}, {4}));
  Ints("sizes", {1, 1, 8, 8});
  Node("Resize", {"x", "", "scales", "sizes"}, {"y"});
  ExpectError({"n0_Resize", "scales", "sizes"});
}

TEST_F(BuiltinOpsTest, UpsampleOpset7ScalesAttribute) {
  Opset(7);
  In("x", "float32[n,3,4,4]");
  Node("Upsample", {"x"}, {"y"}, {{"scales", AFloats({1.0f, 1.0f, 2.0f, 2.0f})}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[n,3,8,8]");
}

}  // namespace
}  // namespace graphopt
