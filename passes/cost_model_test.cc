#include "passes/cost_model.h"

#include <string>
#include <vector>

#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "ops/builtin_ops.h"
#include "passes/pass_test_util.h"
#include "passes/pipeline.h"
#include "rules/op_compiler.h"

namespace graphopt {
namespace {

using ::graphopt::testing::PassTestEnv;

// A custom op whose descriptor carries both cost rules.
constexpr char kCostlyOp[] = R"pb(
  name: "Costly" domain: "my.ops" version: 1
  inputs { name: "X" type_constraint: "T" }
  outputs { name: "Y" type_constraint: "T" }
  type_constraints { name: "T" allowed: DT_FLOAT32 }
  shape_rule { expr: "output[0] = shape(X);" }
  cost {
    flops { expr: "3 * prod(shape(X))" }
    bytes_moved { expr: "2 * prod(shape(X)) * dtype_size(dtype(X))" }
  }
)pb";

OpDef CompileCostlyOp(const OpRegistry& builtins) {
  v1::OpDescriptor d;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(kCostlyOp, &d));
  absl::StatusOr<OpDef> def = CompileOpDescriptor(d, builtins);
  EXPECT_TRUE(def.ok()) << def.status();
  return *std::move(def);
}

// Parses `text`, infers types and shapes (with `bindings`) and estimates every node.
struct Estimated {
  Graph graph;
  std::vector<NodeCost> costs;
  NodeCost Of(const std::string& name) const {
    for (int i = 0; i < graph.num_node_slots(); ++i) {
      if (graph.node(NodeId(i)).alive && graph.node(NodeId(i)).name == name) return costs[i];
    }
    ADD_FAILURE() << "no node " << name;
    return {};
  }
};

Estimated Estimate(const PassTestEnv& env, const std::string& text,
                   absl::btree_map<std::string, int64_t> bindings = {}) {
  Estimated out{env.Parse(text).value(), {}};
  PipelineOptions options;
  options.dim_bindings = std::move(bindings);
  absl::StatusOr<PipelineResult> run = RunPipeline(
      out.graph, {{"infer_type", {}}, {"infer_shape", {}}}, env.passes(), env.ops(), options);
  EXPECT_TRUE(run.ok()) << run.status();
  out.costs = EstimateCosts(out.graph, env.ops());
  return out;
}

constexpr char kMatMulConv[] = R"pb(
  inputs { name: "a" type { dtype: DT_FLOAT32 shape { dims { size: 8 } dims { size: 16 } } } }
  inputs { name: "b" type { dtype: DT_FLOAT32 shape { dims { size: 16 } dims { size: 4 } } } }
  inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 1 } dims { size: 3 }
                                                      dims { size: 8 } dims { size: 8 } } } }
  inputs { name: "w" type { dtype: DT_FLOAT32 shape { dims { size: 16 } dims { size: 3 }
                                                      dims { size: 3 } dims { size: 3 } } } }
  nodes { name: "mm" op_type: "MatMul" inputs: "a" inputs: "b" outputs: "p" }
  nodes { name: "relu" op_type: "Relu" inputs: "p" outputs: "r" }
  nodes { name: "conv" op_type: "Conv" inputs: "x" inputs: "w" outputs: "c" }
  nodes { name: "sq" op_type: "Mul" inputs: "c" inputs: "c" outputs: "s" }
  outputs { name: "r" }
  outputs { name: "s" }
)pb";

TEST(CostModelTest, MatMulGemmAndConvGetTheirFlops) {
  PassTestEnv env;
  Estimated e = Estimate(env, kMatMulConv);
  // [8,16] x [16,4]: 8*4 outputs of 16 multiply-adds; reads 512 + 256 bytes, writes 128.
  EXPECT_EQ(e.Of("mm"), (NodeCost{2 * 8 * 4 * 16, (128 + 64 + 32) * 4}));
  // Conv [1,3,8,8] * [16,3,3,3] -> [1,16,6,6]: 576 outputs of 27 multiply-adds.
  EXPECT_EQ(e.Of("conv").flops, 2 * 576 * 27);
  EXPECT_EQ(e.Of("conv").bytes, (192 + 432 + 576) * 4);
  // No built-in flops for elementwise ops; a value read twice is read once.
  EXPECT_EQ(e.Of("relu"), (NodeCost{std::nullopt, 2 * 32 * 4}));
  EXPECT_EQ(e.Of("sq"), (NodeCost{std::nullopt, 2 * 576 * 4}));
}

TEST(CostModelTest, ConvBackwardOpsGetTheirConvsFlops) {
  PassTestEnv env;
  const std::string text = std::string(R"pb(
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 1 } dims { size: 3 }
                                                        dims { size: 8 } dims { size: 8 } } } }
    inputs { name: "w" type { dtype: DT_FLOAT32 shape { dims { size: 16 } dims { size: 3 }
                                                        dims { size: 3 } dims { size: 3 } } } }
    inputs { name: "dy" type { dtype: DT_FLOAT32 shape { dims { size: 1 } dims { size: 16 }
                                                         dims { size: 6 } dims { size: 6 } } } }
    nodes { name: "xs" op_type: "Shape" inputs: "x" outputs: "xs" }
    nodes { name: "ws" op_type: "Shape" inputs: "w" outputs: "ws" }
    nodes { name: "gd" op_type: "ConvGradData" domain: "graphopt"
            inputs: "dy" inputs: "w" inputs: "xs" outputs: "dx" }
    nodes { name: "gw" op_type: "ConvGradWeight" domain: "graphopt"
            inputs: "x" inputs: "dy" inputs: "ws" outputs: "dw" }
    outputs { name: "dx" }
    outputs { name: "dw" }
  )pb");
  Estimated e = Estimate(env, text);
  // The forward Conv's: 576 outputs of 27 multiply-adds.
  EXPECT_EQ(e.Of("gd").flops, 2 * 576 * 27);
  EXPECT_EQ(e.Of("gw").flops, 2 * 576 * 27);
}

