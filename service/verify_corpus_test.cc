// Verification on request over real models: a correct pipeline passes on the corpus's MLP and
// resnet18 at -O2 and -O3, in both result formats, and a result from the cache is verified the
// same way.

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "ops/builtin_ops.h"
#include "passes/builtin_passes.h"
#include "service/optimizer.h"
#include "util/file_util.h"

namespace graphopt {
namespace {

std::string CorpusModelPath(const std::string& name) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  return absl::StrCat(srcdir ? srcdir : ".", "/", workspace ? workspace : "graphopt",
                      "/models/corpus/", name, "/model.onnx");
}

struct Case {
  const char* model;
  int opt_level;
  v1::ModelFormat format;
};

class VerifyCorpusTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinOps(&ops_).ok());
    ASSERT_TRUE(RegisterBuiltinPasses(&passes_).ok());
  }
  OpRegistry ops_;
  PassRegistry passes_;
};

TEST_P(VerifyCorpusTest, CorrectPipelinePasses) {
  const Case& c = GetParam();
  absl::StatusOr<std::string> onnx = ReadFileBytes(CorpusModelPath(c.model));
  ASSERT_TRUE(onnx.ok()) << onnx.status();
  ResultCache cache;
  Optimizer optimizer(&ops_, &passes_);
  optimizer.set_result_cache(&cache);
  v1::OptimizeRequest request;
  request.set_onnx_model(*onnx);
  request.mutable_pipeline()->set_opt_level(c.opt_level);
  request.set_result_format(c.format);
  (*request.mutable_dim_bindings())["batch"] = 2;
  request.mutable_options()->mutable_verify()->set_enabled(true);
  request.mutable_options()->mutable_verify()->set_seed(7);
  for (v1::CacheResult expected : {v1::CACHE_RESULT_MISS, v1::CACHE_RESULT_HIT}) {
    absl::StatusOr<v1::OptimizeResponse> response = optimizer.Optimize(request);
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->cache(), expected);
    const v1::VerifyReport& report = response->verification();
    EXPECT_TRUE(report.passed());
    ASSERT_GT(report.outputs_size(), 0);
    EXPECT_EQ(report.generated_inputs_size(), 1);
    EXPECT_GT(report.original_run_us(), 0);
    EXPECT_GT(report.optimized_run_us(), 0);
    for (const v1::OutputComparison& out : report.outputs()) {
      EXPECT_TRUE(out.passed()) << out.name() << " " << out.problem();
      std::printf("%s -O%d %s: output %s max abs %.3g max rel %.3g (original %.1f ms, "
                  "optimized %.1f ms)\n",
                  c.model, c.opt_level, c.format == v1::MODEL_FORMAT_ONNX ? "onnx" : "graph",
                  out.name().c_str(), out.max_abs_error(), out.max_rel_error(),
                  report.original_run_us() / 1e3, report.optimized_run_us() / 1e3);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Corpus, VerifyCorpusTest,
    ::testing::Values(Case{"mlp", 2, v1::MODEL_FORMAT_ONNX}, Case{"mlp", 3, v1::MODEL_FORMAT_GRAPH},
                      Case{"resnet18", 2, v1::MODEL_FORMAT_ONNX},
                      Case{"resnet18", 3, v1::MODEL_FORMAT_GRAPH}),
    [](const ::testing::TestParamInfo<Case>& info) {
      return absl::StrCat(info.param.model, "_O", info.param.opt_level,
                          info.param.format == v1::MODEL_FORMAT_ONNX ? "_onnx" : "_graph");
    });

}  // namespace
}  // namespace graphopt
