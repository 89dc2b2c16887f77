#ifndef GRAPHOPT_SERVER_SECURITY_H_
#define GRAPHOPT_SERVER_SECURITY_H_

// A graphopt process's security set up from its flag values, in one call from main: the
// listener's credentials, the Authenticator its handlers use, and the credentials of the
// channels it opens to the other kind of cluster process.
//
// graphopt-server: TLS listener that verifies a client certificate when one is offered
// (workers present theirs for RegisterWorker; end clients come with a bearer token), a tokens
// file, and mTLS channels to workers that present the server's certificate and check the
// worker's against the cluster CA under the name --worker_tls_name.
// graphopt-worker: TLS listener that verifies a client certificate from the cluster CA when one
// is offered (handlers then ask ClusterPeer for one of --allowed_peers, so a caller without one
// is refused with UNAUTHENTICATED), and an mTLS channel to the server for RegisterWorker,
// checked under the name --server_tls_name.
// --insecure: plaintext everywhere; the server then takes the tenant from the
// "graphopt-tenant" header (or, with --tokens_file, still checks tokens).
//
// Rotation, without restarts:
// - Tokens: `graphopt token new --tenant T` prints a token and its line; append the line, give
//   the token to its user, who switches (GRAPHOPT_TOKEN), then delete the old line. The file is
//   re-read within tokens_check_interval; a file that does not parse is logged through
//   on_tokens_reload and the previous tokens stay in force (so a bad edit locks no one out).
// - Certificates: replace certificate and key together, atomically (see server/tls.h); new
//   connections use them within tls_refresh_interval, open ones keep the old until they
//   reconnect. The start-up log (description) shows each certificate's expiry.
// - The CA: make --tls_ca a bundle of the old and the new CA on every process first, then
//   replace the leaf certificates, then drop the old CA from the bundle.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/security/server_credentials.h"
#include "server/auth.h"
#include "server/tls.h"
#include "server/token_store.h"

namespace graphopt {

// The flag names the messages use; the binaries define flags of these names.
inline constexpr char kInsecureFlag[] = "--insecure";
inline constexpr char kTlsCertFlag[] = "--tls_cert";
inline constexpr char kTlsKeyFlag[] = "--tls_key";
inline constexpr char kTlsCaFlag[] = "--tls_ca";
inline constexpr char kTokensFileFlag[] = "--tokens_file";
inline constexpr char kWorkerTlsNameFlag[] = "--worker_tls_name";
inline constexpr char kServerTlsNameFlag[] = "--server_tls_name";
inline constexpr char kAllowedPeersFlag[] = "--allowed_peers";

// graphopt-server's security flags.
struct ServerSecurityFlags {
  bool insecure = false;
  std::string tls_cert;     // PEM certificate; must name kServerIdentity
  std::string tls_key;      // its PEM private key
  std::string tls_ca;       // the cluster CA (workers' certificates chain to it)
  std::string tokens_file;  // required without --insecure
  // The name workers' certificates are checked against (they are dialled by pod IP).
  std::string worker_tls_name = kWorkerIdentity;
  // How often the TLS files are re-read (rotation without restart).
  absl::Duration tls_refresh_interval = absl::Seconds(10);
  // How often the tokens file is checked for a change.
  absl::Duration tokens_check_interval = absl::Seconds(1);
};

struct ServerSecurity {
  // For ServerBuilder::AddListeningPort.
  std::shared_ptr<grpc::ServerCredentials> listener;
  // For every handler: Authenticate (client calls) and ClusterPeer (RegisterWorker).
  std::shared_ptr<Authenticator> auth;
  // Who may call RegisterWorker: {kWorkerIdentity}.
  std::vector<std::string> worker_identities;
  // For the coordinator's channels to workers.
  ChannelSecurity to_workers;
  // One line for the start-up log: transport, certificate names and expiry, token counts.
  std::string description;
};

// Checks the flags and the files they name. INVALID_ARGUMENT naming the flag (and file) for
// a missing or contradictory flag (--insecure with a --tls_* flag; TLS without --tokens_file),
// an unreadable or malformed file, a key that is not the certificate's, a certificate that
// does not name kServerIdentity or is not valid now, or a tokens file that does not parse.
// `on_tokens_reload` (may be empty) is called after each later reload of the tokens file.
absl::StatusOr<ServerSecurity> MakeServerSecurity(
    const ServerSecurityFlags& flags,
    std::function<void(const TokenReload&)> on_tokens_reload = nullptr);

// graphopt-worker's security flags.
struct WorkerSecurityFlags {
  bool insecure = false;
  std::string tls_cert;  // PEM certificate; must name kWorkerIdentity
  std::string tls_key;
  std::string tls_ca;    // the cluster CA (servers' certificates chain to it)
  // Identities that may call LoadPlan/Execute/UnloadPlan/Describe. Not empty.
  std::vector<std::string> allowed_peers = {kServerIdentity};
  // The name the server's certificate must carry when registering (--register_with).
  std::string server_tls_name = kServerIdentity;
  absl::Duration tls_refresh_interval = absl::Seconds(10);
};

struct WorkerSecurity {
  std::shared_ptr<grpc::ServerCredentials> listener;
  // For every handler: ClusterPeer(context, allowed_peers).
  std::shared_ptr<Authenticator> auth;
  std::vector<std::string> allowed_peers;
  // For the RegisterWorker channel to the server.
  ChannelSecurity to_server;
  std::string description;
};

// Checks the flags and files as MakeServerSecurity does (the certificate must name
// kWorkerIdentity; --allowed_peers must not be empty).
absl::StatusOr<WorkerSecurity> MakeWorkerSecurity(const WorkerSecurityFlags& flags);

}  // namespace graphopt

#endif  // GRAPHOPT_SERVER_SECURITY_H_
