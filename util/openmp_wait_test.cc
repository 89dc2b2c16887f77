// Runs as its own main: the first thing it does is ReexecWithShortOpenMpSpin, as the
// binaries do; the tests then check what libgomp, loaded afresh by the exec, does.
#include "util/openmp_wait.h"

#include <omp.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace graphopt {
namespace {

bool g_started_with_policy = false;

TEST(OpenMpWaitTest, PolicyDecision) {
  EXPECT_TRUE(OpenMpWaitPolicyUnset(nullptr, nullptr));
  EXPECT_FALSE(OpenMpWaitPolicyUnset("ACTIVE", nullptr));
  EXPECT_FALSE(OpenMpWaitPolicyUnset(nullptr, "10000"));
}

TEST(OpenMpWaitTest, ReexecutedWithAShortSpin) {
  if (g_started_with_policy) GTEST_SKIP() << "the test's environment sets a wait policy";
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  ASSERT_NE(spin, nullptr);
  EXPECT_STREQ(spin, "1000");
}

TEST(OpenMpWaitTest, IdleOpenMpThreadsDoNotSpin) {
  // libgomp's default makes the team's idle threads spin for milliseconds after a region
  // (about 6 ms of CPU here); with the short spin they sleep after microseconds.
  if (g_started_with_policy) GTEST_SKIP() << "the test's environment sets a wait policy";
  volatile double sink = 0;
  for (int round = 0; round < 3; ++round) {
#pragma omp parallel num_threads(2)
    { sink = sink + omp_get_thread_num(); }
  }
  const std::clock_t before = std::clock();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const double cpu_ms = 1000.0 * static_cast<double>(std::clock() - before) / CLOCKS_PER_SEC;
  EXPECT_LT(cpu_ms, 2.0);
}

}  // namespace
}  // namespace graphopt

int main(int argc, char** argv) {
  graphopt::g_started_with_policy =
      !graphopt::OpenMpWaitPolicyUnset(std::getenv("OMP_WAIT_POLICY"), std::getenv("GOMP_SPINCOUNT")) &&
      std::getenv("GRAPHOPT_OPENMP_WAIT_TEST_REEXECUTED") == nullptr;
  if (!graphopt::g_started_with_policy) {
    // Marks the second image, whose environment now names the policy.
    setenv("GRAPHOPT_OPENMP_WAIT_TEST_REEXECUTED", "1", 1);
    std::string note;
    graphopt::ReexecWithShortOpenMpSpin(argv, &note);
    if (!note.empty()) std::fprintf(stderr, "%s\n", note.c_str());
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
