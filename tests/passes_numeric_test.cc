// The -O2 rewriting passes (constant_fold, simplify, fold_batchnorm) on the real-model corpus
// (//models:corpus): each model runs on the runtime unoptimized, after each pass alone and after
// -O2; the outputs must be the same bits (constant_fold, simplify) or within 1e-4 relative
// (fold_batchnorm, -O2, which change float rounding). Beyond the numbers (which
// tests/differential checks for every pass), this checks that the passes do their job on real
// exports: every BatchNormalization of mobilenet_v2_bn folds, which makes its -O2 graph the
// size of mobilenet_v2's (exported with torch's own folding), the transformer's shape arithmetic
// folds, -O2 is deterministic, and the figures are printed.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "bench/corpus_model.h"
#include "graph/proto_convert.h"
#include "gtest/gtest.h"
#include "ops/builtin_ops.h"
#include "passes/builtin_passes.h"
#include "passes/pipeline.h"
#include "passes/runtime_test_util.h"

namespace graphopt {
namespace {

namespace fs = std::filesystem;

fs::path Corpus() { return TestCorpusDir(); }

struct Optimized {
  v1::Graph graph;
  // Pass name -> its report messages, joined.
  std::map<std::string, std::string> messages;
};

class PassesNumericTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinOps(&ops_).ok());
    ASSERT_TRUE(RegisterBuiltinPasses(&passes_).ok());
  }

  absl::StatusOr<Optimized> Optimize(const v1::Graph& graph, const std::vector<PassSpec>& specs) {
    absl::StatusOr<Graph> ir = GraphFromProto(graph);
    if (!ir.ok()) return ir.status();
    PipelineOptions options;
    options.verify_each_pass = true;
    absl::StatusOr<PipelineResult> result = RunPipeline(*ir, specs, passes_, ops_, options);
    if (!result.ok()) return result.status();
    Optimized out;
    for (const PassRun& run : result->runs) {
      out.messages[run.name] = absl::StrJoin(run.messages, "; ");
    }
    out.graph = GraphToProto(*std::move(ir));
    return out;
  }

  OpRegistry ops_;
  PassRegistry passes_;
  testing::TestRuntime runtime_;
};

int CountOps(const v1::Graph& g, const std::string& op) {
  int n = 0;
  for (const v1::Node& node : g.nodes()) n += node.op_type() == op;
  return n;
}

TEST_F(PassesNumericTest, CorpusModelsKeepTheirOutputs) {
  struct Check {
    std::string name;
    std::vector<PassSpec> pipeline;
    bool bit_exact;
  };
  std::vector<Check> checks = {
      {"constant_fold", {{"constant_fold", {}}}, true},
      {"simplify", {{"simplify", {}}}, true},
      {"fold_shapes", {{"fold_shapes", {}}}, true},
      {"fold_batchnorm", {{"fold_batchnorm", {}}}, false},
      {"fuse_matmul_add", {{"fuse_matmul_add", {}}}, false},
      {"-O2", *PipelineForLevel(passes_, 2), false},
  };
  std::map<std::string, int> o2_nodes;
  int models = 0;
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(Corpus())) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  for (const fs::path& dir : dirs) {
    const std::string name = dir.filename().string();
    SCOPED_TRACE(name);
    absl::StatusOr<CorpusModel> model = LoadCorpusModel(dir.string());
    ASSERT_TRUE(model.ok()) << model.status();
    absl::StatusOr<std::vector<runtime::Tensor>> reference =
        runtime_.Run(model->graph, model->inputs);
    ASSERT_TRUE(reference.ok()) << reference.status();
    ++models;
    for (const Check& check : checks) {
      SCOPED_TRACE(check.name);
      absl::StatusOr<Optimized> optimized = Optimize(model->graph, check.pipeline);
      ASSERT_TRUE(optimized.ok()) << optimized.status();
      absl::StatusOr<std::vector<runtime::Tensor>> got =
          runtime_.Run(optimized->graph, model->inputs);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(testing::CompareOutputs(*got, *reference, check.bit_exact, 1e-4), "");
      ASSERT_EQ(optimized->graph.outputs_size(), model->graph.outputs_size());
      for (int i = 0; i < model->graph.outputs_size(); ++i) {
        EXPECT_EQ(optimized->graph.outputs(i).name(), model->graph.outputs(i).name());
      }
      std::printf("%-20s %-15s %4d -> %4d nodes  %s\n", name.c_str(), check.name.c_str(),
                  model->graph.nodes_size(), optimized->graph.nodes_size(),
                  check.pipeline.size() == 1
                      ? optimized->messages[check.name].c_str()
                      : absl::StrCat(optimized->messages["fold_batchnorm"], " | ",
                                     optimized->messages["simplify"], " | ",
                                     optimized->messages["constant_fold"])
                            .c_str());
      if (check.name == "fold_batchnorm") {
        EXPECT_EQ(CountOps(optimized->graph, "BatchNormalization"), 0);
      }
      if (check.name == "-O2") o2_nodes[name] = optimized->graph.nodes_size();
      if (check.name == "constant_fold" && name == "transformer_encoder") {
        // The Constant nodes and the Identity nodes torch writes for shared weights, which are
        // forwarded, not copied: nothing grows. (Its shape arithmetic starts from Shape, which
        // simplify turns into constants first.)
        EXPECT_EQ(optimized->graph.nodes_size(), model->graph.nodes_size() -
                                                     CountOps(model->graph, "Constant") -
                                                     CountOps(model->graph, "Identity"));
        EXPECT_NE(optimized->messages[check.name].find("net +0 "), std::string::npos);
      }
    }
  }
  EXPECT_EQ(models, 7);
  // With every BatchNormalization folded, the BN export optimizes to the graph torch's own
  // folding exported (Conv, Clip, Add, pooling, Gemm).
  EXPECT_EQ(o2_nodes["mobilenet_v2_bn"], o2_nodes["mobilenet_v2"]);
  EXPECT_EQ(o2_nodes["mobilenet_v2"], 100);
  // The transformer's Shape -> Gather -> arithmetic chains fold away at -O2.
  EXPECT_LE(o2_nodes["transformer_encoder"], 60);
}

TEST_F(PassesNumericTest, LevelTwoIsDeterministic) {
  for (const char* name : {"mobilenet_v2_bn", "transformer_encoder", "lstm"}) {
    absl::StatusOr<CorpusModel> model = LoadCorpusModel((Corpus() / name).string());
    ASSERT_TRUE(model.ok()) << model.status();
    absl::StatusOr<Optimized> a = Optimize(model->graph, *PipelineForLevel(passes_, 2));
    absl::StatusOr<Optimized> b = Optimize(model->graph, *PipelineForLevel(passes_, 2));
    ASSERT_TRUE(a.ok() && b.ok());
    std::string sa, sb;
    ASSERT_TRUE(a->graph.SerializeToString(&sa));
    ASSERT_TRUE(b->graph.SerializeToString(&sb));
    EXPECT_TRUE(sa == sb) << name;
  }
}

}  // namespace
}  // namespace graphopt
