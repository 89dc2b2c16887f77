// The Optimize response's cost estimate (OptimizeOptions.cost_estimate), through the real
// pipeline: request ops with cost rules, builtin estimates, symbolic dims and binding.

#include <string>

#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "ops/builtin_ops.h"
#include "passes/builtin_passes.h"
#include "service/optimizer.h"

namespace graphopt {
namespace {

constexpr char kRequest[] = R"pb(
  graph {
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { symbol: "batch" } dims { size: 3 }
                                                        dims { size: 8 } dims { size: 8 } } } }
    initializers { name: "w" dtype: DT_FLOAT32 dims: 16 dims: 3 dims: 3 dims: 3
                   raw_data: "" }
    nodes { name: "conv" op_type: "Conv" inputs: "x" inputs: "w" outputs: "c" }
    nodes { name: "relu" op_type: "Relu" inputs: "c" outputs: "r" }
    nodes { name: "costly" op_type: "Costly" domain: "my.ops" inputs: "r" outputs: "y" }
    outputs { name: "y" }
  }
  ops {
    name: "Costly" domain: "my.ops" version: 1
    inputs { name: "X" type_constraint: "T" }
    outputs { name: "Y" type_constraint: "T" }
    type_constraints { name: "T" allowed: DT_FLOAT32 }
    shape_rule { expr: "output[0] = shape(X);" }
    cost { flops { expr: "5 * prod(shape(X))" } }
  }
  options { cost_estimate: COST_ESTIMATE_PER_NODE }
)pb";

class OptimizerCostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinOps(&ops_).ok());
    ASSERT_TRUE(RegisterBuiltinPasses(&passes_).ok());
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kRequest, &request_));
    // The weights: 432 float32 zeros.
    request_.mutable_graph()->mutable_initializers(0)->set_raw_data(std::string(432 * 4, '\0'));
  }

  OpRegistry ops_;
  PassRegistry passes_;
  v1::OptimizeRequest request_;
};

TEST_F(OptimizerCostTest, BoundShapesGetFlopsFromRulesAndBuiltinEstimates) {
  Optimizer optimizer(&ops_, &passes_);
  v1::OptimizeRequest request = request_;
  (*request.mutable_dim_bindings())["batch"] = 2;
  absl::StatusOr<v1::OptimizeResponse> response = optimizer.Optimize(request);
  ASSERT_TRUE(response.ok()) << response.status();
  const v1::CostReport& cost = response->cost();
  ASSERT_EQ(cost.node_costs_size(), 3);
  // Conv [2,3,8,8] * [16,3,3,3] -> [2,16,6,6]: 1152 outputs of 27 multiply-adds.
  EXPECT_EQ(cost.node_costs(0).node(), "conv");
  EXPECT_EQ(cost.node_costs(0).op(), "Conv");
  EXPECT_EQ(cost.node_costs(0).flops(), 2 * 1152 * 27);
  EXPECT_EQ(cost.node_costs(0).bytes(), (384 + 432 + 1152) * 4);
  EXPECT_FALSE(cost.node_costs(1).has_flops());
  EXPECT_EQ(cost.node_costs(1).bytes(), 2 * 1152 * 4);
  // The request op's cost rule, evaluated on its bound input.
  EXPECT_EQ(cost.node_costs(2).op(), "my.ops::Costly");
  EXPECT_EQ(cost.node_costs(2).flops(), 5 * 1152);
  EXPECT_EQ(cost.node_costs(2).bytes(), 2 * 1152 * 4);
  EXPECT_EQ(cost.flops(), 2 * 1152 * 27 + 5 * 1152);
  EXPECT_EQ(cost.nodes(), 3);
  EXPECT_EQ(cost.flops_unknown_nodes(), 1);
  EXPECT_EQ(cost.bytes_unknown_nodes(), 0);

  // The same request gives the same bytes.
  absl::StatusOr<v1::OptimizeResponse> again = optimizer.Optimize(request);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->cost().SerializeAsString(), cost.SerializeAsString());
}

TEST_F(OptimizerCostTest, SymbolicDimsStayUnknown) {
  Optimizer optimizer(&ops_, &passes_);
  absl::StatusOr<v1::OptimizeResponse> response = optimizer.Optimize(request_);
  ASSERT_TRUE(response.ok()) << response.status();
  const v1::CostReport& cost = response->cost();
  EXPECT_EQ(cost.flops(), 0);
  EXPECT_EQ(cost.bytes(), 0);
  EXPECT_EQ(cost.flops_unknown_nodes(), 3);
  EXPECT_EQ(cost.bytes_unknown_nodes(), 3);
  for (const v1::NodeCost& node : cost.node_costs()) {
    EXPECT_FALSE(node.has_flops() || node.has_bytes()) << node.node();
  }
}

TEST_F(OptimizerCostTest, OnlyWhenAsked) {
  Optimizer optimizer(&ops_, &passes_);
  v1::OptimizeRequest request = request_;
  request.mutable_options()->clear_cost_estimate();
  absl::StatusOr<v1::OptimizeResponse> response = optimizer.Optimize(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_FALSE(response->has_cost());

  request.mutable_options()->set_cost_estimate(v1::COST_ESTIMATE_TOTALS);
  (*request.mutable_dim_bindings())["batch"] = 2;
  response = optimizer.Optimize(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->cost().flops(), 2 * 1152 * 27 + 5 * 1152);
  EXPECT_EQ(response->cost().node_costs_size(), 0);
}

}  // namespace
}  // namespace graphopt
