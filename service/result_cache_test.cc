#include "service/result_cache.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace graphopt {
namespace {

// A result whose serialized response is about `bytes` long.
std::shared_ptr<const CachedResult> ResultOfSize(int64_t bytes, const std::string& tag = "") {
  auto result = std::make_shared<CachedResult>();
  result->response.set_onnx_model(std::string(static_cast<size_t>(bytes), 'x') + tag);
  return result;
}

v1::OptimizeRequest SmallRequest() {
  v1::OptimizeRequest request;
  v1::Node* node = request.mutable_graph()->add_nodes();
  node->set_op_type("Relu");
  node->add_inputs("x");
  node->add_outputs("y");
  request.mutable_pipeline()->set_opt_level(2);
  return request;
}

TEST(OptimizeCacheKeyTest, SameRequestSameKeyAndRequestUnchanged) {
  v1::OptimizeRequest request = SmallRequest();
  request.mutable_options()->mutable_verify()->set_enabled(true);
  request.add_ops()->set_name("Foo");
  const std::string before = request.SerializeAsString();
  const std::string key = OptimizeCacheKey(&request, "ops-v1");
  EXPECT_EQ(request.SerializeAsString(), before);
  EXPECT_TRUE(request.has_graph());
  EXPECT_EQ(OptimizeCacheKey(&request, "ops-v1"), key);
  EXPECT_EQ(key.rfind("sha256:", 0), 0u);
}

TEST(OptimizeCacheKeyTest, EveryResultChangingPartChangesTheKey) {
  v1::OptimizeRequest base = SmallRequest();
  const std::string key = OptimizeCacheKey(&base, "ops-v1");
  auto differs = [&](const char* what, auto change, absl::string_view ops = "ops-v1") {
    v1::OptimizeRequest r = SmallRequest();
    change(r);
    EXPECT_NE(OptimizeCacheKey(&r, ops), key) << what;
  };
  differs("op set version", [](v1::OptimizeRequest&) {}, "ops-v2");
  differs("opt level", [](v1::OptimizeRequest& r) { r.mutable_pipeline()->set_opt_level(3); });
  differs("explicit passes", [](v1::OptimizeRequest& r) {
    r.mutable_pipeline()->clear_opt_level();
    r.mutable_pipeline()->add_passes()->set_name("constant_fold");
  });
  differs("pass options", [](v1::OptimizeRequest& r) {
    r.mutable_pipeline()->clear_opt_level();
    v1::PassSpec* p = r.mutable_pipeline()->add_passes();
    p->set_name("constant_fold");
    (*p->mutable_options())["max_folded_bytes"] = "1024";
  });
  differs("dim bindings", [](v1::OptimizeRequest& r) { (*r.mutable_dim_bindings())["n"] = 4; });
  differs("strip_value_info",
          [](v1::OptimizeRequest& r) { r.mutable_options()->set_strip_value_info(true); });
  differs("native_ops", [](v1::OptimizeRequest& r) { r.mutable_options()->set_native_ops(true); });
  differs("result format",
          [](v1::OptimizeRequest& r) { r.set_result_format(v1::MODEL_FORMAT_ONNX); });
  differs("request ops", [](v1::OptimizeRequest& r) { r.add_ops()->set_name("Foo"); });
  differs("graph", [](v1::OptimizeRequest& r) {
    r.mutable_graph()->mutable_nodes(0)->set_op_type("Sigmoid");
  });
  differs("weight blob", [](v1::OptimizeRequest& r) {
    v1::Tensor* t = r.mutable_graph()->add_initializers();
    t->set_name("w");
    t->set_blob("sha256:" + std::string(64, 'a'));
  });
  differs("onnx instead of graph", [](v1::OptimizeRequest& r) {
    r.clear_graph();
    r.set_onnx_model("onnx bytes");
  });
}

TEST(OptimizeCacheKeyTest, VerifyAndNoCacheDoNotChangeTheKey) {
  v1::OptimizeRequest base = SmallRequest();
  const std::string key = OptimizeCacheKey(&base, "ops-v1");
  v1::OptimizeRequest r = SmallRequest();
  r.mutable_options()->set_no_cache(true);
  r.mutable_options()->mutable_verify()->set_enabled(true);
  r.mutable_options()->mutable_verify()->set_seed(7);
  EXPECT_EQ(OptimizeCacheKey(&r, "ops-v1"), key);
  EXPECT_TRUE(r.options().no_cache());
  EXPECT_EQ(r.options().verify().seed(), 7u);
}

TEST(OptimizeCacheKeyTest, DimBindingOrderDoesNotMatter) {
  v1::OptimizeRequest a = SmallRequest(), b = SmallRequest();
  (*a.mutable_dim_bindings())["n"] = 1;
  (*a.mutable_dim_bindings())["m"] = 2;
  (*b.mutable_dim_bindings())["m"] = 2;
  (*b.mutable_dim_bindings())["n"] = 1;
  EXPECT_EQ(OptimizeCacheKey(&a, "v"), OptimizeCacheKey(&b, "v"));
}

TEST(ResultCacheTest, HitAfterInsertMissOtherwiseCounted) {
  ResultCache cache({.max_bytes = 1 << 20});
  EXPECT_EQ(cache.Lookup("acme", "k1"), nullptr);
  ASSERT_TRUE(cache.Insert("acme", "k1", ResultOfSize(100, "one")));
  std::shared_ptr<const CachedResult> hit = cache.Lookup("acme", "k1");
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->response.onnx_model(), std::string(100, 'x') + "one");
  // Another tenant's equal key is another entry.
  EXPECT_EQ(cache.Lookup("other-tenant", "k1"), nullptr);
  const auto stats = cache.Stats();
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[0].first, "acme");
  EXPECT_EQ(stats[0].second.hits, 1);
  EXPECT_EQ(stats[0].second.misses, 1);
  EXPECT_EQ(stats[0].second.entries, 1);
  EXPECT_GT(stats[0].second.bytes, 100);
  EXPECT_EQ(stats[1].first, "other-tenant");
  EXPECT_EQ(stats[1].second.misses, 1);
  EXPECT_EQ(stats[1].second.entries, 0);
}

