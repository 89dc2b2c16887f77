#include "bench/synthetic_graph.h"

#include "gtest/gtest.h"
#include "ops/builtin_ops.h"
#include "passes/builtin_passes.h"
#include "service/optimizer.h"

namespace graphopt {
namespace {

// The benchmark's graph must be valid and give each default pass the work it is meant to.
TEST(SyntheticGraphTest, DefaultPipelineRemovesWhatItShould) {
  OpRegistry ops;
  PassRegistry passes;
  ASSERT_TRUE(RegisterBuiltinOps(&ops).ok());
  ASSERT_TRUE(RegisterBuiltinPasses(&passes).ok());
  Optimizer optimizer(&ops, &passes);
  v1::OptimizeRequest request;
  *request.mutable_graph() = MakeSyntheticGraph(800);
  ASSERT_EQ(request.graph().nodes_size(), 800);
  request.mutable_options()->set_verify_each_pass(true);
  auto response = optimizer.Optimize(request);
  ASSERT_TRUE(response.ok()) << response.status();
  // Per block of 8: Identity, Dropout, the duplicate Mul and the dead Exp go; 4 remain.
  EXPECT_EQ(response->graph().nodes_size(), 400);
  bool all_typed = true;
  for (const v1::ValueInfo& vi : response->graph().value_info()) {
    all_typed &= vi.type().dtype() == v1::DT_FLOAT32 && vi.type().shape().dims_size() == 2 &&
                 vi.type().shape().dims(0).symbol() == "batch";
  }
  EXPECT_TRUE(all_typed);
}

}  // namespace
}  // namespace graphopt
