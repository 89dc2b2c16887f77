// Builtin gradients of the reduction ops against finite differences (passes/gradient_check.h),
// first and second order.

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/grad_test_util.h"
#include "passes/gradient_check.h"
#include "passes/pass_test_util.h"
#include "passes/runtime_test_util.h"
#include "absl/strings/str_cat.h"

namespace graphopt {
namespace {

using ::graphopt::testing::CheckGradients;
using ::graphopt::testing::CheckSecondOrder;
using ::graphopt::testing::F64Input;
using ::graphopt::testing::InputText;
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

absl::Status Check(const std::string& text,
                   const std::vector<std::pair<std::string, runtime::Tensor>>& inputs) {
  PassTestEnv env;
  return CheckGradients(env, text, inputs);
}

// --- graphopt::SumToShape ---------------------------------------------------------------------

TEST(GradReductionTest, SumToShapeOwnGradient) {
  const std::string text =
      F64Input("x", {"2", "3", "4"}) + Int64Init("s", {3, 1}) +
      "nodes { op_type: \"SumToShape\" domain: \"graphopt\" name: \"y_node\" inputs: \"x\" "
      "inputs: \"s\" outputs: \"y\" }\n" +
      OutputText("y");
  absl::Status s = Check(text, {{"x", Rand({2, 3, 4}, 1)}});
  EXPECT_TRUE(s.ok()) << s;
}

// An Add of operands whose broadcast is decided at run time: the Add's gradient emits the
// SumToShape op (graph/gradient.h), whose kernel un-broadcasts.
TEST(GradReductionTest, SumToShapeEmittedForSymbolicBroadcast) {
  PassTestEnv env;
  const std::string text = F64Input("a", {"n", "3"}) + F64Input("b", {"m", "3"}) +
                           NodeText("Add", {"a", "b"}, "y") + OutputText("y");
  auto out = env.RunSpecs(text, {{"infer_type", {}}, {"infer_shape", {}},
                                 {"gradient", {{"wrt", "a;b"}}}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), Contains("SumToShape"));
  absl::Status s = CheckGradients(env, text, {{"a", Rand({4, 3}, 1)}, {"b", Rand({1, 3}, 2)}});
  EXPECT_TRUE(s.ok()) << s;
  s = CheckGradients(env, text, {{"a", Rand({1, 3}, 3)}, {"b", Rand({5, 3}, 4)}});
  EXPECT_TRUE(s.ok()) << s;
}

// --- Reduce* ----------------------------------------------------------------------------------

// op(x) over `axes` given as an input (`opset` 0 or >= the op's input opset) or an attribute.
std::string Reduce(const std::string& op, const std::vector<int64_t>& axes, int keepdims,
                   bool axes_input, int opset = 0, const std::string& dims = "") {
  std::string text = opset > 0 ? Opset(opset) : "";
  text += F64Input("x", {"2", "3", "4"});
  std::vector<std::string> in = {"x"};
  std::string extra = IntText("keepdims", keepdims);
  if (axes_input) {
    text += Int64Init("axes", axes);
    in.push_back("axes");
  } else if (!axes.empty()) {
    std::vector<int> a(axes.begin(), axes.end());
    extra += " " + IntsText("axes", a);
  }
  (void)dims;
  return text + NodeText(op, in, "y", extra) + OutputText("y");
}

TEST(GradReductionTest, ReduceSumAxesInputAndAttribute) {
  for (int keepdims : {0, 1}) {
    absl::Status s = Check(Reduce("ReduceSum", {0, -1}, keepdims, true), {{"x", Rand({2, 3, 4}, 1)}});
    EXPECT_TRUE(s.ok()) << s;
    // Opset 11: 'axes' is an attribute, and so it is in the gradient (ReduceSum, Unsqueeze).
    s = Check(Reduce("ReduceSum", {1}, keepdims, false, 11), {{"x", Rand({2, 3, 4}, 2)}});
    EXPECT_TRUE(s.ok()) << s;
  }
  absl::Status s = Check(Reduce("ReduceSum", {}, 0, false), {{"x", Rand({2, 3, 4}, 3)}});
  EXPECT_TRUE(s.ok()) << s;
}

TEST(GradReductionTest, ReduceOpsOfEachKind) {
  const char* ops[] = {"ReduceMean", "ReduceMax",       "ReduceMin",     "ReduceProd",
                       "ReduceL1",   "ReduceL2",        "ReduceLogSum",  "ReduceLogSumExp",
                       "ReduceSumSquare"};
  for (const char* op : ops) {
    for (int keepdims : {0, 1}) {
      SCOPED_TRACE(absl::StrCat(op, " keepdims ", keepdims));
      const bool positive = std::string(op) == "ReduceLogSum";
      // Opset 18 takes axes as an input, opset 13 as an attribute.
      absl::Status s = Check(Reduce(op, {1, 2}, keepdims, true, 18),
                             {{"x", Rand({2, 3, 4}, 4, positive ? 0.5 : -1.0, 1.0)}});
      EXPECT_TRUE(s.ok()) << s;
      s = Check(Reduce(op, {0}, keepdims, false, 13),
                {{"x", Rand({2, 3, 4}, 5, positive ? 0.5 : -1.0, 1.0)}});
      EXPECT_TRUE(s.ok()) << s;
    }
  }
}

TEST(GradReductionTest, ReduceMaxSharesTiesEqually) {
  // x = [1, 3, 3]: the two maxima share dy (finite differences are one-sided at a tie, so the
  // gradient is checked by value).
  PassTestEnv env;
  const std::string text = InputText("x", {3}) +
                           NodeText("ReduceMax", {"x"}, "y", IntText("keepdims", 0)) +
                           OutputText("y");
  auto out = env.RunSpecs(text, {{"infer_type", {}}, {"infer_shape", {}},
                                 {"gradient", {{"wrt", "x"}, {"loss", "y"}}}});
  ASSERT_TRUE(out.ok()) << out.status();
  testing::TestRuntime runtime;
  auto got = runtime.Run(*out, {{"x", testing::FloatTensor({3}, {1, 3, 3})}});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 2u);
  const runtime::Tensor& dx = (*got)[1];
  ASSERT_EQ(dx.num_elements(), 3);
  EXPECT_EQ(dx.data<float>()[0], 0.0f);
  EXPECT_EQ(dx.data<float>()[1], 0.5f);
  EXPECT_EQ(dx.data<float>()[2], 0.5f);
}

TEST(GradReductionTest, ReduceNoopWithEmptyAxesAndSymbolicMean) {
  absl::Status s = Check(F64Input("x", {"2", "3"}) +
                             NodeText("ReduceL2", {"x"}, "y", IntText("noop_with_empty_axes", 1)) +
                             OutputText("y"),
                         {{"x", Rand({2, 3}, 6)}});
  EXPECT_TRUE(s.ok()) << s;
  // Unknown dims: the mean's count comes from Size at run time.
  s = Check(F64Input("x", {"n", "3"}) + Int64Init("axes", {0}) +
                NodeText("ReduceMean", {"x", "axes"}, "y", IntText("keepdims", 0)) + OutputText("y"),
            {{"x", Rand({5, 3}, 7)}});
  EXPECT_TRUE(s.ok()) << s;
}

TEST(GradReductionTest, ReduceWithRuntimeAxes) {
  // The axes are a graph input: the keepdims form of dy is built at run time.
  testing::GradientCheckOptions options;
  options.wrt = {"x"};
  PassTestEnv env;
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceLogSumExp"}) {
    for (int keepdims : {0, 1}) {
      SCOPED_TRACE(absl::StrCat(op, " keepdims ", keepdims));
      const std::string text =
          F64Input("x", {"2", "3", "4"}) +
          "inputs { name: \"axes\" type { dtype: DT_INT64 shape { dims { size: 2 } } } }\n" +
          NodeText(op, {"x", "axes"}, "y", IntText("keepdims", keepdims)) + OutputText("y");
      runtime::Tensor a = *runtime::Tensor::Allocate(v1::DT_INT64, runtime::Shape{2});
      a.data<int64_t>()[0] = -1;
      a.data<int64_t>()[1] = 0;
      absl::Status s =
          CheckGradients(env, text, {{"x", Rand({2, 3, 4}, 70)}, {"axes", std::move(a)}}, options);
      EXPECT_TRUE(s.ok()) << s;
    }
  }
}

