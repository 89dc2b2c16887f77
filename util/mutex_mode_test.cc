#include "util/mutex_mode.h"

#include <sys/wait.h>
#include <unistd.h>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {

// Two mutexes taken in one order and then in the other (no deadlock: one thread). With Debian's
// absl the default detection aborts the process on the second order (see the death test); with
// detection off it runs.
void TakeInBothOrders(absl::Mutex& a, absl::Mutex& b, int& x) {
  {
    absl::MutexLock la(&a);
    absl::MutexLock lb(&b);
    ++x;
  }
  {
    absl::MutexLock lb(&b);
    absl::MutexLock la(&a);
    ++x;
  }
}

void InversionOnFreshMutexes() {
  absl::Mutex a, b;
  int x = 0;
  TakeInBothOrders(a, b, x);
}

TEST(MutexModeDeathTest, WhatTheDefaultDoesToAnInversion) {
  // Documents why production mains switch the detection off: absl's default here (a debug
  // build of the library) treats the second order as a potential deadlock and aborts. Where the
  // library is built with NDEBUG there is no detection and nothing to show: skipped.
  testing::FLAGS_gtest_death_test_style = "threadsafe";
  absl::Mutex probe_a, probe_b;
  int x = 0;
  // A child process tries it first, so that this process's own lock graph stays clean.
  const bool detects = [&] {
    pid_t pid = fork();
    if (pid == 0) {
      TakeInBothOrders(probe_a, probe_b, x);
      _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }();
  if (!detects) GTEST_SKIP() << "this absl has no deadlock detection (built with NDEBUG)";
  EXPECT_DEATH(InversionOnFreshMutexes(), "");
}

TEST(MutexModeTest, AnInversionRunsWithDetectionOff) {
  DisableMutexDeadlockDetection();
  absl::Mutex a, b;
  int x = 0;
  TakeInBothOrders(a, b, x);
  EXPECT_EQ(x, 2);
}

}  // namespace
}  // namespace graphopt
