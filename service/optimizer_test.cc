#include "service/optimizer.h"

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/builtin_ops.h"
#include "gtest/gtest.h"
#include "passes/builtin_passes.h"

namespace graphopt {
namespace {

using ::testing::HasSubstr;

class OptimizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinOps(&ops_).ok());
    ASSERT_TRUE(RegisterBuiltinPasses(&passes_).ok());
  }

  v1::OptimizeRequest Request(const std::string& graph_text) {
    v1::OptimizeRequest r;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(graph_text, r.mutable_graph()));
    return r;
  }

  OpRegistry ops_;
  PassRegistry passes_;
};

constexpr char kGraph[] = R"pb(
  inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { symbol: "batch" } dims { size: 3 } } } }
  nodes { name: "id" op_type: "Identity" inputs: "x" outputs: "a" }
  nodes { name: "r" op_type: "Relu" inputs: "a" outputs: "y" }
  outputs { name: "y" }
)pb";

TEST_F(OptimizerTest, DefaultsToLevelOne) {
  Optimizer optimizer(&ops_, &passes_);
  auto response = optimizer.Optimize(Request(kGraph));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->graph().nodes_size(), 1);
  EXPECT_EQ(response->reports_size(), 5);
  EXPECT_EQ(response->reports(0).name(), "infer_type");
}

TEST_F(OptimizerTest, ExplicitPassesWithOptionsAndLevelConflict) {
  Optimizer optimizer(&ops_, &passes_);
  v1::OptimizeRequest r = Request(kGraph);
  r.mutable_pipeline()->add_passes()->set_name("eliminate_identity");
  r.mutable_pipeline()->set_opt_level(1);
  auto response = optimizer.Optimize(r);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(response.status().message(), HasSubstr("either passes or opt_level"));

  r.mutable_pipeline()->clear_opt_level();
  response = optimizer.Optimize(r);
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->reports_size(), 1);
  EXPECT_TRUE(response->reports(0).changed());
}

TEST_F(OptimizerTest, LevelZeroOnlyVerifies) {
  Optimizer optimizer(&ops_, &passes_);
  v1::OptimizeRequest r = Request(kGraph);
  r.mutable_pipeline()->set_opt_level(0);
  auto response = optimizer.Optimize(r);
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->reports_size(), 0);
  EXPECT_EQ(response->graph().nodes_size(), 2);
}

TEST_F(OptimizerTest, StripValueInfo) {
  Optimizer optimizer(&ops_, &passes_);
  v1::OptimizeRequest r = Request(R"pb(
    inputs { name: "x" type { dtype: DT_FLOAT32 } }
    nodes { op_type: "Relu" inputs: "x" outputs: "a" }
    nodes { op_type: "Relu" inputs: "a" outputs: "y" }
    outputs { name: "y" })pb");
  auto with = optimizer.Optimize(r);
  ASSERT_TRUE(with.ok());
  EXPECT_EQ(with->graph().value_info_size(), 1);
  r.mutable_options()->set_strip_value_info(true);
  auto without = optimizer.Optimize(r);
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(without->graph().value_info_size(), 0);
}

TEST_F(OptimizerTest, ListsPassesAndOps) {
  Optimizer optimizer(&ops_, &passes_);
  v1::ListPassesResponse passes = optimizer.ListPasses();
  ASSERT_EQ(passes.passes_size(), 5);
  bool found_shape = false;
  for (const v1::PassInfo& p : passes.passes()) {
    if (p.name() == "infer_shape") {
      found_shape = true;
      ASSERT_EQ(p.requires_size(), 1);
      EXPECT_EQ(p.requires(0), "types");
      EXPECT_EQ(p.provides(0), "shapes");
    }
  }
  EXPECT_TRUE(found_shape);
  v1::ListOpsRequest all;
  EXPECT_GE(optimizer.ListOps(all).ops_size(), 48);
  v1::ListOpsRequest conv;
  conv.set_name("Conv");
  v1::ListOpsResponse one = optimizer.ListOps(conv);
  ASSERT_EQ(one.ops_size(), 1);
  EXPECT_EQ(one.ops(0).fusion_pattern(), v1::FUSION_OUT_ELEMWISE_FUSABLE);
}

}  // namespace
}  // namespace graphopt
