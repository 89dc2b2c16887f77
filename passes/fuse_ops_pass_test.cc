#include "passes/fuse_ops_pass.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "ops/fused_group.h"
#include "ops/layout_ops.h"
#include "graph/test_ops.h"
#include "gtest/gtest.h"
#include "passes/pass_test_util.h"

namespace graphopt {
namespace {

using ::graphopt::testing::MakeTestOp;
using ::graphopt::testing::InputText;
using ::graphopt::testing::NodeText;
using ::graphopt::testing::OpTypes;
using ::graphopt::testing::OutputText;
using ::graphopt::testing::PassTestEnv;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A float32 initializer holding one value (a scalar), or `count` copies of it in a 1-D tensor.
std::string Scalar(const std::string& name, float value, int count = 0) {
  std::string raw;
  for (int i = 0; i < std::max(count, 1); ++i) {
    raw.append(reinterpret_cast<const char*>(&value), sizeof(value));
  }
  return absl::StrCat("initializers { name: \"", name, "\" dtype: DT_FLOAT32",
                      count > 0 ? absl::StrCat(" dims: ", count) : "", " raw_data: \"",
                      absl::CEscape(raw), "\" }\n");
}

const v1::Attribute* Attr(const v1::Node& node, const std::string& name) {
  for (const v1::Attribute& a : node.attributes()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

std::string PatternOf(const v1::Node& node) {
  const v1::Attribute* a = Attr(node, kFusedGroupPattern);
  return a == nullptr ? "" : a->s();
}

std::vector<std::string> BodyOps(const v1::Node& node) {
  const v1::Attribute* a = Attr(node, kFusedGroupBody);
  return a == nullptr ? std::vector<std::string>{} : OpTypes(a->g());
}

class FuseOpsPassTest : public ::testing::Test {
 protected:
  v1::Graph Fuse(const std::string& text, std::string* message = nullptr) {
    PipelineResult result;
    absl::StatusOr<v1::Graph> out = env_.Run(text, {"fuse_ops"}, &result);
    EXPECT_TRUE(out.ok()) << out.status();
    if (!out.ok()) return v1::Graph();
    for (const PassRun& run : result.runs) {
      if (run.name == "fuse_ops" && message != nullptr) *message = absl::StrJoin(run.messages, "\n");
    }
    return *out;
  }

  PassTestEnv env_;
};

TEST_F(FuseOpsPassTest, ConvBiasReluIsOneGroup) {
  std::string message;
  v1::Graph out = Fuse(InputText("x", {1, 3, 8, 8}) + InputText("w", {4, 3, 3, 3}) +
                           Scalar("bias", 0.5f, 4) + InputText("cb", {4, 1, 1}) +
                           NodeText("Conv", {"x", "w", "bias"}, "c", "attributes { name: \"pads\" ints { values: [1, 1, 1, 1] } }") +
                           NodeText("Add", {"c", "cb"}, "a") + NodeText("Relu", {"a"}, "y") + OutputText("y"),
                       &message);
  ASSERT_THAT(OpTypes(out), ElementsAre(kFusedGroupOp));
  const v1::Node& fused = out.nodes(0);
  EXPECT_EQ(fused.domain(), kFusedGroupDomain);
  EXPECT_EQ(PatternOf(fused), kFusedPatternConv);
  EXPECT_THAT(BodyOps(fused), ElementsAre("Conv", "Add", "Relu"));
  EXPECT_THAT(fused.inputs(), ElementsAre("x", "w", "bias", "cb"));
  EXPECT_THAT(fused.outputs(), ElementsAre("y"));
  EXPECT_EQ(out.outputs(0).name(), "y");
  const v1::Graph& body = Attr(fused, kFusedGroupBody)->g();
  EXPECT_EQ(body.inputs_size(), 4);
  EXPECT_EQ(body.outputs(0).name(), "y");
  EXPECT_EQ(body.value_info_size(), 2);  // c and a, with their types
  EXPECT_THAT(message, HasSubstr("fused 3 nodes into 1 groups: conv_epilogue 1"));
  EXPECT_THAT(message, HasSubstr("activation Relu 1"));
  EXPECT_THAT(message, HasSubstr("bias add 1"));
}

TEST_F(FuseOpsPassTest, ResidualAddAndClipJoinTheConv) {
  std::string message;
  v1::Graph out = Fuse(InputText("x", {1, 4, 8, 8}) + InputText("w", {4, 4, 1, 1}) + Scalar("lo", 0) +
                           Scalar("hi", 6) + NodeText("Conv", {"x", "w"}, "c") +
                           NodeText("Add", {"c", "x"}, "r") + NodeText("Clip", {"r", "lo", "hi"}, "y") +
                           OutputText("y"),
                       &message);
  ASSERT_THAT(OpTypes(out), ElementsAre(kFusedGroupOp));
  EXPECT_THAT(BodyOps(out.nodes(0)), ElementsAre("Conv", "Add", "Clip"));
  EXPECT_THAT(message, HasSubstr("residual add 1"));
  EXPECT_THAT(message, HasSubstr("activation Clip 1"));
}

// A channels-last residual block: the group ending the block may write its result over the
// block's input (read by no other member), and plan_memory lets it.
TEST_F(FuseOpsPassTest, ChannelsLastResidualSumIsDeclaredInPlace) {
  const std::string block =
      InputText("x", {1, 8, 6, 6}) + InputText("w", {8, 8, 1, 1}) + NodeText("Conv", {"x", "w"}, "a") +
      NodeText("Relu", {"a"}, "ar") + NodeText("Conv", {"ar", "w"}, "b") + NodeText("Relu", {"b"}, "br") +
      NodeText("Conv", {"br", "w"}, "c") + NodeText("Add", {"c", "ar"}, "sum") +
      NodeText("Relu", {"sum"}, "block") + NodeText("Conv", {"block", "w"}, "y") + OutputText("y");
  PipelineResult result;
  absl::StatusOr<v1::Graph> out =
      env_.Run(block, {"channels_last", "fuse_ops", "plan_memory"}, &result);
  ASSERT_TRUE(out.ok()) << out.status();
  const v1::Node* last_group = nullptr;
  int declared = 0;
  for (const v1::Node& n : out->nodes()) {
    const v1::Attribute* a = Attr(n, kFusedGroupInPlace);
    if (a == nullptr) continue;
    ++declared;
    last_group = &n;
    ASSERT_EQ(a->ints().values_size(), 2);
    EXPECT_EQ(n.inputs(a->ints().values(0)), "ar_nhwc");
    EXPECT_EQ(a->ints().values(1), 0);
  }
  ASSERT_EQ(declared, 1);
  EXPECT_THAT(BodyOps(*last_group), ElementsAre(kNhwcConvOp, "Add", "Relu"));
  EXPECT_EQ(last_group->outputs(0), "block_nhwc");
  std::string shares;
  for (const v1::PlannedBuffer& b : out->memory_plan().buffers()) {
    if (b.value() == "block_nhwc") shares = b.shares_with();
  }
  EXPECT_EQ(shares, "ar_nhwc");
  bool noted = false;
  for (const PassRun& run : result.runs) {
    for (const std::string& m : run.messages) noted |= m.find("in-place residual 1") != std::string::npos;
  }
  EXPECT_TRUE(noted);
}

// Channels-first convolutions, and residuals another member also reads, declare nothing.
TEST_F(FuseOpsPassTest, NoInPlaceWhereTheResidualIsReadAgainOrChannelsFirst) {
  const v1::Graph nchw = Fuse(InputText("x", {1, 4, 8, 8}) + InputText("w", {4, 4, 1, 1}) +
                              NodeText("Conv", {"x", "w"}, "c") + NodeText("Add", {"c", "x"}, "y") +
                              OutputText("y"));
  ASSERT_THAT(OpTypes(nchw), ElementsAre(kFusedGroupOp));
  EXPECT_EQ(Attr(nchw.nodes(0), kFusedGroupInPlace), nullptr);
  absl::StatusOr<v1::Graph> twice = env_.Run(
      InputText("x", {1, 4, 8, 8}) + InputText("w", {4, 4, 1, 1}) + NodeText("Conv", {"x", "w"}, "a") +
          NodeText("Conv", {"a", "w"}, "c") + NodeText("Add", {"c", "a"}, "s") +
          NodeText("Mul", {"s", "a"}, "m") + NodeText("Conv", {"m", "w"}, "y") + OutputText("y"),
      {"channels_last", "fuse_ops"});
  ASSERT_TRUE(twice.ok()) << twice.status();
  for (const v1::Node& n : twice->nodes()) EXPECT_EQ(Attr(n, kFusedGroupInPlace), nullptr);
}

TEST_F(FuseOpsPassTest, MatMulBiasReluAsTorchExportsIt) {
  // torch writes the bias first: Add(bias, MatMul(x, W)).
  v1::Graph out = Fuse(InputText("x", {16, 1, 64}) + InputText("w", {64, 32}) + InputText("b", {32}) +
                       NodeText("MatMul", {"x", "w"}, "m") + NodeText("Add", {"b", "m"}, "a") +
                       NodeText("Relu", {"a"}, "y") + OutputText("y"));
  ASSERT_THAT(OpTypes(out), ElementsAre(kFusedGroupOp));
  EXPECT_EQ(PatternOf(out.nodes(0)), kFusedPatternMatMul);
  EXPECT_THAT(BodyOps(out.nodes(0)), ElementsAre("MatMul", "Add", "Relu"));
}

// The three orders torch exports GELU in.
TEST_F(FuseOpsPassTest, GeluInEveryExportedOrder) {
  const std::string common = InputText("x", {2, 8}) + Scalar("sqrt2", 1.4142135f) +
                             Scalar("inv_sqrt2", 0.70710677f) + Scalar("one", 1) +
                             Scalar("half", 0.5f) + OutputText("y");
  const std::string erf = NodeText("Div", {"x", "sqrt2"}, "d") + NodeText("Erf", {"d"}, "e") +
                          NodeText("Add", {"e", "one"}, "a");
  const std::vector<std::string> forms = {
      // (x * (1 + e)) * 0.5, as torch.nn.functional.gelu exports.
      erf + NodeText("Mul", {"x", "a"}, "m") + NodeText("Mul", {"m", "half"}, "y"),
      // (x * 0.5) * (1 + e), as x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0))).
      NodeText("Mul", {"x", "half"}, "h") + erf + NodeText("Mul", {"h", "a"}, "y"),
      // ((1 + e) * 0.5) * x with x * (1/sqrt(2)) in front.
      NodeText("Mul", {"inv_sqrt2", "x"}, "d") + NodeText("Erf", {"d"}, "e") +
          NodeText("Add", {"one", "e"}, "a") + NodeText("Mul", {"a", "half"}, "m") +
          NodeText("Mul", {"m", "x"}, "y"),
  };
  for (const std::string& form : forms) {
    std::string message;
    v1::Graph out = Fuse(common + form, &message);
    ASSERT_THAT(OpTypes(out), ElementsAre(kFusedGroupOp)) << form;
    EXPECT_EQ(PatternOf(out.nodes(0)), kFusedPatternGelu) << form;
    EXPECT_EQ(BodyOps(out.nodes(0)).size(), 5u);
    EXPECT_THAT(message, HasSubstr("gelu 1"));
  }
}

TEST_F(FuseOpsPassTest, GeluWithOtherConstantsIsOnlyElementwise) {
  std::string message;
  v1::Graph out = Fuse(InputText("x", {2, 8}) + Scalar("c", 1.5f) + Scalar("one", 1) +
                           Scalar("half", 0.5f) + NodeText("Div", {"x", "c"}, "d") +
                           NodeText("Erf", {"d"}, "e") + NodeText("Add", {"e", "one"}, "a") +
                           NodeText("Mul", {"x", "a"}, "m") + NodeText("Mul", {"m", "half"}, "y") +
                           OutputText("y"),
                       &message);
  ASSERT_THAT(OpTypes(out), ElementsAre(kFusedGroupOp));
  EXPECT_EQ(PatternOf(out.nodes(0)), kFusedPatternElementwise);
  EXPECT_THAT(message, ::testing::Not(HasSubstr("gelu")));
}

// Erf reading a graph input has no node in front of it: the GELU matcher must not look for
// one (it read the node slot before the first, found by graph_pipeline_fuzzer on ONNX's
// test_erf at -O3; only sanitizers see that read).
TEST_F(FuseOpsPassTest, ErfOfAGraphInputIsNotGelu) {
  const std::string tail = Scalar("one", 1) + Scalar("half", 0.5f) +
                           NodeText("Add", {"e", "one"}, "a") + NodeText("Mul", {"x", "a"}, "m") +
                           NodeText("Mul", {"m", "half"}, "y") + OutputText("y");
  std::string message;
  v1::Graph out = Fuse(InputText("x", {2, 8}) + NodeText("Erf", {"x"}, "e") + tail, &message);
  ASSERT_THAT(OpTypes(out), ElementsAre(kFusedGroupOp));
  EXPECT_EQ(PatternOf(out.nodes(0)), kFusedPatternElementwise);
  EXPECT_THAT(message, ::testing::Not(HasSubstr("gelu")));

  out = Fuse(InputText("x", {2, 8}) + NodeText("Erf", {"x"}, "y") + OutputText("y"));
  EXPECT_THAT(OpTypes(out), ElementsAre("Erf"));
}

TEST_F(FuseOpsPassTest, GemmThenGeluIsOneGroup) {
  std::string message;
  v1::Graph out = Fuse(InputText("x", {4, 16}) + InputText("w", {8, 16}) + InputText("b", {8}) +
                           Scalar("sqrt2", 1.4142135f) + Scalar("one", 1) + Scalar("half", 0.5f) +
                           NodeText("Gemm", {"x", "w", "b"}, "g", "attributes { name: \"transB\" i: 1 }") +
                           NodeText("Div", {"g", "sqrt2"}, "d") + NodeText("Erf", {"d"}, "e") +
                           NodeText("Add", {"e", "one"}, "a") + NodeText("Mul", {"g", "a"}, "m") +
                           NodeText("Mul", {"m", "half"}, "y") + OutputText("y"),
                       &message);
  ASSERT_THAT(OpTypes(out), ElementsAre(kFusedGroupOp));
  EXPECT_EQ(PatternOf(out.nodes(0)), kFusedPatternMatMul);
  EXPECT_THAT(BodyOps(out.nodes(0)), ElementsAre("Gemm", "Div", "Erf", "Add", "Mul", "Mul"));
  EXPECT_THAT(message, HasSubstr("gelu 1"));
}

std::string LayerNorm(const std::string& x, const std::string& y, bool affine) {
  const std::string axes = "attributes { name: \"axes\" ints { values: -1 } }";
  return NodeText("ReduceMean", {x}, "mean", axes) + NodeText("Sub", {x, "mean"}, "d") +
         NodeText("Pow", {"d", "two"}, "sq") + NodeText("ReduceMean", {"sq"}, "var", axes) +
         NodeText("Add", {"var", "eps"}, "ve") + NodeText("Sqrt", {"ve"}, "std") +
         NodeText("Div", {"d", "std"}, affine ? "n" : y) +
         (affine ? NodeText("Mul", {"n", "gamma"}, "s") + NodeText("Add", {"s", "beta"}, y) : "");
}

TEST_F(FuseOpsPassTest, DecomposedLayerNorm) {
  const std::string common = InputText("x", {2, 16}) + Scalar("two", 2) + Scalar("eps", 1e-5f) +
                             InputText("gamma", {16}) + InputText("beta", {16}) + OutputText("y");
  for (bool affine : {true, false}) {
    std::string message;
    v1::Graph out = Fuse(common + LayerNorm("x", "y", affine), &message);
    ASSERT_THAT(OpTypes(out), ElementsAre(kFusedGroupOp));
    EXPECT_EQ(PatternOf(out.nodes(0)), kFusedPatternLayerNorm);
    EXPECT_EQ(BodyOps(out.nodes(0)).size(), affine ? 9u : 7u);
    EXPECT_THAT(message, HasSubstr("layer_norm 1"));
  }
  // Only the bias (simplify removes a scale of ones).
  std::string message;
  v1::Graph out =
      Fuse(common + LayerNorm("x", "n", false) + NodeText("Add", {"n", "beta"}, "y"), &message);
  ASSERT_THAT(OpTypes(out), ElementsAre(kFusedGroupOp));
  EXPECT_EQ(BodyOps(out.nodes(0)).size(), 8u);
}

TEST_F(FuseOpsPassTest, LayerNormWithAnotherExponentIsNotRecognised) {
  std::string message;
  v1::Graph out = Fuse(InputText("x", {2, 16}) + Scalar("two", 3) + Scalar("eps", 1e-5f) +
                           InputText("gamma", {16}) + InputText("beta", {16}) + OutputText("y") +
                           LayerNorm("x", "y", true),
                       &message);
  EXPECT_THAT(message, ::testing::Not(HasSubstr("layer_norm")));
  for (const v1::Node& n : out.nodes()) EXPECT_NE(PatternOf(n), kFusedPatternLayerNorm);
}

TEST_F(FuseOpsPassTest, NothingToFuseIsUnchanged) {
  PipelineResult result;
  absl::StatusOr<v1::Graph> out =
      env_.Run(InputText("x", {4, 4}) + InputText("w", {4, 4}) + NodeText("Relu", {"x"}, "r") +
                   NodeText("Softmax", {"r"}, "s") + NodeText("MatMul", {"s", "w"}, "m") +
                   NodeText("Softmax", {"m"}, "y") + OutputText("y"),
               {"fuse_ops"}, &result);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("Relu", "Softmax", "MatMul", "Softmax"));
  EXPECT_FALSE(result.runs.back().changed);
  EXPECT_THAT(result.runs.back().messages, ElementsAre("fused 0 nodes into 0 groups"));
}

TEST_F(FuseOpsPassTest, NeverFusesAcrossADependencyOutsideTheGroup) {
  // y = conv(x) + softmax(conv(x)): the Add cannot join the Conv, Softmax sits between them.
  v1::Graph out = Fuse(InputText("x", {1, 2, 4, 4}) + InputText("w", {2, 2, 1, 1}) +
                       NodeText("Conv", {"x", "w"}, "c") + NodeText("Softmax", {"c"}, "s") +
                       NodeText("Add", {"c", "s"}, "a") + NodeText("Relu", {"a"}, "y") + OutputText("y"));
  for (const v1::Node& n : out.nodes()) {
    if (n.op_type() != kFusedGroupOp) continue;
    EXPECT_THAT(BodyOps(n), ::testing::Not(::testing::Contains("Conv")));
  }
  EXPECT_THAT(OpTypes(out), ElementsAre("Conv", "Softmax", kFusedGroupOp));
}

TEST_F(FuseOpsPassTest, GroupsStayAcyclicWhenContracted) {
  // a2 reads a1 and b1, b2 reads b1 and a1: {a1, a2} and {b1, b2} are each convex, but as
  // two nodes they would read each other. The pipeline's verifier rejects a cycle.
  v1::Graph out = Fuse(InputText("x", {8}) + InputText("z", {8}) + NodeText("Relu", {"x"}, "a1") +
                       NodeText("Sigmoid", {"z"}, "b1") + NodeText("Add", {"a1", "b1"}, "a2") +
                       NodeText("Mul", {"b1", "a1"}, "b2") + OutputText("a2") + OutputText("b2"));
  int fused = 0;
  for (const v1::Node& n : out.nodes()) fused += n.op_type() == kFusedGroupOp;
  EXPECT_EQ(fused, 1);
  EXPECT_EQ(out.outputs(0).name(), "a2");
  EXPECT_EQ(out.outputs(1).name(), "b2");
}

TEST_F(FuseOpsPassTest, GraphOutputsInsideAGroupBecomeItsOutputs) {
  v1::Graph out = Fuse(InputText("x", {1, 2, 4, 4}) + InputText("w", {2, 2, 1, 1}) +
                       NodeText("Conv", {"x", "w"}, "c") + NodeText("Relu", {"c"}, "r") +
                       NodeText("Sigmoid", {"r"}, "y") + NodeText("Neg", {"r"}, "other") + OutputText("c") +
                       OutputText("y") + NodeText("Softmax", {"other"}, "z") + OutputText("z"));
  ASSERT_EQ(out.outputs_size(), 3);
  EXPECT_EQ(out.outputs(0).name(), "c");
  EXPECT_EQ(out.outputs(1).name(), "y");
  EXPECT_EQ(out.outputs(2).name(), "z");
  const v1::Node& fused = out.nodes(0);
  ASSERT_EQ(fused.op_type(), kFusedGroupOp);
  // c is a graph output; r and y are read outside or are outputs too.
  EXPECT_THAT(fused.outputs(), ElementsAre("c", "y", "other"));
}

TEST_F(FuseOpsPassTest, CustomOpsFuseByTheirDeclaredPattern) {
  OpDef swish = MakeTestOp("Swish", {"x"}, {"y"});
  swish.descriptor.set_domain("my.ops");
  swish.descriptor.set_fusion_pattern(v1::FUSION_ELEMWISE);
  OpDef opaque = MakeTestOp("Mystery", {"x"}, {"y"});
  opaque.descriptor.set_domain("my.ops");
  ASSERT_TRUE(env_.AddOp(std::move(swish)).ok());
  ASSERT_TRUE(env_.AddOp(std::move(opaque)).ok());
  v1::Graph out = Fuse(InputText("x", {1, 2, 4, 4}) + InputText("w", {2, 2, 1, 1}) +
                       NodeText("Conv", {"x", "w"}, "c") +
                       "nodes { op_type: \"Swish\" domain: \"my.ops\" inputs: \"c\" outputs: \"s\" }\n"
                       "nodes { op_type: \"Mystery\" domain: \"my.ops\" inputs: \"s\" outputs: \"y\" }\n" +
                       OutputText("y"));
  ASSERT_THAT(OpTypes(out), ElementsAre(kFusedGroupOp, "Mystery"));
  EXPECT_THAT(BodyOps(out.nodes(0)), ElementsAre("Conv", "Swish"));
}

TEST_F(FuseOpsPassTest, InjectiveChainsAndReductionPrologues) {
  std::string message;
  v1::Graph out = Fuse(InputText("x", {2, 3, 4}) +
                           "initializers { name: \"dims\" dtype: DT_INT64 dims: 2 raw_data: "
                           "\"\\006\\000\\000\\000\\000\\000\\000\\000\\004\\000\\000\\000\\000\\000\\000\\000\" }\n" +
                           NodeText("Reshape", {"x", "dims"}, "r") +
                           NodeText("Transpose", {"r"}, "t", "attributes { name: \"perm\" ints { values: [1, 0] } }") +
                           NodeText("Exp", {"t"}, "e") + NodeText("Mul", {"e", "e"}, "sq") +
                           NodeText("ReduceSum", {"sq"}, "y", "attributes { name: \"keepdims\" i: 0 }") +
                           OutputText("y"),
                       &message);
  ASSERT_THAT(OpTypes(out), ElementsAre(kFusedGroupOp, kFusedGroupOp));
  EXPECT_EQ(PatternOf(out.nodes(0)), kFusedPatternInjective);
  EXPECT_THAT(BodyOps(out.nodes(0)), ElementsAre("Reshape", "Transpose"));
  EXPECT_EQ(PatternOf(out.nodes(1)), kFusedPatternReduction);
  EXPECT_THAT(BodyOps(out.nodes(1)), ElementsAre("Exp", "Mul", "ReduceSum"));
}

TEST_F(FuseOpsPassTest, ShapeArithmeticAndBroadcastingBeyondTheGroupStayOut) {
  // The second Add broadcasts the Relu's [4] result to [3, 4]: another iteration shape.
  v1::Graph out = Fuse(InputText("x", {4}) + InputText("z", {3, 4}) + NodeText("Relu", {"x"}, "r") +
                       NodeText("Neg", {"r"}, "n") + NodeText("Add", {"n", "z"}, "y") + OutputText("y"));
  ASSERT_THAT(OpTypes(out), ElementsAre(kFusedGroupOp, "Add"));
  EXPECT_THAT(BodyOps(out.nodes(0)), ElementsAre("Relu", "Neg"));
}

TEST_F(FuseOpsPassTest, MaxGroupSizeAndDeterminism) {
  std::string chain = InputText("x", {8});
  std::string prev = "x";
  for (int i = 0; i < 10; ++i) {
    chain += NodeText(i % 2 ? "Neg" : "Relu", {prev}, absl::StrCat("v", i));
    prev = absl::StrCat("v", i);
  }
  chain += OutputText(prev);
  absl::StatusOr<v1::Graph> a = env_.RunSpecs(chain, {{"fuse_ops", {{"max_group_size", "4"}}}});
  absl::StatusOr<v1::Graph> b = env_.RunSpecs(chain, {{"fuse_ops", {{"max_group_size", "4"}}}});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->SerializeAsString(), b->SerializeAsString());
  EXPECT_THAT(OpTypes(*a), ElementsAre(kFusedGroupOp, kFusedGroupOp, kFusedGroupOp));
  EXPECT_FALSE(env_.RunSpecs(chain, {{"fuse_ops", {{"max_group_size", "1"}}}}).ok());
}

}  // namespace
}  // namespace graphopt

