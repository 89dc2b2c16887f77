// Builtin gradients of the tensor ops against finite differences (passes/gradient_check.h),
// first and second order.

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/grad_test_util.h"
#include "passes/gradient_check.h"
#include "passes/pass_test_util.h"
#include "passes/runtime_test_util.h"

namespace graphopt {
namespace {

using ::graphopt::testing::BoolInit;
using ::graphopt::testing::CheckGradients;
using ::graphopt::testing::CheckSecondOrder;
using ::graphopt::testing::F64Input;
using ::graphopt::testing::Int64Init;
using ::graphopt::testing::IntsText;
using ::graphopt::testing::IntText;
using ::graphopt::testing::NodeText;
using ::graphopt::testing::Opset;
using ::graphopt::testing::OpTypes;
using ::graphopt::testing::OutputText;
using ::graphopt::testing::PassTestEnv;
using ::graphopt::testing::Rand;
using ::graphopt::testing::StringText;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

using Inputs = std::vector<std::pair<std::string, runtime::Tensor>>;

absl::Status Check(const std::string& text, const Inputs& inputs) {
  PassTestEnv env;
  return CheckGradients(env, text, inputs);
}

// The op types of `text` differentiated with respect to x.
std::vector<std::string> BackwardOps(const std::string& text) {
  PassTestEnv env;
  auto out = env.RunSpecs(text, {{"infer_type", {}}, {"infer_shape", {}},
                                 {"gradient", {{"wrt", "x"}}}});
  if (!out.ok()) return {std::string(out.status().message())};
  return OpTypes(*out);
}

// --- Shape ops --------------------------------------------------------------------------------

TEST(GradTensorTest, ReshapeFlattenSqueezeUnsqueeze) {
  absl::Status s = Check(F64Input("x", {"2", "3", "4"}) + Int64Init("shape", {4, -1}) +
                             NodeText("Reshape", {"x", "shape"}, "y") + OutputText("y"),
                         {{"x", Rand({2, 3, 4}, 1)}});
  EXPECT_TRUE(s.ok()) << s;
  s = Check(F64Input("x", {"2", "3", "4"}) + NodeText("Flatten", {"x"}, "y", IntText("axis", 2)) +
                OutputText("y"),
            {{"x", Rand({2, 3, 4}, 2)}});
  EXPECT_TRUE(s.ok()) << s;
  // Squeeze and Unsqueeze: axes as an attribute at opset 11, as an input at 13.
  s = Check(Opset(11) + F64Input("x", {"2", "1", "3"}) +
                NodeText("Squeeze", {"x"}, "s", IntsText("axes", {1})) +
                NodeText("Unsqueeze", {"s"}, "y", IntsText("axes", {0, 3})) + OutputText("y"),
            {{"x", Rand({2, 1, 3}, 3)}});
  EXPECT_TRUE(s.ok()) << s;
  s = Check(Opset(13) + F64Input("x", {"2", "1", "3"}) + Int64Init("sq", {-2}) +
                Int64Init("unsq", {0, 3}) + NodeText("Squeeze", {"x", "sq"}, "s") +
                NodeText("Unsqueeze", {"s", "unsq"}, "y") + OutputText("y"),
            {{"x", Rand({2, 1, 3}, 4)}});
  EXPECT_TRUE(s.ok()) << s;
  // Symbolic dims: Reshape to Shape(x) at run time.
  s = Check(F64Input("x", {"n", "3"}) + NodeText("Flatten", {"x"}, "y", IntText("axis", 0)) +
                OutputText("y"),
            {{"x", Rand({4, 3}, 5)}});
  EXPECT_TRUE(s.ok()) << s;
}

TEST(GradTensorTest, TransposeAndExpand) {
  absl::Status s = Check(F64Input("x", {"2", "3", "4"}) +
                             NodeText("Transpose", {"x"}, "y", IntsText("perm", {1, 2, 0})) +
                             OutputText("y"),
                         {{"x", Rand({2, 3, 4}, 6)}});
  EXPECT_TRUE(s.ok()) << s;
  s = Check(F64Input("x", {"2", "3"}) + NodeText("Transpose", {"x"}, "y") + OutputText("y"),
            {{"x", Rand({2, 3}, 7)}});
  EXPECT_TRUE(s.ok()) << s;
  s = Check(F64Input("x", {"3", "1"}) + Int64Init("shape", {2, 3, 4}) +
                NodeText("Expand", {"x", "shape"}, "y") + OutputText("y"),
            {{"x", Rand({3, 1}, 8)}});
  EXPECT_TRUE(s.ok()) << s;
  // Symbolic: the broadcast axes are known at run time only (graphopt::SumToShape).
  const std::string symbolic = F64Input("x", {"m", "1"}) + F64Input("like", {"n", "4"}) +
                               NodeText("Shape", {"like"}, "shape") +
                               NodeText("Expand", {"x", "shape"}, "y") + OutputText("y");
  EXPECT_THAT(BackwardOps(symbolic), Contains("SumToShape"));
  PassTestEnv env;
  testing::GradientCheckOptions options;
  options.wrt = {"x"};
  s = CheckGradients(env, symbolic, {{"x", Rand({1, 1}, 9)}, {"like", Rand({5, 4}, 10)}}, options);
  EXPECT_TRUE(s.ok()) << s;
  s = CheckGradients(env, symbolic, {{"x", Rand({5, 1}, 9)}, {"like", Rand({5, 4}, 10)}}, options);
  EXPECT_TRUE(s.ok()) << s;
}

TEST(GradTensorTest, DropoutInInferenceIsTheIdentity) {
  absl::Status s = Check(F64Input("x", {"2", "3"}) + BoolInit("training", false) +
                             NodeText("Dropout", {"x", "", "training"}, "y") + OutputText("y"),
                         {{"x", Rand({2, 3}, 11)}});
  EXPECT_TRUE(s.ok()) << s;
}

TEST(GradTensorTest, DropoutInTrainingGoesThroughTheMask) {
  // The forward pass draws its mask at random, so finite differences do not apply: with x = 1
  // and dy = 1, dx = mask / (1 - ratio) = y.
  PassTestEnv env;
  const std::string dropout =
      "nodes { op_type: \"Dropout\" name: \"drop\" inputs: \"x\" inputs: \"ratio\" inputs: "
      "\"training\" outputs: \"y\" outputs: \"mask\" }\n";
  const std::string text = F64Input("x", {"64"}) + testing::F64ScalarInit("ratio", 0.25) +
                           BoolInit("training", true) + dropout + OutputText("y");
  auto out = env.RunSpecs(text, {{"infer_type", {}}, {"infer_shape", {}},
                                 {"gradient", {{"wrt", "x"}}}});
  ASSERT_TRUE(out.ok()) << out.status();
  runtime::Tensor ones = Rand({64}, 1, 1.0, 1.0);
  runtime::Tensor seed = Rand({64}, 1, 1.0, 1.0);
  testing::TestRuntime runtime;
  auto got = runtime.Run(*out, {{"x", std::move(ones)}, {"y_grad", std::move(seed)}});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 2u);
  int dropped = 0;
  for (int i = 0; i < 64; ++i) {
    // The kernel scales by 1 / (1 - ratio) in float.
    EXPECT_NEAR((*got)[1].data<double>()[i], (*got)[0].data<double>()[i], 1e-6) << i;
    dropped += (*got)[0].data<double>()[i] == 0;
  }
  EXPECT_GT(dropped, 0);
  EXPECT_LT(dropped, 64);
  // Without the mask output, training mode has nothing to differentiate through.
  const std::string no_mask = F64Input("x", {"4"}) + BoolInit("training", true) +
                              NodeText("Dropout", {"x", "", "training"}, "y") + OutputText("y");
  out = env.RunSpecs(no_mask, {{"infer_type", {}}, {"infer_shape", {}},
                               {"gradient", {{"wrt", "x"}}}});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("mask"));
}