TEST(CostModelTest, FusedGroupsCountTheirBodiesHeavyOps) {
  PassTestEnv env;
  Graph graph = env.Parse(kMatMulConv).value();
  absl::StatusOr<PipelineResult> run = RunPipeline(
      graph, {{"infer_type", {}}, {"infer_shape", {}}, {"fuse_ops", {}}}, env.passes(),
      env.ops());
  ASSERT_TRUE(run.ok()) << run.status();
  const std::vector<NodeCost> costs = EstimateCosts(graph, env.ops());
  int groups = 0;
  for (int i = 0; i < graph.num_node_slots(); ++i) {
    const Node& n = graph.node(NodeId(i));
    if (!n.alive || n.op_type != "FusedGroup") continue;
    ++groups;
    EXPECT_TRUE(costs[i].flops.has_value()) << n.name.str();
    EXPECT_TRUE(costs[i].bytes.has_value()) << n.name.str();
  }
  EXPECT_GT(groups, 0);
  // The epilogues count nothing, so fusion keeps the total.
  EXPECT_EQ(SumCosts(graph, costs).flops, 2 * 8 * 4 * 16 + 2 * 576 * 27);
}

TEST(CostModelTest, GemmHonoursTransA) {
  PassTestEnv env;
  Estimated e = Estimate(env, R"pb(
    inputs { name: "a" type { dtype: DT_FLOAT32 shape { dims { size: 16 } dims { size: 8 } } } }
    inputs { name: "b" type { dtype: DT_FLOAT32 shape { dims { size: 16 } dims { size: 4 } } } }
    nodes { name: "gemm" op_type: "Gemm" inputs: "a" inputs: "b" outputs: "g"
            attributes { name: "transA" i: 1 } }
    outputs { name: "g" }
  )pb");
  EXPECT_EQ(e.Of("gemm").flops, 2 * 8 * 4 * 16);
}

constexpr char kSymbolic[] = R"pb(
  inputs { name: "a" type { dtype: DT_FLOAT32 shape { dims { symbol: "batch" } dims { size: 16 } } } }
  inputs { name: "b" type { dtype: DT_FLOAT32 shape { dims { size: 16 } dims { size: 4 } } } }
  nodes { name: "mm" op_type: "MatMul" inputs: "a" inputs: "b" outputs: "p" }
  nodes { name: "costly" op_type: "Costly" domain: "my.ops" inputs: "p" outputs: "y" }
  outputs { name: "y" }
)pb";

TEST(CostModelTest, SymbolicShapesStayUnknownUntilBound) {
  PassTestEnv env;
  ASSERT_TRUE(env.AddOp(CompileCostlyOp(env.ops())).ok());
  Estimated symbolic = Estimate(env, kSymbolic);
  EXPECT_EQ(symbolic.Of("mm"), NodeCost{});
  EXPECT_EQ(symbolic.Of("costly"), NodeCost{});
  CostTotals totals = SumCosts(symbolic.graph, symbolic.costs);
  EXPECT_EQ(totals.nodes, 2);
  EXPECT_EQ(totals.flops_unknown, 2);
  EXPECT_EQ(totals.bytes_unknown, 2);
  EXPECT_EQ(totals.flops, 0);

  Estimated bound = Estimate(env, kSymbolic, {{"batch", 8}});
  EXPECT_EQ(bound.Of("mm"), (NodeCost{2 * 8 * 4 * 16, (128 + 64 + 32) * 4}));
  // The custom op's figures come from its cost rules: p is float32[8,4].
  EXPECT_EQ(bound.Of("costly"), (NodeCost{3 * 32, 2 * 32 * 4}));
  totals = SumCosts(bound.graph, bound.costs);
  EXPECT_EQ(totals.flops, 1024 + 96);
  EXPECT_EQ(totals.bytes, 896 + 256);
  EXPECT_EQ(totals.flops_unknown, 0);
  EXPECT_EQ(totals.bytes_unknown, 0);
}

TEST(CostModelTest, UnknownRankAndOpsWithoutDescriptorStayUnknown) {
  PassTestEnv env;
  Graph graph = env.Parse(R"pb(
    inputs { name: "a" type { dtype: DT_FLOAT32 } }
    inputs { name: "b" type { dtype: DT_FLOAT32 shape { dims { size: 16 } dims { size: 4 } } } }
    nodes { name: "mm" op_type: "MatMul" inputs: "a" inputs: "b" outputs: "p" }
    outputs { name: "p" }
  )pb").value();
  const std::vector<NodeCost> costs = EstimateCosts(graph, env.ops());
  EXPECT_EQ(costs[0], NodeCost{});
  EXPECT_EQ(EstimateNodeCost(graph, NodeId(0), nullptr), NodeCost{});
}

TEST(CostModelTest, IsDeterministic) {
  PassTestEnv env;
  Estimated first = Estimate(env, kMatMulConv);
  Estimated second = Estimate(env, kMatMulConv);
  EXPECT_EQ(first.costs, second.costs);
  EXPECT_EQ(first.costs, EstimateCosts(first.graph, env.ops()));
}

}  // namespace
}  // namespace graphopt
