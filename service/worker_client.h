#ifndef GRAPHOPT_SERVICE_WORKER_CLIENT_H_
#define GRAPHOPT_SERVICE_WORKER_CLIENT_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "proto/worker.pb.h"

namespace graphopt {

// How one call to a worker ended, as far as the coordinator's retry policy needs to know
// (coordinator.proto): the status, and who sent it.
struct WorkerCallResult {
  // The worker's answer, or the transport's error when the call failed on the way.
  absl::Status status;
  // The worker itself sent the status. Otherwise the call failed on the way: connection lost,
  // the call's deadline, a cancellation.
  bool answered = false;
  // The worker refused the call because its queue was full: nothing was done.
  bool busy = false;
  // The execution went over the memory cap of the request itself (memory_limit_bytes), which
  // fails alike on every worker.
  bool callers_limit = false;
  // Nothing reached the worker (the connection could not be made), so the call cannot have
  // killed it.
  bool never_connected = false;
};

// One call to a worker: its deadline and its cancellation.
class WorkerCall {
 public:
  virtual ~WorkerCall() = default;
  // Ends the call as soon as possible (it then fails, not answered). Thread-safe; may come
  // before the call starts (it then fails at once) or after it ended (no effect).
  virtual void Cancel() = 0;
};

// The coordinator's side of the worker service (proto/worker.proto), whatever carries it: one
// client per worker address. Thread-safe: calls run concurrently.
class WorkerClient {
 public:
  virtual ~WorkerClient() = default;
  // A call that fails with DEADLINE_EXCEEDED, not answered, when it runs past `deadline`. One
  // call per method call below.
  virtual std::unique_ptr<WorkerCall> NewCall(absl::Time deadline) = 0;

  // Blocking calls; `call` comes from this client's NewCall.
  virtual WorkerCallResult LoadPlan(WorkerCall& call, const v1::LoadPlanRequest& request,
                                    v1::LoadPlanResponse* response) = 0;
  virtual WorkerCallResult Execute(WorkerCall& call, const v1::ExecuteRequest& request,
                                   v1::ExecuteResponse* response) = 0;
  // Training sessions' state and end. A transport without them answers UNIMPLEMENTED, so
  // that clients made only for stateless plans need not implement them.
  virtual WorkerCallResult FetchState(WorkerCall& /*call*/, const v1::FetchStateRequest&,
                                      v1::FetchStateResponse*) {
    return Unimplemented("FetchState");
  }
  virtual WorkerCallResult UnloadPlan(WorkerCall& /*call*/, const v1::UnloadPlanRequest&,
                                      v1::UnloadPlanResponse*) {
    return Unimplemented("UnloadPlan");
  }
  // Asynchronous: returns at once, and `done` runs exactly once, on any thread (perhaps before
  // Describe returns), when the call ends. `call`, `request` and `response` must live until then.
  virtual void Describe(WorkerCall& call, const v1::DescribeRequest& request,
                        v1::DescribeResponse* response,
                        std::function<void(WorkerCallResult)> done) = 0;

 private:
  static WorkerCallResult Unimplemented(const char* rpc) {
    WorkerCallResult r;
    r.status = absl::UnimplementedError(std::string(rpc) + ": not supported by this transport");
    r.answered = true;
    return r;
  }
};

// Makes the client for the worker at `address` ("host:port"). Must not block: the
// coordinator calls it when it learns of a worker, under its lock.
using WorkerClientFactory =
    std::function<std::unique_ptr<WorkerClient>(const std::string& address)>;

}  // namespace graphopt

#endif  // GRAPHOPT_SERVICE_WORKER_CLIENT_H_
