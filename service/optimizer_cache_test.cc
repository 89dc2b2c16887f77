// The result cache through Optimizer::Optimize: what hits, what misses, what is answered.

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "ops/builtin_ops.h"
#include "passes/builtin_passes.h"
#include "service/blob_store.h"
#include "service/digest.h"
#include "service/optimizer.h"
#include "service/result_cache.h"

namespace graphopt {
namespace {

using ::testing::HasSubstr;

constexpr char kGraph[] = R"pb(
  inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { symbol: "n" } dims { size: 3 } } } }
  nodes { name: "id" op_type: "Identity" inputs: "x" outputs: "a" }
  nodes { name: "t" op_type: "Twist" domain: "my.ops" inputs: "a" outputs: "b" }
  nodes { name: "r" op_type: "Relu" inputs: "b" outputs: "y" }
  outputs { name: "y" }
)pb";

// my.ops::Twist: shapes as Relu's.
constexpr char kTwist[] = R"pb(
  name: "Twist"
  domain: "my.ops"
  version: 1
  inputs { name: "x" type_constraint: "T" }
  outputs { name: "y" type_constraint: "T" }
  type_constraints { name: "T" allowed: DT_FLOAT32 }
  shape_rule { builtin: "Relu" }
)pb";

class OptimizerCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinOps(&builtins_).ok());
    ASSERT_TRUE(RegisterBuiltinPasses(&passes_).ok());
    store_ = std::make_unique<OpStore>(&builtins_);
    blobs_ = std::make_unique<BlobStore>(int64_t{1} << 20);
    optimizer_ = std::make_unique<Optimizer>(store_.get(), &passes_, blobs_.get());
    optimizer_->set_result_cache(&cache_);
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kTwist, &twist_));
    for (const char* tenant : {"team-a", "team-b"}) Register(tenant, 1);
  }

  void Register(const std::string& tenant, int version) {
    v1::RegisterOpsRequest reg;
    *reg.add_ops() = twist_;
    reg.mutable_ops(0)->set_version(version);
    if (version > 1) reg.mutable_ops(0)->set_doc(absl::StrCat("version ", version));
    auto registered = optimizer_->RegisterOps(reg, tenant);
    ASSERT_TRUE(registered.ok()) << registered.status();
  }

  v1::OptimizeRequest Request() {
    v1::OptimizeRequest r;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(kGraph, r.mutable_graph()));
    r.mutable_pipeline()->set_opt_level(2);
    return r;
  }

  v1::CacheResult Run(const v1::OptimizeRequest& r, const std::string& tenant = "team-a") {
    auto response = optimizer_->Optimize(r, tenant);
    EXPECT_TRUE(response.ok()) << response.status();
    return response.ok() ? response->cache() : v1::CACHE_RESULT_NOT_USED;
  }

  OpRegistry builtins_;
  PassRegistry passes_;
  std::unique_ptr<OpStore> store_;
  std::unique_ptr<BlobStore> blobs_;
  ResultCache cache_;
  std::unique_ptr<Optimizer> optimizer_;
  v1::OpDescriptor twist_;
};

TEST_F(OptimizerCacheTest, RepeatedRequestIsAHitWithTheSameResult) {
  auto first = optimizer_->Optimize(Request(), "team-a");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->cache(), v1::CACHE_RESULT_MISS);
  auto second = optimizer_->Optimize(Request(), "team-a");
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->cache(), v1::CACHE_RESULT_HIT);
  EXPECT_EQ(second->graph().SerializeAsString(), first->graph().SerializeAsString());
  ASSERT_EQ(second->reports_size(), first->reports_size());
  for (int i = 0; i < first->reports_size(); ++i) {
    EXPECT_EQ(second->reports(i).name(), first->reports(i).name());
    EXPECT_EQ(second->reports(i).nodes_after(), first->reports(i).nodes_after());
  }
  const auto stats = cache_.Stats();
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].second.hits, 1);
  EXPECT_EQ(stats[0].second.misses, 1);
  EXPECT_EQ(stats[0].second.entries, 1);
}

TEST_F(OptimizerCacheTest, WhatChangesTheResultMisses) {
  ASSERT_EQ(Run(Request()), v1::CACHE_RESULT_MISS);
  ASSERT_EQ(Run(Request()), v1::CACHE_RESULT_HIT);

  v1::OptimizeRequest level1 = Request();
  level1.mutable_pipeline()->set_opt_level(1);
  EXPECT_EQ(Run(level1), v1::CACHE_RESULT_MISS);

  v1::OptimizeRequest passes = Request();
  passes.mutable_pipeline()->clear_opt_level();
  passes.mutable_pipeline()->add_passes()->set_name("eliminate_identity");
  EXPECT_EQ(Run(passes), v1::CACHE_RESULT_MISS);

  v1::OptimizeRequest bound = Request();
  (*bound.mutable_dim_bindings())["n"] = 2;
  EXPECT_EQ(Run(bound), v1::CACHE_RESULT_MISS);

  v1::OptimizeRequest stripped = Request();
  stripped.mutable_options()->set_strip_value_info(true);
  EXPECT_EQ(Run(stripped), v1::CACHE_RESULT_MISS);

  v1::OptimizeRequest onnx = Request();
  onnx.set_result_format(v1::MODEL_FORMAT_ONNX);
  EXPECT_EQ(Run(onnx), v1::CACHE_RESULT_MISS);
  EXPECT_EQ(Run(onnx), v1::CACHE_RESULT_HIT);

  // Another tenant, with an equal op set, has its own entries.
  EXPECT_EQ(Run(Request(), "team-b"), v1::CACHE_RESULT_MISS);
  EXPECT_EQ(Run(Request(), "team-b"), v1::CACHE_RESULT_HIT);
}

