#ifndef GRAPHOPT_SERVICE_COORDINATOR_CALL_SCOPE_H_
#define GRAPHOPT_SERVICE_COORDINATOR_CALL_SCOPE_H_

// Private to the coordinator's sources (coordinator.cc, coordinator_sessions.cc).

#include <algorithm>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "service/coordinator.h"

namespace graphopt {

// A call to a worker, registered with the worker so that marking the worker down cancels the
// call. A worker already down (or forgotten) gets a call cancelled at once.
class Coordinator::CallScope {
 public:
  // The call's deadline is the caller's, or call_timeout from now when that comes first; the
  // caller's cancellation cancels the call.
  CallScope(Coordinator* coordinator, const Target& target, const StopToken& stop)
      : c_(coordinator), address_(target.address), stop_(stop) {
    const absl::Time timeout = absl::Now() + c_->options_.call_timeout;
    callers_deadline_ = stop.deadline() <= timeout;
    call_ = target.client->NewCall(std::min(timeout, stop.deadline()));
    callback_ = const_cast<StopToken&>(stop_).AddCallback([this] { call_->Cancel(); });
    absl::MutexLock lock(&c_->mu_);
    auto it = c_->workers_.find(address_);
    if (it == c_->workers_.end() || it->second.health == Health::kDown || c_->cancelled_) {
      call_->Cancel();
      return;
    }
    it->second.calls.insert(call_.get());
  }
  ~CallScope() {
    const_cast<StopToken&>(stop_).RemoveCallback(callback_);
    absl::MutexLock lock(&c_->mu_);
    auto it = c_->workers_.find(address_);
    if (it != c_->workers_.end()) it->second.calls.erase(call_.get());
  }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

  WorkerCall& call() { return *call_; }
  // Whether the call's deadline is the caller's (not the worker call timeout): a
  // DEADLINE_EXCEEDED of the call is then the caller's, not a stalled worker.
  bool callers_deadline() const { return callers_deadline_; }

 private:
  Coordinator* const c_;
  const std::string address_;
  const StopToken& stop_;
  bool callers_deadline_ = false;
  int64_t callback_ = -1;
  std::unique_ptr<WorkerCall> call_;
};

}  // namespace graphopt

#endif  // GRAPHOPT_SERVICE_COORDINATOR_CALL_SCOPE_H_
