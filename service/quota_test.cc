#include "service/quota.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {

using ::testing::HasSubstr;

TEST(QuotaTableTest, ParsesDefaultsAndOverrides) {
  TenantQuota base;
  base.max_concurrent = 3;
  absl::StatusOr<QuotaTable> table = QuotaTable::Parse(R"(
    # the defaults for everyone
    acme max_concurrent=32 blob_mb=8192   # a big one
    * requests_per_s=10 burst=20
    tiny max_ops=5 op_store_mb=0.5
  )",
                                                       base);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->overrides(), 2);
  EXPECT_EQ(table->For("acme").max_concurrent, 32);
  EXPECT_EQ(table->For("acme").blob_bytes, int64_t{8192} << 20);
  EXPECT_EQ(table->For("acme").requests_per_s, 10);  // from '*', whatever the line order
  EXPECT_EQ(table->For("tiny").max_ops, 5);
  EXPECT_EQ(table->For("tiny").op_store_bytes, int64_t{512} << 10);
  EXPECT_EQ(table->For("tiny").max_concurrent, 3);
  EXPECT_EQ(table->For("other").burst, 20);
}

TEST(QuotaTableTest, ErrorsNameTheLineAndKey) {
  auto error = [](absl::string_view text) {
    return std::string(QuotaTable::Parse(text, {}).status().message());
  };
  EXPECT_THAT(error("a x=1"), HasSubstr("line 1 (a): unknown key 'x'"));
  EXPECT_THAT(error("\na max_concurrent=-1"), HasSubstr("line 2 (a): max_concurrent=-1"));
  EXPECT_THAT(error("a max_concurrent=1.5"), HasSubstr("whole number"));
  EXPECT_THAT(error("a burst=abc"), HasSubstr("not a number"));
  EXPECT_THAT(error("a burst"), HasSubstr("not key=value"));
  EXPECT_THAT(error("a burst=1\na burst=2"), HasSubstr("line 2: tenant 'a' is given twice"));
  EXPECT_THAT(error("Bad! burst=1"), HasSubstr("line 1: tenant 'Bad!'"));
  EXPECT_THAT(error("a"), HasSubstr("no key=value"));
}

TEST(TenantLimiterTest, ConcurrencySlotsAreReleased) {
  TenantQuota q;
  q.max_concurrent = 2;
  QuotaBook book{QuotaTable(q)};
  TenantLimiter limiter(&book);
  absl::StatusOr<TenantLimiter::Admission> a = limiter.Admit("t", true);
  absl::StatusOr<TenantLimiter::Admission> b = limiter.Admit("t", true);
  ASSERT_TRUE(a.ok() && b.ok());
  absl::StatusOr<TenantLimiter::Admission> c = limiter.Admit("t", true);
  ASSERT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(c.status().message(), HasSubstr("tenant 't': quota max_concurrent=2 reached"));
  // Another tenant is not affected; an uncounted call is not either.
  EXPECT_TRUE(limiter.Admit("u", true).ok());
  EXPECT_TRUE(limiter.Admit("t", false).ok());
  a->Release();
  EXPECT_EQ(limiter.InFlight("t"), 1);
  EXPECT_TRUE(limiter.Admit("t", true).ok());  // released again at once (temporary)
  EXPECT_EQ(limiter.InFlight("t"), 1);
}

TEST(TenantLimiterTest, RateIsATokenBucket) {
  TenantQuota q;
  q.requests_per_s = 0.001;  // no refill within the test
  q.burst = 3;
  QuotaBook book{QuotaTable(q)};
  TenantLimiter limiter(&book);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.Admit("t", false).ok()) << i;
  absl::Duration retry;
  absl::StatusOr<TenantLimiter::Admission> refused = limiter.Admit("t", false, &retry);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), HasSubstr("quota requests_per_s=0.001"));
  EXPECT_GT(retry, absl::Seconds(1));
  EXPECT_TRUE(limiter.Admit("u", false).ok());
}

TEST(TenantLimiterTest, ManyTenantsDoNotGrowStateWithoutBound) {
  TenantQuota q;
  q.requests_per_s = 1e12;  // every bucket refills at once: idle tenants are forgettable
  QuotaBook book{QuotaTable(q)};
  TenantLimiter limiter(&book);
  absl::StatusOr<TenantLimiter::Admission> busy = limiter.Admit("busy", true);
  for (int i = 0; i < 20000; ++i) {
    ASSERT_TRUE(limiter.Admit(absl::StrCat("t", i), false).ok()) << i;
  }
  EXPECT_LE(limiter.TrackedTenants(), 4097);
  // A tenant with a call in flight is never forgotten.
  EXPECT_EQ(limiter.InFlight("busy"), 1);
}

TEST(TenantLimiterTest, CallQuotasAreSplitOverReplicas) {
  TenantQuota q;
  q.max_concurrent = 5;
  q.requests_per_s = 0.001;
  q.burst = 100;
  q.blob_bytes = 1000;
  QuotaBook book{QuotaTable(q)};
  book.set_replicas(2);
  EXPECT_EQ(book.For("t").max_concurrent, 3);  // rounded up
  EXPECT_EQ(book.For("t").burst, 50);
  EXPECT_EQ(book.For("t").blob_bytes, 1000);  // storage stays whole
  TenantLimiter limiter(&book);
  std::vector<TenantLimiter::Admission> held;
  for (int i = 0; i < 3; ++i) held.push_back(*limiter.Admit("t", true));
  absl::StatusOr<TenantLimiter::Admission> refused = limiter.Admit("t", true);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("max_concurrent=3 on this replica (its share over 2 replicas)"));
  book.set_replicas(0);  // never below one
  EXPECT_EQ(book.For("t").max_concurrent, 5);
}

TEST(TenantLimiterTest, InFlightByTenantListsTenantsHoldingSlots) {
  QuotaBook quotas;
  TenantLimiter limiter(&quotas);
  absl::StatusOr<TenantLimiter::Admission> b1 = limiter.Admit("b", true);
  absl::StatusOr<TenantLimiter::Admission> b2 = limiter.Admit("b", true);
  absl::StatusOr<TenantLimiter::Admission> a = limiter.Admit("a", true);
  absl::StatusOr<TenantLimiter::Admission> rate_only = limiter.Admit("c", false);
  ASSERT_TRUE(b1.ok() && b2.ok() && a.ok() && rate_only.ok());
  EXPECT_EQ(limiter.InFlightByTenant(),
            (std::vector<std::pair<std::string, int>>{{"a", 1}, {"b", 2}}));
  a->Release();
  EXPECT_EQ(limiter.InFlightByTenant(), (std::vector<std::pair<std::string, int>>{{"b", 2}}));
}

}  // namespace
}  // namespace graphopt
