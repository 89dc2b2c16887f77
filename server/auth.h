#ifndef GRAPHOPT_SERVER_AUTH_H_
#define GRAPHOPT_SERVER_AUTH_H_

// Who is calling: the principal of a client call (from its bearer token) and the cluster
// identity of a server or worker (from its verified TLS client certificate). Handlers call
// Authenticate or ClusterPeer first and convert a non-OK status with ToGrpcStatus.

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "grpcpp/server_context.h"
#include "server/token_store.h"

namespace graphopt {

// Metadata key of the credential: "authorization: Bearer <token>".
inline constexpr char kAuthorizationMetadataKey[] = "authorization";

// Cluster identities: the DNS SAN (or CN) of a cluster process's certificate.
inline constexpr char kServerIdentity[] = "graphopt-server";
inline constexpr char kWorkerIdentity[] = "graphopt-worker";
// What ClusterPeer returns on a plaintext listener.
inline constexpr char kInsecurePeer[] = "insecure";

enum class PrincipalRole {
  kTenant,        // a tenant token: acts for its own tenant only
  kAdmin,         // an admin token: cluster operations, acts for the tenant the call names
  kAnonymousDev,  // no token store (--insecure): anyone, as admin, for a one-user dev setup
};

// "tenant", "admin" or "anonymous-dev".
absl::string_view PrincipalRoleName(PrincipalRole role);

struct Principal {
  PrincipalRole role = PrincipalRole::kTenant;
  // The tenant whose ops and blobs the call sees and changes.
  std::string tenant;
  // The token's label from the tokens file (may be empty); empty for kAnonymousDev.
  std::string label;

  bool is_admin() const { return role != PrincipalRole::kTenant; }
  // For logs, e.g. "tenant acme (token 'ci-bot')", "admin for tenant acme (token 'ops')",
  // "anonymous-dev for tenant default". Never contains the token.
  std::string Describe() const;
};

// Whether the listener a handler runs on speaks TLS.
enum class TransportSecurity { kInsecure, kTls };

// Turns a call's metadata and peer into who is calling. Thread-safe; one per server process,
// shared by every handler.
class Authenticator {
 public:
  // `tokens` may be null: then Authenticate gives every call kAnonymousDev with the tenant its
  // "graphopt-tenant" header names, which the caller must allow only with --insecure (see
  // server/security.h), and on a kTls listener refuses every call. `transport` decides what
  // ClusterPeer does.
  Authenticator(TransportSecurity transport, std::shared_ptr<TokenStore> tokens);

  // The principal of a client call.
  // With a token store:
  //  - no "authorization" metadata, several, or not "Bearer <token>": UNAUTHENTICATED, saying
  //    how to send a token (the CLI's --token or GRAPHOPT_TOKEN);
  //  - a token the store does not hold (unknown, revoked, ill-formed): UNAUTHENTICATED;
  //  - a tenant token: its tenant; a "graphopt-tenant" header naming another tenant is
  //    PERMISSION_DENIED naming both (naming its own is fine);
  //  - an admin token: the tenant the header names (kDefaultTenant without one).
  // Without one: kAnonymousDev for the header's tenant (kDefaultTenant without one).
  // A header value ValidateTenantName rejects, or several values: INVALID_ARGUMENT.
  // Messages never contain the token.
  absl::StatusOr<Principal> Authenticate(const grpc::ServerContextBase& context) const;

  // The cluster identity of the calling process: the first of the peer certificate's DNS SANs
  // and CN (in that order) that is in `allowed`. UNAUTHENTICATED without a verified client
  // certificate; PERMISSION_DENIED for a certificate naming none of `allowed` (the message
  // names what it has and what the call needs). On a kInsecure listener: kInsecurePeer.
  // Relies on the listener verifying client certificates against the cluster CA (what
  // MakeServerCredentials sets up for ClientCertMode::kVerifyIfOffered and kRequire).
  absl::StatusOr<std::string> ClusterPeer(const grpc::ServerContextBase& context,
                                          absl::Span<const std::string> allowed) const;

  TransportSecurity transport() const { return transport_; }
  // The token store, or null.
  TokenStore* tokens() const { return tokens_.get(); }

 private:
  const TransportSecurity transport_;
  const std::shared_ptr<TokenStore> tokens_;
};

// OK for an admin or anonymous-dev principal; PERMISSION_DENIED naming `operation` (e.g.
// "ListWorkers") and the principal otherwise.
absl::Status RequireAdmin(const Principal& principal, absl::string_view operation);

// The principal for a call's metadata (the part of Authenticate that needs no gRPC context):
// `authorization` and `tenant_header` are all the values of those keys. For tests and for
// transports other than gRPC's server context.
absl::StatusOr<Principal> AuthenticateMetadata(TokenStore* tokens,
                                               absl::Span<const absl::string_view> authorization,
                                               absl::Span<const absl::string_view> tenant_header);

}  // namespace graphopt

#endif  // GRAPHOPT_SERVER_AUTH_H_
