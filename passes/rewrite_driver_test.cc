#include "passes/rewrite_driver.h"

#include <cstdlib>
#include <string>
#include <utility>

#include "gmock/gmock.h"
#include "graph/proto_convert.h"
#include "graph/test_ops.h"
#include "gtest/gtest.h"
#include "passes/pass_test_util.h"
#include "passes/rewrite_util.h"

namespace graphopt {
namespace {

using ::graphopt::testing::AddEffectOps;
using ::graphopt::testing::OpTypes;
using ::graphopt::testing::PassTestEnv;
using ::testing::ElementsAre;
using ::testing::Pair;

// The producer of the root's input 0 when it runs `op`.
NodeId InputProducer(const Graph& g, NodeId root, const char* op) {
  const Node& n = g.node(root);
  if (n.inputs.empty() || !n.inputs[0].valid()) return NodeId();
  const NodeId p = g.value(n.inputs[0]).producer;
  return p.valid() && g.node(p).op_type == op ? p : NodeId();
}

// Neg(Neg(x)) = x.
RewritePattern NegNeg() {
  return RewritePattern{
      "neg_neg",
      {"Neg"},
      [](const RewriteContext& c, NodeId id) { return InputProducer(c.graph, id, "Neg").valid(); },
      [](RewriteContext& c, NodeId id) -> absl::StatusOr<RewriteResult> {
        const NodeId inner = InputProducer(c.graph, id, "Neg");
        if (ReplaceNodeByValue(c.graph, id, c.graph.node(inner).inputs[0], c.hidden)) {
          return RewriteResult::Applied();
        }
        return RewriteResult::Refused("connects graph inputs and outputs");
      }};
}

// Replaces the root by a new node running `to` on the same input and output.
absl::StatusOr<RewriteResult> Replace(RewriteContext& c, NodeId id, const char* to) {
  const ValueId x = c.graph.node(id).inputs[0];
  const std::string name = c.graph.node(id).name;
  const ValueId y = c.graph.DetachOutput(id, 0);
  c.graph.RemoveNode(id);
  absl::StatusOr<NodeId> added = c.graph.AddNode(name, to, "", {x}, {y});
  if (!added.ok()) return added.status();
  return RewriteResult::Applied();
}

RewritePattern Turn(const char* name, const char* from, const char* to) {
  return RewritePattern{name, {from}, nullptr, [to](RewriteContext& c, NodeId id) {
                          return Replace(c, id, to);
                        }};
}

struct Outcome {
  absl::StatusOr<RewriteStats> stats;
  v1::Graph graph;
};

Outcome Apply(const PassTestEnv& env, const std::string& text,
          const std::vector<RewritePattern>& patterns, RewriteDriverOptions options = {}) {
  absl::StatusOr<Graph> g = env.Parse(text);
  if (!g.ok()) std::abort();
  PassContext context;
  context.ops = &env.ops();
  Outcome run{ApplyPatterns(*g, context, patterns, options), {}};
  run.graph = GraphToProto(*g);
  return run;
}

TEST(RewriteDriverTest, RewritesChainsInOneSweepAndRemovesDeadDefinitions) {
  PassTestEnv env;
  Outcome run = Apply(env, R"pb(
    inputs { name: "x" }
    nodes { op_type: "Neg" inputs: "x" outputs: "a" }
    nodes { op_type: "Neg" inputs: "a" outputs: "b" }
    nodes { op_type: "Neg" inputs: "b" outputs: "c" }
    nodes { op_type: "Neg" inputs: "c" outputs: "d" }
    nodes { op_type: "Exp" inputs: "d" outputs: "y" }
    outputs { name: "y" })pb",
                  {NegNeg()});
  ASSERT_TRUE(run.stats.ok()) << run.stats.status();
  // Neg(Neg(x)) goes at b; d = Neg(Neg(b)) reads x after that and goes too; the inner Negs,
  // unread, go with them.
  EXPECT_THAT(OpTypes(run.graph), ElementsAre("Exp"));
  EXPECT_EQ(run.graph.nodes(0).inputs(0), "x");
  EXPECT_THAT(run.stats->applied, ElementsAre(Pair("neg_neg", 2)));
  EXPECT_TRUE(run.stats->fixpoint);
  EXPECT_EQ(run.stats->Summary("simplified"), "simplified 2: neg_neg 2");
}

TEST(RewriteDriverTest, CountsRefusals) {
  PassTestEnv env;
  // y is a graph output and x a graph input: the value cannot take over the output's name.
  Outcome run = Apply(env, R"pb(
    inputs { name: "x" }
    nodes { op_type: "Neg" inputs: "x" outputs: "a" }
    nodes { op_type: "Neg" inputs: "a" outputs: "y" }
    outputs { name: "y" }
    outputs { name: "a" })pb",
                  {NegNeg()});
  ASSERT_TRUE(run.stats.ok()) << run.stats.status();
  EXPECT_THAT(OpTypes(run.graph), ElementsAre("Neg", "Neg"));
  EXPECT_EQ(run.stats->total_applied, 0);
  EXPECT_EQ(run.stats->Summary("simplified"),
            "simplified 0; refused 1: connects graph inputs and outputs 1");
}

