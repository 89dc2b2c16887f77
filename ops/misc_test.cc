// Shape and type rules of misc.cc: random generators, text ops, training optimizers, Det,
// NonMaxSuppression, image sampling (GridSample, RoiAlign) and signal processing (DFT, STFT, the
// window generators, MelWeightMatrix).

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ops/builtin_ops_test_util.h"

namespace graphopt {
namespace {

constexpr char kTraining[] = "ai.onnx.preview.training";

TEST_F(BuiltinOpsTest, RandomGeneratorsAreNondeterministic) {
  for (const char* name : {"RandomNormal", "RandomUniform", "RandomNormalLike",
                           "RandomUniformLike", "Bernoulli", "Multinomial"}) {
    const OpDef* op = registry_.Find("", name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(op->descriptor.extensions().at(kNondeterministicExtension).i(), 1) << name;
    EXPECT_EQ(op->descriptor.fusion_pattern(), v1::FUSION_OPAQUE) << name;
  }
  for (const char* name : {"Adagrad", "Adam", "Momentum"}) {
    const OpDef* op = registry_.Find(kTraining, name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(op->descriptor.extensions().count(kNondeterministicExtension), 0u) << name;
  }
  EXPECT_NE(registry_.Find("", "StringNormalizer"), nullptr);
  EXPECT_NE(registry_.Find("", "TfIdfVectorizer"), nullptr);
}

TEST_F(BuiltinOpsTest, RandomGeneratorShapesAndTypes) {
  In("x", "int32[batch,3]");
  In("p", "float64[batch,3]");
  In("logits", "float32[batch,10]");
  Node("RandomNormal", {}, {"normal"}, {{"shape", AInts({2, 3})}});
  Node("RandomUniform", {}, {"uniform"},
       {{"shape", AInts({4})}, {"dtype", AInt(v1::DT_FLOAT64)}, {"seed", AFloat(1)}});
  Node("RandomUniformLike", {"x"}, {"like"}, {{"dtype", AInt(v1::DT_FLOAT16)}});
  Node("RandomNormalLike", {"p"}, {"like_p"});
  Node("Bernoulli", {"p"}, {"coin"}, {{"dtype", AInt(v1::DT_BOOL)}});
  Node("Multinomial", {"logits"}, {"draws"}, {{"sample_size", AInt(5)}});
  RUN_OK();
  EXPECT_EQ(T("normal"), "float32[2,3]");
  EXPECT_EQ(T("uniform"), "float64[4]");
  EXPECT_EQ(T("like"), "float16[batch,3]");
  EXPECT_EQ(T("like_p"), "float64[batch,3]");
  EXPECT_EQ(T("coin"), "bool[batch,3]");
  EXPECT_EQ(T("draws"), "int32[batch,5]");
}

TEST_F(BuiltinOpsTest, RandomLikeOfIntegersNeedsADtype) {
  In("x", "int32[3]");
  Node("RandomUniformLike", {"x"}, {"y"});
  ExpectError({"n0_RandomUniformLike", "int32"});
}

TEST_F(BuiltinOpsTest, TextOps) {
  In("words", "string[1,n]");
  In("tokens", "int64[batch,12]");
  Node("StringNormalizer", {"words"}, {"lower"}, {{"case_change_action", AString("LOWER")}});
  Node("StringNormalizer", {"words"}, {"filtered"}, {{"stopwords", AStrings({"a", "the"})}});
  Node("TfIdfVectorizer", {"tokens"}, {"tfidf"},
       {{"max_gram_length", AInt(2)},
        {"max_skip_count", AInt(0)},
        {"min_gram_length", AInt(1)},
        {"mode", AString("TF")},
        {"ngram_counts", AInts({0, 2})},
        {"ngram_indexes", AInts({0, 1, 6})},
        {"pool_int64s", AInts({1, 2, 1, 2})}});
  RUN_OK();
  EXPECT_EQ(T("lower"), "string[1,n]");
  EXPECT_EQ(T("filtered"), "string[1,?]");
  EXPECT_EQ(T("tfidf"), "float32[batch,7]");
}

TEST_F(BuiltinOpsTest, StringNormalizerRejectsAnUnknownAction) {
  In("words", "string[3]");
  Node("StringNormalizer", {"words"}, {"y"}, {{"case_change_action", AString("TITLE")}});
  ExpectError({"n0_StringNormalizer", "'case_change_action'", "TITLE"});
}

TEST_F(BuiltinOpsTest, AdamUpdatesEachOptimizedTensor) {
  In("r", "float32[]");
  In("t", "int64[]");
  In("w", "float32[3,4]");
  In("b", "float64[4]");
  In("gw", "float32[3,4]");
  In("gb", "float64[4]");
  In("vw", "float32[3,4]");
  In("vb", "float64[4]");
  In("hw", "float32[3,4]");
  In("hb", "float64[4]");
  DomainNode(kTraining, "Adam", {"r", "t", "w", "b", "gw", "gb", "vw", "vb", "hw", "hb"},
             {"w2", "b2", "vw2", "vb2", "hw2", "hb2"});
  RUN_OK();
  EXPECT_EQ(T("w2"), "float32[3,4]");
  EXPECT_EQ(T("b2"), "float64[4]");
  EXPECT_EQ(T("vb2"), "float64[4]");
  EXPECT_EQ(T("hw2"), "float32[3,4]");
}

TEST_F(BuiltinOpsTest, MomentumChecksItsModeAndGroups) {
  In("r", "float32[]");
  In("t", "int64[]");
  In("w", "float32[3]");
  In("g", "float32[3]");
  In("v", "float32[3]");
  DomainNode(kTraining, "Momentum", {"r", "t", "w", "g", "v"}, {"w2", "v2"},
             {{"alpha", AFloat(0.9f)},
              {"beta", AFloat(1.0f)},
              {"norm_coefficient", AFloat(0.0f)},
              {"mode", AString("heavy")}});
  ExpectError({"n0_Momentum", "'mode'", "heavy"});
}

TEST_F(BuiltinOpsTest, AdagradInputsComeInGroupsOfThree) {
  In("r", "float32[]");
  In("t", "int64[]");
  In("w", "float32[3]");
  In("g", "float32[3]");
  DomainNode(kTraining, "Adagrad", {"r", "t", "w", "g"}, {"w2"});
  ExpectError({"n0_Adagrad", "3 tensors per optimized tensor"});
}

TEST_F(BuiltinOpsTest, OnnxGradientOutputsAreTypedLikeTheirXs) {
  In("a", "float32[batch,3]");
  In("b", "float64[]");
  In("z", "int64[2]");
  Node("Add", {"a", "a"}, {"c"});
  DomainNode(kTraining, "Gradient", {"a", "b", "z"}, {"da", "db"},
             {{"xs", AStrings({"a", "b"})}, {"zs", AStrings({"z"})}, {"y", AString("c")}});
  RUN_OK();
  EXPECT_EQ(T("da"), "float32[batch,3]");
  EXPECT_EQ(T("db"), "float64[]");
}

TEST_F(BuiltinOpsTest, OnnxGradientChecksItsArity) {
  In("a", "float32[3]");
  In("b", "float32[3]");
  DomainNode(kTraining, "Gradient", {"a", "b"}, {"da"},
             {{"xs", AStrings({"a"})}, {"y", AString("a")}});
  ExpectError({"n0_Gradient", "1 inputs", "got 2"});
}

TEST_F(BuiltinOpsTest, OnnxGradientOfAnIntegerIsRefused) {
  In("i", "int64[3]");
  DomainNode(kTraining, "Gradient", {"i"}, {"di"}, {{"xs", AStrings({"i"})}, {"y", AString("i")}});
  ExpectError({"n0_Gradient", "int64", "only float16"});
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
