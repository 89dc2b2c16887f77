// Memory planning on the real-model corpus (//models:corpus): each model optimized (-O1, or the
// highest level), scheduled and planned; the planned arena within 5% of the liveness lower
// bound; and runtime::Executor giving the same bits with the plan as without it, also from
// several threads at once.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/corpus_model.h"
#include "graph/proto_convert.h"
#include "gtest/gtest.h"
#include "passes/pass_test_util.h"
#include "passes/pipeline.h"
#include "passes/runtime_test_util.h"
#include "runtime/executor.h"

namespace graphopt {
namespace {

struct Env {
  testing::PassTestEnv passes;  // builtin ops and passes
  testing::TestRuntime runtime;  // CPU kernels
};

std::unique_ptr<runtime::Executor> Create(const Env& env, const v1::Graph& g, bool use_plan) {
  runtime::ExecutorOptions options;
  options.use_memory_plan = use_plan;
  auto ex = runtime::Executor::Create(GraphFromProto(g).value(), env.runtime.kernels(), options);
  EXPECT_TRUE(ex.ok()) << ex.status();
  return ex.ok() ? *std::move(ex) : nullptr;
}

void ExpectSameBits(const std::vector<runtime::Tensor>& a, const std::vector<runtime::Tensor>& b,
                    const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].shape(), b[i].shape()) << what;
    double max_diff = 0;
    if (a[i].dtype() == v1::DT_FLOAT32) {
      for (int64_t k = 0; k < a[i].num_elements(); ++k) {
        max_diff = std::max<double>(max_diff, std::abs(a[i].data<float>()[k] - b[i].data<float>()[k]));
      }
    }
    EXPECT_EQ(std::memcmp(a[i].raw_data(), b[i].raw_data(), a[i].byte_size()), 0)
        << what << ": output " << i << " differs by up to " << max_diff;
  }
}

// `passes` then schedule and plan_memory (unless `passes` has them), with symbolic dims bounded
// by the test inputs' sizes.
absl::StatusOr<v1::Graph> Plan(const Env& env, const v1::Graph& model, std::vector<PassSpec> passes,
                               const std::string& bounds) {
  bool has_plan = false;
  for (const PassSpec& p : passes) has_plan |= p.name == "plan_memory";
  if (!has_plan) {
    passes.push_back({"schedule", {}});
    passes.push_back({"plan_memory", {}});
  }
  for (PassSpec& p : passes) {
    if (!bounds.empty() && (p.name == "schedule" || p.name == "plan_memory")) {
      p.options["dim_bounds"] = bounds;
    }
  }
  absl::StatusOr<Graph> graph = GraphFromProto(model);
  if (!graph.ok()) return graph.status();
  absl::StatusOr<PipelineResult> r =
      RunPipeline(*graph, passes, env.passes.passes(), env.passes.ops());
  if (!r.ok()) return r.status();
  return GraphToProto(*graph);
}

TEST(MemoryPlanCorpusTest, PlannedRunsGiveTheSameBits) {
  const Env env;
  int models = 0;
  for (const std::string& dir : TestCorpusModelDirs()) {
    const std::string name = std::filesystem::path(dir).filename().string();
    SCOPED_TRACE(name);
    absl::StatusOr<CorpusModel> model = LoadCorpusModel(dir);
    ASSERT_TRUE(model.ok()) << model.status();
    std::vector<runtime::Tensor> inputs;
    for (auto& [n, t] : model->inputs) inputs.push_back(t);
    for (int level : {1, kMaxOptLevel}) {
      if (level == 1 && kMaxOptLevel == 1) continue;
      absl::StatusOr<v1::Graph> planned =
          Plan(env, model->graph, PipelineForLevel(env.passes.passes(), level).value(),
               TestInputDimBounds(*model));
      ASSERT_TRUE(planned.ok()) << "-O" << level << ": " << planned.status();
      ASSERT_TRUE(planned->has_memory_plan());
      // Every value is planned once the test inputs bound the symbolic dims.
      EXPECT_EQ(planned->memory_plan().unplanned_size(), 0)
          << planned->memory_plan().unplanned(0).value() << ": "
          << planned->memory_plan().unplanned(0).reason();
      for (const v1::MemoryArena& a : planned->memory_plan().arenas()) {
        const double ratio = a.liveness_lower_bound() > 0
                                 ? static_cast<double>(a.size_bytes()) / a.liveness_lower_bound()
                                 : 1.0;
        std::printf("%-20s -O%d  arena %10lld  lower bound %10lld  ratio %.3f  no reuse %10lld\n",
                    name.c_str(), level, static_cast<long long>(a.size_bytes()),
                    static_cast<long long>(a.liveness_lower_bound()), ratio,
                    static_cast<long long>(a.naive_bytes()));
        EXPECT_LE(ratio, 1.05) << "-O" << level;
      }
      std::unique_ptr<runtime::Executor> with = Create(env, *planned, true);
      std::unique_ptr<runtime::Executor> without = Create(env, *planned, false);
      ASSERT_TRUE(with && without);
      ASSERT_TRUE(with->uses_memory_plan()) << with->memory_plan_status();
      absl::StatusOr<runtime::RunResult> want = without->RunPositional(inputs);
      ASSERT_TRUE(want.ok()) << want.status();
      absl::StatusOr<runtime::RunResult> got = with->RunPositional(inputs);
      ASSERT_TRUE(got.ok()) << got.status();
      ExpectSameBits(want->outputs, got->outputs, absl::StrCat("-O", level));
      // Three runs at once on the one executor: each takes its own arena (and every oneDNN
      // convolution its own scratchpad).
      std::vector<absl::StatusOr<runtime::RunResult>> results(3, absl::UnknownError(""));
      std::vector<std::thread> threads;
      for (size_t t = 0; t < results.size(); ++t) {
        threads.emplace_back([&, t] { results[t] = with->RunPositional(inputs); });
      }
      for (std::thread& t : threads) t.join();
      for (const auto& r : results) {
        ASSERT_TRUE(r.ok()) << r.status();
        ExpectSameBits(want->outputs, r->outputs, absl::StrCat("-O", level, " concurrent"));
      }
    }
    ++models;
  }
  EXPECT_EQ(models, 7);
}

}  // namespace
}  // namespace graphopt
