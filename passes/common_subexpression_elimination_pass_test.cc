#include "passes/common_subexpression_elimination_pass.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/pass_test_util.h"

namespace graphopt {
namespace {

using ::graphopt::testing::OpTypes;
using ::graphopt::testing::PassTestEnv;
using ::testing::ElementsAre;

TEST(CommonSubexpressionEliminationPassTest, MergesChainsOfDuplicates) {
  PassTestEnv env;
  auto out = env.Run(R"pb(
    inputs { name: "x" } inputs { name: "y" }
    nodes { op_type: "Add" inputs: "x" inputs: "y" outputs: "s1" }
    nodes { op_type: "Add" inputs: "x" inputs: "y" outputs: "s2" }
    nodes { op_type: "Exp" inputs: "s1" outputs: "e1" }
    nodes { op_type: "Exp" inputs: "s2" outputs: "e2" }
    nodes { op_type: "Mul" inputs: "e1" inputs: "e2" outputs: "m" }
    outputs { name: "m" })pb",
                     {"common_subexpression_elimination"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("Add", "Exp", "Mul"));
  EXPECT_EQ(out->nodes(2).inputs(0), "e1");
  EXPECT_EQ(out->nodes(2).inputs(1), "e1");
}

TEST(CommonSubexpressionEliminationPassTest, DifferentAttributesAreNotMerged) {
  PassTestEnv env;
  auto out = env.Run(R"pb(
    inputs { name: "x" }
    nodes { op_type: "LeakyRelu" inputs: "x" outputs: "a" attributes { name: "alpha" f: 0.1 } }
    nodes { op_type: "LeakyRelu" inputs: "x" outputs: "b" attributes { name: "alpha" f: 0.2 } }
    nodes { op_type: "LeakyRelu" inputs: "x" outputs: "c" attributes { name: "alpha" f: 0.1 } }
    nodes { op_type: "Add" inputs: "a" inputs: "b" outputs: "ab" }
    nodes { op_type: "Add" inputs: "ab" inputs: "c" outputs: "abc" }
    outputs { name: "abc" })pb",
                     {"common_subexpression_elimination"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->nodes_size(), 4);
  EXPECT_EQ(out->nodes(3).inputs(1), "a");
}

TEST(CommonSubexpressionEliminationPassTest, KeepsDuplicateThatIsAGraphOutput) {
  PassTestEnv env;
  auto out = env.Run(R"pb(
    inputs { name: "x" }
    nodes { op_type: "Relu" inputs: "x" outputs: "a" }
    nodes { op_type: "Relu" inputs: "x" outputs: "b" }
    outputs { name: "a" } outputs { name: "b" })pb",
                     {"common_subexpression_elimination"});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->nodes_size(), 2);
}

TEST(CommonSubexpressionEliminationPassTest, NeverMergesNondeterministicOps) {
  PassTestEnv env;
  auto out = env.Run(R"pb(
    inputs { name: "x" }
    initializers { name: "train" dtype: DT_BOOL raw_data: "\001" }
    nodes { op_type: "Dropout" inputs: "x" inputs: "" inputs: "train" outputs: "a" }
    nodes { op_type: "Dropout" inputs: "x" inputs: "" inputs: "train" outputs: "b" }
    nodes { op_type: "Add" inputs: "a" inputs: "b" outputs: "s" }
    outputs { name: "s" })pb",
                     {"common_subexpression_elimination"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->nodes_size(), 3);
}

}  // namespace
}  // namespace graphopt
