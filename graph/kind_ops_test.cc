#include "graph/kind_ops.h"

#include "graph/test_ops.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {

TEST(KindOpsTest, FindsEachNodesOpIncludingKindsAddedLaterAndUnknownOnes) {
  OpRegistry ops;
  ASSERT_TRUE(ops.Register(testing::MakeTestOp("Relu", {"X"}, {"Y"})).ok());
  ASSERT_TRUE(ops.Register(testing::MakeTestOp("Exp", {"X"}, {"Y"})).ok());
  Graph g;
  const ValueId x = *g.AddValue("x");
  g.AddGraphInput(x);
  const ValueId a = *g.AddValue("a");
  const ValueId b = *g.AddValue("b");
  const NodeId relu = *g.AddNode("relu", "Relu", "", {x}, {a});
  const NodeId custom = *g.AddNode("c", "Mystery", "my.domain", {a}, {b});
  const KindOps kinds(g, ops);
  ASSERT_NE(kinds.Find(relu), nullptr);
  EXPECT_EQ(kinds.Find(relu), ops.Find("", "Relu"));
  EXPECT_EQ(kinds.Find(custom), nullptr);

  // A node of a kind the graph did not have when the table was built.
  const ValueId c = *g.AddValue("c");
  const NodeId exp = *g.AddNode("exp", "Exp", "", {b}, {c});
  EXPECT_EQ(kinds.Find(exp), ops.Find("", "Exp"));
  // And one of a kind it had.
  const ValueId d = *g.AddValue("d");
  const NodeId relu2 = *g.AddNode("relu2", "Relu", "", {c}, {d});
  EXPECT_EQ(kinds.Find(relu2), ops.Find("", "Relu"));
}

}  // namespace
}  // namespace graphopt
