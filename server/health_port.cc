#include "server/health_port.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "grpcpp/health_check_service_interface.h"

namespace graphopt {
namespace {

// Every method but the health service's: UNIMPLEMENTED. gRPC also needs one service of the
// server's own to poll for calls; the built-in health service does not count.
class RefuseOtherMethods final : public grpc::CallbackGenericService {
 public:
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext*) override {
    class Refuse final : public grpc::ServerGenericBidiReactor {
     public:
      Refuse() {
        Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                            "this port serves only grpc.health.v1.Health"));
      }
      void OnDone() override { delete this; }
    };
    return new Refuse();
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<HealthPort>> HealthPort::Start(const std::string& listen) {
  // Process-wide and idempotent: every server built from here on serves the health service.
  grpc::EnableDefaultHealthCheckService(true);
  std::unique_ptr<HealthPort> port(new HealthPort());
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port->port_);
  // Probes are tiny: one polling thread is plenty, and requests of any size are refused.
  builder.SetMaxReceiveMessageSize(4096);
  port->refuse_ = std::make_unique<RefuseOtherMethods>();
  builder.RegisterCallbackGenericService(port->refuse_.get());
  port->server_ = builder.BuildAndStart();
  if (port->server_ == nullptr || port->port_ == 0 ||
      port->server_->GetHealthCheckService() == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("--health_listen: cannot listen on '", listen, "'"));
  }
  port->SetServingStatus(false);
  return port;
}

HealthPort::~HealthPort() { Shutdown(); }

void HealthPort::SetServingStatus(bool serving) {
  if (server_ != nullptr) server_->GetHealthCheckService()->SetServingStatus(serving);
}

void HealthPort::Shutdown() {
  if (server_ == nullptr) return;
  server_->Shutdown(std::chrono::system_clock::now());
  server_->Wait();
  server_.reset();
}

}  // namespace graphopt
