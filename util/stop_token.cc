#include "util/stop_token.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace graphopt {

void StopToken::Cancel(absl::string_view reason) {
  {
    absl::MutexLock lock(&mu_);
    if (reason_.empty()) reason_ = std::string(reason.empty() ? "cancelled" : reason);
  }
  cancelled_.store(true, std::memory_order_release);
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
  return nanos != kNoDeadline && absl::GetCurrentTimeNanos() >= nanos;
}

absl::Status StopToken::Check(absl::string_view where) const {
  if (cancelled()) {
    absl::MutexLock lock(&mu_);
    return absl::CancelledError(absl::StrCat(reason_, " (stopped in ", where, ")"));
  }
  const int64_t nanos = deadline_nanos_.load(std::memory_order_relaxed);
  if (nanos != kNoDeadline && absl::GetCurrentTimeNanos() >= nanos) {
    return absl::DeadlineExceededError(
        absl::StrCat("the request's deadline passed (stopped in ", where, ")"));
  }
  return absl::OkStatus();
}

}  // namespace graphopt