// --- Concat, Split ----------------------------------------------------------------------------

TEST(GradTensorTest, ConcatStaticSymbolicAndOldOpset) {
  const std::string nodes = NodeText("Concat", {"a", "b", "c"}, "y", IntText("axis", -1)) +
                            OutputText("y");
  const Inputs inputs = {{"a", Rand({2, 1}, 12)}, {"b", Rand({2, 3}, 13)}, {"c", Rand({2, 2}, 14)}};
  absl::Status s =
      Check(F64Input("a", {"2", "1"}) + F64Input("b", {"2", "3"}) + F64Input("c", {"2", "2"}) + nodes,
            inputs);
  EXPECT_TRUE(s.ok()) << s;
  // Opset 11: Split's sizes are an attribute.
  s = Check(Opset(11) + F64Input("a", {"2", "1"}) + F64Input("b", {"2", "3"}) +
                F64Input("c", {"2", "2"}) + nodes,
            inputs);
  EXPECT_TRUE(s.ok()) << s;
  // Symbolic sizes along the axis: taken from the inputs' shapes at run time.
  s = Check(F64Input("a", {"2", "p"}) + F64Input("b", {"2", "q"}) + F64Input("c", {"2", "r"}) +
                nodes,
            inputs);
  EXPECT_TRUE(s.ok()) << s;
}

