// The executor running from a memory plan (plan_memory's Graph.memory_plan): the same bits as
// without a plan, arenas never shared between concurrent runs, outputs never in an arena, and
// plans that do not fit the graph ignored.
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/proto_convert.h"
#include "gtest/gtest.h"
#include "passes/pass_test_util.h"
#include "passes/plan_memory_test_util.h"
#include "passes/runtime_test_util.h"
#include "runtime/executor.h"

namespace graphopt::runtime {
namespace {

using ::graphopt::testing::GraphText;
using ::testing::HasSubstr;

const KernelRegistry& Registry() {
  static const auto* runtime = new graphopt::testing::TestRuntime();
  return runtime->kernels();
}

const graphopt::testing::PassTestEnv& Env() {
  static const auto* env = new graphopt::testing::PassTestEnv();
  return *env;
}

// `text` through schedule and plan_memory (with `options` for plan_memory).
v1::Graph Planned(const std::string& text, PassOptions options = {}) {
  absl::StatusOr<v1::Graph> g =
      Env().RunSpecs(text, {{"schedule", {}}, {"plan_memory", std::move(options)}});
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : v1::Graph();
}

std::unique_ptr<Executor> Create(const v1::Graph& g, bool use_plan) {
  ExecutorOptions options;
  options.use_memory_plan = use_plan;
  absl::StatusOr<std::unique_ptr<Executor>> ex =
      Executor::Create(GraphFromProto(g).value(), Registry(), options);
  EXPECT_TRUE(ex.ok()) << ex.status();
  return ex.ok() ? *std::move(ex) : nullptr;
}

// Random float inputs for the graph's inputs, symbolic dims set to `rows`.
std::vector<Tensor> Inputs(const v1::Graph& g, uint32_t seed, int64_t rows) {
  std::mt19937 rng(seed);
  std::vector<Tensor> inputs;
  for (const v1::ValueInfo& in : g.inputs()) {
    Shape shape;
    for (const v1::Dim& d : in.type().shape().dims()) {
      shape.push_back(d.has_symbol() ? rows : d.size());
    }
    Tensor t = Tensor::Allocate(v1::DT_FLOAT32, shape).value();
    for (float& f : t.mutable_span<float>()) {
      f = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) / 256.0f;
    }
    inputs.push_back(std::move(t));
  }
  return inputs;
}

void ExpectSameBits(const std::vector<Tensor>& a, const std::vector<Tensor>& b,
                    const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].dtype(), b[i].dtype()) << what;
    ASSERT_EQ(a[i].shape(), b[i].shape()) << what << " output " << i;
    EXPECT_EQ(std::memcmp(a[i].raw_data(), b[i].raw_data(), a[i].byte_size()), 0)
        << what << " output " << i;
  }
}

TEST(ExecutorPlanTest, RandomGraphsGiveTheSameBitsPlannedOrNot) {
  int planned_runs = 0;
  for (uint32_t seed = 1; seed <= 120; ++seed) {
    SCOPED_TRACE(seed);
    const bool symbolic = seed % 3 == 0;
    const v1::Graph g = Planned(
        GraphText(graphopt::testing::RandomPlanningGraph(seed, 10 + seed % 40, symbolic)),
        symbolic ? PassOptions{{"dim_bounds", "batch:3"}} : PassOptions{});
    std::unique_ptr<Executor> planned = Create(g, true);
    std::unique_ptr<Executor> plain = Create(g, false);
    ASSERT_TRUE(planned && plain);
    ASSERT_TRUE(planned->memory_plan_status().ok()) << planned->memory_plan_status();
    EXPECT_FALSE(plain->uses_memory_plan());
    planned_runs += planned->uses_memory_plan();
    // Rows within the bound, and beyond it (values then fall back to their own allocation).
    for (int64_t rows : symbolic ? std::vector<int64_t>{3, 1, 5} : std::vector<int64_t>{0}) {
      const std::vector<Tensor> inputs = Inputs(g, seed, rows);
      absl::StatusOr<RunResult> want = plain->RunPositional(inputs);
      ASSERT_TRUE(want.ok()) << want.status() << "\n" << GraphText(g);
      // Twice: the second run reuses the pooled arena.
      for (int k = 0; k < 2; ++k) {
        absl::StatusOr<RunResult> got = planned->RunPositional(inputs);
        ASSERT_TRUE(got.ok()) << got.status();
        ExpectSameBits(want->outputs, got->outputs, absl::StrCat("rows ", rows, " run ", k));
      }
    }
  }
  EXPECT_GT(planned_runs, 100);
}

