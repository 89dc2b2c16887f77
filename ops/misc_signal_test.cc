// Shape and type rules of misc_signal.cc.

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ops/builtin_ops_test_util.h"

namespace graphopt {
namespace {

TEST_F(BuiltinOpsTest, SignalOpsAreRegistered) {
  for (const char* name :
       {"DFT", "STFT", "HannWindow", "HammingWindow", "BlackmanWindow", "MelWeightMatrix"}) {
    EXPECT_NE(registry_.Find("", name), nullptr) << name;
  }
}

TEST_F(BuiltinOpsTest, DftOfRealAndComplexSignals) {
  In("real", "float32[batch,16,1]");
  In("cplx", "float32[batch,n,2]");
  Scalar("len", 10);
  Node("DFT", {"real"}, {"full"});
  Node("DFT", {"real"}, {"half"}, {{"onesided", AInt(1)}});
  Node("DFT", {"cplx", "len"}, {"padded"}, {{"inverse", AInt(1)}});
  Node("DFT", {"cplx"}, {"sym"});
  RUN_OK();
  EXPECT_EQ(T("full"), "float32[batch,16,2]");
  EXPECT_EQ(T("half"), "float32[batch,9,2]");
  EXPECT_EQ(T("padded"), "float32[batch,10,2]");
  EXPECT_EQ(T("sym"), "float32[batch,n,2]");
}

TEST_F(BuiltinOpsTest, DftCannotBeOneSidedAndInverse) {
  In("x", "float32[1,16,2]");
  Node("DFT", {"x"}, {"y"}, {{"onesided", AInt(1)}, {"inverse", AInt(1)}});
  ExpectError({"n0_DFT", "'onesided'", "'inverse'"});
}

TEST_F(BuiltinOpsTest, DftAxisMustNotBeTheComplexDim) {
  In("x", "float32[1,16,2]");
  Node("DFT", {"x"}, {"y"}, {{"axis", AInt(-1)}});
  ExpectError({"n0_DFT", "'axis'"});
}

TEST_F(BuiltinOpsTest, StftFrames) {
  In("signal", "float32[batch,128,1]");
  Scalar("step", 8);
  In("window", "float32[16]");
  Scalar("length", 16);
  Node("STFT", {"signal", "step", "window"}, {"y"});
  Node("STFT", {"signal", "step", "", "length"}, {"full"}, {{"onesided", AInt(0)}});
  RUN_OK();
  // (128 - 16) / 8 + 1 = 15 frames of 16 / 2 + 1 = 9 bins.
  EXPECT_EQ(T("y"), "float32[batch,15,9,2]");
  EXPECT_EQ(T("full"), "float32[batch,15,16,2]");
}

TEST_F(BuiltinOpsTest, StftWindowMustHaveTheFrameLength) {
  In("signal", "float32[1,128,1]");
  Scalar("step", 8);
  In("window", "float32[16]");
  Scalar("length", 20);
  Node("STFT", {"signal", "step", "window", "length"}, {"y"});
  ExpectError({"n0_STFT", "window", "20"});
}

TEST_F(BuiltinOpsTest, WindowsAndMelWeightMatrix) {
  Scalar("size", 10);
  In("any", "int32[]");
  Scalar("bins", 8);
  Scalar("dft", 16);
  Scalar("rate", 8000);
  In("low", "float32[]");
  In("high", "float32[]");
  Node("HannWindow", {"size"}, {"hann"});
  Node("BlackmanWindow", {"any"}, {"blackman"}, {{"output_datatype", AInt(v1::DT_FLOAT64)}});
  Node("MelWeightMatrix", {"bins", "dft", "rate", "low", "high"}, {"mel"});
  RUN_OK();
  EXPECT_EQ(T("hann"), "float32[10]");
  EXPECT_EQ(T("blackman"), "float64[?]");
  EXPECT_EQ(T("mel"), "float32[9,8]");
}

TEST_F(BuiltinOpsTest, WindowOutputDatatypeMustBeNumeric) {
  Scalar("size", 10);
  Node("HammingWindow", {"size"}, {"y"}, {{"output_datatype", AInt(v1::DT_BOOL)}});
  ExpectError({"n0_HammingWindow", "bool"});
}

TEST_F(BuiltinOpsTest, WindowSizeMustBePositive) {
  Scalar("size", 0);
  Node("HannWindow", {"size"}, {"y"});
  ExpectError({"n0_HannWindow", "size", "positive"});
}

}  // namespace
}  // namespace graphopt
