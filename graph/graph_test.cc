#include "graph/graph.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// x -> Relu(a) -> Relu(b) -> y
struct Chain {
  Graph g;
  ValueId x, a, y;
  NodeId n0, n1;
};

Chain MakeChain() {
  Chain c;
  c.x = *c.g.AddValue("x");
  c.g.AddGraphInput(c.x);
  c.a = *c.g.AddValue("a");
  c.y = *c.g.AddValue("y");
  c.n0 = *c.g.AddNode("r0", "Relu", "", {c.x}, {c.a});
  c.n1 = *c.g.AddNode("r1", "Relu", "", {c.a}, {c.y});
  c.g.AddGraphOutput(c.y);
  return c;
}

// x -> Relu(first) -> a and x -> Relu(second) -> b, both graph outputs: two orders are valid.
struct TwoReaders {
  Graph g;
  ValueId x, a, b;
  NodeId first, second;
};

TwoReaders MakeTwoReaders() {
  TwoReaders t;
  t.x = *t.g.AddValue("x");
  t.g.AddGraphInput(t.x);
  t.a = *t.g.AddValue("a");
  t.b = *t.g.AddValue("b");
  t.first = *t.g.AddNode("first", "Relu", "", {t.x}, {t.a});
  t.second = *t.g.AddNode("second", "Relu", "", {t.x}, {t.b});
  t.g.AddGraphOutput(t.a);
  t.g.AddGraphOutput(t.b);
  return t;
}

TEST(GraphTest, ProducerAndConsumerLookup) {
  Chain c = MakeChain();
  EXPECT_EQ(c.g.value(c.a).producer, c.n0);
  EXPECT_EQ(c.g.value(c.a).producer_output, 0);
  ASSERT_EQ(c.g.value(c.a).uses.size(), 1u);
  EXPECT_EQ(c.g.value(c.a).uses[0].node, c.n1);
  EXPECT_EQ(c.g.value(c.y).graph_output_count, 1);
  EXPECT_TRUE(c.g.IsDefined(c.x));
  EXPECT_EQ(c.g.FindValue("a"), c.a);
  EXPECT_FALSE(c.g.FindValue("nope").valid());
  EXPECT_EQ(c.g.num_live_nodes(), 2);
}

TEST(GraphTest, OpKindsAreInternedAndCounted) {
  Chain c = MakeChain();
  const OpKindId relu = c.g.FindOpKind("", "Relu");
  ASSERT_TRUE(relu.valid());
  EXPECT_EQ(c.g.op_kind(c.n0), relu);
  EXPECT_EQ(c.g.op_kind(c.n1), relu);
  EXPECT_EQ(c.g.op_kind_type(relu), "Relu");
  EXPECT_EQ(c.g.op_kind_domain(relu), "");
  EXPECT_EQ(c.g.num_live_nodes_of_kind(relu), 2);
  // Never seen: invalid, and no nodes.
  EXPECT_FALSE(c.g.FindOpKind("", "Tanh").valid());
  EXPECT_EQ(c.g.num_live_nodes_of_op("", "Tanh"), 0);
  EXPECT_TRUE(c.g.LiveNodesOfKinds({c.g.FindOpKind("", "Tanh")}).empty());
  // The same op_type in another domain is another kind.
  ValueId z = *c.g.AddValue("z");
  NodeId custom = *c.g.AddNode("c", "Relu", "my.domain", {c.y}, {z});
  const OpKindId custom_relu = c.g.FindOpKind("my.domain", "Relu");
  ASSERT_TRUE(custom_relu.valid());
  EXPECT_NE(custom_relu, relu);
  EXPECT_EQ(c.g.op_kind(custom), custom_relu);
  EXPECT_EQ(c.g.num_live_nodes_of_kind(relu), 2);
  EXPECT_THAT(c.g.LiveNodesOfKinds({custom_relu, relu}), ElementsAre(c.n0, c.n1, custom));
  EXPECT_THAT(c.g.LiveNodesOfKinds({custom_relu, OpKindId()}), ElementsAre(custom));
  // Removed nodes leave the count and the lists; their slot keeps its kind.
  c.g.ReplaceAllUsesWith(c.a, c.x);
  c.g.RemoveNode(c.n0);
  EXPECT_EQ(c.g.num_live_nodes_of_kind(relu), 1);
  EXPECT_EQ(c.g.op_kind(c.n0), relu);
  EXPECT_THAT(c.g.LiveNodesOfKinds({relu}), ElementsAre(c.n1));
}

