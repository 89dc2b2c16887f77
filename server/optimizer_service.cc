#include "server/optimizer_service.h"

#include <chrono>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "server/grpc_status.h"

namespace graphopt {
namespace {

using Clock = std::chrono::steady_clock;

double MillisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// "OK" or "INVALID_ARGUMENT: node 'n3' (Add): ...".
std::string StatusText(const absl::Status& status) {
  if (status.ok()) return "OK";
  return absl::StatusCodeToString(status.code()) + ": " + std::string(status.message());
}

}  // namespace

OptimizerService::OptimizerService(const Optimizer* optimizer,
                                   std::shared_ptr<spdlog::logger> logger)
    : optimizer_(optimizer), logger_(std::move(logger)) {}

grpc::Status OptimizerService::Optimize(grpc::ServerContext* context,
                                        const v1::OptimizeRequest* request,
                                        v1::OptimizeResponse* response) {
  const Clock::time_point start = Clock::now();
  const int nodes_in = request->graph().nodes_size();
  // gRPC's synchronous handler owns `*request` (a non-const object it destroys after this
  // method returns without reading it again), so moving the graph out instead of copying it
  // is safe and halves the peak memory of a large request.
  absl::StatusOr<v1::OptimizeResponse> result =
      optimizer_->Optimize(std::move(*const_cast<v1::OptimizeRequest*>(request)));
  const absl::Status status = result.status();
  int nodes_out = -1;
  if (result.ok()) {
    *response = *std::move(result);
    nodes_out = response->graph().nodes_size();
  }
  const double ms = MillisecondsSince(start);
  if (status.ok()) {
    logger_->info("Optimize peer={} nodes={}->{} passes={} duration_ms={:.1f} status=OK",
                  context->peer(), nodes_in, nodes_out, response->reports_size(), ms);
  } else {
    logger_->warn("Optimize peer={} nodes_in={} duration_ms={:.1f} status={}", context->peer(),
                  nodes_in, ms, StatusText(status));
  }
  return ToGrpcStatus(status);
}

grpc::Status OptimizerService::ListPasses(grpc::ServerContext* context,
                                          const v1::ListPassesRequest* /*request*/,
                                          v1::ListPassesResponse* response) {
  const Clock::time_point start = Clock::now();
  *response = optimizer_->ListPasses();
  logger_->info("ListPasses peer={} passes={} duration_ms={:.1f} status=OK", context->peer(),
                response->passes_size(), MillisecondsSince(start));
  return grpc::Status::OK;
}

grpc::Status OptimizerService::ListOps(grpc::ServerContext* context,
                                       const v1::ListOpsRequest* request,
                                       v1::ListOpsResponse* response) {
  const Clock::time_point start = Clock::now();
  *response = optimizer_->ListOps(*request);
  logger_->info("ListOps peer={} domain='{}' name='{}' ops={} duration_ms={:.1f} status=OK",
                context->peer(), absl::CHexEscape(request->domain()),
                absl::CHexEscape(request->name()), response->ops_size(),
                MillisecondsSince(start));
  return grpc::Status::OK;
}

}  // namespace graphopt
