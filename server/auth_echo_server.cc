// auth_echo_server: a test server that answers with who the caller is (server/auth_echo_service.h)
// behind the security graphopt-server sets up from the same flags (server/security.h). For
// end-to-end tests of clients' credentials (the CLI's --token/--tls-*, the Python client).
//
// Usage: auth_echo_server --port_file=FILE (--insecure [--tokens_file=F] |
//        --tls_cert=C --tls_key=K --tls_ca=CA --tokens_file=F)
// Listens on 127.0.0.1 on a free port, writes the port to --port_file, and serves until killed.

#include <cstdio>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "grpcpp/grpcpp.h"
#include "server/auth_echo_service.h"
#include "server/security.h"
#include "server/serving.h"

ABSL_FLAG(std::string, port_file, "", "Where to write the port listened on.");
ABSL_FLAG(bool, insecure, false, "Plaintext.");
ABSL_FLAG(std::string, tls_cert, "", "PEM certificate.");
ABSL_FLAG(std::string, tls_key, "", "PEM key.");
ABSL_FLAG(std::string, tls_ca, "", "PEM CA of client certificates.");
ABSL_FLAG(std::string, tokens_file, "", "Tokens file.");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  graphopt::ServerSecurityFlags flags;
  flags.insecure = absl::GetFlag(FLAGS_insecure);
  flags.tls_cert = absl::GetFlag(FLAGS_tls_cert);
  flags.tls_key = absl::GetFlag(FLAGS_tls_key);
  flags.tls_ca = absl::GetFlag(FLAGS_tls_ca);
  flags.tokens_file = absl::GetFlag(FLAGS_tokens_file);
  absl::StatusOr<graphopt::ServerSecurity> security = graphopt::MakeServerSecurity(flags);
  if (!security.ok()) {
    std::fprintf(stderr, "auth_echo_server: %s\n", security.status().ToString().c_str());
    return 2;
  }
  std::fprintf(stderr, "auth_echo_server: %s\n", security->description.c_str());
  graphopt::AuthEchoOptimizer optimizer(security->auth.get(), security->worker_identities);
  graphopt::AuthEchoCoordinator coordinator(security->auth.get());
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", security->listener, &port);
  builder.RegisterService(&optimizer);
  builder.RegisterService(&coordinator);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "auth_echo_server: cannot listen\n");
    return 1;
  }
  if (absl::Status s = graphopt::WritePortFile(absl::GetFlag(FLAGS_port_file), port); !s.ok()) {
    std::fprintf(stderr, "auth_echo_server: %s\n", s.ToString().c_str());
    return 1;
  }
  server->Wait();
  return 0;
}