TEST(GradTensorTest, SplitWithAnUnusedOutput) {
  // y1 is not used: its part of dx is zeros.
  auto nodes = [](const std::string& extra_input, const std::string& attrs) {
    return absl::StrCat("nodes { op_type: \"Split\" name: \"split\" inputs: \"x\" ", extra_input,
                        " outputs: \"y0\" outputs: \"y1\" outputs: \"y2\" attributes { name: "
                        "\"axis\" i: 1 } ",
                        attrs, " }\n");
  };
  const std::string tail = F64Input("w", {"2", "1"}) + NodeText("Mul", {"y0", "w"}, "z0") +
                           OutputText("z0") + OutputText("y2");
  absl::Status s = Check(Opset(13) + F64Input("x", {"2", "6"}) + Int64Init("sizes", {1, 2, 3}) +
                             nodes("inputs: \"sizes\"", "") + tail,
                         {{"x", Rand({2, 6}, 15)}, {"w", Rand({2, 1}, 45)}});
  EXPECT_TRUE(s.ok()) << s;
  s = Check(Opset(11) + F64Input("x", {"2", "6"}) +
                nodes("", IntsText("split", {1, 2, 3})) + tail,
            {{"x", Rand({2, 6}, 16)}, {"w", Rand({2, 1}, 46)}});
  EXPECT_TRUE(s.ok()) << s;
}

// --- Slice, Pad -------------------------------------------------------------------------------

TEST(GradTensorTest, SliceUnitStepsNegativeIndicesAndOldOpset) {
  // Rows 1.. and columns -3..-1 (negative, counted from the end): a Pad of dy.
  const std::string text = F64Input("x", {"3", "5"}) + Int64Init("starts", {1, -3}) +
                           Int64Init("ends", {100, -1}) + Int64Init("axes", {0, 1}) +
                           NodeText("Slice", {"x", "starts", "ends", "axes"}, "y") + OutputText("y");
  EXPECT_THAT(BackwardOps(text), Contains("Pad"));
  absl::Status s = Check(text, {{"x", Rand({3, 5}, 17)}});
  EXPECT_TRUE(s.ok()) << s;
  // Opset 9: starts/ends/axes attributes, and Pad's pads an attribute.
  s = Check(Opset(9) + F64Input("x", {"3", "5"}) +
                NodeText("Slice", {"x"}, "y",
                         IntsText("starts", {-2}) + " " + IntsText("ends", {5}) + " " +
                             IntsText("axes", {1})) +
                OutputText("y"),
            {{"x", Rand({3, 5}, 18)}});
  EXPECT_TRUE(s.ok()) << s;
}

