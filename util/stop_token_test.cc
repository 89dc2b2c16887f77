#include "util/stop_token.h"

#include <thread>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {

using ::testing::HasSubstr;

TEST(StopTokenTest, NeverStopsWithoutCancelOrDeadline) {
  StopToken token;
  EXPECT_FALSE(token.ShouldStop());
  EXPECT_TRUE(token.Check("anywhere").ok());
  EXPECT_EQ(token.deadline(), absl::InfiniteFuture());
  EXPECT_TRUE(CheckStop(nullptr, "x").ok());
}

TEST(StopTokenTest, CancelKeepsTheFirstReasonAndNamesWhere) {
  StopToken token;
  token.Cancel("the client cancelled the call");
  token.Cancel("the server is shutting down");
  EXPECT_TRUE(token.ShouldStop());
  absl::Status s = token.Check("node 'l' (Loop) iteration 7");
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(s.message(), HasSubstr("the client cancelled the call"));
  EXPECT_THAT(s.message(), HasSubstr("node 'l' (Loop) iteration 7"));
  EXPECT_EQ(CheckStop(&token, "x").code(), absl::StatusCode::kCancelled);
}

TEST(StopTokenTest, DeadlinePassesAndOnlyTightens) {
  StopToken token(absl::Now() + absl::Milliseconds(30));
  EXPECT_FALSE(token.ShouldStop());
  token.TightenDeadline(absl::Now() + absl::Hours(1));  // later: ignored
  EXPECT_LT(token.deadline(), absl::Now() + absl::Seconds(1));
  absl::SleepFor(absl::Milliseconds(40));
  EXPECT_TRUE(token.ShouldStop());
  absl::Status s = token.Check("pass 'constant_fold'");
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr("pass 'constant_fold'"));
}

TEST(StopTokenTest, PastDeadlineStopsAtOnce) {
  StopToken token(absl::InfinitePast());
  EXPECT_TRUE(token.ShouldStop());
  StopToken later;
  later.TightenDeadline(absl::Now() - absl::Seconds(1));
  EXPECT_TRUE(later.ShouldStop());
}

TEST(StopTokenTest, CancelFromAnotherThreadIsSeen) {
  StopToken token;
  std::thread t([&] { token.Cancel("shutdown"); });
  t.join();
  EXPECT_TRUE(token.ShouldStop());
}

TEST(StopTokenTest, CallbacksRunOnceOnCancelAndNotAfterRemoval) {
  StopToken token;
  int a = 0, b = 0;
  token.AddCallback([&] { ++a; });
  const int64_t id_b = token.AddCallback([&] { ++b; });
  token.RemoveCallback(id_b);
  token.Cancel("x");
  token.Cancel("y");
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 0);
  int c = 0;
  token.AddCallback([&] { ++c; });  // already cancelled: runs at once
  EXPECT_EQ(c, 1);
}

}  // namespace
}  // namespace graphopt
