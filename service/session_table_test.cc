#include "service/session_table.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {

using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1000000);

SessionTable::Limits Small() {
  SessionTable::Limits limits;
  limits.max_per_tenant = 2;
  limits.max_sessions = 3;
  limits.idle_timeout = absl::Minutes(1);
  limits.max_gone = 2;
  return limits;
}

// A first step that loaded its plan on `address`.
SessionTable::Session Started(SessionTable& t, const std::string& tenant, const std::string& name,
                              const std::string& address = "a:1", absl::Time now = kT0) {
  absl::StatusOr<SessionTable::Session> s = t.Begin(tenant, name, "sha256:p", "w", now);
  EXPECT_TRUE(s.ok()) << s.status();
  s->address = address;
  s->worker_id = "wa";
  s->worker_plan_id = "sha256:wp";
  s->state_version = 1;
  EXPECT_TRUE(t.Finish(*s, now));
  return *s;
}

TEST(SessionTableTest, LaterStepsFindTheWorkerOfTheFirst) {
  SessionTable t(Small());
  Started(t, "acme", "s1", "b:1");
  absl::StatusOr<SessionTable::Session> s = t.Begin("acme", "s1", "", "", kT0);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->address, "b:1");
  EXPECT_EQ(s->worker_plan_id, "sha256:wp");
  EXPECT_EQ(s->state_version, 1);
  // Given, the plan must be the session's.
  s->state_version = 2;
  ASSERT_TRUE(t.Finish(*s, kT0));
  EXPECT_EQ(t.Begin("acme", "s1", "sha256:other", "", kT0).status().code(),
            absl::StatusCode::kFailedPrecondition);
  s = t.Begin("acme", "s1", "sha256:p", "", kT0);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->state_version, 2);
}

TEST(SessionTableTest, OneStepAtATime) {
  SessionTable t(Small());
  Started(t, "acme", "s1");
  absl::StatusOr<SessionTable::Session> s = t.Begin("acme", "s1", "", "", kT0);
  ASSERT_TRUE(s.ok());
  absl::StatusOr<SessionTable::Session> again = t.Begin("acme", "s1", "", "", kT0);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(again.status().message(), HasSubstr("running another step"));
  // FetchState does not wait for the step; EndSession does.
  EXPECT_TRUE(t.Get("acme", "s1", kT0).ok());
  SessionTable::Session ended;
  EXPECT_EQ(t.End("acme", "s1", &ended).status().code(), absl::StatusCode::kAborted);
  ASSERT_TRUE(t.Finish(*s, kT0));
  EXPECT_TRUE(t.Begin("acme", "s1", "", "", kT0).ok());
}