TEST(GradTensorTest, SliceStepsAndSymbolicDims) {
  // Step 2 and a negative step: dy scattered to the positions the slice read.
  absl::Status s = Check(F64Input("x", {"4", "6"}) + Int64Init("starts", {0, -1}) +
                             Int64Init("ends", {4, -100}) + Int64Init("axes", {0, 1}) +
                             Int64Init("steps", {2, -2}) +
                             NodeText("Slice", {"x", "starts", "ends", "axes", "steps"}, "y") +
                             OutputText("y"),
                         {{"x", Rand({4, 6}, 19)}});
  EXPECT_TRUE(s.ok()) << s;
  s = Check(F64Input("x", {"n", "6"}) + Int64Init("starts", {1}) + Int64Init("ends", {-1}) +
                NodeText("Slice", {"x", "starts", "ends"}, "y") + OutputText("y"),
            {{"x", Rand({4, 6}, 20)}});
  EXPECT_TRUE(s.ok()) << s;
}

TEST(GradTensorTest, PadConstantModesAndValue) {
  // Positive and negative (cropping) pads; the constant value is differentiated too.
  const std::string text = F64Input("x", {"3", "4"}) + F64Input("v", {}) +
                           Int64Init("pads", {1, -1, 2, 0}) +
                           NodeText("Pad", {"x", "pads", "v"}, "y") + OutputText("y");
  absl::Status s = Check(text, {{"x", Rand({3, 4}, 21)}, {"v", Rand({}, 22)}});
  EXPECT_TRUE(s.ok()) << s;
  s = Check(Opset(2) + F64Input("x", {"3", "4"}) +
                NodeText("Pad", {"x"}, "y", IntsText("pads", {0, 2, 1, -1})) + OutputText("y"),
            {{"x", Rand({3, 4}, 23)}});
  EXPECT_TRUE(s.ok()) << s;
  for (const char* mode : {"reflect", "edge", "wrap"}) {
    SCOPED_TRACE(mode);
    s = Check(F64Input("x", {"3", "4"}) + Int64Init("pads", {2, 1, 1, 3}) +
                  NodeText("Pad", {"x", "pads"}, "y", StringText("mode", mode)) + OutputText("y"),
              {{"x", Rand({3, 4}, 24)}});
    EXPECT_TRUE(s.ok()) << s;
  }
}

// --- Gather, scatter ------------------------------------------------------------------------

TEST(GradTensorTest, GatherRepeatedAndNegativeIndices) {
  // Row 1 is gathered twice (-2 is 1): its gradient sums both.
  absl::Status s = Check(F64Input("x", {"3", "4"}) + Int64Init("idx", {1, 0, -2, 2}, {2, 2}) +
                             NodeText("Gather", {"x", "idx"}, "y") + OutputText("y"),
                         {{"x", Rand({3, 4}, 25)}});
  EXPECT_TRUE(s.ok()) << s;
  s = Check(F64Input("x", {"3", "4", "2"}) + Int64Init("idx", {3, -1, 0}) +
                NodeText("Gather", {"x", "idx"}, "y", IntText("axis", 1)) + OutputText("y"),
            {{"x", Rand({3, 4, 2}, 26)}});
  EXPECT_TRUE(s.ok()) << s;
  s = Check(F64Input("x", {"3", "4"}) + Int64Init("idx", {2}, {}, true) +
                NodeText("Gather", {"x", "idx"}, "y") + OutputText("y"),
            {{"x", Rand({3, 4}, 27)}});
  EXPECT_TRUE(s.ok()) << s;
}

TEST(GradTensorTest, GatherElementsAndGatherNd) {
  absl::Status s = Check(F64Input("x", {"2", "3"}) + Int64Init("idx", {0, 0, 2, 1}, {2, 2}) +
                             NodeText("GatherElements", {"x", "idx"}, "y", IntText("axis", 1)) +
                             OutputText("y"),
                         {{"x", Rand({2, 3}, 28)}});
  EXPECT_TRUE(s.ok()) << s;
  s = Check(F64Input("x", {"2", "3"}) + Int64Init("idx", {1, 2, 0, 0, 1, 2}, {3, 2}) +
                NodeText("GatherND", {"x", "idx"}, "y") + OutputText("y"),
            {{"x", Rand({2, 3}, 29)}});
  EXPECT_TRUE(s.ok()) << s;
}

