#ifndef GRAPHOPT_SERVER_WORK_QUEUE_H_
#define GRAPHOPT_SERVER_WORK_QUEUE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace graphopt {

// Admission control for one class of calls: `threads` threads run submitted work, and at most
// `capacity` more items wait. A full queue refuses new work at once (the caller answers
// RESOURCE_EXHAUSTED with RetryAfter() as a hint) instead of letting calls pile up until the
// process runs out of threads or memory. Work runs in submission order. Thread-safe.
class WorkQueue {
 public:
  struct Options {
    // For messages and logs: "optimize", "run", "execute".
    std::string name;
    int threads = 1;
    int capacity = 0;
  };
  struct Stats {
    int threads = 0;
    int capacity = 0;
    int running = 0;
    int queued = 0;
    int64_t accepted = 0;
    int64_t refused = 0;
  };

  explicit WorkQueue(Options options);
  // Shutdown() and waits for the threads.
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `work`; false (and `work` is dropped unrun) when `capacity` items already wait, or
  // after Shutdown.
  bool TrySubmit(std::function<void()> work);

  // How long a caller refused now might wait before trying again: the queue's depth times the
  // recent mean time of an item, divided among the threads; at least 10 ms, at most 30 s.
  absl::Duration RetryAfter() const;

  // Accepts no more work; the threads finish what is queued and exit.
  void Shutdown();

  Stats stats() const;
  const std::string& name() const { return options_.name; }

 private:
  void Loop();

  const Options options_;
  mutable absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t accepted_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t refused_ ABSL_GUARDED_BY(mu_) = 0;
  // Exponentially weighted mean time of one item.
  double mean_item_ms_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::thread> threads_;
};

}  // namespace graphopt

#endif  // GRAPHOPT_SERVER_WORK_QUEUE_H_
