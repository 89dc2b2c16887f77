#include "server/security.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace graphopt {
namespace {

// The --tls_* flags that are set, by name.
std::vector<std::string> TlsFlagsGiven(const std::string& cert, const std::string& key,
                                       const std::string& ca) {
  std::vector<std::string> given;
  if (!cert.empty()) given.push_back(kTlsCertFlag);
  if (!key.empty()) given.push_back(kTlsKeyFlag);
  if (!ca.empty()) given.push_back(kTlsCaFlag);
  return given;
}

std::vector<std::string> TlsFlagsMissing(const std::string& cert, const std::string& key,
                                         const std::string& ca) {
  std::vector<std::string> missing;
  if (cert.empty()) missing.push_back(kTlsCertFlag);
  if (key.empty()) missing.push_back(kTlsKeyFlag);
  if (ca.empty()) missing.push_back(kTlsCaFlag);
  return missing;
}

std::string TokenCounts(const TokenReload& counts) {
  return absl::StrCat(counts.tenant_tokens, " tenant and ", counts.admin_tokens,
                      " admin tokens");
}

}  // namespace

absl::StatusOr<ServerSecurity> MakeServerSecurity(
    const ServerSecurityFlags& flags, std::function<void(const TokenReload&)> on_tokens_reload) {
  const std::vector<std::string> given = TlsFlagsGiven(flags.tls_cert, flags.tls_key, flags.tls_ca);
  if (flags.insecure && !given.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        kInsecureFlag, " excludes ", absl::StrJoin(given, ", "), ": choose plaintext or TLS"));
  }
  if (!flags.insecure) {
    const std::vector<std::string> missing =
        TlsFlagsMissing(flags.tls_cert, flags.tls_key, flags.tls_ca);
    if (!missing.empty() || flags.tokens_file.empty()) {
      std::vector<std::string> all = missing;
      if (flags.tokens_file.empty()) all.push_back(kTokensFileFlag);
      return absl::InvalidArgumentError(absl::StrCat(
          "missing ", absl::StrJoin(all, ", "), ": a server needs ", kTlsCertFlag, ", ",
          kTlsKeyFlag, ", ", kTlsCaFlag, " and ", kTokensFileFlag, ", or ", kInsecureFlag,
          " (plaintext, no authentication) for local development"));
    }
    if (flags.worker_tls_name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(kWorkerTlsNameFlag, " must not be empty"));
    }
  }

  ServerSecurity security;
  security.worker_identities = {kWorkerIdentity};
  std::shared_ptr<TokenStore> tokens;
  std::string tokens_description = "no tokens file: the tenant is what the call's "
                                   "'graphopt-tenant' header says, every caller is admin";
  if (!flags.tokens_file.empty()) {
    TokenStoreOptions options;
    options.check_interval = flags.tokens_check_interval;
    options.on_reload = std::move(on_tokens_reload);
    absl::StatusOr<std::unique_ptr<TokenStore>> store =
        TokenStore::Open(flags.tokens_file, std::move(options));
    if (!store.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(kTokensFileFlag, ": ", store.status().message()));
    }
    tokens = std::move(*store);
    tokens_description =
        absl::StrCat("tokens file '", flags.tokens_file, "': ", TokenCounts(tokens->Counts()));
  }

  if (flags.insecure) {
    security.listener = grpc::InsecureServerCredentials();
    security.auth = std::make_shared<Authenticator>(TransportSecurity::kInsecure, tokens);
    security.to_workers = ChannelSecurity();
    security.description = absl::StrCat(
        "INSECURE (", kInsecureFlag, "): plaintext, no client or worker certificates; ",
        tokens_description);
    return security;
  }

  ServerTlsOptions listener;
  listener.cert = {flags.tls_cert, kTlsCertFlag};
  listener.key = {flags.tls_key, kTlsKeyFlag};
  listener.ca = {flags.tls_ca, kTlsCaFlag};
  listener.client_certs = ClientCertMode::kVerifyIfOffered;
  listener.expected_identity = kServerIdentity;
  listener.refresh_interval = flags.tls_refresh_interval;
  absl::StatusOr<ServerTls> server_tls = MakeServerCredentials(listener);
  if (!server_tls.ok()) return server_tls.status();

  ChannelTlsOptions to_workers;
  to_workers.ca = listener.ca;
  to_workers.cert = listener.cert;
  to_workers.key = listener.key;
  to_workers.server_name = flags.worker_tls_name;
  to_workers.refresh_interval = flags.tls_refresh_interval;
  absl::StatusOr<ChannelSecurity> channel = MakeChannelCredentials(to_workers);
  if (!channel.ok()) return channel.status();

  security.listener = std::move(server_tls->credentials);
  security.auth = std::make_shared<Authenticator>(TransportSecurity::kTls, std::move(tokens));
  security.to_workers = *std::move(channel);
  security.description = absl::StrCat(
      "TLS, certificate ", server_tls->certificate.Describe(),
      "; client certificates verified against ", kTlsCaFlag, " when offered (workers: ",
      kWorkerIdentity, "); workers checked as '", flags.worker_tls_name, "'; ",
      tokens_description);
  return security;
}