TEST(GraphTest, InitializerValuesFollowSetAndRemove) {
  Graph g;
  ValueId w = *g.AddValue("w");
  ValueId b = *g.AddValue("b");
  v1::Tensor t;
  t.set_name("w");
  g.SetInitializer(w, t);
  g.SetInitializer(b, t);
  g.SetInitializer(w, t);  // replaces, no second entry
  ASSERT_EQ(g.initializers().size(), 2u);
  EXPECT_THAT(g.InitializerValues(), ElementsAre(w, b));
  g.RemoveInitializer(w);
  EXPECT_THAT(g.InitializerValues(), ElementsAre(b));
  EXPECT_EQ(g.initializers().size(), 2u);  // the removed one is left empty, not erased
}

TEST(GraphTest, DuplicateValueNameRejected) {
  Graph g;
  ASSERT_TRUE(g.AddValue("v").ok());
  EXPECT_EQ(g.AddValue("v").status().code(), absl::StatusCode::kAlreadyExists);
  ValueId u = g.AddUniqueValue("v");
  EXPECT_NE(g.value(u).name, "v");
}

TEST(GraphTest, FindOrAddValueFindsLiveValuesAndAddsTheRest) {
  Chain c = MakeChain();
  EXPECT_EQ(c.g.FindOrAddValue("a"), c.a);
  const int slots = c.g.num_value_slots();
  const ValueId fresh = c.g.FindOrAddValue("fresh");
  ASSERT_TRUE(fresh.valid());
  EXPECT_EQ(c.g.num_value_slots(), slots + 1);
  EXPECT_EQ(c.g.value(fresh).name, "fresh");
  EXPECT_FALSE(c.g.value(fresh).producer.valid());
  EXPECT_EQ(c.g.FindValue("fresh"), fresh);
  EXPECT_EQ(c.g.FindOrAddValue("fresh"), fresh);  // found, not added twice
  // A removed value's name is free again: a new value takes it.
  c.g.ReplaceAllUsesWith(c.a, c.x);
  c.g.RemoveNode(c.n0);
  ASSERT_FALSE(c.g.FindValue("a").valid());
  const ValueId again = c.g.FindOrAddValue("a");
  EXPECT_NE(again, c.a);
  EXPECT_TRUE(c.g.value(again).alive);
  EXPECT_EQ(c.g.FindValue("a"), again);
}

TEST(GraphTest, SecondProducerRejected) {
  Chain c = MakeChain();
  auto dup = c.g.AddNode("r2", "Relu", "", {c.x}, {c.a});
  EXPECT_EQ(dup.status().code(), absl::StatusCode::kFailedPrecondition);
}

// Repeated outputs are found in linear time, and a refused node leaves no producer behind.
TEST(GraphTest, AddNodeChecksAMillionOutputsLinearlyAndUndoesARefusal) {
  constexpr int kOutputs = 1000000;
  Graph g;
  const ValueId x = g.AddValue("x").value();
  g.AddGraphInput(x);
  std::vector<ValueId> outputs;
  for (int i = 0; i < kOutputs; ++i) outputs.push_back(g.AddValue(absl::StrCat("y", i)).value());
  std::vector<ValueId> repeated = outputs;
  repeated.push_back(outputs[kOutputs / 2]);
  absl::StatusOr<NodeId> bad = g.AddNode("s", "Split", "", {x}, repeated);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("is listed twice as an output"));
  for (ValueId v : outputs) ASSERT_FALSE(g.value(v).producer.valid());
  EXPECT_EQ(g.num_live_nodes(), 0);
  absl::StatusOr<NodeId> ok = g.AddNode("s", "Split", "", {x}, outputs);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(g.value(outputs.back()).producer, *ok);
  EXPECT_EQ(g.value(outputs.back()).producer_output, kOutputs - 1);
}

