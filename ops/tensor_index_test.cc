// Shape and type rules of tensor_index.cc.

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ops/builtin_ops_test_util.h"

namespace graphopt {
namespace {

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
