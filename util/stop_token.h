#ifndef GRAPHOPT_UTIL_STOP_TOKEN_H_
#define GRAPHOPT_UTIL_STOP_TOKEN_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace graphopt {

// Tells long-running work (passes, executor steps, loop iterations, kernel chunks) that it
// should stop: the caller cancelled (went away, or the server is shutting down) or the
// request's deadline passed. One token per request, set by the request handler and polled by
// the work; the work then returns Check()'s status and unwinds normally.
//
// Polling is cheap enough for every executor step and every ParallelFor chunk: one relaxed
// atomic load, plus a read of the coarse clock (a few ns; resolution of a few milliseconds)
// when a deadline is set. Thread-safe.
class StopToken {
 public:
  // Stops only when cancelled.
  StopToken() = default;
  // Stops when cancelled or at `deadline` (absl::InfiniteFuture(): never by time).
  explicit StopToken(absl::Time deadline) { TightenDeadline(deadline); }
  StopToken(const StopToken&) = delete;
  StopToken& operator=(const StopToken&) = delete;

  // Asks the work to stop; `reason` ends up in Check()'s CANCELLED message ("the client
  // cancelled the call", "the server is shutting down"). The first reason is kept.
  void Cancel(absl::string_view reason);

  // Runs `callback` when the token is cancelled (at once when it already is), on the thread
  // that cancels; for work that waits on something other than this token (a call to a worker
  // to cancel, a condition to wake). The callback must be quick and must not call back into
  // the token. Returns an id for RemoveCallback; the callback runs at most once.
  int64_t AddCallback(std::function<void()> callback);
  // Forgets a callback; after it returns the callback is not running and will not run.
  void RemoveCallback(int64_t id);

  // Moves the deadline earlier, never later: a server ceiling applied to a client deadline.
  void TightenDeadline(absl::Time deadline);

  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }
  // absl::InfiniteFuture() when there is none.
  absl::Time deadline() const;

  // Cancelled, or past the deadline.
  bool ShouldStop() const;

  // OK while the work may go on; else CANCELLED with the reason, or DEADLINE_EXCEEDED, each
  // naming `where` ("node 'loop' (Loop) iteration 1234", "pass 'constant_fold'").
  absl::Status Check(absl::string_view where) const;

 private:
  static constexpr int64_t kNoDeadline = INT64_MAX;

  std::atomic<bool> cancelled_{false};
  // The deadline as Unix nanoseconds; kNoDeadline when there is none.
  std::atomic<int64_t> deadline_nanos_{kNoDeadline};
  mutable absl::Mutex mu_;
  std::string reason_ ABSL_GUARDED_BY(mu_);
  int64_t next_callback_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::pair<int64_t, std::function<void()>>> callbacks_ ABSL_GUARDED_BY(mu_);
  // Held while callbacks run, so that RemoveCallback can wait for a running one.
  absl::Mutex callbacks_running_mu_ ABSL_ACQUIRED_BEFORE(mu_);
};

// Check() of a token that may be null (work started without one never stops).
inline absl::Status CheckStop(const StopToken* token, absl::string_view where) {
  return token == nullptr ? absl::OkStatus() : token->Check(where);
}

}  // namespace graphopt

#endif  // GRAPHOPT_UTIL_STOP_TOKEN_H_
