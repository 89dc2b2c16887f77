#include "passes/cost_report.h"

#include "gtest/gtest.h"
#include "passes/pass_test_util.h"
#include "passes/pipeline.h"

namespace graphopt {
namespace {

using ::graphopt::testing::PassTestEnv;

constexpr char kGraph[] = R"pb(
  inputs { name: "a" type { dtype: DT_FLOAT32 shape { dims { size: 8 } dims { size: 16 } } } }
  inputs { name: "b" type { dtype: DT_FLOAT32 shape { dims { size: 16 } dims { size: 4 } } } }
  nodes { op_type: "MatMul" inputs: "a" inputs: "b" outputs: "p" }
  nodes { name: "relu" op_type: "Relu" inputs: "p" outputs: "r" }
  outputs { name: "r" }
)pb";

Graph Inferred(const PassTestEnv& env) {
  Graph graph = env.Parse(kGraph).value();
  EXPECT_TRUE(
      RunPipeline(graph, {{"infer_shape", {}}}, env.passes(), env.ops()).ok());
  return graph;
}

TEST(CostReportTest, PerNodeEntriesFollowTheNodeOrder) {
  PassTestEnv env;
  Graph graph = Inferred(env);
  absl::StatusOr<v1::CostReport> report =
      MakeCostReport(graph, env.ops(), v1::COST_ESTIMATE_PER_NODE);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->flops(), 1024);
  EXPECT_EQ(report->bytes(), 896 + 256);
  EXPECT_EQ(report->nodes(), 2);
  EXPECT_EQ(report->flops_unknown_nodes(), 1);
  EXPECT_EQ(report->bytes_unknown_nodes(), 0);
  ASSERT_EQ(report->node_costs_size(), 2);
  const v1::NodeCost& mm = report->node_costs(0);
  EXPECT_EQ(mm.node(), "#0");
  EXPECT_EQ(mm.op(), "MatMul");
  EXPECT_EQ(mm.flops(), 1024);
  EXPECT_EQ(mm.bytes(), 896);
  const v1::NodeCost& relu = report->node_costs(1);
  EXPECT_EQ(relu.node(), "relu");
  EXPECT_FALSE(relu.has_flops());
  EXPECT_EQ(relu.bytes(), 256);
}

TEST(CostReportTest, DetailLevels) {
  PassTestEnv env;
  Graph graph = Inferred(env);
  absl::StatusOr<v1::CostReport> totals =
      MakeCostReport(graph, env.ops(), v1::COST_ESTIMATE_TOTALS);
  ASSERT_TRUE(totals.ok());
  EXPECT_EQ(totals->flops(), 1024);
  EXPECT_EQ(totals->node_costs_size(), 0);
  absl::StatusOr<v1::CostReport> none = MakeCostReport(graph, env.ops(), v1::COST_ESTIMATE_NONE);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->ByteSizeLong(), 0u);
  absl::StatusOr<v1::CostReport> bad =
      MakeCostReport(graph, env.ops(), static_cast<v1::CostEstimate>(9));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "options.cost_estimate: unknown value 9");
}

}  // namespace
}  // namespace graphopt