TEST_F(OptimizerCacheTest, ChangingTheTenantsOpsMisses) {
  ASSERT_EQ(Run(Request()), v1::CACHE_RESULT_MISS);
  ASSERT_EQ(Run(Request()), v1::CACHE_RESULT_HIT);
  Register("team-a", 2);
  EXPECT_EQ(Run(Request()), v1::CACHE_RESULT_MISS);
  EXPECT_EQ(Run(Request()), v1::CACHE_RESULT_HIT);
  // Team b's ops did not change: its entry, made now, stays good.
  EXPECT_EQ(Run(Request(), "team-b"), v1::CACHE_RESULT_MISS);
  EXPECT_EQ(Run(Request(), "team-b"), v1::CACHE_RESULT_HIT);
}

TEST_F(OptimizerCacheTest, RequestOpsAreInTheKey) {
  v1::OptimizeRequest with_ops = Request();
  *with_ops.add_ops() = twist_;
  with_ops.mutable_ops(0)->set_version(5);
  with_ops.mutable_ops(0)->set_doc("request-local");
  EXPECT_EQ(Run(with_ops), v1::CACHE_RESULT_MISS);
  EXPECT_EQ(Run(Request()), v1::CACHE_RESULT_MISS);
  EXPECT_EQ(Run(with_ops), v1::CACHE_RESULT_HIT);
}

TEST_F(OptimizerCacheTest, NoCacheAndNoCacheObjectMeanNotUsed) {
  v1::OptimizeRequest r = Request();
  r.mutable_options()->set_no_cache(true);
  EXPECT_EQ(Run(r), v1::CACHE_RESULT_NOT_USED);
  EXPECT_EQ(Run(r), v1::CACHE_RESULT_NOT_USED);
  EXPECT_TRUE(cache_.Stats().empty());
  EXPECT_EQ(cache_.bytes(), 0);

  Optimizer uncached(store_.get(), &passes_);
  auto response = uncached.Optimize(Request(), "team-a");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->cache(), v1::CACHE_RESULT_NOT_USED);
}

TEST_F(OptimizerCacheTest, AModelLargerThanATenantsShareIsNotLookedUp) {
  v1::OptimizeRequest r = Request();
  const int64_t model_bytes = static_cast<int64_t>(r.graph().ByteSizeLong());
  ResultCache small({.max_bytes = 4 * model_bytes, .max_tenant_bytes = model_bytes - 1});
  Optimizer optimizer(store_.get(), &passes_, blobs_.get());
  optimizer.set_result_cache(&small);
  for (int i = 0; i < 2; ++i) {
    auto response = optimizer.Optimize(r, "team-a");
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->cache(), v1::CACHE_RESULT_NOT_USED);
  }
  EXPECT_TRUE(small.Stats().empty());
}

TEST_F(OptimizerCacheTest, FailedRequestsAreNotCached) {
  v1::OptimizeRequest r = Request();
  r.mutable_pipeline()->clear_opt_level();
  r.mutable_pipeline()->add_passes()->set_name("no_such_pass");
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(optimizer_->Optimize(r, "team-a").status().code(), absl::StatusCode::kNotFound);
  }
  EXPECT_EQ(cache_.bytes(), 0);
}

TEST_F(OptimizerCacheTest, AHitStillNeedsTheTenantsBlobs) {
  // A graph whose weight is a blob of team-a's; team-a loses it after the first request.
  const std::string weight(12, '\0');
  absl::StatusOr<std::string> digest = blobs_->Put("team-a", weight);
  ASSERT_TRUE(digest.ok()) << digest.status();
  v1::OptimizeRequest r = Request();
  v1::Tensor* w = r.mutable_graph()->add_initializers();
  w->set_name("w");
  w->set_dtype(v1::DT_FLOAT32);
  w->add_dims(3);
  w->set_blob(*digest);
  v1::Node* add = r.mutable_graph()->add_nodes();
  add->set_name("add");
  add->set_op_type("Add");
  add->add_inputs("y");
  add->add_inputs("w");
  add->add_outputs("z");
  r.mutable_graph()->mutable_outputs(0)->set_name("z");
  ASSERT_EQ(Run(r), v1::CACHE_RESULT_MISS);
  ASSERT_EQ(Run(r), v1::CACHE_RESULT_HIT);
  // Another tenant with the same digest but not the blob gets no hit (and no result).
  auto other = optimizer_->Optimize(r, "team-b");
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition);

  // Team a's blobs go when its store is replaced by an empty one.
  BlobStore empty(int64_t{1} << 20);
  Optimizer fresh_store(store_.get(), &passes_, &empty);
  fresh_store.set_result_cache(&cache_);
  auto lost = fresh_store.Optimize(r, "team-a");
  ASSERT_EQ(lost.status().code(), absl::StatusCode::kFailedPrecondition) << lost.status();
  EXPECT_THAT(lost.status().message(), HasSubstr("does not hold"));
}

}  // namespace
}  // namespace graphopt