TEST(GraphTest, ReplaceAllUsesAndRemoveNode) {
  Chain c = MakeChain();
  // Bypass r0: r1 reads x directly, then r0 is dead.
  c.g.ReplaceAllUsesWith(c.a, c.x);
  EXPECT_TRUE(c.g.value(c.a).uses.empty());
  EXPECT_EQ(c.g.node(c.n1).inputs[0], c.x);
  EXPECT_EQ(c.g.value(c.x).uses.size(), 2u);
  c.g.RemoveNode(c.n0);
  EXPECT_EQ(c.g.num_live_nodes(), 1);
  EXPECT_FALSE(c.g.value(c.a).alive);
  EXPECT_FALSE(c.g.FindValue("a").valid());
  ASSERT_EQ(c.g.value(c.x).uses.size(), 1u);
  EXPECT_EQ(c.g.value(c.x).uses[0].node, c.n1);
}

TEST(GraphTest, DetachOutputLetsAnotherNodeProduceTheValue) {
  Chain c = MakeChain();
  // Replace r1 (a -> y, a graph output) by two nodes that produce y.
  EXPECT_EQ(c.g.DetachOutput(c.n1, 0), c.y);
  EXPECT_FALSE(c.g.node(c.n1).outputs[0].valid());
  EXPECT_FALSE(c.g.value(c.y).producer.valid());
  EXPECT_FALSE(c.g.DetachOutput(c.n1, 0).valid());
  c.g.RemoveNode(c.n1);  // No outputs left to check.
  ValueId t = *c.g.AddValue("t");
  NodeId first = *c.g.AddNode("s0", "Sigmoid", "", {c.a}, {t});
  NodeId second = *c.g.AddNode("s1", "Mul", "", {c.a, t}, {c.y});
  EXPECT_EQ(c.g.value(c.y).producer, second);
  EXPECT_EQ(c.g.value(c.y).producer_output, 0);
  EXPECT_EQ(c.g.value(c.y).graph_output_count, 1);
  EXPECT_EQ(c.g.FindValue("y"), c.y);
  EXPECT_THAT(*c.g.TopologicalOrder(), ElementsAre(c.n0, first, second));
}

TEST(GraphTest, UseSlotsStayConsistentUnderSwapRemoval) {
  Graph g;
  ValueId x = *g.AddValue("x");
  g.AddGraphInput(x);
  std::vector<NodeId> nodes;
  for (int i = 0; i < 5; ++i) {
    ValueId o = *g.AddValue("o" + std::to_string(i));
    nodes.push_back(*g.AddNode("", "Relu", "", {x}, {o}));
    g.AddGraphOutput(o);
  }
  // Rewire nodes 1 and 3 away from x; x's remaining uses must be exactly 0, 2, 4.
  ValueId y = *g.AddValue("y");
  g.AddGraphInput(y);
  g.SetInput(nodes[1], 0, y);
  g.SetInput(nodes[3], 0, y);
  std::vector<int> users;
  for (const Use& u : g.value(x).uses) users.push_back(u.node.value());
  std::sort(users.begin(), users.end());
  EXPECT_THAT(users, ElementsAre(0, 2, 4));
  for (const Use& u : g.value(x).uses) {
    EXPECT_EQ(g.value(x).uses[g.use_slot(u.node, u.input_index)].node, u.node);
  }
}

TEST(GraphTest, TopologicalOrderKeepsSortedOrder) {
  Chain c = MakeChain();
  auto order = c.g.TopologicalOrder();
  ASSERT_TRUE(order.ok());
  EXPECT_THAT(*order, ElementsAre(c.n0, c.n1));
}