TEST(SessionTableTest, TenantsNeverSeeEachOthersSessions) {
  SessionTable t(Small());
  Started(t, "acme", "s1", "a:1");
  EXPECT_EQ(t.Begin("globex", "s1", "", "", kT0).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(t.Get("globex", "s1", kT0).status().code(), absl::StatusCode::kNotFound);
  SessionTable::Session ended;
  absl::StatusOr<bool> end = t.End("globex", "s1", &ended);
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(*end);
  // The same name in another tenant is another session, under another name on the worker.
  SessionTable::Session other = Started(t, "globex", "s1", "a:1");
  EXPECT_NE(SessionTable::WorkerSessionName("globex", "s1"),
            SessionTable::WorkerSessionName("acme", "s1"));
  EXPECT_THAT(other.worker_session,
              ::testing::StartsWith(SessionTable::WorkerSessionName("globex", "s1") + "#"));
  EXPECT_THAT(SessionTable::WorkerSessionName("globex", "s1"), ::testing::EndsWith("/s1"));
  EXPECT_EQ(t.size(), 2);
}

TEST(SessionTableTest, NamesAreChecked) {
  SessionTable t(Small());
  for (const char* bad : {"", "a b", "a\n", "ü"}) {
    EXPECT_EQ(t.Begin("acme", bad, "sha256:p", "", kT0).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_EQ(t.Begin("acme", std::string(129, 'x'), "sha256:p", "", kT0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(t.Begin("acme", "run-1/epoch.2:a_b", "sha256:p", "", kT0).ok());
}

TEST(SessionTableTest, LimitsPerTenantAndInAll) {
  SessionTable t(Small());
  Started(t, "acme", "s1");
  Started(t, "acme", "s2");
  absl::StatusOr<SessionTable::Session> third = t.Begin("acme", "s3", "sha256:p", "", kT0);
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(third.status().message(), HasSubstr("this tenant already has 2 sessions"));
  Started(t, "globex", "s1");
  EXPECT_EQ(t.Begin("initech", "s1", "sha256:p", "", kT0).status().code(),
            absl::StatusCode::kResourceExhausted);
  // Ending one frees a place.
  SessionTable::Session ended;
  ASSERT_TRUE(t.End("acme", "s1", &ended).ok());
  EXPECT_EQ(ended.address, "a:1");
  EXPECT_TRUE(t.Begin("acme", "s3", "sha256:p", "", kT0).ok());
}

TEST(SessionTableTest, AbandonedFirstStepFreesTheName) {
  SessionTable t(Small());
  absl::StatusOr<SessionTable::Session> s = t.Begin("acme", "s1", "sha256:p", "", kT0);
  ASSERT_TRUE(s.ok());
  // Loading: FetchState cannot be answered yet.
  EXPECT_EQ(t.Get("acme", "s1", kT0).status().code(), absl::StatusCode::kFailedPrecondition);
  t.Abandon(*s);
  EXPECT_EQ(t.size(), 0);
  EXPECT_TRUE(t.Begin("acme", "s1", "sha256:p", "", kT0).ok());
}

TEST(SessionTableTest, AWorkersSessionsAreLostAndSayWhy) {
  SessionTable t(Small());
  const SessionTable::Session s1 = Started(t, "acme", "s1", "a:1");
  Started(t, "acme", "s2", "b:1");
  // A step in flight when the worker goes: its Finish stores nothing.
  absl::StatusOr<SessionTable::Session> running = t.Begin("acme", "s1", "", "", kT0);
  ASSERT_TRUE(running.ok());
  std::vector<SessionTable::Session> lost = t.LoseWorker("a:1", "wa", "connection lost");
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].name, "s1");
  EXPECT_FALSE(t.Finish(*running, kT0));
  for (const absl::Status& s :
       {t.Begin("acme", "s1", "", "", kT0).status(),
        t.Begin("acme", "s1", "sha256:p", "", kT0).status(), t.Get("acme", "s1", kT0).status()}) {
    EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
    EXPECT_THAT(s.message(), HasSubstr("session 's1' was lost with worker wa (a:1): connection "
                                       "lost; start it again from your last fetched state"));
  }
  EXPECT_TRUE(t.Begin("acme", "s2", "", "", kT0).ok());
  // EndSession frees the name; a new session of it starts afresh.
  SessionTable::Session ended;
  absl::StatusOr<bool> end = t.End("acme", "s1", &ended);
  ASSERT_TRUE(end.ok());
  EXPECT_TRUE(*end);
  absl::StatusOr<SessionTable::Session> again = t.Begin("acme", "s1", "sha256:p", "", kT0);
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->id, s1.id);
  EXPECT_EQ(again->state_version, 0);
  // Another name on the worker: the lost session's state, if still there, is not picked up.
  EXPECT_NE(again->worker_session, s1.worker_session);
  // Nor is a session of an earlier table (a restarted server).
  SessionTable restarted(Small(), "other");
  absl::StatusOr<SessionTable::Session> fresh = restarted.Begin("acme", "s1", "sha256:p", "", kT0);
  ASSERT_TRUE(fresh.ok());
  EXPECT_NE(fresh->worker_session, s1.worker_session);
}

TEST(SessionTableTest, LoseOneSessionOnlyByItsId) {
  SessionTable t(Small());
  const SessionTable::Session old = Started(t, "acme", "s1");
  SessionTable::Session ended;
  ASSERT_TRUE(t.End("acme", "s1", &ended).ok());
  Started(t, "acme", "s1");
  t.Lose("acme", "s1", old.id, "stale");  // another session of the name: no effect
  EXPECT_TRUE(t.Get("acme", "s1", kT0).ok());
}

TEST(SessionTableTest, IdleSessionsExpireAndSayWhy) {
  SessionTable t(Small());
  Started(t, "acme", "old", "a:1", kT0);
  Started(t, "acme", "busy", "a:1", kT0);
  absl::StatusOr<SessionTable::Session> running = t.Begin("acme", "busy", "", "", kT0);
  ASSERT_TRUE(running.ok());
  Started(t, "globex", "fresh", "a:1", kT0 + absl::Seconds(50));
  std::vector<SessionTable::Session> expired = t.Expire(kT0 + absl::Seconds(61));
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].name, "old");
  EXPECT_EQ(expired[0].worker_plan_id, "sha256:wp");
  absl::Status s = t.Begin("acme", "old", "", "", kT0).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("was ended after 1m1s idle"));
  // A FetchState counts as use.
  ASSERT_TRUE(t.Get("globex", "fresh", kT0 + absl::Seconds(100)).ok());
  EXPECT_TRUE(t.Expire(kT0 + absl::Seconds(150)).empty());
  EXPECT_EQ(t.size(), 2);
}

TEST(SessionTableTest, GoneSessionsAreRememberedBoundedly) {
  SessionTable t(Small());
  Started(t, "acme", "s1");
  Started(t, "acme", "s2");
  Started(t, "globex", "s3");
  EXPECT_EQ(t.LoseWorker("a:1", "wa", "gone").size(), 3u);
  // max_gone = 2: the oldest loss is forgotten (the name is then simply unknown).
  EXPECT_EQ(t.Begin("acme", "s1", "", "", kT0).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(t.Begin("acme", "s2", "", "", kT0).status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(t.Begin("globex", "s3", "", "", kT0).status().code(), absl::StatusCode::kAborted);
}

}  // namespace
}  // namespace graphopt
