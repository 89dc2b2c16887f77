#include "client/coordinator_client.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grpcpp/grpcpp.h"
#include "proto/coordinator.grpc.pb.h"
#include "server/grpc_status.h"

namespace graphopt {
namespace {

// Errors about the request pass through unchanged; the others name the server.
absl::Status Error(const std::string& address, const grpc::Status& status) {
  absl::Status s = FromGrpcStatus(status);
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kUnimplemented:
      return s;
    default:
      return absl::Status(s.code(), absl::StrCat("server ", address, ": ", s.message()));
  }
}

}  // namespace

absl::StatusOr<v1::RunResponse> RemoteRun(const ServerConnection& connection,
                                          absl::Duration timeout, const v1::RunRequest& request) {
  grpc::ClientContext context;
  connection.PrepareCall(&context, timeout);
  v1::RunResponse response;
  grpc::Status status =
      v1::Coordinator::NewStub(connection.channel())->Run(&context, request, &response);
  if (!status.ok()) return Error(connection.address(), status);
  return response;
}

absl::StatusOr<v1::ListWorkersResponse> RemoteListWorkers(const ServerConnection& connection,
                                                          absl::Duration timeout) {
  grpc::ClientContext context;
  connection.PrepareCall(&context, timeout);
  v1::ListWorkersResponse response;
  grpc::Status status = v1::Coordinator::NewStub(connection.channel())
                            ->ListWorkers(&context, v1::ListWorkersRequest(), &response);
  if (!status.ok()) return Error(connection.address(), status);
  return response;
}

std::string FormatWorkers(const v1::ListWorkersResponse& response) {
  if (response.workers_size() == 0) {
    return "no workers (start graphopt-worker --register_with=SERVER, or name them with the "
           "server's --workers)\n";
  }
  constexpr char kRow[] = "%-21s %-16s %-7s %-10s %-14s %4s %8s %5s %9s %8s %5s\n";
  std::string out = absl::StrFormat(kRow, "address", "worker", "health", "source", "devices",
                                    "busy", "executed", "plans", "cache MiB", "seen", "downs");
  std::string errors;
  for (const v1::WorkerStatus& w : response.workers()) {
    std::string devices;
    for (const v1::DeviceInfo& d : w.devices()) {
      absl::StrAppend(&devices, devices.empty() ? "" : ",", d.name(), "x", d.threads());
    }
    const std::string seen = w.last_seen_ms_ago() < 0
                                 ? "never"
                                 : absl::StrFormat("%.1fs", w.last_seen_ms_ago() / 1000.0);
    absl::StrAppendFormat(&out, kRow, w.address(), w.worker_id().empty() ? "-" : w.worker_id(),
                          w.health(), w.source(), devices.empty() ? "-" : devices,
                          absl::StrCat(w.executing()), absl::StrCat(w.executed()),
                          absl::StrCat(w.plans_loaded()),
                          absl::StrFormat("%.1f", w.plan_cache_bytes() / 1048576.0), seen,
                          absl::StrCat(w.failures()));
    if (!w.last_error().empty()) {
      absl::StrAppend(&errors, "  ", w.address(), ": ", w.last_error(), "\n");
    }
  }
  if (!errors.empty()) absl::StrAppend(&out, "last errors:\n", errors);
  return out;
}

}  // namespace graphopt
