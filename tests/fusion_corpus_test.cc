// fuse_ops and the FusedGroup kernel on the real-model corpus (//models:corpus): every model at
// -O3 and at -O1 plus fuse_ops (where Constant nodes still feed the groups) gives the outputs
// of the unoptimized model within 1e-4 (relative); the fused groups of each model are printed
// by pattern, and the fusions the issue asks for are found where the models have them.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/corpus_model.h"
#include "graph/proto_convert.h"
#include "gtest/gtest.h"
#include "ops/builtin_ops.h"
#include "ops/fused_group.h"
#include "passes/builtin_passes.h"
#include "passes/pipeline.h"
#include "runtime/executor.h"
#include "runtime/kernels/cpu_kernels.h"

namespace graphopt {
namespace {

namespace fs = std::filesystem;

fs::path Corpus() { return TestCorpusDir(); }

struct Env {
  OpRegistry ops;
  PassRegistry passes;
  runtime::KernelRegistry kernels;
  Env() {
    if (!RegisterBuiltinOps(&ops).ok() || !RegisterBuiltinPasses(&passes).ok() ||
        !runtime::RegisterCpuKernels(kernels).ok()) {
      std::abort();
    }
  }
};

std::vector<runtime::Tensor> Execute(const Env& env, const v1::Graph& g,
                                     const std::vector<runtime::Tensor>& inputs) {
  absl::StatusOr<std::unique_ptr<runtime::Executor>> ex =
      runtime::Executor::Create(GraphFromProto(g).value(), env.kernels, {});
  EXPECT_TRUE(ex.ok()) << ex.status();
  if (!ex.ok()) return {};
  absl::StatusOr<runtime::RunResult> r = (*ex)->RunPositional(inputs);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? r->outputs : std::vector<runtime::Tensor>{};
}

// Groups by pattern in the optimized graph.
std::map<std::string, int> Patterns(const v1::Graph& g) {
  std::map<std::string, int> out;
  for (const v1::Node& n : g.nodes()) {
    if (n.op_type() != kFusedGroupOp) continue;
    for (const v1::Attribute& a : n.attributes()) {
      if (a.name() == kFusedGroupPattern) ++out[a.s()];
    }
  }
  return out;
}

TEST(FusionCorpusTest, FusedModelsKeepTheirOutputs) {
  const Env env;
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(Corpus())) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  ASSERT_GE(dirs.size(), 5u);
  std::vector<PassSpec> o1_fuse = PipelineForLevel(env.passes, 1).value();
  o1_fuse.push_back({"fuse_ops", {}});
  const std::vector<std::pair<std::string, std::vector<PassSpec>>> pipelines = {
      {"-O3", PipelineForLevel(env.passes, 3).value()}, {"-O1 + fuse_ops", o1_fuse}};
  std::map<std::string, std::map<std::string, int>> found;
  for (const fs::path& dir : dirs) {
    const std::string name = dir.filename().string();
    SCOPED_TRACE(name);
    absl::StatusOr<CorpusModel> model = LoadCorpusModel(dir.string());
    ASSERT_TRUE(model.ok()) << model.status();
    std::vector<runtime::Tensor> inputs;
    for (auto& [n, t] : model->inputs) inputs.push_back(t);
    const std::vector<runtime::Tensor> want = Execute(env, model->graph, inputs);
    ASSERT_FALSE(want.empty());
    for (const auto& [label, passes] : pipelines) {
      Graph g = GraphFromProto(model->graph).value();
      PipelineOptions options;
      options.verify_each_pass = true;
      absl::StatusOr<PipelineResult> r = RunPipeline(g, passes, env.passes, env.ops, options);
      ASSERT_TRUE(r.ok()) << label << ": " << r.status();
      const v1::Graph optimized = GraphToProto(g);
      const std::map<std::string, int> patterns = Patterns(optimized);
      int groups = 0;
      std::string summary;
      for (const auto& [pattern, count] : patterns) {
        groups += count;
        absl::StrAppend(&summary, " ", pattern, "=", count);
      }
      std::printf("%-20s %-15s %4d nodes, %3d fused groups:%s\n", name.c_str(), label.c_str(),
                  optimized.nodes_size(), groups, summary.c_str());
      if (label == "-O3") found[name] = patterns;
      const std::vector<runtime::Tensor> got = Execute(env, optimized, inputs);
      ASSERT_EQ(got.size(), want.size()) << label;
      for (size_t k = 0; k < got.size(); ++k) {
        ASSERT_EQ(got[k].shape(), want[k].shape()) << label << " output " << k;
        if (got[k].dtype() != v1::DT_FLOAT32) continue;
        double worst = 0;
        for (int64_t i = 0; i < got[k].num_elements(); ++i) {
          const double g0 = got[k].data<float>()[i], w0 = want[k].data<float>()[i];
          const double err = std::fabs(g0 - w0) / (1e-5 / 1e-4 + std::fabs(w0));
          worst = std::max(worst, err);
          ASSERT_LE(std::fabs(g0 - w0), 1e-5 + 1e-4 * std::fabs(w0))
              << label << " output " << k << " element " << i << ": " << g0 << " vs " << w0;
        }
        std::printf("%-20s %-15s output %zu: worst relative difference %.2e\n", name.c_str(),
                    label.c_str(), k, worst);
      }
    }
  }
  // The fusions the corpus exports: Conv + Relu/Clip + residual Add, Gemm + GELU, the decomposed
  // LayerNormalization, MatMul + bias.
  EXPECT_GE(found["resnet18"][kFusedPatternConv], 17);
  EXPECT_GE(found["resnet50"][kFusedPatternConv], 49);
  EXPECT_GE(found["mobilenet_v2"][kFusedPatternConv], 35);
  EXPECT_GE(found["mlp"][kFusedPatternLayerNorm], 1);
  EXPECT_GE(found["mlp"][kFusedPatternMatMul], 3);
  EXPECT_GE(found["transformer_encoder"][kFusedPatternMatMul], 4);
}

}  // namespace
}  // namespace graphopt
