// Shape and type rules of nn_layout.cc: the channels-last ops infer what their ONNX
// ops infer, transposed.
#include "gtest/gtest.h"
#include "ops/builtin_ops_test_util.h"
#include "ops/layout_ops.h"

namespace graphopt {
namespace {

TEST_F(BuiltinOpsTest, LayoutOpsAreRegisteredInTheGraphoptDomain) {
  for (const char* name : {kNhwcConvOp, kNhwcMaxPoolOp, kNhwcAveragePoolOp}) {
    const OpDef* op = registry_.Find(kLayoutDomain, name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(op->descriptor.fusion_pattern(), v1::FUSION_OUT_ELEMWISE_FUSABLE) << name;
    EXPECT_EQ(registry_.Find("", name), nullptr) << name;
  }
  for (const char* name : {kNhwcGlobalAveragePoolOp, kNhwcGlobalMaxPoolOp}) {
    const OpDef* op = registry_.Find(kLayoutDomain, name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(op->descriptor.fusion_pattern(), v1::FUSION_REDUCTION) << name;
  }
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
