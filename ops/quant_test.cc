// Shape and type rules of quant.cc.

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ops/builtin_ops_test_util.h"

namespace graphopt {
namespace {

TEST_F(BuiltinOpsTest, QuantizationOpsAreRegistered) {
  for (const char* name : {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
                           "ConvInteger", "QLinearConv", "MatMulInteger", "QLinearMatMul"}) {
    EXPECT_NE(registry_.Find("", name), nullptr) << name;
  }
  // The scale and zero point broadcast along 'axis'.
  EXPECT_EQ(registry_.Find("", "QuantizeLinear")->descriptor.fusion_pattern(),
            v1::FUSION_BROADCAST);
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

}  // namespace
}  // namespace graphopt
