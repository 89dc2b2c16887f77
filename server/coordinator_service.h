#ifndef GRAPHOPT_SERVER_COORDINATOR_SERVICE_H_
#define GRAPHOPT_SERVER_COORDINATOR_SERVICE_H_

#include <memory>

#include "grpcpp/grpcpp.h"
#include "proto/coordinator.grpc.pb.h"
#include "server/rpc_call.h"
#include "server/work_queue.h"
#include "service/coordinator.h"
#include "spdlog/logger.h"

namespace graphopt {

// The graphopt.v1.Coordinator gRPC service (callback API): a thin adapter over
// graphopt::Coordinator, served through ServeUnary (server/rpc_call.h).
//
// Run needs a tenant credential and runs on the run queue with the call's stop token (the
// client's deadline and cancellation reach the worker); RegisterWorker needs the cluster
// identity (a worker certificate) and ListWorkers an admin credential; both are answered on
// gRPC's thread. FetchState and EndSession (training sessions) need a tenant credential and
// run on the run queue (they call the session's worker). Every call is logged with its peer, tenant, duration and status; Run also with
// its request id, plan, worker and attempts.
// Every method is registered raw (server/rpc_call.h, ServeRaw).
using CoordinatorServiceBase = v1::Coordinator::WithRawCallbackMethod_Run<
    v1::Coordinator::WithRawCallbackMethod_RegisterWorker<
        v1::Coordinator::WithRawCallbackMethod_ListWorkers<
            v1::Coordinator::WithRawCallbackMethod_FetchState<
                v1::Coordinator::WithRawCallbackMethod_EndSession<v1::Coordinator::Service>>>>>;

class CoordinatorService final : public CoordinatorServiceBase {
 public:
  // `coordinator`, `env` and `run_queue` must outlive the service.
  CoordinatorService(Coordinator* coordinator, RpcEnvironment* env, WorkQueue* run_queue);
  // For tests and single-user setups: the tenant from the "graphopt-tenant" metadata, every
  // caller admin and cluster peer, no quotas, a run queue of its own.
  CoordinatorService(Coordinator* coordinator, std::shared_ptr<spdlog::logger> logger);
  ~CoordinatorService() override;

  CoordinatorService(const CoordinatorService&) = delete;
  CoordinatorService& operator=(const CoordinatorService&) = delete;

  grpc::ServerUnaryReactor* Run(grpc::CallbackServerContext* context,
                                const grpc::ByteBuffer* request,
                                grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* RegisterWorker(grpc::CallbackServerContext* context,
                                           const grpc::ByteBuffer* request,
                                           grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ListWorkers(grpc::CallbackServerContext* context,
                                        const grpc::ByteBuffer* request,
                                        grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* FetchState(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* EndSession(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;

 private:
  Coordinator* coordinator_;
  std::unique_ptr<RpcEnvironment> owned_env_;
  std::unique_ptr<WorkQueue> owned_run_queue_;
  RpcEnvironment* env_;
  MethodPolicy run_policy_, register_policy_, list_policy_, fetch_state_policy_,
      end_session_policy_;
};

}  // namespace graphopt

#endif  // GRAPHOPT_SERVER_COORDINATOR_SERVICE_H_