TEST(GradTensorTest, ScatterNdAndScatterElements) {
  for (const char* reduction : {"none", "add"}) {
    SCOPED_TRACE(reduction);
    absl::Status s =
        Check(F64Input("x", {"3", "2"}) + F64Input("u", {"2", "2"}) + Int64Init("idx", {2, 0}, {2, 1}) +
                  NodeText("ScatterND", {"x", "idx", "u"}, "y", StringText("reduction", reduction)) +
                  OutputText("y"),
              {{"x", Rand({3, 2}, 30)}, {"u", Rand({2, 2}, 31)}});
    EXPECT_TRUE(s.ok()) << s;
    s = Check(F64Input("x", {"2", "3"}) + F64Input("u", {"2", "1"}) + Int64Init("idx", {2, 0}, {2, 1}) +
                  NodeText("ScatterElements", {"x", "idx", "u"}, "y",
                           IntText("axis", 1) + " " + StringText("reduction", reduction)) +
                  OutputText("y"),
              {{"x", Rand({2, 3}, 32)}, {"u", Rand({2, 1}, 33)}});
    EXPECT_TRUE(s.ok()) << s;
  }
}

TEST(GradTensorTest, TopKValues) {
  const std::string text =
      F64Input("x", {"2", "5"}) + Int64Init("k", {2}) +
      "nodes { op_type: \"TopK\" name: \"topk\" inputs: \"x\" inputs: \"k\" outputs: \"v\" "
      "outputs: \"i\" }\n" +
      OutputText("v");
  absl::Status s = Check(text, {{"x", Rand({2, 5}, 34)}});
  EXPECT_TRUE(s.ok()) << s;
}

// --- Tile, CumSum, Trilu, depth/space -------------------------------------------------------

TEST(GradTensorTest, TileStaticAndSymbolic) {
  absl::Status s = Check(F64Input("x", {"2", "3"}) + Int64Init("r", {3, 2}) +
                             NodeText("Tile", {"x", "r"}, "y") + OutputText("y"),
                         {{"x", Rand({2, 3}, 35)}});
  EXPECT_TRUE(s.ok()) << s;
  s = Check(F64Input("x", {"n", "3"}) + Int64Init("r", {2, 2}) +
                NodeText("Tile", {"x", "r"}, "y") + OutputText("y"),
            {{"x", Rand({2, 3}, 36)}});
  EXPECT_TRUE(s.ok()) << s;
}

TEST(GradTensorTest, CumSumTriluDepthSpace) {
  for (int exclusive : {0, 1}) {
    for (int reverse : {0, 1}) {
      SCOPED_TRACE(absl::StrCat("exclusive ", exclusive, " reverse ", reverse));
      absl::Status s = Check(F64Input("x", {"2", "4"}) + Int64Init("axis", {1}, {}, true) +
                                 NodeText("CumSum", {"x", "axis"}, "y",
                                          IntText("exclusive", exclusive) + " " +
                                              IntText("reverse", reverse)) +
                                 OutputText("y"),
                             {{"x", Rand({2, 4}, 37)}});
      EXPECT_TRUE(s.ok()) << s;
    }
  }
  absl::Status s = Check(F64Input("x", {"3", "4"}) + Int64Init("k", {1}, {}, true) +
                             NodeText("Trilu", {"x", "k"}, "y", IntText("upper", 0)) +
                             OutputText("y"),
                         {{"x", Rand({3, 4}, 38)}});
  EXPECT_TRUE(s.ok()) << s;
  s = Check(F64Input("x", {"1", "8", "2", "3"}) +
                NodeText("DepthToSpace", {"x"}, "y", IntText("blocksize", 2)) + OutputText("y"),
            {{"x", Rand({1, 8, 2, 3}, 39)}});
  EXPECT_TRUE(s.ok()) << s;
  s = Check(F64Input("x", {"2", "8", "2", "3"}) +
                NodeText("DepthToSpace", {"x"}, "y",
                         IntText("blocksize", 2) + " " + StringText("mode", "CRD")) +
                OutputText("y"),
            {{"x", Rand({2, 8, 2, 3}, 53)}});
  EXPECT_TRUE(s.ok()) << s;
  s = Check(F64Input("x", {"1", "2", "4", "6"}) +
                NodeText("SpaceToDepth", {"x"}, "y", IntText("blocksize", 2)) + OutputText("y"),
            {{"x", Rand({1, 2, 4, 6}, 40)}});
  EXPECT_TRUE(s.ok()) << s;
}