TEST(GraphTest, TopologicalOrderSortsOutOfOrderNodes) {
  Graph g;
  ValueId x = *g.AddValue("x");
  g.AddGraphInput(x);
  ValueId a = *g.AddValue("a");
  ValueId b = *g.AddValue("b");
  ValueId c = *g.AddValue("c");
  NodeId consumer = *g.AddNode("consumer", "Relu", "", {b}, {c});
  NodeId unrelated = *g.AddNode("unrelated", "Relu", "", {x}, {a});
  NodeId producer = *g.AddNode("producer", "Relu", "", {x}, {b});
  g.AddGraphOutput(c);
  g.AddGraphOutput(a);
  auto order = g.TopologicalOrder();
  ASSERT_TRUE(order.ok());
  // Smallest ready id first: "unrelated" (1) before "producer" (2) before "consumer" (0).
  EXPECT_THAT(*order, ElementsAre(unrelated, producer, consumer));
}

// Graph attributes `names`, each a branch whose one node reads `read` by name.
AttributeMap BranchesReading(const std::string& read, std::vector<std::string> names) {
  v1::Graph branch;
  v1::Node* n = branch.add_nodes();
  n->set_op_type("Identity");
  n->add_inputs(read);
  n->add_outputs("out");
  branch.add_outputs()->set_name("out");
  AttributeMap attrs;
  for (const std::string& name : names) {
    v1::Attribute a;
    a.set_name(name);
    *a.mutable_g() = branch;
    attrs[name] = a;
  }
  return attrs;
}

// An If whose branch reads 't' by name, with the node producing 't' added after it.
TEST(GraphTest, TopologicalOrderPutsCapturedValuesFirst) {
  Graph g;
  ValueId cond = *g.AddValue("cond");
  g.AddGraphInput(cond);
  ValueId x = *g.AddValue("x");
  g.AddGraphInput(x);
  ValueId t = *g.AddValue("t");
  ValueId y = *g.AddValue("y");
  NodeId if_node = *g.AddNode("if", "If", "", {cond}, {y},
                              BranchesReading("t", {"then_branch", "else_branch"}));
  NodeId producer = *g.AddNode("producer", "Relu", "", {x}, {t});
  g.AddGraphOutput(y);
  EXPECT_THAT(g.CapturedInputs(if_node), ElementsAre(t));
  auto order = g.TopologicalOrder();
  ASSERT_TRUE(order.ok()) << order.status();
  EXPECT_THAT(*order, ElementsAre(producer, if_node));
  // A schedule that runs the If first is refused, naming the capture.
  absl::Status s = g.SetSchedule({if_node, producer});
  EXPECT_THAT(s.message(), HasSubstr("that its subgraph reads"));
}

// Renaming a value can make a subgraph's read by name resolve to it: the order must follow.
// Only graphs with subgraphs pay for that; the count of such nodes follows AddNode/RemoveNode.
TEST(GraphTest, RenameReordersCapturesAndSubgraphNodesAreCounted) {
  Graph g;
  ValueId cond = *g.AddValue("cond");
  g.AddGraphInput(cond);
  ValueId x = *g.AddValue("x");
  g.AddGraphInput(x);
  ValueId t = *g.AddValue("t");
  ValueId y = *g.AddValue("y");
  EXPECT_EQ(g.num_subgraph_nodes(), 0);
  NodeId if_node =
      *g.AddNode("if", "If", "", {cond}, {y}, BranchesReading("renamed", {"then_branch"}));
  EXPECT_TRUE(g.node(if_node).has_subgraphs);
  EXPECT_EQ(g.num_subgraph_nodes(), 1);
  NodeId producer = *g.AddNode("producer", "Relu", "", {x}, {t});
  EXPECT_FALSE(g.node(producer).has_subgraphs);
  g.AddGraphOutput(y);
  g.AddGraphOutput(t);
  EXPECT_THAT(*g.TopologicalOrder(), ElementsAre(if_node, producer));  // "renamed" is outer
  ASSERT_TRUE(g.RenameValue(t, "renamed").ok());
  EXPECT_THAT(*g.TopologicalOrder(), ElementsAre(producer, if_node));
  g.ReplaceGraphOutput(y, t);
  g.RemoveNode(if_node);
  EXPECT_EQ(g.num_subgraph_nodes(), 0);
}

