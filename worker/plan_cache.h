#ifndef GRAPHOPT_WORKER_PLAN_CACHE_H_
#define GRAPHOPT_WORKER_PLAN_CACHE_H_

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "runtime/executor.h"

namespace graphopt {

// A plan ready to execute: its executor (kernels bound, weights decoded) and what it costs.
struct LoadedPlan {
  std::string id;
  std::unique_ptr<runtime::Executor> executor;
  int64_t bytes = 0;
  std::vector<std::string> output_names;
};

// Loaded plans by id, bounded in bytes. Plans are shared: a caller holding one (an Execute in
// flight) keeps it alive and unevictable; the least recently used idle plans are evicted to
// make room. Thread-safe.
class PlanCache {
 public:
  explicit PlanCache(int64_t capacity_bytes) : capacity_(capacity_bytes) {}

  // The plan with this id, or nullptr; marks it most recently used.
  std::shared_ptr<const LoadedPlan> Find(const std::string& id);

  // Adds `plan`, evicting idle plans as needed. When a plan with the same id is already
  // cached, that one is returned and `*already_loaded` is set. RESOURCE_EXHAUSTED, with the
  // sizes, when the plan cannot fit even after evicting every idle plan.
  absl::StatusOr<std::shared_ptr<const LoadedPlan>> Insert(std::shared_ptr<LoadedPlan> plan,
                                                           bool* already_loaded);

  // Drops the plan (callers still holding it finish with it). False when it was not cached.
  bool Remove(const std::string& id);

  struct Stats {
    int plans = 0;
    int64_t bytes = 0;
    int64_t capacity = 0;
    int64_t evictions = 0;
    // Find calls that found the plan, and that did not, since construction.
    int64_t hits = 0;
    int64_t misses = 0;
  };
  Stats stats() const;

 private:
  struct Entry {
    std::shared_ptr<LoadedPlan> plan;
    std::list<std::string>::iterator lru;  // position in lru_
  };

  const int64_t capacity_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> plans_ ABSL_GUARDED_BY(mu_);
  // Most recently used first.
  std::list<std::string> lru_ ABSL_GUARDED_BY(mu_);
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t evictions_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t hits_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t misses_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace graphopt

#endif  // GRAPHOPT_WORKER_PLAN_CACHE_H_
