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
  if (absl::Status s = MakeRoom(plan->bytes, absl::StrCat("plan ", plan->id)); !s.ok()) {
    return s;
  }
  lru_.push_front(plan->id);
  bytes_ += plan->bytes;
  Entry& entry = plans_[plan->id];
  entry.plan = std::move(plan);
  entry.lru = lru_.begin();
  return std::shared_ptr<const LoadedPlan>(entry.plan);
}

absl::Status PlanCache::MakeRoom(int64_t bytes, const std::string& what) {
  // Which idle plans (nobody else holds them) would have to go, least recently used first.
  int64_t freeable = 0;
  for (const std::string& id : lru_) {
    if (plans_[id].plan.use_count() == 1) freeable += plans_[id].plan->bytes;
  }
  if (bytes > capacity_ - bytes_ + freeable) {
    return absl::ResourceExhaustedError(absl::StrCat(
        what, " needs ", Mib(bytes), "; the plan cache holds ", Mib(capacity_), " of which ",
        Mib(bytes_ - freeable), " are held by plans in use and sessions"));
  }
  for (auto lru_it = lru_.end(); bytes_ + bytes > capacity_ && lru_it != lru_.begin();) {
    --lru_it;
    auto victim = plans_.find(*lru_it);
    if (victim->second.plan.use_count() != 1) continue;
    bytes_ -= victim->second.plan->bytes;
    ++evictions_;
    plans_.erase(victim);
    lru_it = lru_.erase(lru_it);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<PlanSession>> PlanCache::InsertSession(
    std::shared_ptr<PlanSession> session, bool* already_loaded) {
  absl::MutexLock lock(&mu_);
  *already_loaded = false;
  auto it = plans_.find(session->plan->id);
  if (it == plans_.end() || it->second.plan != session->plan) {
    return absl::FailedPreconditionError(absl::StrCat(
        "plan ", session->plan->id, " was unloaded while session '", session->name,
        "' was being loaded: load it again"));
  }
  if (auto s = it->second.sessions.find(session->name); s != it->second.sessions.end()) {
    *already_loaded = true;
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return s->second;
  }
  if (absl::Status s = MakeRoom(
          session->bytes, absl::StrCat("the state of session '", session->name, "'"));
      !s.ok()) {
    return s;
  }
  bytes_ += session->bytes;
  session_bytes_ += session->bytes;
  ++sessions_;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  it->second.sessions[session->name] = session;
  return session;
}

std::shared_ptr<PlanSession> PlanCache::FindSession(const std::string& plan_id,
                                                    const std::string& name) {
  absl::MutexLock lock(&mu_);
  auto it = plans_.find(plan_id);
  if (it == plans_.end()) return nullptr;
  auto s = it->second.sessions.find(name);
  if (s == it->second.sessions.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return s->second;
}

bool PlanCache::RemoveSession(const std::string& plan_id, const std::string& name) {
  absl::MutexLock lock(&mu_);
  auto it = plans_.find(plan_id);
  if (it == plans_.end()) return false;
  auto s = it->second.sessions.find(name);
  if (s == it->second.sessions.end()) return false;
  bytes_ -= s->second->bytes;
  session_bytes_ -= s->second->bytes;
  --sessions_;
  it->second.sessions.erase(s);
  return true;
}

bool PlanCache::Remove(const std::string& id) {
  absl::MutexLock lock(&mu_);
  auto it = plans_.find(id);
  if (it == plans_.end()) return false;
  for (const auto& [name, session] : it->second.sessions) {
    bytes_ -= session->bytes;
    session_bytes_ -= session->bytes;
    --sessions_;
  }
  bytes_ -= it->second.plan->bytes;
  lru_.erase(it->second.lru);
  plans_.erase(it);
  return true;
}

PlanCache::Stats PlanCache::stats() const {
  absl::MutexLock lock(&mu_);
  Stats stats{static_cast<int>(plans_.size()), bytes_, capacity_, evictions_, hits_, misses_};
  stats.sessions = sessions_;
  stats.session_bytes = session_bytes_;
  return stats;
}

}  // namespace graphopt
