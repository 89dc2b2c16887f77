#include "runtime/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <utility>

namespace graphopt::runtime {
namespace {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

uint32_t GenerationOf(uint64_t state) { return static_cast<uint32_t>(state >> 32); }

}  // namespace

ThreadPool::ThreadPool(int workers, std::function<void()> on_start)
    : on_start_(std::move(on_start)) {
  threads_.reserve(static_cast<size_t>(std::max(workers, 0)));
  for (int i = 0; i < workers; ++i) threads_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  {
    std::lock_guard<std::mutex> lock(mu_);
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

int64_t ThreadPool::Work(uint32_t gen) {
  int64_t ran = 0;
  uint64_t s = state_.load(std::memory_order_acquire);
  while (GenerationOf(s) == gen) {
    const uint64_t index = s & kIndexMask;
    // chunks_ and fn_ may already belong to a later region when this thread is late; the
    // compare-and-swap below then fails, because that region's owner closed this one (changed
    // state_) before writing them.
    if (index == kClosed || static_cast<int64_t>(index) >= chunks_.load()) break;
    absl::FunctionRef<void(int64_t)>* fn = fn_.load();
    if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel,
                                     std::memory_order_acquire)) {
      (*fn)(static_cast<int64_t>(index));
      done_.fetch_add(1, std::memory_order_release);
      ++ran;
      s = state_.load(std::memory_order_acquire);
    }
  }
  return ran;
}

void ThreadPool::WorkerLoop(int index) {
  if (on_start_) on_start_();
  uint32_t seen = GenerationOf(state_.load());
  while (true) {
    // Spin for the next region a short while, then sleep until the owner publishes one.
    uint64_t s = state_.load(std::memory_order_acquire);
    const auto spin_until =
        std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicros);
    for (int i = 0; GenerationOf(s) == seen && !stop_.load(std::memory_order_relaxed); ++i) {
      CpuRelax();
      if ((i & 63) == 63 && std::chrono::steady_clock::now() >= spin_until) break;
      s = state_.load(std::memory_order_acquire);
    }
    if (GenerationOf(s) == seen && !stop_.load()) {
      std::unique_lock<std::mutex> lock(mu_);
      sleepers_.fetch_add(1);
      cv_.wait(lock, [&] {
        s = state_.load();
        return GenerationOf(s) != seen || stop_.load();
      });
      sleepers_.fetch_sub(1);
    }
    if (stop_.load()) return;
    seen = GenerationOf(s);
    if (index < helpers_.load()) Work(seen);
  }
}

void ThreadPool::Run(int64_t chunks, int helpers, absl::FunctionRef<void(int64_t)> fn) {
  last_run_by_caller_ = 0;
  if (chunks <= 0) return;
  helpers = std::min(helpers, workers());
  // A chunk index must fit state_'s low half below kClosed.
  if (helpers <= 0 || chunks == 1 || chunks >= static_cast<int64_t>(kClosed)) {
    for (int64_t c = 0; c < chunks; ++c) fn(c);
    last_run_by_caller_ = chunks;
    return;
  }
  const uint32_t gen = GenerationOf(state_.load()) + 1;
  chunks_.store(chunks);
  fn_.store(&fn);
  helpers_.store(helpers);
  done_.store(0);
  // Publish, then wake the sleepers. A worker going to sleep registers in sleepers_ before it
  // checks state_ (both sequentially consistent, and under mu_), so either it sees this region
  // or this thread sees it asleep and notifies it.
  state_.store(static_cast<uint64_t>(gen) << 32);
  if (sleepers_.load() > 0) {
    {
      std::lock_guard<std::mutex> lock(mu_);
    }
    cv_.notify_all();
  }
  const int64_t mine = Work(gen);
  last_run_by_caller_ = mine;
  // Every chunk is claimed; wait for those other threads are running (real work, not a thread
  // that has yet to be scheduled).
  for (int i = 0; done_.load(std::memory_order_acquire) < chunks; ++i) {
    if (i < 4096) {
      CpuRelax();
    } else {
      sched_yield();
    }
  }
  // Close the region before the next one rewrites chunks_ and fn_ (see Work).
  state_.store((static_cast<uint64_t>(gen) << 32) | kClosed);
}

}  // namespace graphopt::runtime
