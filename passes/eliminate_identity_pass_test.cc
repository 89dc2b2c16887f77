#include "passes/eliminate_identity_pass.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/pass_test_util.h"

namespace graphopt {
namespace {

using ::graphopt::testing::OpTypes;
using ::graphopt::testing::PassTestEnv;
using ::testing::ElementsAre;

TEST(EliminateIdentityPassTest, RemovesIdentityAndInferenceDropout) {
  PassTestEnv env;
  auto out = env.Run(R"pb(
    inputs { name: "x" }
    nodes { op_type: "Relu" inputs: "x" outputs: "a" }
    nodes { op_type: "Identity" inputs: "a" outputs: "b" }
    nodes { op_type: "Dropout" inputs: "b" outputs: "c" outputs: "mask" }
    nodes { op_type: "Exp" inputs: "c" outputs: "y" }
    outputs { name: "y" })pb",
                     {"eliminate_identity"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("Relu", "Exp"));
  EXPECT_EQ(out->nodes(1).inputs(0), "a");
}

TEST(EliminateIdentityPassTest, KeepsGraphOutputName) {
  PassTestEnv env;
  auto out = env.Run(R"pb(
    inputs { name: "x" }
    nodes { op_type: "Relu" inputs: "x" outputs: "hidden" }
    nodes { op_type: "Identity" inputs: "hidden" outputs: "result" }
    outputs { name: "result" })pb",
                     {"eliminate_identity"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("Relu"));
  EXPECT_EQ(out->nodes(0).outputs(0), "result");
  EXPECT_EQ(out->outputs(0).name(), "result");
}

TEST(EliminateIdentityPassTest, KeepsIdentityBetweenGraphInputAndOutput) {
  PassTestEnv env;
  auto out = env.Run(R"pb(
    inputs { name: "x" }
    nodes { op_type: "Identity" inputs: "x" outputs: "y" }
    outputs { name: "y" })pb",
                     {"eliminate_identity"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("Identity"));
}

TEST(EliminateIdentityPassTest, KeepsTrainingDropoutAndUsedMask) {
  PassTestEnv env;
  auto out = env.Run(R"pb(
    inputs { name: "x" }
    inputs { name: "training" type { dtype: DT_BOOL } }
    nodes { op_type: "Dropout" inputs: "x" inputs: "" inputs: "training" outputs: "a" }
    nodes { op_type: "Dropout" inputs: "a" outputs: "b" outputs: "mask" }
    outputs { name: "b" } outputs { name: "mask" })pb",
                     {"eliminate_identity"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("Dropout", "Dropout"));
}

TEST(EliminateIdentityPassTest, RemovesDropoutWithConstantFalseTrainingMode) {
  PassTestEnv env;
  auto out = env.Run(R"pb(
    inputs { name: "x" }
    initializers { name: "off" dtype: DT_BOOL raw_data: "\000" }
    nodes { op_type: "Relu" inputs: "x" outputs: "r" }
    nodes { op_type: "Dropout" inputs: "r" inputs: "" inputs: "off" outputs: "d" }
    nodes { op_type: "Exp" inputs: "d" outputs: "y" }
    outputs { name: "y" })pb",
                     {"eliminate_identity"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("Relu", "Exp"));
}

}  // namespace
}  // namespace graphopt
