// decompose_rnn on the corpus LSTM (//models:corpus 'lstm': torch's two-layer batch-first
// nn.LSTM exported at opset 14 with a symbolic batch): both LSTM nodes unrolled, and the
// unrolled graph computing what the LSTM kernel computes, at the test inputs' batch and at
// another one.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "bench/corpus_model.h"
#include "gmock/gmock.h"
#include "graph/proto_convert.h"
#include "gtest/gtest.h"
#include "passes/gradient_check.h"
#include "passes/pass_test_util.h"
#include "passes/pipeline.h"
#include "passes/runtime_test_util.h"

namespace graphopt {
namespace {

using Feeds = std::vector<std::pair<std::string, runtime::Tensor>>;

absl::StatusOr<v1::Graph> Decompose(const testing::PassTestEnv& env, const v1::Graph& model,
                                    PipelineResult* result) {
  absl::StatusOr<Graph> graph = GraphFromProto(model);
  if (!graph.ok()) return graph.status();
  PipelineOptions options;
  options.verify_each_pass = true;
  absl::StatusOr<PipelineResult> r =
      RunPipeline(*graph, {{"infer_type", {}}, {"infer_shape", {}}, {"decompose_rnn", {}}},
                  env.passes(), env.ops(), options);
  if (!r.ok()) return r.status();
  *result = *std::move(r);
  return GraphToProto(*graph);
}

TEST(DecomposeRnnCorpusTest, LstmUnrolledComputesTheSame) {
  const testing::PassTestEnv env;
  const testing::TestRuntime runtime;
  absl::StatusOr<CorpusModel> model = LoadCorpusModel(TestCorpusDir() + "/lstm");
  ASSERT_TRUE(model.ok()) << model.status();
  PipelineResult result;
  absl::StatusOr<v1::Graph> unrolled = Decompose(env, model->graph, &result);
  ASSERT_TRUE(unrolled.ok()) << unrolled.status();
  EXPECT_THAT(testing::OpTypes(*unrolled), ::testing::Not(::testing::Contains("LSTM")));
  ASSERT_FALSE(result.runs.empty());
  ASSERT_FALSE(result.runs.back().messages.empty());
  const std::string& report = result.runs.back().messages[0];
  std::printf("decompose_rnn on lstm: %s; %lld nodes before, %lld after, %lld us\n",
              report.c_str(), static_cast<long long>(result.runs.back().nodes_before),
              static_cast<long long>(result.runs.back().nodes_after),
              static_cast<long long>(result.runs.back().wall_time_us));
  EXPECT_THAT(report, ::testing::HasSubstr("unrolled 2 LSTM nodes (32 steps)"));

  // The test inputs (batch 2), and batch 5: the batch stays symbolic.
  std::vector<Feeds> feeds = {model->inputs};
  ASSERT_EQ(model->inputs.size(), 1u);
  feeds.push_back({{model->inputs[0].first,
                    testing::RandomTensor(v1::DT_FLOAT32, {5, 16, 32}, 3)}});
  for (const Feeds& f : feeds) {
    absl::StatusOr<std::vector<runtime::Tensor>> want = runtime.Run(model->graph, f);
    ASSERT_TRUE(want.ok()) << want.status();
    absl::StatusOr<std::vector<runtime::Tensor>> got = runtime.Run(*unrolled, f);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(testing::CompareOutputs(*got, *want, /*bit_exact=*/false, /*rtol=*/1e-5), "")
        << "batch " << f[0].second.shape()[0];
  }
}

}  // namespace
}  // namespace graphopt
