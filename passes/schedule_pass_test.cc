#include "passes/schedule_pass.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/proto_convert.h"
#include "graph/proto_util.h"
#include "graph/test_ops.h"
#include "gtest/gtest.h"
#include "passes/pass_test_util.h"
#include "passes/plan_memory_test_util.h"

namespace graphopt {
namespace {

using ::graphopt::testing::OpTypes;
using ::graphopt::testing::GraphText;
using ::graphopt::testing::PassTestEnv;
using ::testing::HasSubstr;

// Three wide branches, each narrowed right away; in node order all wide values are computed
// before the first is narrowed.
constexpr char kBranches[] = R"pb(
  inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 4 } dims { size: 8 } } } }
  inputs { name: "w" type { dtype: DT_FLOAT32 shape { dims { size: 8 } dims { size: 512 } } } }
  inputs { name: "v" type { dtype: DT_FLOAT32 shape { dims { size: 512 } dims { size: 2 } } } }
  nodes { name: "p1" op_type: "MatMul" inputs: "x" inputs: "w" outputs: "p1" }
  nodes { name: "p2" op_type: "MatMul" inputs: "x" inputs: "w" outputs: "p2" }
  nodes { name: "p3" op_type: "MatMul" inputs: "x" inputs: "w" outputs: "p3" }
  nodes { name: "q1" op_type: "MatMul" inputs: "p1" inputs: "v" outputs: "q1" }
  nodes { name: "q2" op_type: "MatMul" inputs: "p2" inputs: "v" outputs: "q2" }
  nodes { name: "q3" op_type: "MatMul" inputs: "p3" inputs: "v" outputs: "q3" }
  nodes { name: "c" op_type: "Concat" inputs: "q1" inputs: "q2" inputs: "q3" outputs: "y"
          attributes { name: "axis" i: 1 } }
  outputs { name: "y" }
)pb";

std::vector<std::string> NodeNames(const v1::Graph& g) {
  std::vector<std::string> names;
  for (const v1::Node& n : g.nodes()) names.push_back(n.name());
  return names;
}

int64_t Peak(const PassTestEnv& env, const v1::Graph& g) {
  Graph graph = GraphFromProto(g).value();
  return PeakLiveBytes(graph, *graph.TopologicalOrder(), ValuesReadByNodes(graph), {});
}

TEST(SchedulePassTest, NarrowsEachBranchBeforeOpeningTheNext) {
  PassTestEnv env;
  PipelineResult result;
  auto before = env.Run(kBranches, {"infer_shape"});
  auto out = env.Run(kBranches, {"schedule"}, &result);
  ASSERT_TRUE(out.ok() && before.ok()) << out.status();
  EXPECT_EQ(NodeNames(*out), (std::vector<std::string>{"p1", "q1", "p2", "q2", "p3", "q3", "c"}));
  EXPECT_EQ(Peak(env, *before), 3 * 8192 + 64);
  EXPECT_EQ(Peak(env, *out), 8192 + 3 * 64);
  EXPECT_TRUE(result.runs.back().changed);
  EXPECT_THAT(result.runs.back().messages[0], HasSubstr("current 24640"));
  // Scheduling again keeps the order.
  PipelineResult again;
  ASSERT_TRUE(env.Run(GraphText(*out), {"schedule"}, &again).ok());
  EXPECT_FALSE(again.runs.back().changed);
}

// A cheap chain (a1, a2) and a heavy MatMul (m), both small in their outputs, then a large final
// value (big) that sets the peak whatever comes first. Running m first holds less while m runs.
constexpr char kHeavyBesideCheap[] = R"pb(
  inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 256 } } } }
  inputs { name: "p" type { dtype: DT_FLOAT32 shape { dims { size: 1 } dims { size: 4096 } } } }
  inputs { name: "q" type { dtype: DT_FLOAT32 shape { dims { size: 4096 } dims { size: 1 } } } }
  inputs { name: "u" type { dtype: DT_FLOAT32 shape { dims { size: 1024 } dims { size: 1 } } } }
  nodes { name: "a1" op_type: "Relu" inputs: "x" outputs: "a1" }
  nodes { name: "a2" op_type: "ReduceSum" inputs: "a1" outputs: "a2" }
  nodes { name: "m" op_type: "MatMul" inputs: "p" inputs: "q" outputs: "m" }
  nodes { name: "add" op_type: "Add" inputs: "a2" inputs: "m" outputs: "s" }
  nodes { name: "big" op_type: "MatMul" inputs: "u" inputs: "s" outputs: "big" }
  outputs { name: "big" }
)pb";

TEST(SchedulePassTest, EqualPeaksGoToTheOrderHoldingLessOverTheEstimatedWork) {
  PassTestEnv env;
  PipelineResult result;
  auto out = env.Run(kHeavyBesideCheap, {"schedule"}, &result);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(NodeNames(*out), (std::vector<std::string>{"m", "a1", "a2", "add", "big"}));
  const std::string& note = result.runs.back().messages[0];
  EXPECT_THAT(note, HasSubstr("current 4160, greedy 4160"));
  EXPECT_THAT(note, HasSubstr("kept greedy (of equal peaks"));

  // With the MatMul's size unknown (a symbolic dim) nothing says it is heavy: the current order
  // stays.
  std::string symbolic = kHeavyBesideCheap;
  const std::string p_dims = "dims { size: 1 } dims { size: 4096 }";
  symbolic.replace(symbolic.find(p_dims), p_dims.size(), "dims { size: 1 } dims { symbol: \"k\" }");
  const std::string q_dims = "dims { size: 4096 } dims { size: 1 }";
  symbolic.replace(symbolic.find(q_dims), q_dims.size(), "dims { symbol: \"k\" } dims { size: 1 }");
  PipelineResult kept;
  auto unknown = env.Run(symbolic, {"schedule"}, &kept);
  ASSERT_TRUE(unknown.ok()) << unknown.status();
  EXPECT_EQ(NodeNames(*unknown), (std::vector<std::string>{"a1", "a2", "m", "add", "big"}));
}