// --- Softmax, LogSoftmax ----------------------------------------------------------------------

TEST(GradReductionTest, SoftmaxAndLogSoftmaxAxisSemanticsByOpset) {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    SCOPED_TRACE(op);
    // Opset 13: along axis 1 only.
    absl::Status s = Check(Opset(13) + F64Input("x", {"2", "3", "4"}) +
                               NodeText(op, {"x"}, "y", IntText("axis", 1)) + OutputText("y"),
                           {{"x", Rand({2, 3, 4}, 8)}});
    EXPECT_TRUE(s.ok()) << s;
    // Opset 11, no axis: the input coerced to [2, 12] at the default axis 1.
    s = Check(Opset(11) + F64Input("x", {"2", "3", "4"}) + NodeText(op, {"x"}, "y") +
                  OutputText("y"),
              {{"x", Rand({2, 3, 4}, 9)}});
    EXPECT_TRUE(s.ok()) << s;
    // Newest, default axis -1.
    s = Check(F64Input("x", {"2", "5"}) + NodeText(op, {"x"}, "y") + OutputText("y"),
              {{"x", Rand({2, 5}, 10)}});
    EXPECT_TRUE(s.ok()) << s;
  }
}

TEST(GradReductionTest, LpNormalizationAndMeanVarianceNormalization) {
  for (int p : {1, 2}) {
    SCOPED_TRACE(absl::StrCat("p ", p));
    absl::Status s = Check(F64Input("x", {"3", "4"}) +
                               NodeText("LpNormalization", {"x"}, "y",
                                        IntText("axis", 0) + " " + IntText("p", p)) +
                               OutputText("y"),
                           {{"x", Rand({3, 4}, 60)}});
    EXPECT_TRUE(s.ok()) << s;
  }
  absl::Status s = Check(F64Input("x", {"2", "3", "2", "2"}) +
                             NodeText("MeanVarianceNormalization", {"x"}, "y") + OutputText("y"),
                         {{"x", Rand({2, 3, 2, 2}, 61)}});
  EXPECT_TRUE(s.ok()) << s;
  s = Check(Opset(18) + F64Input("x", {"2", "5"}) +
                NodeText("MeanVarianceNormalization", {"x"}, "y", IntsText("axes", {1})) +
                OutputText("y"),
            {{"x", Rand({2, 5}, 62)}});
  EXPECT_TRUE(s.ok()) << s;
}