TEST(ExecutorPlanTest, OutputsSurviveLaterRunsAndConcurrentRunsAreSafe) {
  const v1::Graph g = Planned(GraphText(graphopt::testing::RandomPlanningGraph(4242, 60)));
  std::unique_ptr<Executor> planned = Create(g, true);
  std::unique_ptr<Executor> plain = Create(g, false);
  ASSERT_TRUE(planned->uses_memory_plan()) << planned->memory_plan_status();
  constexpr int kThreads = 4, kRuns = 15;
  std::vector<std::vector<Tensor>> inputs;
  std::vector<std::vector<Tensor>> want;
  for (int i = 0; i < kThreads * kRuns; ++i) {
    inputs.push_back(Inputs(g, 1000 + i, 0));
    want.push_back(plain->RunPositional(inputs.back()).value().outputs);
  }
  // Results of earlier runs are kept while later runs reuse the arena.
  std::vector<std::vector<Tensor>> got(inputs.size());
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRuns; ++r) {
        const int i = t * kRuns + r;
        absl::StatusOr<RunResult> res = planned->RunPositional(inputs[i]);
        if (res.ok()) got[i] = std::move(res->outputs);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < inputs.size(); ++i) ExpectSameBits(want[i], got[i], absl::StrCat("run ", i));
}

constexpr char kChain[] = R"pb(
  inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 4 } dims { size: 16 } } } }
  initializers { name: "shape" dtype: DT_INT64 dims: 2 raw_data: "\x10\0\0\0\0\0\0\0\x04\0\0\0\0\0\0\0" }
  nodes { op_type: "Relu" inputs: "x" outputs: "a" }
  nodes { op_type: "Sigmoid" inputs: "a" outputs: "b" }
  nodes { op_type: "Reshape" inputs: "b" inputs: "shape" outputs: "r" }
  nodes { op_type: "Neg" inputs: "r" outputs: "c" }
  nodes { op_type: "Add" inputs: "c" inputs: "c" outputs: "y" }
  outputs { name: "y" }
)pb";

TEST(ExecutorPlanTest, PlansThatDoNotFitTheGraphAreIgnored) {
  const v1::Graph good = Planned(kChain);
  ASSERT_TRUE(Create(good, true)->uses_memory_plan());
  auto expect_ignored = [&](v1::Graph g, absl::StatusCode code, const std::string& why) {
    std::unique_ptr<Executor> ex = Create(g, true);
    ASSERT_NE(ex, nullptr);
    EXPECT_FALSE(ex->uses_memory_plan()) << why;
    EXPECT_EQ(ex->memory_plan_status().code(), code) << ex->memory_plan_status();
    EXPECT_THAT(ex->memory_plan_status().message(), HasSubstr(why));
    absl::StatusOr<RunResult> r = ex->RunPositional(Inputs(g, 1, 0));
    ASSERT_TRUE(r.ok()) << r.status();
    ExpectSameBits(Create(good, false)->RunPositional(Inputs(g, 1, 0))->outputs, r->outputs, why);
  };
  v1::Graph g = good;
  g.mutable_memory_plan()->set_fingerprint(g.memory_plan().fingerprint() + 1);
  expect_ignored(g, absl::StatusCode::kFailedPrecondition, "fingerprint");
  // Every value at offset 0: live values overlap.
  g = good;
  for (auto& b : *g.mutable_memory_plan()->mutable_buffers()) {
    b.set_offset(0);
    b.clear_shares_with();
  }
  expect_ignored(g, absl::StatusCode::kInvalidArgument, "overlap");
  g = good;
  g.mutable_memory_plan()->mutable_buffers(0)->set_offset(1 << 20);
  expect_ignored(g, absl::StatusCode::kInvalidArgument, "outside its arena");
  g = good;
  g.mutable_memory_plan()->mutable_buffers(0)->set_offset(8);
  expect_ignored(g, absl::StatusCode::kInvalidArgument, "unaligned");
  g = good;
  g.mutable_memory_plan()->mutable_buffers(0)->set_value("y");
  expect_ignored(g, absl::StatusCode::kInvalidArgument, "graph output");
  // 'c' written over 'a', which its node does not read.
  g = good;
  for (auto& b : *g.mutable_memory_plan()->mutable_buffers()) {
    if (b.value() == "c") b.set_shares_with("a");
  }
  expect_ignored(g, absl::StatusCode::kInvalidArgument, "does not read");
}

