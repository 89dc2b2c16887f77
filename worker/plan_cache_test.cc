#include "worker/plan_cache.h"

#include "gtest/gtest.h"

namespace graphopt {
namespace {

std::shared_ptr<LoadedPlan> Plan(const std::string& id, int64_t bytes) {
  auto p = std::make_shared<LoadedPlan>();
  p->id = id;
  p->bytes = bytes;
  return p;
}

TEST(PlanCacheTest, InsertFindAndSecondInsertIsAlreadyLoaded) {
  PlanCache cache(100);
  bool already = true;
  ASSERT_TRUE(cache.Insert(Plan("a", 10), &already).ok());
  EXPECT_FALSE(already);
  EXPECT_NE(cache.Find("a"), nullptr);
  EXPECT_EQ(cache.Find("b"), nullptr);
  ASSERT_TRUE(cache.Insert(Plan("a", 10), &already).ok());
  EXPECT_TRUE(already);
  EXPECT_EQ(cache.stats().bytes, 10);
}

TEST(PlanCacheTest, EvictsLeastRecentlyUsedIdlePlans) {
  PlanCache cache(100);
  bool already;
  ASSERT_TRUE(cache.Insert(Plan("a", 40), &already).ok());
  ASSERT_TRUE(cache.Insert(Plan("b", 40), &already).ok());
  cache.Find("a");  // b is now least recently used
  ASSERT_TRUE(cache.Insert(Plan("c", 40), &already).ok());
  EXPECT_EQ(cache.Find("b"), nullptr);
  EXPECT_NE(cache.Find("a"), nullptr);
  EXPECT_EQ(cache.stats().evictions, 1);
  EXPECT_EQ(cache.stats().bytes, 80);
}

TEST(PlanCacheTest, PlansInUseAreNotEvictedAndTooBigIsResourceExhausted) {
  PlanCache cache(100);
  bool already;
  ASSERT_TRUE(cache.Insert(Plan("a", 60), &already).ok());
  std::shared_ptr<const LoadedPlan> held = cache.Find("a");
  absl::StatusOr<std::shared_ptr<const LoadedPlan>> b = cache.Insert(Plan("b", 60), &already);
  EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(b.status().message().find("in use"), absl::string_view::npos);
  held.reset();
  EXPECT_TRUE(cache.Insert(Plan("b", 60), &already).ok());
  EXPECT_EQ(cache.Insert(Plan("huge", 101), &already).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(PlanCacheTest, RemoveDropsThePlan) {
  PlanCache cache(100);
  bool already;
  ASSERT_TRUE(cache.Insert(Plan("a", 10), &already).ok());
  EXPECT_TRUE(cache.Remove("a"));
  EXPECT_FALSE(cache.Remove("a"));
  EXPECT_EQ(cache.stats().bytes, 0);
}

TEST(PlanCacheTest, CountsHitsAndMisses) {
  PlanCache cache(100);
  bool already;
  ASSERT_TRUE(cache.Insert(Plan("a", 10), &already).ok());
  EXPECT_NE(cache.Find("a"), nullptr);
  EXPECT_NE(cache.Find("a"), nullptr);
  EXPECT_EQ(cache.Find("b"), nullptr);
  EXPECT_EQ(cache.stats().hits, 2);
  EXPECT_EQ(cache.stats().misses, 1);
}

}  // namespace
}  // namespace graphopt
