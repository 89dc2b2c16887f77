#include "passes/common_subexpression_elimination_pass.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
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

// Candidates are listed per value their first input reads, up to 8; a value read by more
// distinct nodes moves its list to the hash table. Duplicates are found on either side of the
// move, and nodes without inputs (Constant) are merged through the table.
TEST(CommonSubexpressionEliminationPassTest, ManyDistinctReadersOfOneValue) {
  PassTestEnv env;
  std::string text = "inputs { name: \"x\" }\n";
  std::vector<std::string> outs;
  auto leaky = [&](const std::string& out, int alpha_tenths) {
    absl::StrAppend(&text, "nodes { op_type: \"LeakyRelu\" inputs: \"x\" outputs: \"", out,
                    "\" attributes { name: \"alpha\" f: ", alpha_tenths / 10.0, " } }\n");
    outs.push_back(out);
  };
  for (int i = 1; i <= 12; ++i) leaky(absl::StrCat("l", i), i);
  leaky("dup_first", 1);   // read from the table after the move
  leaky("dup_last", 12);   // likewise, listed after the move
  absl::StrAppend(&text,
                  "nodes { op_type: \"Constant\" outputs: \"c1\" attributes { name: \"value\" "
                  "t { dtype: DT_FLOAT32 raw_data: \"\\000\\000\\000@\" } } }\n"
                  "nodes { op_type: \"Constant\" outputs: \"c2\" attributes { name: \"value\" "
                  "t { dtype: DT_FLOAT32 raw_data: \"\\000\\000\\000@\" } } }\n");
  outs.push_back("c1");
  outs.push_back("c2");
  std::string sum = outs[0];
  for (size_t i = 1; i < outs.size(); ++i) {
    const std::string next = absl::StrCat("s", i);
    absl::StrAppend(&text, "nodes { op_type: \"Add\" inputs: \"", sum, "\" inputs: \"",
                    outs[i], "\" outputs: \"", next, "\" }\n");
    sum = next;
  }
  absl::StrAppend(&text, "outputs { name: \"", sum, "\" }");
  auto out = env.Run(text, {"common_subexpression_elimination"});
  ASSERT_TRUE(out.ok()) << out.status();
  int leaky_relus = 0, constants = 0;
  for (const v1::Node& n : out->nodes()) {
    leaky_relus += n.op_type() == "LeakyRelu";
    constants += n.op_type() == "Constant";
  }
  EXPECT_EQ(leaky_relus, 12);
  EXPECT_EQ(constants, 1);
  std::vector<std::string> reads;
  for (const v1::Node& n : out->nodes()) {
    if (n.op_type() == "Add") reads.insert(reads.end(), n.inputs().begin(), n.inputs().end());
  }
  // The Adds that read the duplicates read the originals now.
  EXPECT_THAT(reads, ::testing::Contains("l1").Times(2));
  EXPECT_THAT(reads, ::testing::Contains("l12").Times(2));
  EXPECT_THAT(reads, ::testing::Contains("c1").Times(2));
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

TEST(CommonSubexpressionEliminationPassTest, NeverMergesOpsWithEffectsOrNondeterminism) {
  PassTestEnv env;
  AddEffectOps(env);
  for (const char* op : {"Print", "Sample"}) {
    auto out = env.Run(absl::StrCat(R"pb(
      inputs { name: "x" }
      nodes { op_type: ")pb", op, R"pb(" domain: "my.ops" inputs: "x" outputs: "a" }
      nodes { op_type: ")pb", op, R"pb(" domain: "my.ops" inputs: "x" outputs: "b" }
      nodes { op_type: "Add" inputs: "a" inputs: "b" outputs: "s" }
      outputs { name: "s" })pb"),
                       {"common_subexpression_elimination"});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(out->nodes_size(), 3) << op;
  }
  // Two writes to the same value are two writes.
  auto out = env.Run(R"pb(
    inputs { name: "acc" } inputs { name: "x" }
    nodes { op_type: "Accumulate" domain: "my.ops" inputs: "acc" inputs: "x" outputs: "a" }
    nodes { op_type: "Accumulate" domain: "my.ops" inputs: "acc" inputs: "x" outputs: "b" }
    nodes { op_type: "Add" inputs: "a" inputs: "b" outputs: "s" }
    outputs { name: "s" })pb",
                     {"common_subexpression_elimination"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->nodes_size(), 3);
}

TEST(CommonSubexpressionEliminationPassTest, NeverMergesReadersOfAMutatedValue) {
  // r1 may read `acc` before Accumulate writes it and r2 after: they are not the same
  // computation, and the edges do not say which is which. Exp(x) reads no written value.
  PassTestEnv env;
  AddEffectOps(env);
  PipelineResult result;
  auto out = env.Run(R"pb(
    inputs { name: "acc" } inputs { name: "x" }
    nodes { name: "r1" op_type: "Relu" inputs: "acc" outputs: "a" }
    nodes { name: "w" op_type: "Accumulate" domain: "my.ops" inputs: "acc" inputs: "x"
            outputs: "done" }
    nodes { name: "r2" op_type: "Relu" inputs: "acc" outputs: "b" }
    nodes { name: "e1" op_type: "Exp" inputs: "x" outputs: "e" }
    nodes { name: "e2" op_type: "Exp" inputs: "x" outputs: "f" }
    nodes { op_type: "Max" inputs: "a" inputs: "b" inputs: "e" inputs: "f" inputs: "done"
            outputs: "s" }
    outputs { name: "s" })pb",
                     {"common_subexpression_elimination"}, &result);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("Relu", "Accumulate", "Relu", "Exp", "Max"));
  EXPECT_THAT(result.runs[0].messages, ElementsAre("merged 1 duplicate nodes"));
}

TEST(CommonSubexpressionEliminationPassTest, NeverMergesProducersOfAMutatedValue) {
  // Merging r2 into r1 would let Accumulate's write to `a` reach r2's readers.
  PassTestEnv env;
  AddEffectOps(env);
  auto out = env.Run(R"pb(
    inputs { name: "x" }
    nodes { name: "r1" op_type: "Relu" inputs: "x" outputs: "a" }
    nodes { name: "r2" op_type: "Relu" inputs: "x" outputs: "b" }
    nodes { name: "w" op_type: "Accumulate" domain: "my.ops" inputs: "a" inputs: "x"
            outputs: "done" }
    nodes { op_type: "Add" inputs: "b" inputs: "done" outputs: "s" }
    outputs { name: "s" })pb",
                     {"common_subexpression_elimination"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("Relu", "Relu", "Accumulate", "Add"));
}

}  // namespace
}  // namespace graphopt
