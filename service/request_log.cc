#include "service/request_log.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"

namespace graphopt {
namespace {

std::string Key(const std::string& tenant, const std::string& id) {
  return absl::StrCat(tenant, "\n", id);
}

}  // namespace

struct InMemoryRequestLog::Entry {
  std::string fingerprint;
  absl::Notification done;
  // Set before `done` is notified, never changed after.
  absl::StatusOr<v1::RunResponse> result = absl::UnknownError("not finished");
  int64_t bytes = 0;
};

InMemoryRequestLog::InMemoryRequestLog(int max_entries, int64_t max_bytes)
    : max_entries_(max_entries), max_bytes_(max_bytes) {}

InMemoryRequestLog::~InMemoryRequestLog() = default;

absl::StatusOr<RequestClaim> InMemoryRequestLog::Claim(const std::string& tenant,
                                                       const std::string& id,
                                                       const std::string& fingerprint) {
  RequestClaim claim;
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = entries_.try_emplace(Key(tenant, id));
  if (inserted) {
    it->second = std::make_shared<Entry>();
    it->second->fingerprint = fingerprint;
    claim.kind = RequestClaim::Kind::kFirst;
  } else if (it->second->fingerprint != fingerprint) {
    claim.kind = RequestClaim::Kind::kMismatch;
  } else if (it->second->done.HasBeenNotified()) {
    claim.kind = RequestClaim::Kind::kDone;
    claim.answer = it->second->result;
  } else {
    claim.kind = RequestClaim::Kind::kRunning;
    claim.running = it->second;
  }
  return claim;
}

absl::StatusOr<RequestClaim> InMemoryRequestLog::Wait(const RequestClaim& running,
                                                      const std::string& tenant,
                                                      const std::string& id,
                                                      const std::string& fingerprint,
                                                      const StopToken& stop) {
  const auto entry = std::static_pointer_cast<Entry>(running.running);
  if (entry == nullptr) return Claim(tenant, id, fingerprint);
  // Polled so that the caller's deadline and cancellation end the wait.
  while (!entry->done.WaitForNotificationWithTimeout(absl::Milliseconds(50))) {
    if (absl::Status why = stop.Check("waiting for the first request with this id"); !why.ok()) {
      return why;
    }
  }
  RequestClaim claim;
  claim.kind = RequestClaim::Kind::kDone;
  claim.answer = entry->result;
  return claim;
}

void InMemoryRequestLog::Complete(const std::string& tenant, const std::string& id,
                                  const v1::RunResponse& response) {
  Finish(tenant, id, response);
}

void InMemoryRequestLog::Abandon(const std::string& tenant, const std::string& id,
                                 const absl::Status& why) {
  Finish(tenant, id, why.ok() ? absl::UnknownError("abandoned") : why);
}

void InMemoryRequestLog::Finish(const std::string& tenant, const std::string& id,
                                absl::StatusOr<v1::RunResponse> result) {
  const std::string key = Key(tenant, id);
  std::shared_ptr<Entry> entry;
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second->done.HasBeenNotified()) return;
  entry = it->second;
  const bool ok = result.ok();
  entry->bytes = ok ? static_cast<int64_t>(result->ByteSizeLong()) : 0;
  entry->result = std::move(result);
  entry->done.Notify();
  if (!ok) {
    // Failures are not kept: the caller may try again with the same id.
    entries_.erase(it);
    return;
  }
  completed_.push_back(key);
  completed_bytes_ += entry->bytes;
  while (!completed_.empty() &&
         (static_cast<int>(completed_.size()) > max_entries_ || completed_bytes_ > max_bytes_)) {
    auto old = entries_.find(completed_.front());
    if (old != entries_.end()) {
      completed_bytes_ -= old->second->bytes;
      entries_.erase(old);
    }
    completed_.pop_front();
  }
}

}  // namespace graphopt
