#ifndef GRAPHOPT_SERVER_HEALTH_PORT_H_
#define GRAPHOPT_SERVER_HEALTH_PORT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/grpcpp.h"

namespace graphopt {

// A plaintext gRPC port that serves grpc.health.v1.Health and nothing else, mirroring the main
// server's status (--health_listen). The kubelet's own gRPC probe cannot speak TLS, and the
// main port is TLS in any shared deployment; this port tells only SERVING or NOT_SERVING, so
// it needs no credentials.
class HealthPort {
 public:
  // Listens on `listen` (host:port; port 0 picks one). UNAVAILABLE naming the address when it
  // cannot listen.
  static absl::StatusOr<std::unique_ptr<HealthPort>> Start(const std::string& listen);
  ~HealthPort();

  void SetServingStatus(bool serving);
  int port() const { return port_; }
  void Shutdown();

 private:
  HealthPort() = default;
  std::unique_ptr<grpc::CallbackGenericService> refuse_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace graphopt

#endif  // GRAPHOPT_SERVER_HEALTH_PORT_H_