TEST(RewriteDriverTest, LeavesRootsTouchingHiddenAccessesAlone) {
  PassTestEnv env;
  AddEffectOps(env);
  Outcome run = Apply(env, R"pb(
    inputs { name: "x" }
    inputs { name: "z" }
    nodes { op_type: "Neg" inputs: "x" outputs: "a" }
    nodes { op_type: "Neg" inputs: "a" outputs: "b" }
    nodes { op_type: "Accumulate" domain: "my.ops" inputs: "b" inputs: "z" outputs: "w" }
    nodes { op_type: "Exp" inputs: "b" outputs: "y" }
    outputs { name: "y" }
    outputs { name: "w" })pb",
                  {NegNeg()});
  ASSERT_TRUE(run.stats.ok()) << run.stats.status();
  EXPECT_THAT(OpTypes(run.graph), ElementsAre("Neg", "Neg", "Accumulate", "Exp"));
  EXPECT_EQ(run.stats->Summary("simplified"), "simplified 0; refused 1: hidden accesses 1");
}

TEST(RewriteDriverTest, VisitsNodesARewriteCreatedInAFurtherSweep) {
  PassTestEnv env;
  Outcome run = Apply(env, R"pb(
    inputs { name: "x" }
    nodes { op_type: "Tanh" inputs: "x" outputs: "y" }
    outputs { name: "y" })pb",
                  {Turn("tanh_to_sigmoid", "Tanh", "Sigmoid"),
                   Turn("sigmoid_to_relu", "Sigmoid", "Relu")});
  ASSERT_TRUE(run.stats.ok()) << run.stats.status();
  EXPECT_THAT(OpTypes(run.graph), ElementsAre("Relu"));
  EXPECT_EQ(run.stats->sweeps, 2);
  EXPECT_TRUE(run.stats->fixpoint);
  EXPECT_EQ(run.stats->Summary("rewrote"), "rewrote 2: sigmoid_to_relu 1, tanh_to_sigmoid 1");
}

TEST(RewriteDriverTest, StopsAtTheSweepBoundAndSaysSo) {
  PassTestEnv env;
  RewriteDriverOptions options;
  options.max_sweeps = 3;
  options.order = RewriteDriverOptions::Order::kNodeId;
  Outcome run = Apply(env, R"pb(
    inputs { name: "x" }
    nodes { op_type: "Tanh" inputs: "x" outputs: "y" }
    outputs { name: "y" })pb",
                  {Turn("tanh_to_sigmoid", "Tanh", "Sigmoid"),
                   Turn("sigmoid_to_tanh", "Sigmoid", "Tanh")},
                  options);
  ASSERT_TRUE(run.stats.ok()) << run.stats.status();
  EXPECT_EQ(run.stats->sweeps, 3);
  EXPECT_FALSE(run.stats->fixpoint);
  EXPECT_THAT(run.stats->Summary("rewrote"), ::testing::EndsWith("stopped after 3 sweeps, still changing"));
}

TEST(RewriteDriverTest, DoesNotSweepGraphsWithoutItsOps) {
  PassTestEnv env;
  Outcome run = Apply(env, R"pb(
    inputs { name: "x" }
    nodes { op_type: "Exp" inputs: "x" outputs: "y" }
    outputs { name: "y" })pb",
                  {NegNeg()});
  ASSERT_TRUE(run.stats.ok()) << run.stats.status();
  EXPECT_EQ(run.stats->sweeps, 0);
  EXPECT_EQ(run.stats->Summary("simplified"), "simplified 0");
}

TEST(RewriteDriverTest, NamesThePatternWhoseRewriteFailed) {
  PassTestEnv env;
  RewritePattern failing{"broken", {"Exp"}, nullptr, [](RewriteContext&, NodeId) {
                           return absl::StatusOr<RewriteResult>(absl::InternalError("boom"));
                         }};
  Outcome run = Apply(env, R"pb(
    inputs { name: "x" }
    nodes { op_type: "Exp" inputs: "x" outputs: "y" }
    outputs { name: "y" })pb",
                  {failing});
  EXPECT_EQ(run.stats.status(), absl::InternalError("broken: boom"));
}

}  // namespace
}  // namespace graphopt
