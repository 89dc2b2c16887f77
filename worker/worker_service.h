#ifndef GRAPHOPT_WORKER_WORKER_SERVICE_H_
#define GRAPHOPT_WORKER_WORKER_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "proto/worker.grpc.pb.h"
#include "runtime/kernel.h"
#include "server/rpc_call.h"
#include "server/work_queue.h"
#include "spdlog/logger.h"
#include "util/stop_token.h"
#include "worker/plan_cache.h"

namespace graphopt {

struct WorkerOptions {
  std::string worker_id;
  // Kernel threads per execution.
  int threads = 1;
  int64_t plan_cache_bytes = int64_t{4} << 30;
  // The memory budget of one execution: everything it allocates (intermediates, outputs,
  // kernel scratch, subgraph runs) is charged first, and an allocation over it fails the
  // execution with RESOURCE_EXHAUSTED naming the node and the size before it is made. A
  // request may ask for less (ExecuteRequest.memory_limit_bytes), never for more.
  int64_t execution_memory_bytes = int64_t{2} << 30;
  // The longest one execution may run (the caller's deadline may cut it shorter).
  absl::Duration max_execution = absl::Minutes(5);
};

// What a worker does, without gRPC: load plans into the cache, execute them under a memory
// budget and a stop token, keep the state of stateful plans' sessions, describe itself.
// Thread-safe; executions of one plan may run concurrently, except those of one session.
class WorkerCore {
 public:
  WorkerCore(const runtime::KernelRegistry* kernels, WorkerOptions options);

  absl::StatusOr<v1::LoadPlanResponse> LoadPlan(v1::LoadPlanRequest request);
  // Runs the plan; `stop` (may be null) ends it early with its status. `peak_bytes`, when not
  // null, receives the most memory the execution held at once.
  absl::StatusOr<v1::ExecuteResponse> Execute(const v1::ExecuteRequest& request,
                                              const StopToken* stop = nullptr,
                                              int64_t* peak_bytes = nullptr);
  v1::UnloadPlanResponse UnloadPlan(const v1::UnloadPlanRequest& request);
  absl::StatusOr<v1::FetchStateResponse> FetchState(const v1::FetchStateRequest& request);
  v1::DescribeResponse Describe() const;
  const WorkerOptions& options() const { return options_; }
  PlanCache::Stats plan_cache_stats() const { return cache_.stats(); }
  // For tests that hold a session's execution turn.
  std::shared_ptr<PlanSession> session_for_testing(const std::string& plan_id,
                                                   const std::string& name) {
    return cache_.FindSession(plan_id, name);
  }
  // Executions running now.
  int executing() const { return executing_.load(); }

 private:
  // Decodes, checks and binds a plan that is not cached, and caches it.
  absl::StatusOr<std::shared_ptr<const LoadedPlan>> BuildPlan(const std::string& id,
                                                              v1::LoadPlanRequest request);
  // The session of `plan` named `name`, made with the plan's initial state when there is none.
  absl::StatusOr<std::shared_ptr<PlanSession>> LoadSession(std::shared_ptr<const LoadedPlan> plan,
                                                           const std::string& name,
                                                           bool* already_loaded);
  // Replaces the session's state by the run's updates (all of them, or none when one does not
  // match its state's dtype and shape); returns the new version.
  static absl::StatusOr<int64_t> ApplyState(const LoadedPlan& plan, PlanSession& session,
                                            std::vector<runtime::Tensor>& outputs);

  const runtime::KernelRegistry* kernels_;
  const WorkerOptions options_;
  // DescribeResponse.instance: this process and its start time.
  const std::string instance_;
  PlanCache cache_;
  std::atomic<int> executing_{0};
  std::atomic<int64_t> executed_{0};
};

// Where a worker's calls run: LoadPlan and Execute each on a bounded queue whose threads are
// the executions running at once (see server/work_queue.h); Describe and UnloadPlan are
// answered on gRPC's thread, so health probes never wait behind executions; FetchState runs
// on the load queue (encoding a model's weights is not a probe's work).
struct WorkerQueues {
  WorkQueue* execute = nullptr;
  WorkQueue* load = nullptr;
};

// The graphopt.v1.Worker gRPC service (callback API) over a WorkerCore, served through
// ServeUnary (server/rpc_call.h): every call needs the cluster identity (the environment's
// authenticator decides), every answer carries "graphopt-origin: worker", and an Execute that
// finds its queue full is refused at once with RESOURCE_EXHAUSTED and "graphopt-busy".
// Every method is registered raw (server/rpc_call.h, ServeRaw): a plan is parsed on the load
// queue's thread, after admission.
using WorkerServiceBase = v1::Worker::WithRawCallbackMethod_Describe<
    v1::Worker::WithRawCallbackMethod_LoadPlan<v1::Worker::WithRawCallbackMethod_Execute<
        v1::Worker::WithRawCallbackMethod_UnloadPlan<
            v1::Worker::WithRawCallbackMethod_FetchState<v1::Worker::Service>>>>>;

class WorkerService final : public WorkerServiceBase {
 public:
  // `core` may be set later (set_core) but before the server accepts calls; `env` and the
  // queues must outlive the service.
  WorkerService(WorkerCore* core, RpcEnvironment* env, WorkerQueues queues);
  // For tests and single-user setups: every caller is let in; queues of its own (4 executions
  // at once, 16 waiting; 1 load at a time).
  WorkerService(WorkerCore* core, std::shared_ptr<spdlog::logger> logger);
  ~WorkerService() override;
  void set_core(WorkerCore* core) { core_.store(core); }

  grpc::ServerUnaryReactor* Describe(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* LoadPlan(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Execute(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* UnloadPlan(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* FetchState(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;

 private:
  WorkerCore* core() const { return core_.load(); }
  std::atomic<WorkerCore*> core_;
  std::unique_ptr<RpcEnvironment> owned_env_;
  std::unique_ptr<WorkQueue> owned_execute_, owned_load_;
  RpcEnvironment* env_;
  WorkerQueues queues_;
  MethodPolicy describe_policy_, load_policy_, execute_policy_, unload_policy_,
      fetch_state_policy_;
};

// Trailing metadata on every worker answer (see worker.proto).
inline constexpr char kOriginKey[] = "graphopt-origin";
inline constexpr char kOriginWorker[] = "worker";
// Trailing metadata of an Execute that went over the memory cap its request set
// (memory_limit_bytes, at or below the worker's own budget): every worker would fail it alike.
inline constexpr char kCallersLimitKey[] = "graphopt-callers-limit";

}  // namespace graphopt

#endif  // GRAPHOPT_WORKER_WORKER_SERVICE_H_
