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

namespace {

// A cluster process's TLS from its one certificate, key and CA: its listener and its channel
// to the other kind of process (whose certificate must name `peer_name`).
struct ProcessTls {
  ServerTls listener;
  ChannelSecurity channel;
};

absl::StatusOr<ProcessTls> MakeProcessTls(const std::string& cert, const std::string& key,
                                          const std::string& ca, const char* identity,
                                          const std::string& peer_name,
                                          absl::Duration refresh_interval) {
  ServerTlsOptions listener;
  listener.cert = {cert, kTlsCertFlag};
  listener.key = {key, kTlsKeyFlag};
  listener.ca = {ca, kTlsCaFlag};
  // Verified when offered, not required: on a server, end clients come with a token and no
  // certificate; on a worker, a caller without one still connects and is refused by every
  // handler with UNAUTHENTICATED (ClusterPeer), which says what is missing, and plain TLS
  // health probes (a kubelet's) complete the handshake. A certificate that is offered must
  // chain to the cluster CA or the handshake fails.
  listener.client_certs = ClientCertMode::kVerifyIfOffered;
  listener.expected_identity = identity;
  listener.refresh_interval = refresh_interval;
  absl::StatusOr<ServerTls> server_tls = MakeServerCredentials(listener);
  if (!server_tls.ok()) return server_tls.status();

  ChannelTlsOptions to_peer;
  to_peer.ca = listener.ca;
  to_peer.cert = listener.cert;
  to_peer.key = listener.key;
  to_peer.server_name = peer_name;
  to_peer.refresh_interval = refresh_interval;
  absl::StatusOr<ChannelSecurity> channel = MakeChannelCredentials(to_peer);
  if (!channel.ok()) return channel.status();
  return ProcessTls{*std::move(server_tls), *std::move(channel)};
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

  absl::StatusOr<ProcessTls> tls =
      MakeProcessTls(flags.tls_cert, flags.tls_key, flags.tls_ca, kServerIdentity,
                     flags.worker_tls_name, flags.tls_refresh_interval);
  if (!tls.ok()) return tls.status();
  security.listener = std::move(tls->listener.credentials);
  security.auth = std::make_shared<Authenticator>(TransportSecurity::kTls, std::move(tokens));
  security.to_workers = std::move(tls->channel);
  security.description = absl::StrCat(
      "TLS, certificate ", tls->listener.certificate.Describe(),
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

  absl::StatusOr<ProcessTls> tls =
      MakeProcessTls(flags.tls_cert, flags.tls_key, flags.tls_ca, kWorkerIdentity,
                     flags.server_tls_name, flags.tls_refresh_interval);
  if (!tls.ok()) return tls.status();
  security.listener = std::move(tls->listener.credentials);
  security.auth = std::make_shared<Authenticator>(TransportSecurity::kTls, nullptr);
  security.to_server = std::move(tls->channel);
  security.description = absl::StrCat(
      "mTLS, certificate ", tls->listener.certificate.Describe(),
      "; callers need a certificate from ", kTlsCaFlag, " naming one of ",
      absl::StrJoin(flags.allowed_peers, ", "), "; the server is checked as '",
      flags.server_tls_name, "'");
  return security;
}

}  // namespace graphopt
