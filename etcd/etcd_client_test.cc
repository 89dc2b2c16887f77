#include "etcd/etcd_client.h"

#include <atomic>
#include <map>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "etcd/etcd_test_util.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {




// What an EtcdPrefixWatcher has delivered, as a key -> value map.
class Mirror {
 public:
  EtcdPrefixWatcher::SnapshotFn OnSnapshot() {
    return [this](const std::vector<EtcdKeyValue>& kvs) {
      absl::MutexLock lock(&mu_);
      kvs_.clear();
      for (const EtcdKeyValue& kv : kvs) kvs_[kv.key] = kv.value;
    };
  }
  EtcdPrefixWatcher::EventFn OnEvent() {
    return [this](const EtcdPrefixWatcher::Event& e) {
      absl::MutexLock lock(&mu_);
      if (e.deleted) {
        kvs_.erase(e.kv.key);
      } else {
        kvs_[e.kv.key] = e.kv.value;
      }
    };
  }
  size_t Size() {
    absl::MutexLock lock(&mu_);
    return kvs_.size();
  }
  bool Has(const std::string& key) {
    absl::MutexLock lock(&mu_);
    return kvs_.count(key) == 1;
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, std::string> kvs_;
};

TEST(EtcdPrefixEndTest, IncrementsTheLastByte) {
  EXPECT_EQ(EtcdPrefixEnd("a/"), "a0");
  EXPECT_EQ(EtcdPrefixEnd(std::string("a\xff", 2)), "b");
  EXPECT_EQ(EtcdPrefixEnd(""), std::string(1, '\0'));
}

TEST(ParseEtcdEndpointsTest, AcceptsHostPortsAndRefusesTheRest) {
  auto ok = ParseEtcdEndpoints("a:2379, http://b:2379", "--etcd_endpoints");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(*ok, (std::vector<std::string>{"a:2379", "b:2379"}));
  auto bad = ParseEtcdEndpoints("a:2379,b", "--etcd_endpoints");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--etcd_endpoints: 'b'"), std::string::npos);
  EXPECT_FALSE(ParseEtcdEndpoints(" , ", "--etcd_endpoints").ok());
}

using EtcdClientTest = EtcdSuiteTest;

TEST_F(EtcdClientTest, PutGetRangeDelete) {
  auto client = cluster_->Client();
  ASSERT_TRUE(client->Put("t/kv/a", "1").ok());
  ASSERT_TRUE(client->Put("t/kv/b", std::string("\0\xff", 2)).ok());
  ASSERT_TRUE(client->Put("t/kw", "outside").ok());
  auto a = client->Get("t/kv/a");
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(a->has_value());
  EXPECT_EQ((*a)->value, "1");
  auto missing = client->Get("t/kv/zzz");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  auto range = client->GetPrefix("t/kv/");
  ASSERT_TRUE(range.ok()) << range.status();
  ASSERT_EQ(range->kvs.size(), 2u);
  EXPECT_EQ(range->kvs[1].value, std::string("\0\xff", 2));
  EXPECT_GT(range->revision, 0);
  EXPECT_EQ(*client->CountPrefix("t/kv/"), 2);
  auto oldest = client->OldestKeys("t/kv/", 1);
  ASSERT_TRUE(oldest.ok());
  EXPECT_EQ(*oldest, std::vector<std::string>{"t/kv/a"});
  EXPECT_EQ(*client->DeletePrefix("t/kv/"), 2);
  EXPECT_EQ(*client->CountPrefix("t/kv/"), 0);
  EXPECT_EQ(*client->Delete("t/kw"), 1);
}

TEST_F(EtcdClientTest, TxnCreatesOnlyOnce) {
  auto client = cluster_->Client();
  etcdserverpb::TxnRequest txn;
  etcdserverpb::Compare* cmp = txn.add_compare();
  cmp->set_key("t/once");
  cmp->set_target(etcdserverpb::Compare::CREATE);
  cmp->set_result(etcdserverpb::Compare::EQUAL);
  cmp->set_create_revision(0);
  etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
  put->set_key("t/once");
  put->set_value("first");
  txn.add_failure()->mutable_request_range()->set_key("t/once");
  auto first = client->Txn(txn);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->succeeded());
  put->set_value("second");
  auto second = client->Txn(txn);
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->succeeded());
  ASSERT_EQ(second->responses_size(), 1);
  EXPECT_EQ(second->responses(0).response_range().kvs(0).value(), "first");
}

