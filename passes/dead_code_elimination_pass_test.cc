#include "passes/dead_code_elimination_pass.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/pass_test_util.h"

namespace graphopt {
namespace {

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

}  // namespace
}  // namespace graphopt