TEST(ResultCacheTest, BoundedInBytesLeastRecentlyUsedGoesFirst) {
  auto entry = ResultOfSize(1000);
  const int64_t each = ResultCache::EntryBytes(*entry, "k0");
  // Room for three entries in all, one tenant may use it all.
  ResultCache cache({.max_bytes = 3 * each + 10, .max_tenant_bytes = 3 * each + 10});
  for (const char* k : {"k0", "k1", "k2"}) ASSERT_TRUE(cache.Insert("t", k, ResultOfSize(1000)));
  EXPECT_NE(cache.Lookup("t", "k0"), nullptr);  // k1 is now the least recently used
  ASSERT_TRUE(cache.Insert("t", "k3", ResultOfSize(1000)));
  EXPECT_EQ(cache.Lookup("t", "k1"), nullptr);
  EXPECT_NE(cache.Lookup("t", "k0"), nullptr);
  EXPECT_NE(cache.Lookup("t", "k2"), nullptr);
  EXPECT_NE(cache.Lookup("t", "k3"), nullptr);
  EXPECT_LE(cache.bytes(), 3 * each + 10);
  EXPECT_EQ(cache.Stats()[0].second.evictions, 1);
  EXPECT_EQ(cache.Stats()[0].second.entries, 3);
}

TEST(ResultCacheTest, OneTenantCannotFlushAnother) {
  auto entry = ResultOfSize(1000);
  const int64_t each = ResultCache::EntryBytes(*entry, "k0");
  // Four entries in all, two per tenant.
  ResultCache cache({.max_bytes = 4 * each + 10, .max_tenant_bytes = 2 * each + 10});
  ASSERT_TRUE(cache.Insert("quiet", "q0", ResultOfSize(1000)));
  ASSERT_TRUE(cache.Insert("quiet", "q1", ResultOfSize(1000)));
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(cache.Insert("noisy", "n" + std::to_string(i), ResultOfSize(1000)));
  }
  EXPECT_NE(cache.Lookup("quiet", "q0"), nullptr);
  EXPECT_NE(cache.Lookup("quiet", "q1"), nullptr);
  EXPECT_NE(cache.Lookup("noisy", "n9"), nullptr);
  EXPECT_NE(cache.Lookup("noisy", "n8"), nullptr);
  EXPECT_EQ(cache.Lookup("noisy", "n7"), nullptr);
  for (const auto& [tenant, s] : cache.Stats()) {
    EXPECT_LE(s.bytes, 2 * each + 10) << tenant;
    EXPECT_EQ(s.evictions, tenant == "noisy" ? 8 : 0) << tenant;
  }
}