namespace graphopt {
namespace {

// The FusedGroup descriptor lets the verifier and inference run over fused graphs: inferring
// again after fusion gives every remaining value the type it had.
TEST_F(FuseOpsPassTest, FusedGraphsVerifyAndInferAgain) {
  const std::string text = InputText("x", {1, 3, 8, 8}) + InputText("w", {4, 3, 3, 3}) +
                           NodeText("Conv", {"x", "w"}, "c") + NodeText("Relu", {"c"}, "r") +
                           NodeText("Softmax", {"r"}, "s") + NodeText("Neg", {"s"}, "n") +
                           NodeText("Exp", {"n"}, "y") + OutputText("y");
  absl::StatusOr<v1::Graph> once = env_.Run(text, {"fuse_ops"});
  absl::StatusOr<v1::Graph> again = env_.Run(text, {"fuse_ops", "infer_type", "infer_shape"});
  ASSERT_TRUE(once.ok() && again.ok()) << once.status() << again.status();
  EXPECT_THAT(OpTypes(*again), ElementsAre(kFusedGroupOp, "Softmax", kFusedGroupOp));
  for (const char* v : {"r", "s", "y"}) {
    EXPECT_EQ(testing::TypeOf(*again, v), testing::TypeOf(*once, v)) << v;
  }
  EXPECT_EQ(testing::TypeOf(*again, "y"), "float32[1,4,6,6]");
}

}  // namespace
}  // namespace graphopt

