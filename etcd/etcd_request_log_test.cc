#include "etcd/etcd_request_log.h"

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "etcd/etcd_test_util.h"
#include "etcd/keys.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {

using Kind = RequestClaim::Kind;

constexpr char kFp[] = "sha256:aaaa";


v1::RunResponse Answer(const std::string& worker, size_t payload_bytes = 0) {
  v1::RunResponse r;
  r.set_worker_id(worker);
  if (payload_bytes > 0) {
    v1::NamedTensor* out = r.add_outputs();
    out->set_name("y");
    out->mutable_tensor()->set_raw_data(std::string(payload_bytes, 'x'));
  }
  return r;
}

class EtcdRequestLogTest : public EtcdSuiteTest {
 protected:
  void SetUp() override {
    EtcdSuiteTest::SetUp();
    if (HasFatalFailure()) return;
    keeper_ = std::make_unique<EtcdLeaseKeeper>(client_.get(), absl::Seconds(10), [](int64_t) {});
    ASSERT_TRUE(keeper_->Start().ok());
  }

  // A replica's log: its own lease unless `lease` gives one.
  std::unique_ptr<EtcdRequestLog> Replica(const std::string& owner,
                                          EtcdRequestLogOptions options = {},
                                          std::function<int64_t()> lease = nullptr) {
    if (lease == nullptr) lease = [this] { return keeper_->lease(); };
    options.poll_interval = absl::Milliseconds(20);
    return std::make_unique<EtcdRequestLog>(client_.get(), prefix_, owner, std::move(lease),
                                            options);
  }

  Kind ClaimKind(RequestLog& log, const std::string& id, const std::string& fp = kFp) {
    absl::StatusOr<RequestClaim> c = log.Claim("acme", id, fp);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? c->kind : Kind::kMismatch;
  }

  std::unique_ptr<EtcdLeaseKeeper> keeper_;
};

TEST_F(EtcdRequestLogTest, ClaimsOnceAcrossReplicasAndReplaysTheAnswer) {
  auto a = Replica("a:1");
  auto b = Replica("b:1");
  EXPECT_EQ(ClaimKind(*a, "r1"), Kind::kFirst);
  EXPECT_EQ(ClaimKind(*b, "r1"), Kind::kRunning);
  EXPECT_EQ(ClaimKind(*a, "r1"), Kind::kRunning);
  a->Complete("acme", "r1", Answer("w1"));
  absl::StatusOr<RequestClaim> replay = b->Claim("acme", "r1", kFp);
  ASSERT_TRUE(replay.ok()) << replay.status();
  ASSERT_EQ(replay->kind, Kind::kDone);
  ASSERT_TRUE(replay->answer.ok()) << replay->answer.status();
  EXPECT_EQ(replay->answer->worker_id(), "w1");
  // Another tenant's id of the same name is its own.
  EXPECT_EQ(b->Claim("other", "r1", kFp)->kind, Kind::kFirst);
  auto kv = client_->Get(absl::StrCat(etcd_keys::Requests(prefix_, "acme"), "r1"));
  ASSERT_TRUE(kv.ok() && kv->has_value());
  EXPECT_EQ((*kv)->value.substr(0, 5), "done\n");
  EXPECT_NE((*kv)->lease, keeper_->lease());  // the answer lease, not the replica's
}

TEST_F(EtcdRequestLogTest, AWaiterOnAnotherReplicaGetsTheFirstAnswer) {
  auto a = Replica("a:1");
  auto b = Replica("b:1");
  ASSERT_EQ(ClaimKind(*a, "r1"), Kind::kFirst);
  absl::StatusOr<RequestClaim> running = b->Claim("acme", "r1", kFp);
  ASSERT_EQ(running->kind, Kind::kRunning);
  std::thread finisher([&] {
    absl::SleepFor(absl::Milliseconds(200));
    a->Complete("acme", "r1", Answer("w7"));
  });
  StopToken stop(absl::Now() + absl::Seconds(10));
  absl::StatusOr<RequestClaim> waited = b->Wait(*running, "acme", "r1", kFp, stop);
  finisher.join();
  ASSERT_TRUE(waited.ok()) << waited.status();
  ASSERT_EQ(waited->kind, Kind::kDone);
  EXPECT_EQ(waited->answer->worker_id(), "w7");
}

