#include "passes/dead_code_elimination_pass.h"

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

TEST(DeadCodeEliminationPassTest, RemovesUnusedNodesAndInitializers) {
  PassTestEnv env;
  graphopt::PipelineResult result;
  auto out = env.Run(R"pb(
    inputs { name: "x" type { dtype: DT_FLOAT32 } }
    inputs { name: "unused_input" type { dtype: DT_FLOAT32 } }
    initializers { name: "dead_w" dtype: DT_FLOAT32 dims: 1 raw_data: "\000\000\000\000" }
    nodes { name: "live" op_type: "Relu" inputs: "x" outputs: "y" }
    nodes { name: "dead1" op_type: "Mul" inputs: "x" inputs: "dead_w" outputs: "d1" }
    nodes { name: "dead2" op_type: "Exp" inputs: "d1" outputs: "d2" }
    outputs { name: "y" })pb",
                     {"dead_code_elimination"}, &result);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("Relu"));
  EXPECT_EQ(out->initializers_size(), 0);
  // Graph inputs are the interface and stay even when unused.
  EXPECT_EQ(out->inputs_size(), 2);
  ASSERT_EQ(result.runs.size(), 1u);
  EXPECT_TRUE(result.runs[0].changed);
  EXPECT_EQ(result.runs[0].nodes_before, 3);
  EXPECT_EQ(result.runs[0].nodes_after, 1);
  EXPECT_THAT(result.runs[0].messages, ElementsAre("removed 2 nodes and 1 initializers"));
}

TEST(DeadCodeEliminationPassTest, NothingDeadIsUnchanged) {
  PassTestEnv env;
  graphopt::PipelineResult result;
  auto out = env.Run(R"pb(
    inputs { name: "x" }
    nodes { op_type: "Relu" inputs: "x" outputs: "y" }
    outputs { name: "y" })pb",
                     {"dead_code_elimination"}, &result);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(result.runs[0].changed);
  EXPECT_EQ(out->nodes_size(), 1);
}

TEST(DeadCodeEliminationPassTest, KeepsMultiOutputNodeWithOneUsedOutput) {
  PassTestEnv env;
  auto out = env.Run(R"pb(
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 4 } } } }
    nodes { op_type: "Split" inputs: "x" outputs: "a" outputs: "b" attributes { name: "axis" i: 0 } }
    nodes { op_type: "Relu" inputs: "b" outputs: "y" }
    nodes { op_type: "Relu" inputs: "a" outputs: "unused" }
    outputs { name: "y" })pb",
                     {"dead_code_elimination"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("Split", "Relu"));
}

TEST(DeadCodeEliminationPassTest, KeepsNodesWithEffectsAndWhatTheyRead) {
  PassTestEnv env;
  AddEffectOps(env);
  PipelineResult result;
  auto out = env.Run(R"pb(
    inputs { name: "x" }
    inputs { name: "state" }
    nodes { name: "pre" op_type: "Exp" inputs: "x" outputs: "e" }
    nodes { name: "print" op_type: "Print" domain: "my.ops" inputs: "e" outputs: "unused1" }
    nodes { name: "pre2" op_type: "Relu" inputs: "x" outputs: "r" }
    nodes { name: "acc" op_type: "Accumulate" domain: "my.ops" inputs: "state" inputs: "r"
            outputs: "unused2" }
    nodes { name: "live" op_type: "Neg" inputs: "x" outputs: "y" }
    outputs { name: "y" })pb",
                     {"dead_code_elimination"}, &result);
  ASSERT_TRUE(out.ok()) << out.status();
  // Print has side effects; Accumulate writes `state` (a live value): both stay, with the nodes
  // feeding them, although nothing reads their outputs.
  EXPECT_THAT(OpTypes(*out), ElementsAre("Exp", "Print", "Relu", "Accumulate", "Neg"));
  EXPECT_FALSE(result.runs[0].changed);
}

TEST(DeadCodeEliminationPassTest, RemovesUnusedNondeterministicNodes) {
  // Nondeterminism is not an effect: a Sample nobody reads computes nothing anyone sees.
  PassTestEnv env;
  AddEffectOps(env);
  auto out = env.Run(R"pb(
    inputs { name: "x" }
    nodes { op_type: "Sample" domain: "my.ops" inputs: "x" outputs: "unused" }
    nodes { op_type: "Neg" inputs: "x" outputs: "y" }
    outputs { name: "y" })pb",
                     {"dead_code_elimination"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("Neg"));
}

}  // namespace
}  // namespace graphopt

namespace graphopt {
namespace {

TEST(DeadCodeEliminationPassTest, KeepsWhatSubgraphsCapture) {
  PassTestEnv env;
  auto out = env.Run(R"pb(
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 3 } } } }
    inputs { name: "c" type { dtype: DT_BOOL shape {} } }
    initializers { name: "w" dtype: DT_FLOAT32 dims: 1 raw_data: "\000\000\200?" }
    nodes { name: "captured" op_type: "Relu" inputs: "x" outputs: "r" }
    nodes { name: "dead" op_type: "Exp" inputs: "x" outputs: "e" }
    nodes {
      name: "if" op_type: "If" inputs: "c" outputs: "y"
      attributes {
        name: "then_branch"
        g {
          nodes { op_type: "Mul" inputs: "r" inputs: "w" outputs: "t" }
          outputs { name: "t" type { dtype: DT_FLOAT32 } }
        }
      }
      attributes {
        name: "else_branch"
        g {
          nodes { op_type: "Neg" inputs: "r" outputs: "f" }
          outputs { name: "f" type { dtype: DT_FLOAT32 } }
        }
      }
    }
    outputs { name: "y" })pb",
                     {"dead_code_elimination"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("Relu", "If"));
  ASSERT_EQ(out->initializers_size(), 1);
  EXPECT_EQ(out->initializers(0).name(), "w");
}

}  // namespace
}  // namespace graphopt
