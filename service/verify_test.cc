#include "service/verify.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "ops/builtin_ops.h"
#include "passes/builtin_passes.h"
#include "passes/pass.h"
#include "service/optimizer.h"

namespace graphopt {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A pass that breaks numerics on purpose (test only): adds `delta` to every element of the
// first float32 initializer it finds.
class PerturbWeightsPass final : public Pass {
 public:
  explicit PerturbWeightsPass(float delta) : delta_(delta) {}
  absl::StatusOr<bool> Run(Graph& graph, const PassContext&) override {
    for (ValueId v : graph.InitializerValues()) {
      const v1::Tensor* t = graph.initializer_of(v);
      if (t == nullptr || t->dtype() != v1::DT_FLOAT32 || t->raw_data().empty()) continue;
      v1::Tensor changed = *t;
      std::string& raw = *changed.mutable_raw_data();
      for (size_t i = 0; i + 4 <= raw.size(); i += 4) {
        float f;
        std::memcpy(&f, raw.data() + i, 4);
        f += delta_;
        std::memcpy(raw.data() + i, &f, 4);
      }
      graph.SetInitializer(v, std::move(changed));
      return true;
    }
    return false;
  }

 private:
  const float delta_;
};

constexpr char kGraph[] = R"pb(
  inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { symbol: "batch" } dims { size: 4 } } } }
  initializers { name: "w" dtype: DT_FLOAT32 dims: 4 raw_data: "\000\000\200?\000\000\000@\000\000@@\000\000\200@" }
  nodes { name: "id" op_type: "Identity" inputs: "x" outputs: "a" }
  nodes { name: "add" op_type: "Add" inputs: "a" inputs: "w" outputs: "b" }
  nodes { name: "r" op_type: "Relu" inputs: "b" outputs: "y" }
  outputs { name: "y" }
  outputs { name: "b" }
)pb";

class VerifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinOps(&ops_).ok());
    ASSERT_TRUE(RegisterBuiltinPasses(&passes_).ok());
    PassInfo info;
    info.name = "perturb_weights_for_test";
    info.description = "test only: adds 0.5 to the first float32 initializer";
    info.factory = [](const PassOptions&) -> absl::StatusOr<std::unique_ptr<Pass>> {
      return std::make_unique<PerturbWeightsPass>(0.5f);
    };
    ASSERT_TRUE(passes_.Register(std::move(info)).ok());
  }

  v1::OptimizeRequest Request(bool verify = true) {
    v1::OptimizeRequest r;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(kGraph, r.mutable_graph()));
    (*r.mutable_dim_bindings())["batch"] = 3;
    r.mutable_options()->mutable_verify()->set_enabled(verify);
    r.mutable_options()->mutable_verify()->set_seed(42);
    return r;
  }

  OpRegistry ops_;
  PassRegistry passes_;
};

TEST_F(VerifyTest, CorrectPipelinePassesWithAReport) {
  Optimizer optimizer(&ops_, &passes_);
  auto response = optimizer.Optimize(Request());
  ASSERT_TRUE(response.ok()) << response.status();
  const v1::VerifyReport& report = response->verification();
  EXPECT_TRUE(report.passed());
  EXPECT_EQ(report.rtol(), kDefaultVerifyRtol);
  EXPECT_EQ(report.atol(), kDefaultVerifyAtol);
  EXPECT_EQ(report.seed(), 42u);
  ASSERT_EQ(report.generated_inputs_size(), 1);
  EXPECT_EQ(report.generated_inputs(0), "x");
  ASSERT_EQ(report.outputs_size(), 2);
  EXPECT_EQ(report.outputs(0).name(), "y");
  EXPECT_EQ(report.outputs(1).name(), "b");
  for (const v1::OutputComparison& c : report.outputs()) {
    EXPECT_TRUE(c.passed()) << c.name();
    EXPECT_EQ(c.max_abs_error(), 0) << c.name();
    EXPECT_TRUE(c.problem().empty()) << c.name();
  }
}

TEST_F(VerifyTest, WithoutVerifyThereIsNoReport) {
  Optimizer optimizer(&ops_, &passes_);
  auto response = optimizer.Optimize(Request(/*verify=*/false));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_FALSE(response->has_verification());
}