absl::StatusOr<WorkerSecurity> MakeWorkerSecurity(const WorkerSecurityFlags& flags) {
  const std::vector<std::string> given = TlsFlagsGiven(flags.tls_cert, flags.tls_key, flags.tls_ca);
  if (flags.insecure && !given.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        kInsecureFlag, " excludes ", absl::StrJoin(given, ", "), ": choose plaintext or TLS"));
  }
  WorkerSecurity security;
  security.allowed_peers = flags.allowed_peers;
  if (flags.insecure) {
    security.listener = grpc::InsecureServerCredentials();
    security.auth = std::make_shared<Authenticator>(TransportSecurity::kInsecure, nullptr);
    security.to_server = ChannelSecurity();
    security.description = absl::StrCat("INSECURE (", kInsecureFlag,
                                        "): plaintext, any caller may load and execute plans");
    return security;
  }
  const std::vector<std::string> missing =
      TlsFlagsMissing(flags.tls_cert, flags.tls_key, flags.tls_ca);
  if (!missing.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "missing ", absl::StrJoin(missing, ", "), ": a worker needs ", kTlsCertFlag, ", ",
        kTlsKeyFlag, " and ", kTlsCaFlag, " (mTLS with the servers), or ", kInsecureFlag,
        " (plaintext) for local development"));
  }
  if (flags.allowed_peers.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kAllowedPeersFlag, " must name at least one identity (e.g. ",
                     kServerIdentity, ")"));
  }
  if (flags.server_tls_name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(kServerTlsNameFlag, " must not be empty"));
  }

  ServerTlsOptions listener;
  listener.cert = {flags.tls_cert, kTlsCertFlag};
  listener.key = {flags.tls_key, kTlsKeyFlag};
  listener.ca = {flags.tls_ca, kTlsCaFlag};
  // Verified when offered, not required: a caller without a certificate still connects and is
  // refused by every handler with UNAUTHENTICATED (ClusterPeer), which says what is missing,
  // and plain TLS health probes (a kubelet's) can complete the handshake. A certificate that
  // is offered must chain to the cluster CA or the handshake fails.
  listener.client_certs = ClientCertMode::kVerifyIfOffered;
  listener.expected_identity = kWorkerIdentity;
  listener.refresh_interval = flags.tls_refresh_interval;
  absl::StatusOr<ServerTls> server_tls = MakeServerCredentials(listener);
  if (!server_tls.ok()) return server_tls.status();

  ChannelTlsOptions to_server;
  to_server.ca = listener.ca;
  to_server.cert = listener.cert;
  to_server.key = listener.key;
  to_server.server_name = flags.server_tls_name;
  to_server.refresh_interval = flags.tls_refresh_interval;
  absl::StatusOr<ChannelSecurity> channel = MakeChannelCredentials(to_server);
  if (!channel.ok()) return channel.status();

  security.listener = std::move(server_tls->credentials);
  security.auth = std::make_shared<Authenticator>(TransportSecurity::kTls, nullptr);
  security.to_server = *std::move(channel);
  security.description = absl::StrCat(
      "mTLS, certificate ", server_tls->certificate.Describe(),
      "; callers need a certificate from ", kTlsCaFlag, " naming one of ",
      absl::StrJoin(flags.allowed_peers, ", "), "; the server is checked as '",
      flags.server_tls_name, "'");
  return security;
}

}  // namespace graphopt