// The verifier checks id order in its own sweep and hands the result over; a recorded schedule
// or subgraphs (captures it does not see) keep the graph's own ordering.
TEST(GraphTest, NoteIdOrderIsTopologicalKeepsSchedules) {
  TwoReaders t = MakeTwoReaders();
  Graph& g = t.g;
  const NodeId first = t.first, second = t.second;
  g.NoteIdOrderIsTopological();
  EXPECT_THAT(*g.TopologicalOrder(), ElementsAre(first, second));
  ASSERT_TRUE(g.SetSchedule({second, first}).ok());
  g.NoteIdOrderIsTopological();
  EXPECT_THAT(*g.TopologicalOrder(), ElementsAre(second, first));
}

TEST(GraphTest, CycleIsReportedWithNodeNames) {
  Graph g;
  ValueId a = *g.AddValue("a");
  ValueId b = *g.AddValue("b");
  ASSERT_TRUE(g.AddNode("first", "Relu", "", {b}, {a}).ok());
  ASSERT_TRUE(g.AddNode("second", "Relu", "", {a}, {b}).ok());
  auto order = g.TopologicalOrder();
  ASSERT_FALSE(order.ok());
  EXPECT_EQ(order.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(order.status().message(), HasSubstr("cycle"));
  EXPECT_THAT(order.status().message(), HasSubstr("node 'first' (Relu)"));
  EXPECT_THAT(order.status().message(), HasSubstr("node 'second' (Relu)"));
}

TEST(GraphTest, MillionNodeChainSortsWithoutRecursion) {
  constexpr int kNodes = 1000000;
  Graph g;
  ValueId prev = *g.AddValue("x");
  g.AddGraphInput(prev);
  // Add in reverse so the slow (heap) path of TopologicalOrder runs.
  std::vector<ValueId> values(kNodes);
  for (int i = 0; i < kNodes; ++i) values[i] = *g.AddValue("v" + std::to_string(i));
  for (int i = kNodes - 1; i >= 0; --i) {
    ValueId in = i == 0 ? prev : values[i - 1];
    ASSERT_TRUE(g.AddNode("", "Relu", "", {in}, {values[i]}).ok());
  }
  g.AddGraphOutput(values.back());
  auto order = g.TopologicalOrder();
  ASSERT_TRUE(order.ok());
  ASSERT_EQ(order->size(), static_cast<size_t>(kNodes));
  EXPECT_EQ(order->front(), NodeId(kNodes - 1));
  EXPECT_EQ(order->back(), NodeId(0));
}

TEST(GraphTest, CachedOrderFollowsEdits) {
  TwoReaders t = MakeTwoReaders();
  Graph& g = t.g;
  const ValueId x = t.x, a = t.a, b = t.b;
  const NodeId first = t.first, second = t.second;
  ASSERT_THAT(*g.TopologicalOrder(), ElementsAre(first, second));
  // "first" now reads the output of "second": the cached order must not be reused.
  g.SetInput(first, 0, b);
  EXPECT_THAT(*g.TopologicalOrder(), ElementsAre(second, first));

  // Replacing uses by a value defined later also reorders.
  ValueId c = *g.AddValue("c");
  ValueId d = *g.AddValue("d");
  NodeId reader = *g.AddNode("reader", "Relu", "", {x}, {c});
  NodeId late = *g.AddNode("late", "Relu", "", {x}, {d});
  g.AddGraphOutput(c);
  g.AddGraphOutput(d);
  ASSERT_THAT(*g.TopologicalOrder(), ElementsAre(second, first, reader, late));
  ValueId e = *g.AddValue("e");
  NodeId user = *g.AddNode("user", "Relu", "", {c}, {e});
  g.AddGraphOutput(e);
  ASSERT_TRUE(g.TopologicalOrder().ok());
  g.ReplaceAllUsesWith(c, d);
  auto order = g.TopologicalOrder();
  ASSERT_TRUE(order.ok());
  auto pos = [&](NodeId id) { return std::find(order->begin(), order->end(), id) - order->begin(); };
  EXPECT_LT(pos(late), pos(user));
  // Removing a node keeps the cached order, minus the node.
  g.ReplaceGraphOutput(a, b);
  g.RemoveNode(first);
  EXPECT_THAT(*g.TopologicalOrder(), ::testing::Not(::testing::Contains(first)));
}

TEST(GraphTest, RenameValue) {
  Chain c = MakeChain();
  EXPECT_EQ(c.g.RenameValue(c.a, "y").code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(c.g.RenameValue(c.a, "hidden").ok());
  EXPECT_EQ(c.g.FindValue("hidden"), c.a);
  EXPECT_FALSE(c.g.FindValue("a").valid());
}

// The name table holds value ids and reads the names from the value slots: lookups must
// survive the slots' buffer growing, the graph being moved, renames onto a removed value's
// name, and many names.
TEST(GraphTest, NameTableFollowsGrowthMovesAndRenames) {
  Graph g;  // no Reserve: the value slots reallocate many times below
  std::vector<ValueId> ids;
  for (int i = 0; i < 5000; ++i) ids.push_back(*g.AddValue("value_" + std::to_string(i)));
  for (int i = 0; i < 5000; i += 499) {
    EXPECT_EQ(g.FindValue("value_" + std::to_string(i)), ids[i]) << i;
  }
  EXPECT_FALSE(g.FindValue("value_5000").valid());
  Graph moved = std::move(g);
  EXPECT_EQ(moved.FindValue("value_17"), ids[17]);
  // The moved-from graph stays usable: it builds a name table of its own again.
  const ValueId fresh = g.FindOrAddValue("fresh");  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(g.FindValue("fresh"), fresh);
  EXPECT_FALSE(moved.FindValue("fresh").valid());
  EXPECT_EQ(moved.FindOrAddValue("value_4999"), ids[4999]);
  const ValueId added = moved.FindOrAddValue("after_move");
  EXPECT_EQ(moved.FindValue("after_move"), added);
  Graph assigned;
  assigned = std::move(moved);
  EXPECT_EQ(assigned.FindValue("value_0"), ids[0]);
  EXPECT_EQ(assigned.FindValue("after_move"), added);

  // Renames: the old name is free, the new one found; a long name (on the heap) too.
  const std::string long_name(100, 'n');
  ASSERT_TRUE(assigned.RenameValue(ids[1], long_name).ok());
  EXPECT_EQ(assigned.FindValue(long_name), ids[1]);
  EXPECT_FALSE(assigned.FindValue("value_1").valid());
  const int slots = assigned.num_value_slots();
  EXPECT_EQ(assigned.FindOrAddValue("value_1").value(), slots);  // a new value takes it
  EXPECT_EQ(assigned.RenameValue(ids[2], long_name).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(assigned.FindValue("value_2"), ids[2]);  // a failed rename changes nothing
}

TEST(GraphTest, RenameOntoARemovedValuesName) {
  Chain c = MakeChain();
  c.g.ReplaceAllUsesWith(c.a, c.x);
  c.g.RemoveNode(c.n0);  // "a" is dead and its name free
  ASSERT_FALSE(c.g.FindValue("a").valid());
  ASSERT_TRUE(c.g.RenameValue(c.y, "a").ok());
  EXPECT_EQ(c.g.FindValue("a"), c.y);
  EXPECT_FALSE(c.g.FindValue("y").valid());
  // And back: "y" is free, "a" frees up again.
  ASSERT_TRUE(c.g.RenameValue(c.y, "y").ok());
  EXPECT_EQ(c.g.FindValue("y"), c.y);
  EXPECT_FALSE(c.g.FindValue("a").valid());
}

TEST(GraphTest, NodeLabels) {
  Graph g;
  ValueId x = *g.AddValue("x");
  ValueId y = *g.AddValue("y");
  NodeId unnamed = *g.AddNode("", "MyOp", "com.example", {x}, {y});
  EXPECT_EQ(g.NodeLabel(unnamed), "node #0 (com.example::MyOp)");
}

}  // namespace
}  // namespace graphopt
