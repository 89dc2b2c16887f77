#include "client/backend_args.h"

#include <cstdio>
#include <utility>

#include "absl/time/time.h"

namespace graphopt {

void AddCredentialOptions(CLI::App* command, BackendArgs* args) {
  command
      ->add_option("--token", args->token,
                   "With --server: the bearer token the server knows you by (made by `graphopt "
                   "token new`); default: the GRAPHOPT_TOKEN environment variable, which is "
                   "better than this option since other users can see arguments in `ps`")
      ->envname("GRAPHOPT_TOKEN");
  command->add_option("--tls-ca", args->tls_ca,
                      "With --server: talk TLS, trusting this PEM CA certificate for the "
                      "server's certificate (without it: plaintext)");
  command->add_option("--tls-cert", args->tls_cert,
                      "With --tls-ca: this client's PEM certificate, for servers that ask for one");
  command->add_option("--tls-key", args->tls_key, "With --tls-cert: its PEM private key");
  command->add_option("--tls-server-name", args->tls_server_name,
                      "With --tls-ca: the name the server's certificate must carry (default: "
                      "the host of --server)");
}

void AddBackendOptions(CLI::App* command, BackendArgs* args) {
  command->add_option("--server", args->server,
                      "graphopt-server address (host:port); without it the optimizer runs "
                      "in this process");
  command->add_option("--timeout", args->timeout_s,
                      "Deadline in seconds for each call to --server")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command->add_option("--tenant", args->tenant,
                      "With --server: the tenant whose registered ops the call sees and "
                      "changes (sent as metadata 'graphopt-tenant'; the server's default "
                      "is 'default'; a tenant token acts only for its own)");
  AddCredentialOptions(command, args);
}

absl::StatusOr<std::shared_ptr<const ServerConnection>> Connect(const BackendArgs& args) {
  ConnectionFlags flags;
  flags.server = args.server;
  flags.token = args.token;
  flags.tenant = args.tenant;
  flags.tls_ca = args.tls_ca;
  flags.tls_cert = args.tls_cert;
  flags.tls_key = args.tls_key;
  flags.tls_server_name = args.tls_server_name;
  absl::StatusOr<std::shared_ptr<const ServerConnection>> connection =
      ServerConnection::Create(flags, kClientMaxMessageBytes);
  if (connection.ok()) {
    if (const std::string warning = (*connection)->PlaintextTokenWarning(); !warning.empty()) {
      std::fprintf(stderr, "%s\n", warning.c_str());
    }
  }
  return connection;
}

absl::StatusOr<std::unique_ptr<OptimizerBackend>> MakeBackend(const BackendArgs& args) {
  if (args.server.empty()) return CreateEmbeddedBackend();
  absl::StatusOr<std::shared_ptr<const ServerConnection>> connection = Connect(args);
  if (!connection.ok()) return connection.status();
  return CreateRemoteBackend(*std::move(connection), absl::Seconds(args.timeout_s));
}

}  // namespace graphopt
