#include "client/coordinator_client.h"

#include <chrono>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/backend.h"
#include "grpcpp/grpcpp.h"
#include "proto/coordinator.grpc.pb.h"
#include "server/grpc_status.h"
#include "service/tenant.h"

namespace graphopt {
namespace {

std::unique_ptr<v1::Coordinator::Stub> Stub(const std::string& address) {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(kClientMaxMessageBytes);
  arguments.SetMaxSendMessageSize(kClientMaxMessageBytes);
  return v1::Coordinator::NewStub(
      grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), arguments));
}

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

void SetDeadline(grpc::ClientContext& context, absl::Duration timeout) {
  context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout));
}

}  // namespace

absl::StatusOr<v1::RunResponse> RemoteRun(const std::string& address, absl::Duration timeout,
                                          const std::string& tenant,
                                          const v1::RunRequest& request) {
  grpc::ClientContext context;
  SetDeadline(context, timeout);
  if (!tenant.empty()) context.AddMetadata(kTenantMetadataKey, tenant);
  v1::RunResponse response;
  grpc::Status status = Stub(address)->Run(&context, request, &response);
  if (!status.ok()) return Error(address, status);
  return response;
}

absl::StatusOr<v1::ListWorkersResponse> RemoteListWorkers(const std::string& address,
                                                          absl::Duration timeout) {
  grpc::ClientContext context;
  SetDeadline(context, timeout);
  v1::ListWorkersResponse response;
  grpc::Status status = Stub(address)->ListWorkers(&context, v1::ListWorkersRequest(), &response);
  if (!status.ok()) return Error(address, status);
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
