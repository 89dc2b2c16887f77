#include "passes/fold_batchnorm_pass.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "graph/proto_convert.h"
#include "gtest/gtest.h"
#include "passes/pass_test_util.h"
#include "passes/runtime_test_util.h"

namespace graphopt {
namespace {

using ::graphopt::testing::FloatTensor;
using ::graphopt::testing::FloatTensorProto;
using ::graphopt::testing::OpTypes;
using ::graphopt::testing::PassTestEnv;
using ::graphopt::testing::SeededFloats;
using ::graphopt::testing::TestRuntime;
using ::graphopt::testing::WithInitializers;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using Inputs = std::vector<std::pair<std::string, runtime::Tensor>>;

// BatchNormalization parameters for `c` channels: scale, B, mean and a positive var.
std::vector<v1::Tensor> BnParams(const std::string& prefix, int64_t c, uint32_t seed) {
  std::vector<float> var = SeededFloats(c, seed + 3);
  for (float& v : var) v = v * v + 0.5f;
  return {FloatTensorProto(prefix + "scale", {c}, SeededFloats(c, seed)),
          FloatTensorProto(prefix + "b", {c}, SeededFloats(c, seed + 1)),
          FloatTensorProto(prefix + "mean", {c}, SeededFloats(c, seed + 2)),
          FloatTensorProto(prefix + "var", {c}, var)};
}

std::string BnNode(const std::string& x, const std::string& prefix, const std::string& y,
                   const std::string& extra = "") {
  return absl::StrCat("nodes { op_type: \"BatchNormalization\" inputs: \"", x, "\" inputs: \"",
                      prefix, "scale\" inputs: \"", prefix, "b\" inputs: \"", prefix,
                      "mean\" inputs: \"", prefix, "var\" outputs: \"", y, "\" ", extra, "}\n");
}

std::vector<v1::Tensor> Concat(std::vector<v1::Tensor> a, const std::vector<v1::Tensor>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Runs fold_batchnorm and checks the outputs against the original's within 1e-4 (relative).
v1::Graph FoldAndCompare(const std::string& text, const Inputs& inputs,
                         std::string* messages = nullptr) {
  PassTestEnv env;
  PipelineResult result;
  auto out = testing::OptimizeAndCompare(env, text, {{"fold_batchnorm", {}}}, inputs,
                                         /*bit_exact=*/false, 1e-4, &result);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return v1::Graph();
  if (messages != nullptr) {
    for (const std::string& m : result.runs.back().messages) absl::StrAppend(messages, m, "\n");
  }
  return *std::move(out);
}

constexpr char kImage[] = R"pb(
  inputs { name: "x" type { dtype: DT_FLOAT32 shape {
    dims { size: 1 } dims { size: 3 } dims { size: 5 } dims { size: 5 } } } })pb";

Inputs ImageInput() { return {{"x", FloatTensor({1, 3, 5, 5}, SeededFloats(75, 9))}}; }

TEST(FoldBatchNormPassTest, FoldsIntoConvWithoutBiasAndKeepsTheOutputName) {
  const std::string text = WithInitializers(
      absl::StrCat(kImage, R"pb(
        nodes { name: "conv" op_type: "Conv" inputs: "x" inputs: "w" outputs: "c"
                attributes { name: "pads" ints { values: [ 1, 1, 1, 1 ] } } }
      )pb",
                   BnNode("c", "bn_", "y"), R"pb(outputs { name: "y" })pb"),
      Concat({FloatTensorProto("w", {4, 3, 3, 3}, SeededFloats(108, 1))}, BnParams("bn_", 4, 10)));
  std::string messages;
  v1::Graph out = FoldAndCompare(text, ImageInput(), &messages);
  EXPECT_THAT(OpTypes(out), ElementsAre("Conv"));
  ASSERT_EQ(out.nodes(0).inputs_size(), 3);
  EXPECT_EQ(out.nodes(0).inputs(1), "w");
  EXPECT_EQ(out.nodes(0).inputs(2), "w_bias");
  EXPECT_EQ(out.nodes(0).outputs(0), "y");
  EXPECT_EQ(out.outputs(0).name(), "y");
  // The statistics are gone with the BatchNormalization.
  EXPECT_EQ(out.initializers_size(), 2);
  EXPECT_THAT(messages, HasSubstr("folded BatchNormalization 1: into_conv 1"));
}

TEST(FoldBatchNormPassTest, CopiesWeightsSharedWithAnotherConv) {
  const std::string text = WithInitializers(
      absl::StrCat(kImage, R"pb(
        nodes { op_type: "Conv" inputs: "x" inputs: "w" inputs: "bias" outputs: "c" }
        nodes { op_type: "Conv" inputs: "x" inputs: "w" inputs: "bias" outputs: "d" }
      )pb",
                   BnNode("c", "bn_", "y"),
                   R"pb(nodes { op_type: "Add" inputs: "y" inputs: "d" outputs: "z" }
                        outputs { name: "z" })pb"),
      Concat({FloatTensorProto("w", {4, 3, 3, 3}, SeededFloats(108, 1)),
              FloatTensorProto("bias", {4}, SeededFloats(4, 2))},
             BnParams("bn_", 4, 10)));
  v1::Graph out = FoldAndCompare(text, ImageInput());
  EXPECT_THAT(OpTypes(out), ElementsAre("Conv", "Conv", "Add"));
  EXPECT_NE(out.nodes(0).inputs(1), "w");
  EXPECT_NE(out.nodes(0).inputs(2), "bias");
  EXPECT_EQ(out.nodes(1).inputs(1), "w");
  EXPECT_EQ(out.nodes(1).inputs(2), "bias");
}

