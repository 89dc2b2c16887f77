// Shape and type rules of nn.cc (the channels-last ops), nn_conv.cc, nn_matmul.cc, nn_norm.cc and
// nn_pool.cc.

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
#include "ops/layout_ops.h"

namespace graphopt {
namespace {

TEST_F(BuiltinOpsTest, MatMulBatchedAndVector) {
  In("a", "float32[batch,seq,64]");
  In("w", "float32[64,128]");
  In("v", "float32[128]");
  Node("MatMul", {"a", "w"}, {"h"});
  Node("MatMul", {"h", "v"}, {"r"});
  RUN_OK();
  EXPECT_EQ(T("h"), "float32[batch,seq,128]");
  EXPECT_EQ(T("r"), "float32[batch,seq]");
}

TEST_F(BuiltinOpsTest, MatMulInnerMismatch) {
  In("a", "float32[2,3]");
  In("b", "float32[4,5]");
  Node("MatMul", {"a", "b"}, {"c"});
  ExpectError({"n0_MatMul", "inner", "[2,3]", "[4,5]"});
}

TEST_F(BuiltinOpsTest, GemmTransposeFlags) {
  In("a", "float32[64,batch]");
  In("b", "float32[10,64]");
  In("c", "float32[10]");
  Node("Gemm", {"a", "b", "c"}, {"y"}, {{"transA", AInt(1)}, {"transB", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,10]");
}

TEST_F(BuiltinOpsTest, GemmWithoutCAndBadC) {
  In("a", "float32[4,8]");
  In("b", "float32[8,3]");
  In("bad", "float32[4]");
  Node("Gemm", {"a", "b"}, {"y"});
  Node("Gemm", {"a", "b", "bad"}, {"z"});
  ExpectError({"n1_Gemm", "input C"});
  EXPECT_EQ(T("y"), "float32[4,3]");
}

TEST_F(BuiltinOpsTest, GemmInnerMismatch) {
  In("a", "float32[4,8]");
  In("b", "float32[8,3]");
  Node("Gemm", {"a", "b"}, {"y"}, {{"transB", AInt(1)}});
  ExpectError({"n0_Gemm", "K=8", "K=3"});
}

TEST_F(BuiltinOpsTest, ConvPadsStridesAndBias) {
  In("x", "float32[batch,3,224,224]");
  In("w", "float32[64,3,7,7]");
  In("b", "float32[64]");
  Node("Conv", {"x", "w", "b"}, {"y"},
       {{"pads", AInts({3, 3, 3, 3})}, {"strides", AInts({2, 2})}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,64,112,112]");
}

TEST_F(BuiltinOpsTest, ConvDilationsAndKernelFromWeight) {
  In("x", "float32[1,8,32,?]");
  In("w", "float32[16,8,3,3]");
  Node("Conv", {"x", "w"}, {"y"}, {{"dilations", AInts({2, 2})}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[1,16,28,?]");
}

TEST_F(BuiltinOpsTest, ConvAutoPadAndSymbolicSpatial) {
  In("x", "float32[n,16,h,w]");
  In("w", "float32[16,16,3,3]");
  Node("Conv", {"x", "w"}, {"same"}, {{"auto_pad", AString("SAME_UPPER")}});
  Node("Conv", {"x", "w"}, {"strided"},
       {{"auto_pad", AString("SAME_LOWER")}, {"strides", AInts({2, 2})}});
  RUN_OK();
  EXPECT_EQ(T("same"), "float32[n,16,h,w]");
  EXPECT_EQ(T("strided"), "float32[n,16,?,?]");
}

TEST_F(BuiltinOpsTest, ConvGroupsAndChannelMismatch) {
  In("x", "float32[1,32,8,8]");
  In("dw", "float32[32,1,3,3]");
  In("bad", "float32[8,16,3,3]");
  Node("Conv", {"x", "dw"}, {"y"}, {{"group", AInt(32)}, {"pads", AInts({1, 1, 1, 1})}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[1,32,8,8]");
  Node("Conv", {"x", "bad"}, {"z"});
  ExpectError({"n1_Conv", "32 channels", "16"});
}

TEST_F(BuiltinOpsTest, ConvBadAttributes) {
  In("x", "float32[1,3,8,8]");
  In("w", "float32[4,3,3,3]");
  Node("Conv", {"x", "w"}, {"y"}, {{"strides", AInts({1})}});
  ExpectError({"n0_Conv", "strides", "expected 2"});
}

TEST_F(BuiltinOpsTest, ConvUnknownInputsKeepRankFromWeight) {
  In("x", "?");
  In("w", "float32[4,3,3,3]");
  Node("Conv", {"x", "w"}, {"y"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[?,4,?,?]");
}

TEST_F(BuiltinOpsTest, MaxPoolCeilModeAndIndices) {
  In("x", "float32[batch,64,112,112]");
  Node("MaxPool", {"x"}, {"y", "idx"},
       {{"kernel_shape", AInts({3, 3})}, {"strides", AInts({2, 2})},
        {"pads", AInts({1, 1, 1, 1})}});
  Node("MaxPool", {"x"}, {"c"},
       {{"kernel_shape", AInts({2, 2})}, {"strides", AInts({3, 3})}, {"ceil_mode", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,64,56,56]");
  EXPECT_EQ(T("idx"), "int64[batch,64,56,56]");
  // floor(110/3)+1 = 37; ceil gives 38.
  EXPECT_EQ(T("c"), "float32[batch,64,38,38]");
}

TEST_F(BuiltinOpsTest, AveragePoolValidAndRankCheck) {
  In("x", "float32[1,3,10]");
  Node("AveragePool", {"x"}, {"y"},
       {{"kernel_shape", AInts({3})}, {"auto_pad", AString("VALID")}, {"strides", AInts({2})}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[1,3,4]");
  Node("AveragePool", {"x"}, {"z"}, {{"kernel_shape", AInts({3, 3})}});
  ExpectError({"n1_AveragePool", "rank 4"});
}

TEST_F(BuiltinOpsTest, PoolOfUnknownRankGetsRankFromKernel) {
  In("x", "float32[?..]");
  Node("MaxPool", {"x"}, {"y"}, {{"kernel_shape", AInts({2, 2})}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[?,?,?,?]");
}

TEST_F(BuiltinOpsTest, GlobalAveragePool) {
  In("x", "float32[batch,512,7,7]");
  Node("GlobalAveragePool", {"x"}, {"y"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,512,1,1]");
}

TEST_F(BuiltinOpsTest, BatchNormalization) {
  In("x", "float32[batch,16,8,8]");
  In("p", "float32[16]");
  Node("BatchNormalization", {"x", "p", "p", "p", "p"}, {"y", "rm", "rv"},
       {{"training_mode", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,16,8,8]");
  EXPECT_EQ(T("rm"), "float32[16]");
  EXPECT_EQ(T("rv"), "float32[16]");
}

TEST_F(BuiltinOpsTest, BatchNormalizationChannelMismatch) {
  In("x", "float32[batch,16,8,8]");
  In("p", "float32[16]");
  In("q", "float32[8]");
  Node("BatchNormalization", {"x", "p", "q", "p", "p"}, {"y"});
  ExpectError({"n0_BatchNormalization", "B", "[8]"});
}

TEST_F(BuiltinOpsTest, LayerNormalization) {
  In("x", "float16[batch,seq,768]");
  In("g", "float16[768]");
  Node("LayerNormalization", {"x", "g", "g"}, {"y", "mean", "inv"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float16[batch,seq,768]");
  EXPECT_EQ(T("mean"), "float32[batch,seq,1]");
  EXPECT_EQ(T("inv"), "float32[batch,seq,1]");
}

TEST_F(BuiltinOpsTest, LayerNormalizationAxisAndBadScale) {
  In("x", "float32[2,3,4]");
  In("g", "float32[3,4]");
  In("bad", "float32[5]");
  Node("LayerNormalization", {"x", "g"}, {"y", "m"}, {{"axis", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("m"), "float32[2,1,1]");
  Node("LayerNormalization", {"x", "bad"}, {"z"});
  ExpectError({"n1_LayerNormalization", "Scale"});
}

TEST_F(BuiltinOpsTest, GemmRejectsNon2D) {
  In("a", "float32[2,3,4]");
  In("b", "float32[4,5]");
  Node("Gemm", {"a", "b"}, {"y"});
  ExpectError({"n0_Gemm", "input A", "2-D"});
}

TEST_F(BuiltinOpsTest, ConvKernelShapeAttributeWithUnknownWeight) {
  In("x", "float32[1,3,9,9]");
  In("w", "float32[?..]");
  Node("Conv", {"x", "w"}, {"y"}, {{"kernel_shape", AInts({3, 3})}, {"strides", AInts({3, 3})}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[1,?,3,3]");
}

TEST_F(BuiltinOpsTest, ConvWindowLargerThanInput) {
  In("x", "float32[1,3,2,2]");
  In("w", "float32[4,3,5,5]");
  Node("Conv", {"x", "w"}, {"y"});
  ExpectError({"n0_Conv", "spatial axis 0", "does not fit"});
}

TEST_F(BuiltinOpsTest, BatchNormPerActivationBeforeOpset9) {
  SetOpset(graph_, 7);
  In("x", "float32[n,3,4]");
  In("p", "float32[3,4]");
  Node("BatchNormalization", {"x", "p", "p", "p", "p"}, {"y", "mean", "var"},
       {{"spatial", AInt(0)}, {"is_test", AInt(0)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[n,3,4]");
  EXPECT_EQ(T("mean"), "float32[3,4]");
  // From opset 9 'spatial' is gone: the statistics are per channel again.
  SetOpset(graph_, 9);
  ExpectError({"input 1 (scale) must be 1-D, got [3,4]"});
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

TEST_F(BuiltinOpsTest, IntegerConvolutions) {
  In("x", "uint8[n,2,5,5]");
  In("w", "int8[4,2,3,3]");
  In("s", "float32[]");
  In("xzp", "uint8[]");
  In("wzp", "int8[]");
  In("yzp", "int8[]");
  In("b", "int32[4]");
  Node("ConvInteger", {"x", "w", "xzp"}, {"ci"}, {{"pads", AInts({1, 1, 1, 1})}});
  Node("QLinearConv", {"x", "s", "xzp", "w", "s", "wzp", "s", "yzp", "b"}, {"qc"},
       {{"strides", AInts({2, 2})}});
  RUN_OK();
  EXPECT_EQ(T("ci"), "int32[n,4,5,5]");
  EXPECT_EQ(T("qc"), "int8[n,4,2,2]");
}

TEST_F(BuiltinOpsTest, QLinearConvBiasMustMatchOutputChannels) {
  In("x", "uint8[1,2,5,5]");
  In("w", "uint8[4,2,3,3]");
  In("s", "float32[]");
  In("zp", "uint8[]");
  In("b", "int32[3]");
  Node("QLinearConv", {"x", "s", "zp", "w", "s", "zp", "s", "zp", "b"}, {"y"});
  ExpectError({"n0_QLinearConv", "input B", "[3]"});
}

TEST_F(BuiltinOpsTest, IntegerMatMuls) {
  In("a", "uint8[batch,m,4]");
  In("b", "int8[4,n]");
  In("s", "float32[]");
  In("azp", "uint8[]");
  In("bzp", "int8[]");
  In("yzp", "uint8[]");
  Node("MatMulInteger", {"a", "b"}, {"mi"});
  Node("QLinearMatMul", {"a", "s", "azp", "b", "s", "bzp", "s", "yzp"}, {"qm"});
  RUN_OK();
  EXPECT_EQ(T("mi"), "int32[batch,m,n]");
  EXPECT_EQ(T("qm"), "uint8[batch,m,n]");
}

TEST_F(BuiltinOpsTest, NhwcConvIsConvTransposed) {
  In("x", "float32[batch,224,224,3]");
  In("w", "float32[64,3,7,7]");
  In("b", "float32[64]");
  In("s", "float32[n,h,w,16]");
  In("dw", "float32[16,1,3,3]");
  DomainNode(kLayoutDomain, kNhwcConvOp, {"x", "w", "b"}, {"y"},
             {{"pads", AInts({3, 3, 3, 3})}, {"strides", AInts({2, 2})}});
  DomainNode(kLayoutDomain, kNhwcConvOp, {"s", "dw"}, {"same"},
             {{"auto_pad", AString("SAME_UPPER")}, {"group", AInt(16)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,112,112,64]");
  EXPECT_EQ(T("same"), "float32[n,h,w,16]");
}

TEST_F(BuiltinOpsTest, NhwcConvChecksChannelsOnTheLastAxis) {
  In("x", "float32[1,8,8,32]");
  In("w", "float32[8,16,3,3]");
  DomainNode(kLayoutDomain, kNhwcConvOp, {"x", "w"}, {"y"});
  ExpectError({"NhwcConv", "32 channels", "16"});
}

TEST_F(BuiltinOpsTest, NhwcConvTakesFloat32Only) {
  In("x", "float64[1,8,8,4]");
  In("w", "float64[8,4,3,3]");
  DomainNode(kLayoutDomain, kNhwcConvOp, {"x", "w"}, {"y"});
  ExpectError({"NhwcConv", "float64"});
}

TEST_F(BuiltinOpsTest, NhwcPoolsAreThePoolsTransposed) {
  In("x", "float32[1,112,112,64]");
  DomainNode(kLayoutDomain, kNhwcMaxPoolOp, {"x"}, {"max"},
             {{"kernel_shape", AInts({3, 3})}, {"strides", AInts({2, 2})},
              {"pads", AInts({1, 1, 1, 1})}});
  DomainNode(kLayoutDomain, kNhwcAveragePoolOp, {"x"}, {"avg"},
             {{"kernel_shape", AInts({2, 2})}, {"strides", AInts({2, 2})}, {"ceil_mode", AInt(1)}});
  DomainNode(kLayoutDomain, kNhwcGlobalAveragePoolOp, {"max"}, {"gap"});
  DomainNode(kLayoutDomain, kNhwcGlobalMaxPoolOp, {"avg"}, {"gmp"});
  RUN_OK();
  EXPECT_EQ(T("max"), "float32[1,56,56,64]");
  EXPECT_EQ(T("avg"), "float32[1,56,56,64]");
  EXPECT_EQ(T("gap"), "float32[1,1,1,64]");
  EXPECT_EQ(T("gmp"), "float32[1,1,1,64]");
}

TEST_F(BuiltinOpsTest, NhwcPoolNeedsItsKernelShape) {
  In("x", "float32[1,8,8,4]");
  DomainNode(kLayoutDomain, kNhwcMaxPoolOp, {"x"}, {"y"});
  ExpectError({"NhwcMaxPool", "kernel_shape"});
}

}  // namespace
}  // namespace graphopt