TEST_F(EtcdClientTest, LeaseKeysVanishOnRevoke) {
  auto client = cluster_->Client();
  std::atomic<int> granted{0};
  {
    EtcdLeaseKeeper keeper(client.get(), absl::Seconds(2), [&](int64_t lease) {
      ASSERT_TRUE(client->Put("t/leased", "x", lease).ok());
      granted.fetch_add(1);
    });
    ASSERT_TRUE(keeper.Start().ok());
    // Kept alive past its TTL.
    absl::SleepFor(absl::Seconds(3));
    auto kv = client->Get("t/leased");
    ASSERT_TRUE(kv.ok());
    EXPECT_TRUE(kv->has_value());
    EXPECT_EQ(keeper.grants(), 1);
  }
  auto gone = client->Get("t/leased");
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->has_value());
  auto expired = client->KeepAliveOnce(123456789);
  EXPECT_TRUE(absl::IsNotFound(expired)) << expired;
}

TEST_F(EtcdClientTest, WatcherMirrorsThePrefix) {
  auto client = cluster_->Client();
  ASSERT_TRUE(client->Put("t/w/before", "0").ok());
  Mirror mirror;
  EtcdPrefixWatcher watcher(client.get(), "t/w/", mirror.OnSnapshot(), mirror.OnEvent());
  ASSERT_TRUE(watcher.Start(absl::Seconds(5)).ok());
  EXPECT_EQ(mirror.Size(), 1u);
  ASSERT_TRUE(client->Put("t/w/new", "1").ok());
  ASSERT_TRUE(client->Delete("t/w/before").ok());
  ASSERT_TRUE(client->Put("t/outside", "x").ok());
  EXPECT_TRUE(Eventually([&] { return mirror.Size() == 1 && mirror.Has("t/w/new"); }));
}

// Three members; the one in use is killed: reads, writes and watches carry on through the
// others, and the member rejoins.
TEST(EtcdClusterTest, SurvivesAMemberKill) {
  auto started = EtcdTestCluster::Start(FreshTestDir("three"), 3);
  ASSERT_TRUE(started.ok()) << started.status();
  EtcdTestCluster& cluster = **started;
  auto client = cluster.Client();
  Mirror mirror;
  EtcdPrefixWatcher watcher(client.get(), "c/", mirror.OnSnapshot(), mirror.OnEvent());
  ASSERT_TRUE(watcher.Start(absl::Seconds(5)).ok());
  ASSERT_TRUE(client->Put("c/1", "a").ok());
  int in_use = 0;
  client->CurrentChannel(&in_use);
  cluster.Kill(in_use);
  const absl::Time killed = absl::Now();
  absl::Status put = absl::UnknownError("not tried");
  while (absl::Now() - killed < absl::Seconds(15) && !put.ok()) {
    put = client->Put("c/2", "b").status();
  }
  ASSERT_TRUE(put.ok()) << put;
  EXPECT_TRUE(Eventually([&] { return mirror.Has("c/2"); }));
  ASSERT_TRUE(cluster.Restart(in_use).ok());
  EtcdOptions only;
  only.endpoints = {cluster.endpoints()[in_use]};
  auto back = *EtcdClient::Create(only);
  EXPECT_TRUE(Eventually(
      [&] {
        auto kv = back->Get("c/2");
        return kv.ok() && kv->has_value() && (*kv)->value == "b";
      },
      absl::Seconds(20)));
}

}  // namespace
}  // namespace graphopt
