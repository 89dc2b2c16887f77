#include "runtime/thread_pool.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <future>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace graphopt::runtime {
namespace {

// A gate the workers wait at before their first region: stands in for threads the OS has not
// scheduled (a loaded host, a container at its CPU quota).
class Gate {
 public:
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return open_; });
  }
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

TEST(ThreadPoolTest, RunsEveryChunkOnce) {
  ThreadPool pool(3);
  for (int64_t chunks : {1, 2, 3, 7, 64, 1000}) {
    for (int helpers : {0, 1, 3, 8}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(chunks));
      pool.Run(chunks, helpers, [&](int64_t c) { hits[c].fetch_add(1); });
      for (int64_t c = 0; c < chunks; ++c) {
        ASSERT_EQ(hits[c].load(), 1) << "chunk " << c << " of " << chunks << ", " << helpers;
      }
    }
  }
}

TEST(ThreadPoolTest, WorkersTakePart) {
  ThreadPool pool(1);
  std::mutex mu;
  std::set<std::thread::id> ids;
  // Chunks long enough that the worker, woken or spinning, claims some of them.
  for (int round = 0; round < 50 && ids.size() < 2; ++round) {
    pool.Run(8, 1, [&](int64_t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      std::lock_guard<std::mutex> lock(mu);
      ids.insert(std::this_thread::get_id());
    });
  }
  EXPECT_EQ(ids.size(), 2u);
}

// The property ParallelFor relies on under CPU contention: the caller never waits for a worker
// that has not started; it runs what the worker did not claim. (An OpenMP parallel-for joins
// at a barrier of the whole team, so there this call would hang until the gate opens.)
TEST(ThreadPoolTest, CallerDoesNotWaitForWorkersThatHaveNotStarted) {
  Gate gate;
  ThreadPool pool(2, [&] { gate.Wait(); });
  std::future<int64_t> ran = std::async(std::launch::async, [&] {
    std::atomic<int64_t> calls{0};
    pool.Run(16, 2, [&](int64_t) { calls.fetch_add(1); });
    EXPECT_EQ(pool.last_run_by_caller(), 16);
    return calls.load();
  });
  ASSERT_EQ(ran.wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "Run waited for workers that never started";
  EXPECT_EQ(ran.get(), 16);
  gate.Open();
  // Late workers find the region over and join the next ones.
  for (int round = 0; round < 20; ++round) {
    std::atomic<int64_t> calls{0};
    pool.Run(16, 2, [&](int64_t) { calls.fetch_add(1); });
    ASSERT_EQ(calls.load(), 16);
  }
}

TEST(ThreadPoolTest, ManyShortRegionsBackToBack) {
  // Regions much shorter than a wake-up, as a recurrence's time steps: no chunk lost or run
  // twice across generations while workers arrive late.
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  int64_t expected = 0;
  for (int round = 0; round < 20000; ++round) {
    const int64_t chunks = 1 + round % 5;
    pool.Run(chunks, 2, [&](int64_t c) { sum.fetch_add(c + 1); });
    expected += chunks * (chunks + 1) / 2;
  }
  EXPECT_EQ(sum.load(), expected);
}

TEST(ThreadPoolTest, IdleWorkersSleep) {
  // After the spin, idle workers block: the process's CPU time stops growing.
  ThreadPool pool(2);
  pool.Run(4, 2, [](int64_t) {});
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::clock_t before = std::clock();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const double cpu_ms = 1000.0 * static_cast<double>(std::clock() - before) / CLOCKS_PER_SEC;
  EXPECT_LT(cpu_ms, 20.0);
}

}  // namespace
}  // namespace graphopt::runtime