namespace graphopt {
namespace {

// 200,000 nodes in residual blocks h' = h + sigmoid(relu(softmax(h))): linear time, one group
// per block (the Softmax stays alone).
TEST_F(FuseOpsPassTest, LargeGraphInLinearTime) {
  constexpr int kBlocks = 50000;
  Graph g;
  ValueId h = *g.AddValue("x");
  g.AddGraphInput(h);
  g.mutable_value(h).type = TensorType{v1::DT_FLOAT32, Dims{Dim::Known(4), Dim::Known(8)}};
  for (int i = 0; i < kBlocks; ++i) {
    const std::string p = absl::StrCat("b", i, "_");
    ValueId s = *g.AddValue(p + "s"), r = *g.AddValue(p + "r"), q = *g.AddValue(p + "q"),
            o = *g.AddValue(p + "o");
    ASSERT_TRUE(g.AddNode(p + "softmax", "Softmax", "", {h}, {s}).ok());
    ASSERT_TRUE(g.AddNode(p + "relu", "Relu", "", {s}, {r}).ok());
    ASSERT_TRUE(g.AddNode(p + "sigmoid", "Sigmoid", "", {r}, {q}).ok());
    ASSERT_TRUE(g.AddNode(p + "add", "Add", "", {q, h}, {o}).ok());
    h = o;
  }
  g.AddGraphOutput(h);
  absl::StatusOr<PipelineResult> r =
      RunPipeline(g, {{"fuse_ops", {}}}, env_.passes(), env_.ops(), {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(g.num_live_nodes(), 2 * kBlocks);
  EXPECT_THAT(r->runs.back().messages[0],
              HasSubstr(absl::StrCat("fused ", 3 * kBlocks, " nodes into ", kBlocks, " groups")));
}

}  // namespace
}  // namespace graphopt