// --- Losses -----------------------------------------------------------------------------------

TEST(GradReductionTest, NegativeLogLikelihoodLoss) {
  // [N=3, C=4, d=2]; target -1 is ignored; class weights.
  const std::string base = F64Input("x", {"3", "4", "2"}) + F64Input("w", {"4"}) +
                           Int64Init("t", {0, 3, -1, 2, 1, 1}, {3, 2});
  testing::GradientCheckOptions options;
  options.wrt = {"x"};
  PassTestEnv env;
  for (const char* reduction : {"none", "sum", "mean"}) {
    for (bool weighted : {false, true}) {
      SCOPED_TRACE(absl::StrCat(reduction, weighted ? " weighted" : ""));
      std::vector<std::string> in = {"x", "t"};
      if (weighted) in.push_back("w");
      const std::string text =
          base + NodeText("NegativeLogLikelihoodLoss", in, "y",
                          StringText("reduction", reduction) + " " + IntText("ignore_index", -1)) +
          OutputText("y");
      absl::Status s = CheckGradients(
          env, text, {{"x", Rand({3, 4, 2}, 30)}, {"w", Rand({4}, 31, 0.5, 2.0)}}, options);
      EXPECT_TRUE(s.ok()) << s;
    }
  }
  // No ignore_index, mean over the samples.
  absl::Status s = CheckGradients(
      env, base.substr(0, base.find("initializers")) + Int64Init("t", {0, 3, 1, 2, 1, 1}, {3, 2}) +
               NodeText("NegativeLogLikelihoodLoss", {"x", "t"}, "y") + OutputText("y"),
      {{"x", Rand({3, 4, 2}, 32)}, {"w", Rand({4}, 33)}}, options);
  EXPECT_TRUE(s.ok()) << s;
}

TEST(GradReductionTest, SoftmaxCrossEntropyLoss) {
  PassTestEnv env;
  testing::GradientCheckOptions options;
  options.wrt = {"x"};
  const std::string sce =
      "nodes { op_type: \"SoftmaxCrossEntropyLoss\" name: \"sce\" inputs: \"x\" inputs: \"t\" "
      "outputs: \"loss\" outputs: \"logp\" attributes { name: \"reduction\" s: \"mean\" } }\n";
  // Opset 13 [N, C]; opset 12 [N, C, d] (softmax along axis 1 without Softmax's 2-D coercion).
  absl::Status s = CheckGradients(env,
                                  Opset(13) + F64Input("x", {"3", "5"}) + Int64Init("t", {4, 0, 2}) +
                                      sce + OutputText("loss") + OutputText("logp"),
                                  {{"x", Rand({3, 5}, 34)}}, options);
  EXPECT_TRUE(s.ok()) << s;
  s = CheckGradients(env,
                     Opset(12) + F64Input("x", {"3", "5", "2"}) +
                         Int64Init("t", {4, 0, 2, 1, 3, 3}, {3, 2}) + sce + OutputText("loss"),
                     {{"x", Rand({3, 5, 2}, 35)}}, options);
  EXPECT_TRUE(s.ok()) << s;
}

// --- Einsum -------------------------------------------------------------------------------------

