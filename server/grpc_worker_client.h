#ifndef GRAPHOPT_SERVER_GRPC_WORKER_CLIENT_H_
#define GRAPHOPT_SERVER_GRPC_WORKER_CLIENT_H_

#include <memory>
#include <string>

#include "grpcpp/security/credentials.h"
#include "service/worker_client.h"

namespace graphopt {

struct GrpcWorkerClientOptions {
  // Largest message to and from a worker.
  int max_message_bytes = 1024 << 20;
  // The channel credentials for calls to workers (TLS with the server's certificate as the
  // client's, in a secure cluster) and the name their certificates must carry; null: insecure.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  std::string tls_name;
};

// A WorkerClient over a gRPC channel to `address`. A worker's own answers carry the trailing
// metadata worker/worker_service.h describes ("graphopt-origin", "graphopt-busy",
// "graphopt-callers-limit"); WorkerCallResult reports them.
std::unique_ptr<WorkerClient> NewGrpcWorkerClient(const std::string& address,
                                                  const GrpcWorkerClientOptions& options);

// NewGrpcWorkerClient for every address: the factory a gRPC server gives its Coordinator.
WorkerClientFactory GrpcWorkerClientFactory(GrpcWorkerClientOptions options);

}  // namespace graphopt

#endif  // GRAPHOPT_SERVER_GRPC_WORKER_CLIENT_H_