TEST_F(EtcdRequestLogTest, WaitEndsAtTheCallersDeadline) {
  auto a = Replica("a:1");
  auto b = Replica("b:1");
  ASSERT_EQ(ClaimKind(*a, "r1"), Kind::kFirst);
  absl::StatusOr<RequestClaim> running = b->Claim("acme", "r1", kFp);
  StopToken stop(absl::Now() + absl::Milliseconds(300));
  const absl::Time start = absl::Now();
  absl::StatusOr<RequestClaim> waited = b->Wait(*running, "acme", "r1", kFp, stop);
  EXPECT_EQ(waited.status().code(), absl::StatusCode::kDeadlineExceeded) << waited.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

TEST_F(EtcdRequestLogTest, ReplaysAfterARestart) {
  {
    auto a = Replica("a:1");
    ASSERT_EQ(ClaimKind(*a, "r1"), Kind::kFirst);
    a->Complete("acme", "r1", Answer("w1"));
  }
  auto restarted = Replica("a:1");
  absl::StatusOr<RequestClaim> replay = restarted->Claim("acme", "r1", kFp);
  ASSERT_TRUE(replay.ok());
  ASSERT_EQ(replay->kind, Kind::kDone);
  EXPECT_EQ(replay->answer->worker_id(), "w1");
}

// A claim this replica wrote but nothing here runs (etcd took the claim and its answer was
// lost, so the client retried it; or the replica's previous process left it) is taken over by
// the next request for the id here, never waited on forever. Other replicas still wait.
TEST_F(EtcdRequestLogTest, AClaimOfThisReplicaThatNothingRunsIsTakenOver) {
  auto lost = Replica("a:1");
  ASSERT_EQ(ClaimKind(*lost, "r1"), Kind::kFirst);
  auto same_replica = Replica("a:1");  // knows nothing of that claim, as after a lost answer
  auto other = Replica("b:1");
  EXPECT_EQ(ClaimKind(*other, "r1"), Kind::kRunning);
  EXPECT_EQ(ClaimKind(*same_replica, "r1"), Kind::kFirst);
  // And while it runs here, the same id here waits for it instead of running it again.
  EXPECT_EQ(ClaimKind(*same_replica, "r1"), Kind::kRunning);
  same_replica->Complete("acme", "r1", Answer("w1"));
  absl::StatusOr<RequestClaim> replay = other->Claim("acme", "r1", kFp);
  ASSERT_TRUE(replay.ok());
  EXPECT_EQ(replay->kind, Kind::kDone);
}

TEST_F(EtcdRequestLogTest, AnotherFingerprintIsAMismatch) {
  auto a = Replica("a:1");
  auto b = Replica("b:1");
  ASSERT_EQ(ClaimKind(*a, "r1"), Kind::kFirst);
  EXPECT_EQ(ClaimKind(*b, "r1", "sha256:bbbb"), Kind::kMismatch);  // while running
  a->Complete("acme", "r1", Answer("w1"));
  EXPECT_EQ(ClaimKind(*b, "r1", "sha256:bbbb"), Kind::kMismatch);  // and once answered
}

TEST_F(EtcdRequestLogTest, AnAbandonedIdRunsAgainAndItsWaiterTakesIt) {
  auto a = Replica("a:1");
  auto b = Replica("b:1");
  ASSERT_EQ(ClaimKind(*a, "r1"), Kind::kFirst);
  a->Abandon("acme", "r1", absl::UnavailableError("worker died"));
  EXPECT_EQ(ClaimKind(*b, "r1"), Kind::kFirst);

  absl::StatusOr<RequestClaim> running = a->Claim("acme", "r1", kFp);
  ASSERT_EQ(running->kind, Kind::kRunning);
  std::thread abandoner([&] {
    absl::SleepFor(absl::Milliseconds(100));
    b->Abandon("acme", "r1", absl::InternalError("failed"));
  });
  StopToken stop(absl::Now() + absl::Seconds(10));
  absl::StatusOr<RequestClaim> waited = a->Wait(*running, "acme", "r1", kFp, stop);
  abandoner.join();
  ASSERT_TRUE(waited.ok()) << waited.status();
  EXPECT_EQ(waited->kind, Kind::kFirst);
  EXPECT_EQ(ClaimKind(*b, "r1"), Kind::kRunning);
}

TEST_F(EtcdRequestLogTest, KeepsAtMostTheBoundPerTenantButNeverDropsARunningClaim) {
  EtcdRequestLogOptions options;
  options.max_per_tenant = 3;
  auto a = Replica("a:1", options);
  ASSERT_EQ(ClaimKind(*a, "running"), Kind::kFirst);  // the oldest key, still running
  for (int i = 0; i < 5; ++i) {
    const std::string id = absl::StrCat("r", i);
    ASSERT_EQ(ClaimKind(*a, id), Kind::kFirst);
    a->Complete("acme", id, Answer("w"));
  }
  EXPECT_EQ(*client_->CountPrefix(etcd_keys::Requests(prefix_, "acme")), 3);
  EXPECT_EQ(ClaimKind(*a, "running"), Kind::kRunning);
  EXPECT_EQ(ClaimKind(*a, "r4"), Kind::kDone);
  EXPECT_EQ(ClaimKind(*a, "r3"), Kind::kDone);
  EXPECT_EQ(ClaimKind(*a, "r0"), Kind::kFirst);  // forgotten: runs again
}

TEST_F(EtcdRequestLogTest, ACrashedReplicasClaimVanishesWithItsLease) {
  // A replica that claimed and died: its lease is never renewed.
  auto lease = client_->GrantLease(absl::Seconds(2));
  ASSERT_TRUE(lease.ok()) << lease.status();
  const int64_t dead_lease = *lease;
  auto crashed = Replica("dead:1", {}, [dead_lease] { return dead_lease; });
  ASSERT_EQ(ClaimKind(*crashed, "r1"), Kind::kFirst);
  crashed.reset();

  auto b = Replica("b:1");
  absl::StatusOr<RequestClaim> running = b->Claim("acme", "r1", kFp);
  ASSERT_EQ(running->kind, Kind::kRunning);
  const absl::Time start = absl::Now();
  StopToken stop(absl::Now() + absl::Seconds(20));
  absl::StatusOr<RequestClaim> waited = b->Wait(*running, "acme", "r1", kFp, stop);
  ASSERT_TRUE(waited.ok()) << waited.status();
  EXPECT_EQ(waited->kind, Kind::kFirst);  // the retry runs it here
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

// A replica whose lease lapsed (etcd out of reach past its TTL) cannot claim; the client is
// told to try again (UNAVAILABLE), never that something is missing.
TEST_F(EtcdRequestLogTest, AClaimUnderALapsedLeaseIsUnavailable) {
  absl::StatusOr<int64_t> lease = client_->GrantLease(absl::Seconds(5));
  ASSERT_TRUE(lease.ok());
  ASSERT_TRUE(client_->RevokeLease(*lease).ok());
  auto log = Replica("r1", {}, [&] { return *lease; });
  absl::StatusOr<RequestClaim> claim = log->Claim("acme", "id", kFp);
  ASSERT_FALSE(claim.ok());
  EXPECT_EQ(claim.status().code(), absl::StatusCode::kUnavailable) << claim.status();
  EXPECT_NE(claim.status().message().find("lease lapsed"), absl::string_view::npos)
      << claim.status();
}

TEST_F(EtcdRequestLogTest, TooLargeAnswersReplayOnlyWhereTheyRan) {
  EtcdRequestLogOptions options;
  options.max_record_bytes = 4096;
  auto a = Replica("a:1", options);
  auto b = Replica("b:1", options);
  ASSERT_EQ(ClaimKind(*a, "big"), Kind::kFirst);
  a->Complete("acme", "big", Answer("w1", 3 << 20));
  absl::StatusOr<RequestClaim> here = a->Claim("acme", "big", kFp);
  ASSERT_EQ(here->kind, Kind::kDone);
  ASSERT_TRUE(here->answer.ok()) << here->answer.status();
  EXPECT_EQ(here->answer->outputs(0).tensor().raw_data().size(), size_t{3} << 20);
  absl::StatusOr<RequestClaim> there = b->Claim("acme", "big", kFp);
  ASSERT_EQ(there->kind, Kind::kDone);
  EXPECT_EQ(there->answer.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(there->answer.status().message().find(
                "request id big was answered already; its answer (3.0 MiB) is too large to replay "
                "from shared state"),
            std::string::npos)
      << there->answer.status();
  EXPECT_EQ(ClaimKind(*b, "big", "sha256:bbbb"), Kind::kMismatch);
}

TEST_F(EtcdRequestLogTest, AnswersExpireAfterTheirTtl) {
  EtcdRequestLogOptions options;
  options.answer_ttl = absl::Seconds(2);
  auto a = Replica("a:1", options);
  ASSERT_EQ(ClaimKind(*a, "r1"), Kind::kFirst);
  a->Complete("acme", "r1", Answer("w1"));
  EXPECT_EQ(ClaimKind(*a, "r1"), Kind::kDone);
  const std::string key = absl::StrCat(etcd_keys::Requests(prefix_, "acme"), "r1");
  const absl::Time until = absl::Now() + absl::Seconds(10);
  bool gone = false;
  while (!gone && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(200));
    auto kv = client_->Get(key);
    gone = kv.ok() && !kv->has_value();
  }
  EXPECT_TRUE(gone);
  EXPECT_EQ(ClaimKind(*a, "r1"), Kind::kFirst);
}

TEST_F(EtcdRequestLogTest, AnAnswerEtcdMissedIsWrittenOnceItIsBack) {
  auto a = Replica("a:1");
  auto b = Replica("b:1");
  ASSERT_EQ(ClaimKind(*a, "r1"), Kind::kFirst);
  cluster_->Kill(0);
  a->Complete("acme", "r1", Answer("w1"));
  EXPECT_EQ(a->write_failures(), 1);
  EXPECT_EQ(a->Claim("acme", "r2", kFp).status().code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(cluster_->Restart(0).ok());
  ASSERT_TRUE(client_->WaitReady(absl::Seconds(10)).ok());
  // Not written yet: the other replica still sees the claim, this one replays its answer.
  EXPECT_EQ(ClaimKind(*b, "r1"), Kind::kRunning);
  EXPECT_EQ(ClaimKind(*a, "r1"), Kind::kDone);  // and writes it first
  absl::StatusOr<RequestClaim> replay = b->Claim("acme", "r1", kFp);
  ASSERT_TRUE(replay.ok()) << replay.status();
  ASSERT_EQ(replay->kind, Kind::kDone);
  EXPECT_EQ(replay->answer->worker_id(), "w1");
}

TEST(EtcdRequestLogUnreachableTest, RefusesToRunWithoutEtcd) {
  EtcdOptions options;
  options.endpoints = {"127.0.0.1:1"};  // nothing listens on port 1
  options.call_timeout = absl::Milliseconds(300);
  auto client = *EtcdClient::Create(options);
  EtcdRequestLog log(client.get(), "/t/", "a:1", [] { return int64_t{42}; });
  absl::StatusOr<RequestClaim> claim = log.Claim("acme", "r1", kFp);
  ASSERT_FALSE(claim.ok());
  EXPECT_EQ(claim.status().code(), absl::StatusCode::kUnavailable) << claim.status();
  EXPECT_NE(claim.status().message().find("etcd"), std::string::npos) << claim.status();
  EtcdRequestLog leaseless(client.get(), "/t/", "a:1", [] { return int64_t{0}; });
  EXPECT_EQ(leaseless.Claim("acme", "r1", kFp).status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace graphopt
