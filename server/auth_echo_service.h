#ifndef GRAPHOPT_SERVER_AUTH_ECHO_SERVICE_H_
#define GRAPHOPT_SERVER_AUTH_ECHO_SERVICE_H_

// Test services that answer with who the caller is, for tests of authentication over real
// gRPC calls (server/auth_test.cc, the CLI's and the Python client's credential tests).

#include <string>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "proto/coordinator.grpc.pb.h"
#include "proto/optimizer.grpc.pb.h"
#include "server/auth.h"

namespace graphopt {

// GraphOptimizer whose
// - ListPasses authenticates the call and answers one PassInfo named "principal" whose
//   description is Principal::Describe() and whose options are {"role", "tenant", "label"};
// - ListOps asks ClusterPeer(cluster_peers) and answers the identity as ListOpsResponse.tenant.
// Other RPCs are UNIMPLEMENTED. Errors are the Authenticator's, converted by ToGrpcStatus.
class AuthEchoOptimizer final : public v1::GraphOptimizer::Service {
 public:
  AuthEchoOptimizer(const Authenticator* auth, std::vector<std::string> cluster_peers);

  grpc::Status ListPasses(grpc::ServerContext* context, const v1::ListPassesRequest* request,
                          v1::ListPassesResponse* response) override;
  grpc::Status ListOps(grpc::ServerContext* context, const v1::ListOpsRequest* request,
                       v1::ListOpsResponse* response) override;

 private:
  const Authenticator* auth_;
  const std::vector<std::string> cluster_peers_;
};

// Coordinator whose
// - ListWorkers authenticates the call, requires an admin (RequireAdmin), and answers one
//   WorkerStatus {address: "principal", worker_id: the tenant, health: the role, source: the
//   label};
// - Run authenticates the call and, when that succeeds, fails with FAILED_PRECONDITION
//   "authenticated as <Principal::Describe()>" (it runs nothing).
class AuthEchoCoordinator final : public v1::Coordinator::Service {
 public:
  explicit AuthEchoCoordinator(const Authenticator* auth);

  grpc::Status ListWorkers(grpc::ServerContext* context, const v1::ListWorkersRequest* request,
                           v1::ListWorkersResponse* response) override;
  grpc::Status Run(grpc::ServerContext* context, const v1::RunRequest* request,
                   v1::RunResponse* response) override;

 private:
  const Authenticator* auth_;
};

}  // namespace graphopt

#endif  // GRAPHOPT_SERVER_AUTH_ECHO_SERVICE_H_