TEST(GradTensorTest, CompressResizeNearestReverseSequence) {
  absl::Status s = Check(F64Input("x", {"3", "2"}) +
                             "initializers { name: \"c\" dtype: DT_BOOL dims: 3 raw_data: "
                             "\"\\001\\000\\001\" }\n" +
                             NodeText("Compress", {"x", "c"}, "y", IntText("axis", 0)) + OutputText("y"),
                         {{"x", Rand({3, 2}, 50)}});
  EXPECT_TRUE(s.ok()) << s;
  // Nearest upsampling by 2 and 1.5: sources read several times sum their gradients.
  s = Check(F64Input("x", {"1", "1", "2", "3"}) + Int64Init("sizes", {1, 1, 4, 5}) +
                NodeText("Resize", {"x", "", "", "sizes"}, "y", StringText("mode", "nearest")) +
                OutputText("y"),
            {{"x", Rand({1, 1, 2, 3}, 51)}});
  EXPECT_TRUE(s.ok()) << s;
  s = Check(F64Input("x", {"4", "2", "3"}) + Int64Init("lens", {4, 1}) +
                NodeText("ReverseSequence", {"x", "lens"}, "y") + OutputText("y"),
            {{"x", Rand({4, 2, 3}, 52)}});
  EXPECT_TRUE(s.ok()) << s;
}

// --- Second order ---------------------------------------------------------------------------

TEST(GradTensorTest, SecondOrderThroughReshapeTransposeChain) {
  // loss = sum(t * t * w), t = Transpose(Reshape(x)): the Hessian-vector product goes back
  // through the Reshape and Transpose gradients.
  PassTestEnv env;
  const std::string text =
      F64Input("x", {"2", "6"}) + F64Input("w", {"3", "4"}) + Int64Init("shape", {4, 3}) +
      NodeText("Reshape", {"x", "shape"}, "r") +
      NodeText("Transpose", {"r"}, "t", IntsText("perm", {1, 0})) + NodeText("Mul", {"t", "t"}, "tt") +
      NodeText("Mul", {"tt", "w"}, "ttw") +
      NodeText("ReduceSum", {"ttw"}, "loss", IntText("keepdims", 0)) + OutputText("loss");
  absl::Status s = CheckSecondOrder(env, text, "loss", "x",
                                    {{"x", Rand({2, 6}, 41)}, {"w", Rand({3, 4}, 42)}});
  EXPECT_TRUE(s.ok()) << s;
}

TEST(GradTensorTest, SecondOrderThroughSliceConcatGather) {
  PassTestEnv env;
  const std::string text =
      F64Input("x", {"4", "3"}) + F64Input("w", {"4", "3"}) + Int64Init("starts", {1}) +
      Int64Init("ends", {3}) + Int64Init("idx", {0, 3}) + NodeText("Slice", {"x", "starts", "ends"}, "s") +
      NodeText("Gather", {"x", "idx"}, "g") + NodeText("Concat", {"s", "g"}, "c", IntText("axis", 0)) +
      NodeText("Mul", {"c", "c"}, "cc") + NodeText("Mul", {"cc", "w"}, "ccw") +
      NodeText("ReduceSum", {"ccw"}, "loss", IntText("keepdims", 0)) + OutputText("loss");
  absl::Status s = CheckSecondOrder(env, text, "loss", "x",
                                    {{"x", Rand({4, 3}, 43)}, {"w", Rand({4, 3}, 44)}});
  EXPECT_TRUE(s.ok()) << s;
}

}  // namespace
}  // namespace graphopt