TEST(ResultCacheTest, TotalBoundEvictsAcrossTenants) {
  auto entry = ResultOfSize(1000);
  const int64_t each = ResultCache::EntryBytes(*entry, "k0");
  ResultCache cache({.max_bytes = 2 * each + 10, .max_tenant_bytes = 2 * each + 10});
  ASSERT_TRUE(cache.Insert("a", "k0", ResultOfSize(1000)));
  ASSERT_TRUE(cache.Insert("b", "k0", ResultOfSize(1000)));
  ASSERT_TRUE(cache.Insert("c", "k0", ResultOfSize(1000)));
  EXPECT_EQ(cache.Lookup("a", "k0"), nullptr);
  EXPECT_NE(cache.Lookup("b", "k0"), nullptr);
  EXPECT_NE(cache.Lookup("c", "k0"), nullptr);
  EXPECT_LE(cache.bytes(), 2 * each + 10);
}

TEST(ResultCacheTest, TooLargeOrDisabledIsNotKept) {
  ResultCache small({.max_bytes = 4000, .max_tenant_bytes = 1000});
  EXPECT_TRUE(small.Admits(1000));
  EXPECT_FALSE(small.Admits(1001));
  EXPECT_FALSE(small.Insert("t", "k", ResultOfSize(2000)));
  EXPECT_EQ(small.Lookup("t", "k"), nullptr);
  EXPECT_EQ(small.bytes(), 0);
  ResultCache off({.max_bytes = 0});
  EXPECT_FALSE(off.enabled());
  EXPECT_FALSE(off.Admits(0));
  EXPECT_FALSE(off.Insert("t", "k", ResultOfSize(10)));
  EXPECT_EQ(off.Lookup("t", "k"), nullptr);
}

TEST(ResultCacheTest, ReplacingAnEntryKeepsTheBytesRight) {
  ResultCache cache({.max_bytes = 1 << 20});
  ASSERT_TRUE(cache.Insert("t", "k", ResultOfSize(1000)));
  ASSERT_TRUE(cache.Insert("t", "k", ResultOfSize(10)));
  EXPECT_EQ(cache.bytes(), ResultCache::EntryBytes(*ResultOfSize(10), "k"));
  EXPECT_EQ(cache.Lookup("t", "k")->response.onnx_model().size(), 10u);
  EXPECT_EQ(cache.Stats()[0].second.evictions, 0);
}

TEST(ResultCacheTest, DefaultTenantShareIsAQuarter) {
  ResultCache cache({.max_bytes = 4000});
  EXPECT_EQ(cache.options().max_tenant_bytes, 1000);
}

TEST(ResultCacheTest, TenantsPastTheTrackedBoundAreCountedAsOther) {
  ResultCache cache({.max_bytes = 1 << 20});
  for (int i = 0; i < ResultCache::kMaxTrackedTenants + 5; ++i) {
    cache.Lookup("t" + std::to_string(i), "k");
  }
  const auto stats = cache.Stats();
  ASSERT_EQ(stats.size(), static_cast<size_t>(ResultCache::kMaxTrackedTenants + 1));
  int64_t other_misses = 0;
  for (const auto& [tenant, s] : stats) {
    if (tenant == "other") other_misses = s.misses;
  }
  EXPECT_EQ(other_misses, 5);
}

}  // namespace
}  // namespace graphopt
