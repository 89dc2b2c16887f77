#ifndef GRAPHOPT_SERVER_OPTIMIZER_SERVICE_H_
#define GRAPHOPT_SERVER_OPTIMIZER_SERVICE_H_

#include <memory>

#include "grpcpp/grpcpp.h"
#include "proto/optimizer.grpc.pb.h"
#include "service/optimizer.h"
#include "spdlog/logger.h"

namespace graphopt {

// The graphopt.v1.GraphOptimizer gRPC service (synchronous API): a thin adapter over
// graphopt::Optimizer. absl::Status results become gRPC statuses here and nowhere else. Every
// call is logged to `logger` with its method, peer, node counts, duration and status (info for
// OK, warn otherwise). Thread-safe: gRPC may call it from any number of threads.
class OptimizerService final : public v1::GraphOptimizer::Service {
 public:
  // `optimizer` must outlive the service; `logger` must not be null.
  OptimizerService(const Optimizer* optimizer, std::shared_ptr<spdlog::logger> logger);

  OptimizerService(const OptimizerService&) = delete;
  OptimizerService& operator=(const OptimizerService&) = delete;

  grpc::Status Optimize(grpc::ServerContext* context, const v1::OptimizeRequest* request,
                        v1::OptimizeResponse* response) override;
  grpc::Status ListPasses(grpc::ServerContext* context, const v1::ListPassesRequest* request,
                          v1::ListPassesResponse* response) override;
  grpc::Status ListOps(grpc::ServerContext* context, const v1::ListOpsRequest* request,
                       v1::ListOpsResponse* response) override;

 private:
  const Optimizer* optimizer_;
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace graphopt

#endif  // GRAPHOPT_SERVER_OPTIMIZER_SERVICE_H_