TEST_F(VerifyTest, APassThatBreaksNumericsFailsNamingTheOutputs) {
  Optimizer optimizer(&ops_, &passes_);
  v1::OptimizeRequest r = Request();
  r.mutable_pipeline()->add_passes()->set_name("perturb_weights_for_test");
  auto response = optimizer.Optimize(r);
  ASSERT_EQ(response.status().code(), absl::StatusCode::kFailedPrecondition) << response.status();
  EXPECT_THAT(response.status().message(), HasSubstr("verification failed"));
  EXPECT_THAT(response.status().message(), HasSubstr("output 'b' max abs error 0.5"));
  EXPECT_THAT(response.status().message(), HasSubstr("seed 42"));

  // A tolerance that admits the change passes, and says by how much the outputs moved.
  r.mutable_options()->mutable_verify()->set_atol(0.6);
  response = optimizer.Optimize(r);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_TRUE(response->verification().passed());
  EXPECT_NEAR(response->verification().outputs(1).max_abs_error(), 0.5, 1e-6);
  EXPECT_GT(response->verification().outputs(1).max_rel_error(), 0);
}

TEST_F(VerifyTest, UnboundSymbolicDimIsNamed) {
  Optimizer optimizer(&ops_, &passes_);
  v1::OptimizeRequest r = Request();
  r.clear_dim_bindings();
  auto response = optimizer.Optimize(r);
  ASSERT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(response.status().message(), HasSubstr("input 'x' dim 0 is symbolic 'batch'"));
}

TEST_F(VerifyTest, GivenInputsAreUsedAndChecked) {
  Optimizer optimizer(&ops_, &passes_);
  v1::OptimizeRequest r = Request();
  r.clear_dim_bindings();  // a given input needs no binding
  v1::Tensor* x = r.mutable_options()->mutable_verify()->add_inputs();
  x->set_name("x");
  x->set_dtype(v1::DT_FLOAT32);
  x->add_dims(2);
  x->add_dims(4);
  x->set_raw_data(std::string(32, '\0'));
  auto response = optimizer.Optimize(r);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->verification().generated_inputs_size(), 0);

  x->set_name("nope");
  response = optimizer.Optimize(r);
  ASSERT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(response.status().message(), HasSubstr("the model has no input 'nope'"));
}

TEST_F(VerifyTest, BadToleranceIsRefused) {
  Optimizer optimizer(&ops_, &passes_);
  v1::OptimizeRequest r = Request();
  r.mutable_options()->mutable_verify()->set_rtol(-1);
  auto response = optimizer.Optimize(r);
  ASSERT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(response.status().message(), HasSubstr("verify.rtol"));
}

TEST_F(VerifyTest, RunsStayWithinTheMemoryLimit) {
  Optimizer optimizer(&ops_, &passes_);
  optimizer.set_verify_limits({.max_memory_bytes = 64});
  v1::OptimizeRequest r = Request();
  (*r.mutable_dim_bindings())["batch"] = 1000;
  auto response = optimizer.Optimize(r);
  ASSERT_EQ(response.status().code(), absl::StatusCode::kResourceExhausted) << response.status();
  EXPECT_THAT(response.status().message(), HasSubstr("verify"));
}

TEST_F(VerifyTest, StopTokenEndsVerification) {
  // A cache hit skips the pipeline: what the token stops is verification.
  ResultCache cache;
  Optimizer optimizer(&ops_, &passes_);
  optimizer.set_result_cache(&cache);
  ASSERT_TRUE(optimizer.Optimize(Request(/*verify=*/false)).ok());
  StopToken stop;
  stop.Cancel("the client went away");
  auto response = optimizer.Optimize(Request(), kDefaultTenant, &stop);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kCancelled) << response.status();
  EXPECT_EQ(cache.Stats()[0].second.hits, 1);
}

TEST_F(VerifyTest, VerificationRunsOnACacheHitToo) {
  ResultCache cache;
  Optimizer optimizer(&ops_, &passes_);
  optimizer.set_result_cache(&cache);
  v1::OptimizeRequest r = Request();
  r.mutable_pipeline()->add_passes()->set_name("perturb_weights_for_test");
  r.mutable_options()->mutable_verify()->set_atol(0.6);
  auto first = optimizer.Optimize(r);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->cache(), v1::CACHE_RESULT_MISS);
  // The same result from the cache, verified again under the tighter default tolerance.
  r.mutable_options()->mutable_verify()->set_atol(0);
  auto second = optimizer.Optimize(r);
  ASSERT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition) << second.status();
  EXPECT_THAT(second.status().message(), HasSubstr("output 'b'"));
  EXPECT_EQ(cache.Stats()[0].second.hits, 1);
}

TEST(VerifyFailureTest, OkForAPassedReport) {
  v1::VerifyReport report;
  report.set_passed(true);
  EXPECT_TRUE(VerifyFailure(report).ok());
  report.set_passed(false);
  v1::OutputComparison* c = report.add_outputs();
  c->set_name("logits");
  c->set_problem("the original gives float32[1,10], the optimized float32[1,9]");
  EXPECT_THAT(VerifyFailure(report).message(), HasSubstr("output 'logits' the original gives"));
  EXPECT_THAT(VerifyFailure(report).message(), Not(HasSubstr("max abs")));
}

}  // namespace
}  // namespace graphopt
