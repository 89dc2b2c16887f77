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

// One state tensor of a stateful plan (Graph::state_updates): its name (an initializer that is
// a graph input) and the graph output that replaces it after an execution.
struct StateSlot {
  std::string name;
  int output_index = -1;
};

// A plan ready to execute: its executor (kernels bound, weights decoded) and what it costs.
struct LoadedPlan {
  std::string id;
  std::unique_ptr<runtime::Executor> executor;
  int64_t bytes = 0;
  std::vector<std::string> output_names;
  // The plan's state, in the order of its state_updates; empty for a stateless plan.
  std::vector<StateSlot> state;
  // Each state tensor's initial value (its initializer), from which sessions start. Tensors
  // are never written in place once made, so sessions share them until their first update.
  std::vector<runtime::Tensor> initial_state;
  // Per graph output: whether it is a state update (kept by the session, not returned).
  std::vector<bool> is_state_update;
  bool stateful() const { return !state.empty(); }
};

// The state of one session of a stateful plan. Executions of the session hold `run_mu` (one at
// a time); `mu` guards the tensors, so that FetchState reads the last completed state while a
// step runs.
struct PlanSession {
  std::string name;
  // Holds the plan in the cache: a plan in use is never evicted.
  std::shared_ptr<const LoadedPlan> plan;
  // Bytes of the state tensors.
  int64_t bytes = 0;
  absl::Mutex run_mu;
  absl::Mutex mu;
  // By LoadedPlan::state index.
  std::vector<runtime::Tensor> state ABSL_GUARDED_BY(mu);
  // Executions applied to `state`.
  int64_t version ABSL_GUARDED_BY(mu) = 0;
};

// Loaded plans by id, and sessions of stateful plans, bounded in bytes together. Plans are
// shared: a caller holding one (an Execute in flight, a session) keeps it alive and
// unevictable; the least recently used idle plans are evicted to make room. Sessions are never
// evicted (their state is the caller's work): they go when unloaded. Thread-safe.
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

  // Drops the plan and its sessions (callers still holding them finish with them). False when
  // it was not cached.
  bool Remove(const std::string& id);

  // Adds a session of `session->plan` (which must be cached: FAILED_PRECONDITION when it was
  // unloaded meanwhile), counting its bytes and evicting idle plans as needed; when the plan
  // already has a session of this name, that one is returned and `*already_loaded` set.
  // RESOURCE_EXHAUSTED, with the sizes, when the state cannot fit.
  absl::StatusOr<std::shared_ptr<PlanSession>> InsertSession(std::shared_ptr<PlanSession> session,
                                                             bool* already_loaded);
  // The session, or nullptr; marks its plan most recently used.
  std::shared_ptr<PlanSession> FindSession(const std::string& plan_id, const std::string& name);
  // Drops one session. False when it was not loaded.
  bool RemoveSession(const std::string& plan_id, const std::string& name);

  struct Stats {
    int plans = 0;
    int64_t bytes = 0;
    int64_t capacity = 0;
    int64_t evictions = 0;
    // Find calls that found the plan, and that did not, since construction.
    int64_t hits = 0;
    int64_t misses = 0;
    // Sessions loaded and the bytes of their state (part of `bytes`).
    int sessions = 0;
    int64_t session_bytes = 0;
  };
  Stats stats() const;

 private:
  struct Entry {
    std::shared_ptr<LoadedPlan> plan;
    std::list<std::string>::iterator lru;  // position in lru_
    // Its sessions by name.
    absl::flat_hash_map<std::string, std::shared_ptr<PlanSession>> sessions;
  };

  // Evicts idle plans until `bytes` more fit; RESOURCE_EXHAUSTED naming `what` when they
  // cannot, even after evicting every idle plan (then nothing is evicted).
  absl::Status MakeRoom(int64_t bytes, const std::string& what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int64_t capacity_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> plans_ ABSL_GUARDED_BY(mu_);
  // Most recently used first.
  std::list<std::string> lru_ ABSL_GUARDED_BY(mu_);
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t evictions_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t hits_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t misses_ ABSL_GUARDED_BY(mu_) = 0;
  int sessions_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t session_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace graphopt

#endif  // GRAPHOPT_WORKER_PLAN_CACHE_H_