constexpr char kRows[] = R"pb(
  inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 2 } dims { size: 3 } } } })pb";

Inputs RowsInput() { return {{"x", FloatTensor({2, 3}, SeededFloats(6, 5))}}; }

TEST(FoldBatchNormPassTest, FoldsIntoGemm) {
  const std::string text = WithInitializers(
      absl::StrCat(kRows, R"pb(
        nodes { op_type: "Gemm" inputs: "x" inputs: "wt" inputs: "c" outputs: "g"
                attributes { name: "transB" i: 1 } attributes { name: "beta" f: 0.5 } }
        nodes { op_type: "Gemm" inputs: "x" inputs: "w" outputs: "h" }
      )pb",
                   BnNode("g", "p_", "y"), BnNode("h", "q_", "z"),
                   R"pb(outputs { name: "y" } outputs { name: "z" })pb"),
      Concat(Concat({FloatTensorProto("wt", {4, 3}, SeededFloats(12, 1)),
                     FloatTensorProto("c", {4}, SeededFloats(4, 2)),
                     FloatTensorProto("w", {3, 4}, SeededFloats(12, 3))},
                    BnParams("p_", 4, 10)),
             BnParams("q_", 4, 20)));
  std::string messages;
  v1::Graph out = FoldAndCompare(text, RowsInput(), &messages);
  EXPECT_THAT(OpTypes(out), ElementsAre("Gemm", "Gemm"));
  EXPECT_EQ(out.nodes(1).inputs_size(), 3);
  EXPECT_THAT(messages, HasSubstr("folded BatchNormalization 2: into_gemm 2"));
}

TEST(FoldBatchNormPassTest, FoldsIntoMatMulWithAndWithoutBias) {
  const std::string text = WithInitializers(
      absl::StrCat(kRows, R"pb(
        nodes { op_type: "MatMul" inputs: "x" inputs: "w" outputs: "m" }
        nodes { op_type: "Add" inputs: "bias" inputs: "m" outputs: "a" }
        nodes { op_type: "MatMul" inputs: "x" inputs: "w2" outputs: "n" }
      )pb",
                   BnNode("a", "p_", "y"), BnNode("n", "q_", "z"),
                   R"pb(outputs { name: "y" } outputs { name: "z" })pb"),
      Concat(Concat({FloatTensorProto("w", {3, 4}, SeededFloats(12, 1)),
                     FloatTensorProto("bias", {4}, SeededFloats(4, 2)),
                     FloatTensorProto("w2", {3, 4}, SeededFloats(12, 3))},
                    BnParams("p_", 4, 10)),
             BnParams("q_", 4, 20)));
  std::string messages;
  v1::Graph out = FoldAndCompare(text, RowsInput(), &messages);
  // The bare MatMul's BatchNormalization became the Add of its folded bias.
  EXPECT_THAT(OpTypes(out), ElementsAre("MatMul", "Add", "MatMul", "Add"));
  EXPECT_EQ(out.nodes(1).outputs(0), "y");
  EXPECT_EQ(out.nodes(3).outputs(0), "z");
  EXPECT_THAT(messages, HasSubstr("folded BatchNormalization 2: into_matmul 1, into_matmul_add 1"));
}

TEST(FoldBatchNormPassTest, LeavesWhatDoesNotMatch) {
  const std::string text = WithInitializers(
      absl::StrCat(R"pb(opset_imports { domain: "" version: 15 })pb", kImage, R"pb(
        inputs { name: "live_scale" type { dtype: DT_FLOAT32 shape { dims { size: 4 } } } }
        nodes { op_type: "Conv" inputs: "x" inputs: "w" outputs: "c1" }
        nodes { op_type: "Conv" inputs: "x" inputs: "w" outputs: "c2" }
        nodes { op_type: "Conv" inputs: "x" inputs: "w" outputs: "c3" }
        nodes { op_type: "Relu" inputs: "x" outputs: "r" }
      )pb",
                   BnNode("c1", "bn_", "shared"),
                   BnNode("c2", "bn_", "training", R"(attributes { name: "training_mode" i: 1 })"),
                   R"pb(nodes { op_type: "BatchNormalization" inputs: "c3" inputs: "live_scale"
                                inputs: "bn_b" inputs: "bn_mean" inputs: "bn_var"
                                outputs: "live" })pb",
                   BnNode("r", "p_", "after_relu"),
                   R"pb(outputs { name: "shared" } outputs { name: "c1" }
                        outputs { name: "training" } outputs { name: "live" }
                        outputs { name: "after_relu" })pb"),
      Concat(Concat({FloatTensorProto("w", {4, 3, 3, 3}, SeededFloats(108, 1))},
                    BnParams("bn_", 4, 10)),
             BnParams("p_", 3, 20)));
  PassTestEnv env;
  PipelineResult result;
  auto out = env.Run(text, {"fold_batchnorm"}, &result);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(result.runs.back().changed);
  EXPECT_EQ(OpTypes(*out).size(), 8u);
  EXPECT_THAT(result.runs.back().messages,
              ElementsAre("folded BatchNormalization 0; refused 3: parameters not constant 1, "
                          "producer output shared 1, training mode 1"));
}

