#ifndef GRAPHOPT_SERVER_COORDINATOR_SERVICE_H_
#define GRAPHOPT_SERVER_COORDINATOR_SERVICE_H_

#include <memory>

#include "grpcpp/grpcpp.h"
#include "proto/coordinator.grpc.pb.h"
#include "service/coordinator.h"
#include "spdlog/logger.h"

namespace graphopt {

// The graphopt.v1.Coordinator gRPC service: a thin adapter over graphopt::Coordinator. Run is
// on behalf of the tenant of the "graphopt-tenant" metadata (as GraphOptimizer's calls are), with
// the caller's deadline; absl::Status results become gRPC statuses here. Every Run is logged
// with its peer, request id, plan, worker, attempts, duration and status. Thread-safe.
class CoordinatorService final : public v1::Coordinator::Service {
 public:
  // `coordinator` must outlive the service; `logger` must not be null.
  CoordinatorService(Coordinator* coordinator, std::shared_ptr<spdlog::logger> logger)
      : coordinator_(coordinator), logger_(std::move(logger)) {}

  CoordinatorService(const CoordinatorService&) = delete;
  CoordinatorService& operator=(const CoordinatorService&) = delete;

  grpc::Status Run(grpc::ServerContext* context, const v1::RunRequest* request,
                   v1::RunResponse* response) override;
  grpc::Status RegisterWorker(grpc::ServerContext* context,
                              const v1::RegisterWorkerRequest* request,
                              v1::RegisterWorkerResponse* response) override;
  grpc::Status ListWorkers(grpc::ServerContext* context, const v1::ListWorkersRequest* request,
                           v1::ListWorkersResponse* response) override;

 private:
  Coordinator* coordinator_;
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace graphopt

#endif  // GRAPHOPT_SERVER_COORDINATOR_SERVICE_H_