TEST(GradReductionTest, EinsumEquations) {
  struct Case {
    std::string equation;
    std::vector<std::vector<int64_t>> shapes;
  };
  const std::vector<Case> cases = {
      {"ij,jk->ik", {{2, 3}, {3, 4}}},
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
      {"ij,jk", {{2, 3}, {3, 4}}},             // implicit output "ik"
      {"i,i->", {{4}, {4}}},                   // dot
      {"ij->ji", {{2, 3}}},
      {"ij->i", {{2, 3}}},                     // j summed: the gradient is broadcast back
      {"ij,j->ij", {{2, 3}, {3}}},
      {"...ij,...jk->...ik", {{2, 3, 4}, {1, 4, 2}}},  // '...' broadcast: summed back
      {"i j , j k -> i k", {{2, 3}, {3, 4}}},
      {"ijk,ik->j", {{2, 3, 4}, {2, 4}}},
      {"...ij,jk->...ik", {{2, 3, 3, 4}, {4, 2}}},  // '...' on one operand only
      {"...i,...i", {{3, 4}, {2, 1, 4}}},             // implicit output "..."
      {"i...->...", {{3, 2}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.equation);
    std::string text;
    std::vector<std::string> names;
    std::vector<std::pair<std::string, runtime::Tensor>> inputs;
    for (size_t i = 0; i < c.shapes.size(); ++i) {
      const std::string name = absl::StrCat("x", i);
      std::vector<std::string> dims;
      for (int64_t d : c.shapes[i]) dims.push_back(absl::StrCat(d));
      text += F64Input(name, dims);
      names.push_back(name);
      inputs.push_back({name, Rand(c.shapes[i], 11 + static_cast<uint32_t>(i))});
    }
    text += NodeText("Einsum", names, "y", StringText("equation", c.equation)) + OutputText("y");
    absl::Status s = Check(text, inputs);
    EXPECT_TRUE(s.ok()) << s;
  }
}

TEST(GradReductionTest, EinsumDiagonalIsRefusedNamingTheEquation) {
  PassTestEnv env;
  const std::string text = F64Input("x", {"3", "3"}) +
                           NodeText("Einsum", {"x"}, "y", StringText("equation", "ii->i")) +
                           OutputText("y");
  auto out = env.RunSpecs(text, {{"infer_type", {}}, {"infer_shape", {}},
                                 {"gradient", {{"wrt", "x"}}}});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("'ii->i'"));
}

// --- Second order ---------------------------------------------------------------------------

// loss = sum(op(x) * w): its gradient in x depends on x unless op is linear.
std::string WeightedLoss(const std::string& node_text, const std::string& y,
                         const std::vector<std::string>& x_dims, const std::string& prefix = "") {
  return prefix + F64Input("x", x_dims) + F64Input("w", x_dims) + node_text +
         NodeText("Mul", {y, "w"}, "yw") + NodeText("Mul", {"yw", y}, "yyw") +
         NodeText("ReduceSum", {"yyw"}, "loss", IntText("keepdims", 0)) + OutputText("loss");
}

TEST(GradReductionTest, SecondOrderSoftmaxLogSoftmax) {
  PassTestEnv env;
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (int opset : {11, 13}) {
      SCOPED_TRACE(absl::StrCat(op, " opset ", opset));
      const std::string text = WeightedLoss(NodeText(op, {"x"}, "y", IntText("axis", 1)), "y",
                                            {"2", "3", "4"}, Opset(opset));
      absl::Status s = CheckSecondOrder(env, text, "loss", "x",
                                        {{"x", Rand({2, 3, 4}, 20)}, {"w", Rand({2, 3, 4}, 21)}});
      EXPECT_TRUE(s.ok()) << s;
    }
  }
}

TEST(GradReductionTest, SecondOrderReduceSumMean) {
  PassTestEnv env;
  for (const char* op : {"ReduceSum", "ReduceMean"}) {
    SCOPED_TRACE(op);
    const std::string text =
        Int64Init("axes", {1}) + F64Input("x", {"2", "3"}) + F64Input("w", {"2"}) +
        NodeText(op, {"x", "axes"}, "y", IntText("keepdims", 0)) + NodeText("Mul", {"y", "y"}, "yy") +
        NodeText("Mul", {"yy", "w"}, "yyw") +
        NodeText("ReduceSum", {"yyw"}, "loss", IntText("keepdims", 0)) + OutputText("loss");
    absl::Status s = CheckSecondOrder(env, std::string("opset_imports { domain: \"\" version: 18 }\n") + text,
                                      "loss", "x", {{"x", Rand({2, 3}, 22)}, {"w", Rand({2}, 23)}});
    EXPECT_TRUE(s.ok()) << s;
  }
}

}  // namespace
}  // namespace graphopt
