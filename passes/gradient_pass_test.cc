#include "passes/gradient_pass.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/gradient_check.h"
#include "passes/pass_test_util.h"
#include "passes/runtime_test_util.h"

namespace graphopt {
namespace {

using ::graphopt::testing::CheckGradients;
using ::graphopt::testing::InputText;
using ::graphopt::testing::NodeText;
using ::graphopt::testing::OutputText;
using ::graphopt::testing::PassTestEnv;
using ::graphopt::testing::RandomTensor;
using ::testing::HasSubstr;

std::string Mlp() {
  return InputText("x", {4, 3}) + InputText("w", {3, 5}) + InputText("b", {5}) +
         NodeText("MatMul", {"x", "w"}, "xw") + NodeText("Add", {"xw", "b"}, "h") +
         NodeText("Relu", {"h"}, "r") + NodeText("Mul", {"r", "xw"}, "y") + OutputText("y");
}

TEST(GradientPassTest, MlpMatchesFiniteDifferences) {
  PassTestEnv env;
  absl::Status s = CheckGradients(env, Mlp(),
                                  {{"x", RandomTensor(v1::DT_FLOAT32, {4, 3}, 1)},
                                   {"w", RandomTensor(v1::DT_FLOAT32, {3, 5}, 2)},
                                   {"b", RandomTensor(v1::DT_FLOAT32, {5}, 3)}});
  EXPECT_TRUE(s.ok()) << s;
}

TEST(GradientPassTest, ReportsWhatItBuiltAndNamesOutputs) {
  PassTestEnv env;
  graphopt::PipelineResult result;
  auto out = env.RunSpecs(Mlp(), {{"infer_type", {}}, {"infer_shape", {}},
                                  {"gradient", {{"wrt", "w;b"}, {"loss", "y"}}}},
                          &result);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->outputs_size(), 3);
  EXPECT_EQ(out->outputs(1).name(), "w_grad");
  EXPECT_EQ(out->outputs(2).name(), "b_grad");
  const auto& run = result.runs.back();
  EXPECT_EQ(run.name, "gradient");
  ASSERT_FALSE(run.messages.empty());
  EXPECT_THAT(run.messages[0], HasSubstr("gradients of 'y' with respect to 'w', 'b'"));
  EXPECT_THAT(run.messages[0], HasSubstr("backward nodes for 4 forward nodes"));
}

TEST(GradientPassTest, UnknownWrtIsAnError) {
  PassTestEnv env;
  auto out = env.RunSpecs(Mlp(), {{"infer_type", {}}, {"infer_shape", {}},
                                  {"gradient", {{"wrt", "nope"}}}});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("no value named 'nope'"));
}

TEST(GradientPassTest, IndependentTargetGetsZeros) {
  PassTestEnv env;
  graphopt::PipelineResult result;
  const std::string text = InputText("x", {2}) + InputText("z", {2}) +
                           NodeText("Relu", {"x"}, "y") + OutputText("y");
  auto out = env.RunSpecs(text, {{"infer_type", {}}, {"infer_shape", {}},
                                 {"gradient", {{"wrt", "x;z"}, {"loss", "y"}}}},
                          &result);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(result.runs.back().messages,
              ::testing::Contains(HasSubstr("does not depend on it): 'z'")));
}

TEST(GradientPassTest, OpWithoutGradientIsNamed) {
  PassTestEnv env;
  testing::AddEffectOps(env);  // my.ops::Sample has no gradient definition
  const std::string text = InputText("x", {2}) +
                           NodeText("Sample", {"x"}, "y", "domain: \"my.ops\"") + OutputText("y");
  auto out = env.RunSpecs(text, {{"infer_type", {}}, {"infer_shape", {}},
                                 {"gradient", {{"wrt", "x"}}}});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("'y_node' (my.ops::Sample)"));
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("no gradient definition"));
}

TEST(GradientPassTest, SameRequestSameBytes) {
  PassTestEnv env;
  std::vector<PassSpec> specs = {{"infer_type", {}}, {"infer_shape", {}},
                                 {"gradient", {{"wrt", "x;w;b"}}}};
  auto a = env.RunSpecs(Mlp(), specs);
  auto b = env.RunSpecs(Mlp(), specs);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->SerializeAsString(), b->SerializeAsString());
}

}  // namespace
}  // namespace graphopt
