#include "server/coordinator_service.h"

#include <string>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/time/time.h"
#include "server/grpc_status.h"
#include "server/optimizer_service.h"

namespace graphopt {

grpc::Status CoordinatorService::Run(grpc::ServerContext* context, const v1::RunRequest* request,
                                     v1::RunResponse* response) {
  const absl::Time start = absl::Now();
  // Quoted and cut: the id is the caller's text.
  const std::string id = absl::CHexEscape(request->request_id().substr(0, 80));
  absl::StatusOr<std::string> tenant = TenantOf(*context);
  absl::StatusOr<v1::RunResponse> result =
      tenant.ok()
          // gRPC's synchronous handler owns `*request` and does not read it after this call:
          // the graph and inputs are moved, not copied.
          ? coordinator_->Run(std::move(*const_cast<v1::RunRequest*>(request)), *tenant,
                              absl::FromChrono(context->deadline()))
          : absl::StatusOr<v1::RunResponse>(tenant.status());
  const double ms = absl::ToDoubleMilliseconds(absl::Now() - start);
  if (!result.ok()) {
    logger_->warn("Run peer={} request_id='{}' duration_ms={:.1f} status={}: {}", context->peer(),
                  id, ms, absl::StatusCodeToString(result.status().code()),
                  std::string(result.status().message()));
    return ToGrpcStatus(result.status());
  }
  logger_->info(
      "Run peer={} tenant={} request_id='{}' plan={} worker={} ({}) attempts={} loaded={} "
      "replayed={} duration_ms={:.1f} status=OK",
      context->peer(), *tenant, id, result->plan_id(), result->worker_address(),
      result->worker_id(), result->attempts(), result->loaded_plan(), result->replayed(), ms);
  *response = *std::move(result);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::RegisterWorker(grpc::ServerContext* context,
                                                const v1::RegisterWorkerRequest* request,
                                                v1::RegisterWorkerResponse* response) {
  if (absl::Status s = coordinator_->Register(*request); !s.ok()) {
    logger_->warn("RegisterWorker peer={} status={}", context->peer(), s.ToString());
    return ToGrpcStatus(s);
  }
  response->set_heartbeat_interval_ms(
      absl::ToInt64Milliseconds(coordinator_->options().heartbeat_interval));
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::ListWorkers(grpc::ServerContext*, const v1::ListWorkersRequest*,
                                             v1::ListWorkersResponse* response) {
  *response = coordinator_->ListWorkers();
  return grpc::Status::OK;
}

}  // namespace graphopt
