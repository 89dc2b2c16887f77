#include "server/auth_echo_service.h"

#include <utility>

#include "server/grpc_status.h"

namespace graphopt {

AuthEchoOptimizer::AuthEchoOptimizer(const Authenticator* auth,
                                     std::vector<std::string> cluster_peers)
    : auth_(auth), cluster_peers_(std::move(cluster_peers)) {}

grpc::Status AuthEchoOptimizer::ListPasses(grpc::ServerContext* context,
                                           const v1::ListPassesRequest*,
                                           v1::ListPassesResponse* response) {
  absl::StatusOr<Principal> principal = auth_->Authenticate(*context);
  if (!principal.ok()) return ToGrpcStatus(principal.status());
  v1::PassInfo* pass = response->add_passes();
  pass->set_name("principal");
  pass->set_description(principal->Describe());
  (*pass->mutable_options())["role"] = std::string(PrincipalRoleName(principal->role));
  (*pass->mutable_options())["tenant"] = principal->tenant;
  (*pass->mutable_options())["label"] = principal->label;
  return grpc::Status::OK;
}

grpc::Status AuthEchoOptimizer::ListOps(grpc::ServerContext* context, const v1::ListOpsRequest*,
                                        v1::ListOpsResponse* response) {
  absl::StatusOr<std::string> peer = auth_->ClusterPeer(*context, cluster_peers_);
  if (!peer.ok()) return ToGrpcStatus(peer.status());
  response->set_tenant(*peer);
  return grpc::Status::OK;
}

AuthEchoCoordinator::AuthEchoCoordinator(const Authenticator* auth) : auth_(auth) {}

grpc::Status AuthEchoCoordinator::ListWorkers(grpc::ServerContext* context,
                                              const v1::ListWorkersRequest*,
                                              v1::ListWorkersResponse* response) {
  absl::StatusOr<Principal> principal = auth_->Authenticate(*context);
  if (!principal.ok()) return ToGrpcStatus(principal.status());
  if (absl::Status s = RequireAdmin(*principal, "ListWorkers"); !s.ok()) return ToGrpcStatus(s);
  v1::WorkerStatus* worker = response->add_workers();
  worker->set_address("principal");
  worker->set_worker_id(principal->tenant);
  worker->set_health(std::string(PrincipalRoleName(principal->role)));
  worker->set_source(principal->label);
  worker->set_last_seen_ms_ago(-1);
  return grpc::Status::OK;
}

grpc::Status AuthEchoCoordinator::Run(grpc::ServerContext* context, const v1::RunRequest*,
                                      v1::RunResponse*) {
  absl::StatusOr<Principal> principal = auth_->Authenticate(*context);
  if (!principal.ok()) return ToGrpcStatus(principal.status());
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                      "authenticated as " + principal->Describe());
}

}  // namespace graphopt