// A subgraph reads the Conv's output by name: folding would change what it reads.
TEST(FoldBatchNormPassTest, LeavesAConvWhoseOutputASubgraphReads) {
  const std::string text = WithInitializers(
      absl::StrCat(kImage, R"pb(
        inputs { name: "cond" type { dtype: DT_BOOL shape {} } }
        nodes { op_type: "Conv" inputs: "x" inputs: "w" outputs: "c" }
      )pb",
                   BnNode("c", "bn_", "y"), R"pb(
        nodes {
          op_type: "If" inputs: "cond" outputs: "o"
          attributes { name: "then_branch" g {
            nodes { op_type: "Neg" inputs: "c" outputs: "t" }
            outputs { name: "t" type { dtype: DT_FLOAT32 } } } }
          attributes { name: "else_branch" g {
            nodes { op_type: "Neg" inputs: "y" outputs: "e" }
            outputs { name: "e" type { dtype: DT_FLOAT32 } } } }
        }
        outputs { name: "o" })pb"),
      Concat({FloatTensorProto("w", {4, 3, 3, 3}, SeededFloats(108, 1))}, BnParams("bn_", 4, 10)));
  PassTestEnv env;
  PipelineResult result;
  auto out = env.Run(text, {"fold_batchnorm"}, &result);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("Conv", "BatchNormalization", "If"));
  EXPECT_THAT(result.runs.back().messages,
              ElementsAre("folded BatchNormalization 0; refused 1: hidden accesses 1"));
}

// A BatchNormalization no linear op precedes (after a Concat, or of a graph input) folds
// forwards into the Conv that reads it, grouped or not, when that Conv pads nothing; the
// outputs match the original's.
TEST(FoldBatchNormPassTest, FoldsForwardsIntoAnUnpaddedConv) {
  for (const int group : {1, 3}) {
    SCOPED_TRACE(group);
    const int in_per_group = 3 / group;
    const std::string text = WithInitializers(
        absl::StrCat(kImage, BnNode("x", "bn_", "n"), R"pb(
          nodes { name: "conv" op_type: "Conv" inputs: "n" inputs: "w" inputs: "cb" outputs: "y"
                  attributes { name: "group" i: )pb", group, R"pb( } }
          outputs { name: "y" })pb"),
        Concat({FloatTensorProto("w", {6, in_per_group, 2, 2},
                                 SeededFloats(6 * in_per_group * 4, 1)),
                FloatTensorProto("cb", {6}, SeededFloats(6, 2))},
               BnParams("bn_", 3, 10)));
    std::string messages;
    v1::Graph out = FoldAndCompare(text, ImageInput(), &messages);
    EXPECT_THAT(OpTypes(out), ElementsAre("Conv"));
    EXPECT_EQ(out.nodes(0).inputs(0), "x");
    EXPECT_THAT(messages, HasSubstr("into_next_conv 1"));
  }
}

// Forwards only into a Conv that pads nothing and reads the BatchNormalization's output alone:
// a padded tap reads zero where x's padding would need the shift; a Relu between is not linear.
TEST(FoldBatchNormPassTest, NoForwardFoldAcrossPaddingOrNonlinearity) {
  const std::string text = WithInitializers(
      absl::StrCat(kImage, BnNode("x", "bn_", "n"), BnNode("x", "p_", "m"), R"pb(
        nodes { op_type: "Conv" inputs: "n" inputs: "w" outputs: "padded"
                attributes { name: "pads" ints { values: [ 0, 1, 0, 1 ] } } }
        nodes { op_type: "Relu" inputs: "m" outputs: "r" }
        nodes { op_type: "Conv" inputs: "r" inputs: "w" outputs: "after_relu" }
        outputs { name: "padded" } outputs { name: "after_relu" })pb"),
      Concat(Concat({FloatTensorProto("w", {4, 3, 3, 3}, SeededFloats(108, 1))},
                    BnParams("bn_", 3, 10)),
             BnParams("p_", 3, 20)));
  PassTestEnv env;
  PipelineResult result;
  auto out = env.Run(text, {"fold_batchnorm"}, &result);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(result.runs.back().changed);
  EXPECT_THAT(result.runs.back().messages,
              ElementsAre(HasSubstr("refused 1: next Conv pads 1")));
}

}  // namespace
}  // namespace graphopt
