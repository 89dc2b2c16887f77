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

TEST_F(BuiltinOpsTest, SoftmaxAxisRange) {
  In("x", "float32[batch,10]");
  Node("Softmax", {"x"}, {"y"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,10]");
  Node("Softmax", {"x"}, {"z"}, {{"axis", AInt(2)}});
  ExpectError({"n1_Softmax", "attribute 'axis' value 2", "rank 2"});
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

TEST_F(BuiltinOpsTest, GemmRejectsNon2D) {
  In("a", "float32[2,3,4]");
  In("b", "float32[4,5]");
  Node("Gemm", {"a", "b"}, {"y"});
  ExpectError({"n0_Gemm", "input A", "2-D"});
}

TEST_F(BuiltinOpsTest, ReduceAxesBothAttributeAndInput) {
  In("x", "float32[2,3]");
  Ints("axes", {0});
  Node("ReduceSum", {"x", "axes"}, {"y"}, {{"axes", AInts({0})}});
  ExpectError({"n0_ReduceSum", "axes", "both"});
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

}  // namespace
}  // namespace graphopt
