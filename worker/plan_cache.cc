#include "worker/plan_cache.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace graphopt {
namespace {

std::string Mib(int64_t bytes) { return absl::StrFormat("%.1f MiB", bytes / 1048576.0); }

}  // namespace

std::shared_ptr<const LoadedPlan> PlanCache::Find(const std::string& id) {
  absl::MutexLock lock(&mu_);
  auto it = plans_.find(id);
  if (it == plans_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return it->second.plan;
}

absl::StatusOr<std::shared_ptr<const LoadedPlan>> PlanCache::Insert(
    std::shared_ptr<LoadedPlan> plan, bool* already_loaded) {
  absl::MutexLock lock(&mu_);
  *already_loaded = false;
  auto it = plans_.find(plan->id);
  if (it != plans_.end()) {
    *already_loaded = true;
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return std::shared_ptr<const LoadedPlan>(it->second.plan);
  }
  // Which idle plans (nobody else holds them) would have to go, least recently used first.
  int64_t freeable = 0;
  for (const std::string& id : lru_) {
    if (plans_[id].plan.use_count() == 1) freeable += plans_[id].plan->bytes;
  }
  if (plan->bytes > capacity_ - bytes_ + freeable) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "plan ", plan->id, " needs ", Mib(plan->bytes), "; the plan cache holds ", Mib(capacity_),
        " of which ", Mib(bytes_ - freeable), " are held by plans in use"));
  }
  for (auto lru_it = lru_.end(); bytes_ + plan->bytes > capacity_ && lru_it != lru_.begin();) {
    --lru_it;
    auto victim = plans_.find(*lru_it);
    if (victim->second.plan.use_count() != 1) continue;
    bytes_ -= victim->second.plan->bytes;
    ++evictions_;
    plans_.erase(victim);
    lru_it = lru_.erase(lru_it);
  }
  lru_.push_front(plan->id);
  bytes_ += plan->bytes;
  Entry& entry = plans_[plan->id];
  entry.plan = std::move(plan);
  entry.lru = lru_.begin();
  return std::shared_ptr<const LoadedPlan>(entry.plan);
}

bool PlanCache::Remove(const std::string& id) {
  absl::MutexLock lock(&mu_);
  auto it = plans_.find(id);
  if (it == plans_.end()) return false;
  bytes_ -= it->second.plan->bytes;
  lru_.erase(it->second.lru);
  plans_.erase(it);
  return true;
}

PlanCache::Stats PlanCache::stats() const {
  absl::MutexLock lock(&mu_);
  return Stats{static_cast<int>(plans_.size()), bytes_, capacity_, evictions_, hits_, misses_};
}

}  // namespace graphopt
