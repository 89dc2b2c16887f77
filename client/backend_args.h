#ifndef GRAPHOPT_CLIENT_BACKEND_ARGS_H_
#define GRAPHOPT_CLIENT_BACKEND_ARGS_H_

#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "client/backend.h"
#include "client/credentials.h"

namespace graphopt {

// Options shared by every subcommand that talks to an optimizer.
struct BackendArgs {
  std::string server;  // empty: embedded
  double timeout_s = 600;
  std::string tenant;  // empty: the server's "default" (or the token's tenant)
  // Credentials, with --server (see client/credentials.h).
  std::string token;  // --token, default GRAPHOPT_TOKEN
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_server_name;
};

// --token and the --tls-* options of a subcommand that talks to --server.
void AddCredentialOptions(CLI::App* command, BackendArgs* args);

// --server, --timeout, --tenant and the credential options.
void AddBackendOptions(CLI::App* command, BackendArgs* args);

// The channel and call metadata for --server, from the connection options. Warns on stderr
// when a token would cross the network in plaintext.
absl::StatusOr<std::shared_ptr<const ServerConnection>> Connect(const BackendArgs& args);

// The embedded optimizer without --server, else the server's.
absl::StatusOr<std::unique_ptr<OptimizerBackend>> MakeBackend(const BackendArgs& args);

}  // namespace graphopt

#endif  // GRAPHOPT_CLIENT_BACKEND_ARGS_H_
