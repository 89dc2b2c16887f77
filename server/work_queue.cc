#include "server/work_queue.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"

namespace graphopt {

WorkQueue::WorkQueue(Options options) : options_(std::move(options)) {
  const int threads = std::max(1, options_.threads);
  threads_.reserve(threads);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

WorkQueue::~WorkQueue() {
  Shutdown();
  for (std::thread& t : threads_) t.join();
}

bool WorkQueue::TrySubmit(std::function<void()> work) {
  absl::MutexLock lock(&mu_);
  // Idle threads take work at once, so the capacity counts only what has to wait.
  const int idle = static_cast<int>(threads_.size()) - running_;
  if (stopping_ ||
      static_cast<int>(queue_.size()) >= options_.capacity + std::max(0, idle)) {
    ++refused_;
    return false;
  }
  ++accepted_;
  queue_.push_back(std::move(work));
  return true;
}

absl::Duration WorkQueue::RetryAfter() const {
  absl::MutexLock lock(&mu_);
  const double threads = static_cast<double>(std::max<size_t>(1, threads_.size()));
  const double ms = (static_cast<double>(queue_.size()) + running_) * mean_item_ms_ / threads;
  return std::clamp(absl::Milliseconds(ms), absl::Milliseconds(10), absl::Seconds(30));
}

void WorkQueue::Shutdown() {
  absl::MutexLock lock(&mu_);
  stopping_ = true;
}

WorkQueue::Stats WorkQueue::stats() const {
  absl::MutexLock lock(&mu_);
  Stats s;
  s.threads = static_cast<int>(threads_.size());
  s.capacity = options_.capacity;
  s.running = running_;
  s.queued = static_cast<int>(queue_.size());
  s.accepted = accepted_;
  s.refused = refused_;
  return s;
}

void WorkQueue::Loop() {
  while (true) {
    std::function<void()> work;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](WorkQueue* q) ABSL_EXCLUSIVE_LOCKS_REQUIRED(q->mu_) {
            return !q->queue_.empty() || q->stopping_;
          },
          this));
      if (queue_.empty()) return;  // stopping, and nothing left
      work = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    const absl::Time start = absl::Now();
    work();
    const double ms = absl::ToDoubleMilliseconds(absl::Now() - start);
    absl::MutexLock lock(&mu_);
    --running_;
    mean_item_ms_ = mean_item_ms_ == 0 ? ms : 0.9 * mean_item_ms_ + 0.1 * ms;
  }
}

}  // namespace graphopt