// Brute force: every node comes after the producers of everything it reads, including what its
// subgraphs read.
void ExpectTopological(const v1::Graph& g) {
  std::set<std::string> defined;
  for (const auto& i : g.inputs()) defined.insert(i.name());
  for (const auto& t : g.initializers()) defined.insert(t.name());
  std::set<std::string> produced_later;
  for (const v1::Node& n : g.nodes()) {
    for (const std::string& o : n.outputs()) produced_later.insert(o);
  }
  for (const v1::Node& n : g.nodes()) {
    std::vector<std::string> reads(n.inputs().begin(), n.inputs().end());
    for (const v1::Attribute& a : n.attributes()) {
      if (!a.has_g()) continue;
      for (const v1::Node& inner : a.g().nodes()) {
        reads.insert(reads.end(), inner.inputs().begin(), inner.inputs().end());
      }
    }
    for (const std::string& r : reads) {
      if (!r.empty() && produced_later.count(r)) {
        EXPECT_TRUE(defined.count(r)) << n.op_type() << " reads '" << r << "' before it is made";
      }
    }
    for (const std::string& o : n.outputs()) defined.insert(o);
  }
}

TEST(SchedulePassTest, RandomGraphsStayTopologicalAndNeverPeakHigher) {
  PassTestEnv env;
  int improved = 0;
  for (uint32_t seed = 1; seed <= 120; ++seed) {
    SCOPED_TRACE(seed);
    const std::string text = GraphText(testing::RandomPlanningGraph(seed, 10 + seed % 50));
    auto before = env.Run(text, {"infer_shape"});
    auto out = env.Run(text, {"schedule"});
    ASSERT_TRUE(before.ok() && out.ok()) << out.status();
    ExpectTopological(*out);
    const int64_t a = Peak(env, *before), b = Peak(env, *out);
    EXPECT_LE(b, a);
    improved += b < a;
    // The same input gives the same bytes.
    EXPECT_EQ(SerializeDeterministic(*out), SerializeDeterministic(*env.Run(text, {"schedule"})));
  }
  EXPECT_GT(improved, 10);
}

// A recomputed node ("<node>/remat", made by the rematerialize pass) placed early in node order.
constexpr char kEarlyRecomputation[] = R"pb(
  inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 64 } dims { size: 64 } } } }
  nodes { name: "f" op_type: "Relu" inputs: "x" outputs: "f" }
  nodes { name: "f/remat" op_type: "Relu" inputs: "x" outputs: "f/remat" }
  nodes { name: "a" op_type: "Relu" inputs: "f" outputs: "a" }
  nodes { name: "s" op_type: "ReduceSum" inputs: "a" outputs: "s" }
  nodes { name: "t" op_type: "Relu" inputs: "s" outputs: "t" }
  nodes { name: "m" op_type: "Mul" inputs: "f/remat" inputs: "t" outputs: "y" }
  outputs { name: "y" }
)pb";

TEST(SchedulePassTest, RecomputedNodesRunRightBeforeTheirFirstReader) {
  PassTestEnv env;
  auto out = env.Run(kEarlyRecomputation, {"schedule"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(NodeNames(*out), (std::vector<std::string>{"f", "a", "s", "t", "f/remat", "m"}));
  // Whatever order it is given.
  Graph graph = env.Parse(kEarlyRecomputation).value();
  std::vector<NodeId> order = *graph.TopologicalOrder();
  std::vector<NodeId> sunk = SinkRecomputation(graph, ValuesReadByNodes(graph), order, true);
  std::vector<std::string> names;
  for (NodeId id : sunk) names.push_back(std::string(graph.node(id).name));
  EXPECT_EQ(names, (std::vector<std::string>{"f", "a", "s", "t", "f/remat", "m"}));
  EXPECT_EQ(SinkRecomputation(graph, ValuesReadByNodes(graph), order, false), order);
}

TEST(SchedulePassTest, GraphsWithEffectsKeepTheirOrder) {
  PassTestEnv env;
  OpDef print = graphopt::testing::MakeTestOp("Print", {"x"}, {"y"});
  print.descriptor.set_domain("my.ops");
  print.descriptor.set_has_side_effects(true);
  ASSERT_TRUE(env.AddOp(std::move(print)).ok());
  std::string text = kBranches;
  text.insert(text.rfind("outputs"), R"pb(nodes { op_type: "Print" domain: "my.ops" inputs: "p1" outputs: "z" }
  )pb");
  PipelineResult result;
  auto out = env.Run(text, {"schedule"}, &result);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(result.runs.back().changed);
  EXPECT_THAT(result.runs.back().messages[0], HasSubstr("has effects"));
}

TEST(SchedulePassTest, BadBoundsAreInvalidArgumentNamingTheOption) {
  PassTestEnv env;
  auto out = env.RunSpecs(kBranches, {{"schedule", {{"dim_bounds", "batch=3"}}}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("'dim_bounds'"));
}

}  // namespace
}  // namespace graphopt
