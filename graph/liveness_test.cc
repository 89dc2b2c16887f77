#include "graph/liveness.h"

#include "google/protobuf/text_format.h"
#include "graph/proto_convert.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {

v1::Graph ParseProto(const std::string& text) {
  v1::Graph proto;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &proto));
  return proto;
}

Graph Parse(const std::string& text) {
  absl::StatusOr<Graph> g = GraphFromProto(ParseProto(text));
  EXPECT_TRUE(g.ok()) << g.status();
  return *std::move(g);
}

constexpr char kWithSubgraph[] = R"pb(
  inputs { name: "x" }
  nodes { op_type: "Relu" inputs: "x" outputs: "a" }
  nodes { op_type: "Relu" inputs: "x" outputs: "b" }
  nodes {
    op_type: "If" inputs: "x" outputs: "c"
    attributes { name: "then_branch" g {
      nodes { op_type: "Identity" inputs: "a" outputs: "t" }
      outputs { name: "t" }
    } }
    attributes { name: "else_branch" g {
      nodes { op_type: "Identity" inputs: "far" outputs: "e" }
      outputs { name: "e" }
    } }
  }
  nodes { op_type: "Add" inputs: "c" inputs: "b" outputs: "y" }
  outputs { name: "y" }
)pb";

TEST(FreeNamesTest, NamesReadFromOutsideNestedGraphs) {
  EXPECT_EQ(FreeNames(ParseProto(R"pb(
              nodes { op_type: "Identity" inputs: "outer1" outputs: "a" }
              nodes {
                op_type: "If" inputs: "a" outputs: "b"
                attributes { name: "then_branch" g {
                  nodes { op_type: "Identity" inputs: "a" outputs: "c" }
                  nodes { op_type: "Identity" inputs: "outer2" outputs: "d" }
                  outputs { name: "c" }
                } }
              }
              outputs { name: "b" }
            )pb")),
            (std::vector<std::string>{"outer1", "outer2"}));
}

TEST(LivenessTest, CapturesExtendLiveRanges) {
  Graph g = Parse(kWithSubgraph);
  absl::StatusOr<std::vector<NodeId>> order = g.TopologicalOrder();
  ASSERT_TRUE(order.ok());
  Liveness live = ComputeLiveness(g, *order);
  const ValueId a = g.FindValue("a"), b = g.FindValue("b"), x = g.FindValue("x");
  EXPECT_EQ(live.def_step[a.value()], 0);
  // Only the If's then-branch reads 'a': it lives until the If (step 2).
  EXPECT_EQ(live.last_use[a.value()], 2);
  EXPECT_EQ(live.last_use[b.value()], 3);
  EXPECT_EQ(live.def_step[x.value()], -1);
  EXPECT_EQ(live.last_use[g.FindValue("y").value()], -1);
  EXPECT_EQ(live.captures[2], std::vector<ValueId>{a});
  // Attributes in name order: else_branch first.
  EXPECT_EQ(SubgraphFreeNames(g.node((*order)[2])), (std::vector<std::string>{"far", "a"}));
}

TEST(LivenessTest, FingerprintFollowsOrderAndNames) {
  Graph g = Parse(kWithSubgraph);
  std::vector<NodeId> order = *g.TopologicalOrder();
  const uint64_t f = PlanFingerprint(g, order);
  EXPECT_EQ(f, PlanFingerprint(g, order));
  std::vector<NodeId> swapped = order;
  std::swap(swapped[0], swapped[1]);
  EXPECT_NE(f, PlanFingerprint(g, swapped));
  // The same graph read again from the wire gives the same fingerprint.
  Graph again = GraphFromProto(GraphToProto(g)).value();
  EXPECT_EQ(f, PlanFingerprint(again, *again.TopologicalOrder()));
  ASSERT_TRUE(g.RenameValue(g.FindValue("b"), "b2").ok());
  EXPECT_NE(f, PlanFingerprint(g, order));
}

TEST(CheckPlacementsTest, AcceptsDisjointAndReportsOverlaps) {
  // Same bytes at disjoint steps, and neighbours in bytes at the same steps: fine.
  EXPECT_TRUE(CheckPlacements({{0, 1, 0, 64, 0}, {2, 3, 0, 64, 1}, {0, 3, 64, 64, 2},
                               {1, 1, 128, 0, 3}})
                  .ok());
  // Closed step ranges: a buffer read at step 1 and one written at step 1 overlap.
  absl::Status s = CheckPlacements({{0, 1, 0, 64, 0}, {1, 2, 32, 64, 1}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_NE(s.message().find("buffers 0"), std::string::npos) << s;
  // An overlap with a lower neighbour is found too.
  EXPECT_FALSE(CheckPlacements({{0, 5, 100, 50, 0}, {3, 4, 0, 101, 1}}).ok());
  EXPECT_FALSE(CheckPlacements({{0, 5, 0, 64, 0}, {5, 6, 0, 64, 1}}).ok());
}

TEST(ScheduleTest, RecordedScheduleIsTheOrderUntilAnEditBreaksIt) {
  Graph g = Parse(kWithSubgraph);
  std::vector<NodeId> order = *g.TopologicalOrder();
  std::vector<NodeId> swapped = order;
  std::swap(swapped[0], swapped[1]);
  ASSERT_TRUE(g.SetSchedule(swapped).ok());
  EXPECT_EQ(*g.TopologicalOrder(), swapped);
  // Written out in that order and read back, the node order stays.
  Graph again = GraphFromProto(GraphToProto(g)).value();
  EXPECT_EQ(again.node((*again.TopologicalOrder())[0]).outputs[0], again.FindValue("b"));
  // Not topological, or missing a node: refused.
  std::vector<NodeId> reversed(order.rbegin(), order.rend());
  EXPECT_EQ(g.SetSchedule(reversed).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(g.SetSchedule({order[0]}).ok());
  // A node added later makes the schedule stale: the default order comes back.
  ValueId z = g.AddUniqueValue("z");
  ASSERT_TRUE(g.AddNode("", "Relu", "", {g.FindValue("y")}, {z}).ok());
  EXPECT_EQ((*g.TopologicalOrder())[0], order[0]);
}

}  // namespace
}  // namespace graphopt
