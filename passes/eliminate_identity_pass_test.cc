#include "passes/eliminate_identity_pass.h"

#include <cstdlib>

#include "gmock/gmock.h"
#include "graph/test_ops.h"
#include "gtest/gtest.h"
#include "passes/pass_test_util.h"

namespace graphopt {
namespace {

using ::graphopt::testing::AddEffectOps;
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

TEST(EliminateIdentityPassTest, RemovesTrainingDropoutOfRatioZeroOnly) {
  PassTestEnv env;
  // float32 0.0 and 0.25 as raw little-endian bytes; training_mode true.
  auto out = env.Run(R"pb(
    inputs { name: "x" }
    initializers { name: "on" dtype: DT_BOOL raw_data: "\001" }
    initializers { name: "zero" dtype: DT_FLOAT32 raw_data: "\000\000\000\000" }
    initializers { name: "quarter" dtype: DT_FLOAT32 raw_data: "\000\000\200\076" }
    nodes { op_type: "Relu" inputs: "x" outputs: "r" }
    nodes { op_type: "Dropout" inputs: "r" inputs: "zero" inputs: "on" outputs: "d" outputs: "m" }
    nodes { op_type: "Dropout" inputs: "d" inputs: "quarter" inputs: "on" outputs: "e" }
    nodes { op_type: "Exp" inputs: "e" outputs: "y" }
    outputs { name: "y" })pb",
                     {"eliminate_identity"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("Relu", "Dropout", "Exp"));
  EXPECT_EQ(out->nodes(1).inputs(0), "r");
}

TEST(EliminateIdentityPassTest, KeepsCopiesOfMutatedValues) {
  PassTestEnv env;
  AddEffectOps(env);
  PipelineResult result;
  // `copy` is written by Accumulate: forwarding it would write `x` instead. `x2` is written and
  // read through a copy: forwarding would let the reader see the write.
  auto out = env.Run(R"pb(
    inputs { name: "x" } inputs { name: "x2" }
    nodes { name: "c1" op_type: "Identity" inputs: "x" outputs: "copy" }
    nodes { name: "w1" op_type: "Accumulate" domain: "my.ops" inputs: "copy" inputs: "x"
            outputs: "d1" }
    nodes { name: "c2" op_type: "Identity" inputs: "x2" outputs: "copy2" }
    nodes { name: "w2" op_type: "Accumulate" domain: "my.ops" inputs: "x2" inputs: "x"
            outputs: "d2" }
    nodes { name: "c3" op_type: "Identity" inputs: "x" outputs: "plain" }
    nodes { op_type: "Max" inputs: "d1" inputs: "copy2" inputs: "d2" inputs: "plain"
            outputs: "s" }
    outputs { name: "s" })pb",
                     {"eliminate_identity"}, &result);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("Identity", "Accumulate", "Identity", "Accumulate",
                                         "Max"));
  EXPECT_THAT(result.runs[0].messages,
              ElementsAre("removed 1: identity 1; refused 2: hidden accesses 2"));
}

}  // namespace
}  // namespace graphopt

namespace graphopt {
namespace {

// A subgraph reads 'y' by name: the Identity producing it stays, and so does the Relu a CSE
// merge would otherwise fold into its twin.
TEST(EliminateIdentityPassTest, KeepsAnIdentityWhoseOutputASubgraphCaptures) {
  PassTestEnv env;
  graphopt::PipelineResult result;
  auto out = env.Run(R"pb(
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 3 } } } }
    inputs { name: "c" type { dtype: DT_BOOL shape {} } }
    nodes { op_type: "Identity" inputs: "x" outputs: "y" }
    nodes { op_type: "Relu" inputs: "x" outputs: "r1" }
    nodes { op_type: "Relu" inputs: "x" outputs: "r2" }
    nodes {
      op_type: "If" inputs: "c" outputs: "o"
      attributes {
        name: "then_branch"
        g {
          nodes { op_type: "Add" inputs: "y" inputs: "r2" outputs: "t" }
          outputs { name: "t" type { dtype: DT_FLOAT32 } }
        }
      }
      attributes {
        name: "else_branch"
        g { outputs { name: "r1" type { dtype: DT_FLOAT32 } } }
      }
    }
    outputs { name: "o" })pb",
                     {"eliminate_identity", "common_subexpression_elimination"}, &result);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("Identity", "Relu", "Relu", "If"));
}

}  // namespace
}  // namespace graphopt