TEST(ExecutorPlanTest, InPlaceOverAValueStillReadIsRefused) {
  // b = Sigmoid(a) written over a, but a is read again afterwards.
  const std::string text = R"pb(
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 16 } } } }
    nodes { op_type: "Relu" inputs: "x" outputs: "a" }
    nodes { op_type: "Sigmoid" inputs: "a" outputs: "b" }
    nodes { op_type: "Add" inputs: "a" inputs: "b" outputs: "y" }
    outputs { name: "y" })pb";
  v1::Graph g = Planned(text);
  bool edited = false;
  for (auto& b : *g.mutable_memory_plan()->mutable_buffers()) {
    if (b.value() == "b") {
      b.set_shares_with("a");
      edited = true;
    }
    b.set_offset(0);
  }
  ASSERT_TRUE(edited);
  std::unique_ptr<Executor> ex = Create(g, true);
  EXPECT_FALSE(ex->uses_memory_plan());
  EXPECT_THAT(ex->memory_plan_status().message(), HasSubstr("still read"));
}

TEST(ExecutorPlanTest, PlannedOutputsViewTheArenaWhenTheyFit) {
  const v1::Graph g = Planned(kChain);
  std::unique_ptr<Executor> ex = Create(g, true);
  ASSERT_TRUE(ex->uses_memory_plan());
  // One arena of 4 * 16 floats twice at most (the chain runs in place).
  ASSERT_EQ(ex->arena_bytes().size(), 1u);
  EXPECT_LE(ex->arena_bytes()[0], 2 * 256);

  // KernelContext itself: a planned output fits, a larger one and a mismatched in-place input
  // do not.
  Graph graph = GraphFromProto(g).value();
  const Node& node = graph.node(*graph.TopologicalOrder()->begin());
  ExecutorOptions options;
  KernelInfo info(node, "node", 17, {}, Registry(), options, DeviceKind::kCpu);
  std::shared_ptr<Buffer> arena = Buffer::AllocateCpu(512).value();
  Tensor in = Tensor::Allocate(v1::DT_FLOAT32, {4, 16}).value();
  const Tensor* inputs[] = {&in};
  Tensor outputs[1];
  KernelContext ctx(info, inputs, absl::MakeSpan(outputs), nullptr, 1);
  const std::shared_ptr<Buffer> arenas[] = {arena};
  PlannedOutput plan[] = {{0, 256, 256, -1}};
  ctx.SetMemoryPlan(plan, arenas);
  EXPECT_EQ((*ctx.AllocateOutput(0, v1::DT_FLOAT32, {4, 16}))->buffer(), arena.get());
  EXPECT_EQ(outputs[0].byte_offset(), 256u);
  EXPECT_NE((*ctx.AllocateOutput(0, v1::DT_FLOAT32, {5, 16}))->buffer(), arena.get());
  EXPECT_NE((*ctx.AllocateOutput(0, v1::DT_STRING, {2}))->buffer(), arena.get());
  plan[0].inplace_input = 0;
  EXPECT_EQ((*ctx.AllocateOutput(0, v1::DT_FLOAT32, {4, 16}))->buffer(), arena.get());
  EXPECT_NE((*ctx.AllocateOutput(0, v1::DT_FLOAT32, {2, 16}))->buffer(), arena.get());
  // A range reaching past the arena is never used.
  plan[0] = {0, 384, 256, -1};
  EXPECT_NE((*ctx.AllocateOutput(0, v1::DT_FLOAT32, {4, 16}))->buffer(), arena.get());
}

TEST(ExecutorPlanTest, WithoutAPlanNothingChanges) {
  v1::Graph g = Planned(kChain);
  g.clear_memory_plan();
  std::unique_ptr<Executor> ex = Create(g, true);
  EXPECT_FALSE(ex->uses_memory_plan());
  EXPECT_TRUE(ex->memory_plan_status().ok());
  EXPECT_TRUE(ex->RunPositional(Inputs(g, 3, 0)).ok());
}

}  // namespace
}  // namespace graphopt::runtime
