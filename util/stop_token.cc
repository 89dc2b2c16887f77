#include "util/stop_token.h"

#include <time.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace graphopt {
namespace {

// The coarse clock (a few ms of resolution, much cheaper to read than absl::Now) is precise
// enough for deadlines and cheap enough to read on every poll.
int64_t NowNanos() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

}  // namespace

void StopToken::Cancel(absl::string_view reason) {
  absl::MutexLock running(&callbacks_running_mu_);
  std::vector<std::pair<int64_t, std::function<void()>>> callbacks;
  {
    absl::MutexLock lock(&mu_);
    if (reason_.empty()) reason_ = std::string(reason.empty() ? "cancelled" : reason);
    cancelled_.store(true, std::memory_order_release);
    callbacks.swap(callbacks_);
  }
  for (auto& [id, callback] : callbacks) callback();
}

int64_t StopToken::AddCallback(std::function<void()> callback) {
  {
    absl::MutexLock lock(&mu_);
    const int64_t id = next_callback_++;
    if (!cancelled()) {
      callbacks_.emplace_back(id, std::move(callback));
      return id;
    }
  }
  callback();
  return -1;
}

void StopToken::RemoveCallback(int64_t id) {
  absl::MutexLock running(&callbacks_running_mu_);
  absl::MutexLock lock(&mu_);
  for (auto it = callbacks_.begin(); it != callbacks_.end(); ++it) {
    if (it->first == id) {
      callbacks_.erase(it);
      return;
    }
  }
}

void StopToken::TightenDeadline(absl::Time deadline) {
  if (deadline == absl::InfiniteFuture()) return;
  const int64_t nanos = deadline == absl::InfinitePast() ? INT64_MIN : absl::ToUnixNanos(deadline);
  int64_t current = deadline_nanos_.load(std::memory_order_relaxed);
  while (nanos < current &&
         !deadline_nanos_.compare_exchange_weak(current, nanos, std::memory_order_relaxed)) {
  }
}

absl::Time StopToken::deadline() const {
  const int64_t nanos = deadline_nanos_.load(std::memory_order_relaxed);
  return nanos == kNoDeadline ? absl::InfiniteFuture() : absl::FromUnixNanos(nanos);
}

bool StopToken::ShouldStop() const {
  if (cancelled()) return true;
  const int64_t nanos = deadline_nanos_.load(std::memory_order_relaxed);
  return nanos != kNoDeadline && NowNanos() >= nanos;
}

absl::Status StopToken::Check(absl::string_view where) const {
  if (cancelled()) {
    absl::MutexLock lock(&mu_);
    return absl::CancelledError(absl::StrCat(reason_, " (stopped in ", where, ")"));
  }
  const int64_t nanos = deadline_nanos_.load(std::memory_order_relaxed);
  if (nanos != kNoDeadline && NowNanos() >= nanos) {
    return absl::DeadlineExceededError(
        absl::StrCat("the request's deadline passed (stopped in ", where, ")"));
  }
  return absl::OkStatus();
}

}  // namespace graphopt
