#ifndef GRAPHOPT_RUNTIME_THREAD_POOL_H_
#define GRAPHOPT_RUNTIME_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"

namespace graphopt::runtime {

// A fork-join pool whose caller takes part and whose join waits only for work already begun:
// what KernelContext::ParallelFor runs on.
//
// Why not an OpenMP `parallel for`: its team joins at a barrier that every thread of the team
// must reach, so one thread the OS has not scheduled (a loaded host, a container at its CPU
// quota, noisy neighbours) stalls the whole region until it runs, once per region; a kernel
// that parallelises every time step of a recurrence pays that at every step. Here chunks are
// claimed one at a time from a shared counter by the caller and by the workers: once no chunk
// is left unclaimed, the caller waits only for the chunks other threads are running. A worker
// that wakes late finds nothing left and goes back to waiting; it has cost nobody anything.
// Workers spin for a short while after a region (on a quiet machine the next one follows
// within microseconds) and then sleep on a condition variable, so an idle pool takes no CPU
// from the other processes of the host.
//
// Run is called by one thread at a time (the pool's owner); it is not reentrant.
class ThreadPool {
 public:
  // Starts `workers` threads (at least 0); each runs `on_start` first when it is set (e.g. to
  // make the OpenMP libraries it calls single-threaded there).
  explicit ThreadPool(int workers, std::function<void()> on_start = nullptr);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int workers() const { return static_cast<int>(threads_.size()); }

  // Runs fn(c) for every c in [0, chunks), each exactly once, on the calling thread and on at
  // most `helpers` of the workers, and returns when every call has returned. fn must not
  // throw. Chunks are claimed in increasing order; which thread runs which is not fixed.
  void Run(int64_t chunks, int helpers, absl::FunctionRef<void(int64_t)> fn);

  // How many chunks of the last Run the calling thread ran itself (tests, diagnostics).
  int64_t last_run_by_caller() const { return last_run_by_caller_; }

  // How long a worker spins for the next region before it sleeps.
  static constexpr int64_t kSpinMicros = 50;

 private:
  // state_: the region's generation (high 32 bits) and the next unclaimed chunk (low 32 bits;
  // kClosed once the region has ended). A claim is a compare-and-swap of the whole word, so a
  // thread that read an older generation can never claim a chunk of a newer one.
  static constexpr uint64_t kIndexMask = 0xffffffffu;
  static constexpr uint64_t kClosed = kIndexMask;

  void WorkerLoop(int index);
  // Claims and runs chunks of generation `gen` until none is left; returns how many it ran.
  int64_t Work(uint32_t gen);

  std::atomic<uint64_t> state_{kClosed};
  std::atomic<int64_t> chunks_{0};
  std::atomic<int> helpers_{0};
  std::atomic<absl::FunctionRef<void(int64_t)>*> fn_{nullptr};
  std::atomic<int64_t> done_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int> sleepers_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> on_start_;
  std::vector<std::thread> threads_;
  int64_t last_run_by_caller_ = 0;
};

}  // namespace graphopt::runtime

#endif  // GRAPHOPT_RUNTIME_THREAD_POOL_H_
