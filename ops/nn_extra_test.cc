// Shape and type rules of nn_extra.cc.

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ops/builtin_ops_test_util.h"

namespace graphopt {
namespace {

TEST_F(BuiltinOpsTest, NnExtraOpsAreRegisteredWithTheirPatterns) {
  auto pattern = [&](const char* name) {
    const OpDef* op = registry_.Find("", name);
    EXPECT_NE(op, nullptr) << name;
    return op == nullptr ? v1::FUSION_OPAQUE : op->descriptor.fusion_pattern();
  };
  for (const char* name : {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
                           "ReduceProd", "ReduceSumSquare", "GlobalLpPool"}) {
    EXPECT_EQ(pattern(name), v1::FUSION_REDUCTION) << name;
  }
  EXPECT_EQ(pattern("ConvTranspose"), v1::FUSION_OUT_ELEMWISE_FUSABLE);
  EXPECT_EQ(pattern("LpPool"), v1::FUSION_OUT_ELEMWISE_FUSABLE);
  for (const char* name : {"MaxUnpool", "InstanceNormalization", "LRN",
                           "MeanVarianceNormalization", "LpNormalization", "LogSoftmax",
                           "Hardmax", "NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss",
                           "GridSample", "RoiAlign", "NonMaxSuppression"}) {
    EXPECT_EQ(pattern(name), v1::FUSION_OPAQUE) << name;
  }
  const v1::OpDescriptor& mvn = registry_.Find("", "MeanVarianceNormalization")->descriptor;
  EXPECT_EQ(mvn.attributes(0).default_value().ints().values_size(), 3);
}

TEST_F(BuiltinOpsTest, ConvTransposeUpsamples) {
  In("x", "float32[batch,4,5,5]");
  In("w", "float32[4,2,3,3]");
  In("b", "float32[4]");
  Node("ConvTranspose", {"x", "w", "b"}, {"y"},
       {{"strides", AInts({2, 2})}, {"group", AInt(2)}, {"pads", AInts({1, 1, 1, 1})},
        {"output_padding", AInts({1, 0})}});
  Node("ConvTranspose", {"x", "w"}, {"same"},
       {{"strides", AInts({2, 3})}, {"auto_pad", AString("SAME_UPPER")}, {"group", AInt(2)}});
  Node("ConvTranspose", {"x", "w"}, {"fixed"},
       {{"strides", AInts({2, 2})}, {"output_shape", AInts({10, 12})}, {"group", AInt(2)}});
  RUN_OK();
  // 2 * (5 - 1) + 1 + 3 - 2 = 10 and 2 * (5 - 1) + 0 + 3 - 2 = 9.
  EXPECT_EQ(T("y"), "float32[batch,4,10,9]");
  EXPECT_EQ(T("same"), "float32[batch,4,10,15]");
  EXPECT_EQ(T("fixed"), "float32[batch,4,10,12]");
}

TEST_F(BuiltinOpsTest, ConvTransposeKeepsSymbolsWhereTheSizeIsUnchanged) {
  In("x", "float32[n,3,h,w]");
  In("w", "float32[3,8,3,1]");
  Node("ConvTranspose", {"x", "w"}, {"y"}, {{"pads", AInts({1, 0, 1, 0})}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[n,8,h,w]");
}

TEST_F(BuiltinOpsTest, ConvTransposeChannelsMustMatch) {
  In("x", "float32[1,3,5,5]");
  In("w", "float32[4,2,3,3]");
  Node("ConvTranspose", {"x", "w"}, {"y"});
  ExpectError({"n0_ConvTranspose", "channels"});
}

TEST_F(BuiltinOpsTest, LpPoolAndGlobalLpPool) {
  In("x", "float32[batch,3,32,32]");
  Node("LpPool", {"x"}, {"y"}, {{"kernel_shape", AInts({2, 2})}, {"strides", AInts({2, 2})}});
  Node("GlobalLpPool", {"x"}, {"g"}, {{"p", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,3,16,16]");
  EXPECT_EQ(T("g"), "float32[batch,3,1,1]");
}

TEST_F(BuiltinOpsTest, MaxUnpoolInvertsThePooling) {
  In("x", "float32[1,2,2,3]");
  In("i", "int64[1,2,2,3]");
  Ints("shape", {1, 2, 5, 6});
  Node("MaxUnpool", {"x", "i"}, {"y"}, {{"kernel_shape", AInts({2, 2})},
                                        {"strides", AInts({2, 2})}});
  Node("MaxUnpool", {"x", "i", "shape"}, {"z"}, {{"kernel_shape", AInts({2, 2})},
                                                 {"strides", AInts({2, 2})}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[1,2,4,6]");
  EXPECT_EQ(T("z"), "float32[1,2,5,6]");
}

TEST_F(BuiltinOpsTest, NormalisationsKeepTheShape) {
  In("x", "float32[batch,3,h,w]");
  In("scale", "float32[3]");
  In("b", "float32[3]");
  Node("InstanceNormalization", {"x", "scale", "b"}, {"i"});
  Node("LRN", {"i"}, {"l"}, {{"size", AInt(3)}});
  Node("MeanVarianceNormalization", {"l"}, {"m"});
  Node("LpNormalization", {"m"}, {"p"}, {{"axis", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("p"), "float32[batch,3,h,w]");
}

TEST_F(BuiltinOpsTest, InstanceNormalizationScaleMustMatchChannels) {
  In("x", "float32[1,3,4]");
  In("scale", "float32[4]");
  In("b", "float32[3]");
  Node("InstanceNormalization", {"x", "scale", "b"}, {"y"});
  ExpectError({"n0_InstanceNormalization", "scale", "[4]"});
}

TEST_F(BuiltinOpsTest, LrnSizeMustBePositive) {
  In("x", "float32[1,3,4,4]");
  Node("LRN", {"x"}, {"y"}, {{"size", AInt(0)}});
  ExpectError({"n0_LRN", "'size'"});
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

TEST_F(BuiltinOpsTest, GridSampleRoiAlignAndNonMaxSuppression) {
  In("x", "float32[n,3,h,w]");
  In("grid", "float32[n,7,9,2]");
  In("rois", "float32[r,4]");
  In("idx", "int64[r]");
  In("boxes", "float32[1,6,4]");
  In("scores", "float32[1,2,6]");
  Node("GridSample", {"x", "grid"}, {"g"});
  Node("RoiAlign", {"x", "rois", "idx"}, {"roi"}, {{"output_height", AInt(5)}});
  Node("NonMaxSuppression", {"boxes", "scores"}, {"sel"});
  RUN_OK();
  EXPECT_EQ(T("g"), "float32[n,3,7,9]");
  EXPECT_EQ(T("roi"), "float32[r,3,5,1]");
  EXPECT_EQ(T("sel"), "int64[?,3]");
}

TEST_F(BuiltinOpsTest, GridSampleGridMustEndInCoordinates) {
  In("x", "float32[1,3,4,4]");
  In("grid", "float32[1,7,9,3]");
  Node("GridSample", {"x", "grid"}, {"g"});
  ExpectError({"n0_GridSample", "grid", "2 coordinates"});
}

}  // namespace
}  // namespace graphopt
