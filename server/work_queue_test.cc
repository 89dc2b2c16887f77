#include "server/work_queue.h"

#include <atomic>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {

TEST(WorkQueueTest, RunsEverythingAcceptedInOrderOnOneThread) {
  std::vector<int> order;
  {
    WorkQueue q({"t", 1, 100});
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(q.TrySubmit([&order, i] { order.push_back(i); }));
    }
  }  // the destructor drains the queue
  ASSERT_EQ(order.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(order[i], i);
}

TEST(WorkQueueTest, RefusesBeyondThreadsPlusCapacity) {
  WorkQueue q({"t", 2, 3});
  absl::Notification release;
  std::atomic<int> started{0};
  auto blocker = [&] {
    started.fetch_add(1);
    release.WaitForNotification();
  };
  ASSERT_TRUE(q.TrySubmit(blocker));
  ASSERT_TRUE(q.TrySubmit(blocker));
  while (started.load() < 2) absl::SleepFor(absl::Milliseconds(1));
  // Both threads busy: three may wait, the fourth is refused.
  EXPECT_TRUE(q.TrySubmit(blocker));
  EXPECT_TRUE(q.TrySubmit(blocker));
  EXPECT_TRUE(q.TrySubmit(blocker));
  EXPECT_FALSE(q.TrySubmit(blocker));
  WorkQueue::Stats s = q.stats();
  EXPECT_EQ(s.running, 2);
  EXPECT_EQ(s.queued, 3);
  EXPECT_EQ(s.refused, 1);
  EXPECT_GE(q.RetryAfter(), absl::Milliseconds(10));
  release.Notify();
}

TEST(WorkQueueTest, NothingIsAcceptedAfterShutdown) {
  WorkQueue q({"t", 1, 10});
  q.Shutdown();
  EXPECT_FALSE(q.TrySubmit([] {}));
}

}  // namespace
}  // namespace graphopt
