#include "client/credentials.h"

#include <chrono>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "server/auth.h"
#include "server/tls.h"
#include "server/token_store.h"
#include "service/tenant.h"

namespace graphopt {

bool IsLoopbackAddress(const std::string& address) {
  if (absl::StartsWith(address, "unix:") || absl::StartsWith(address, "unix-abstract:")) {
    return true;
  }
  absl::string_view host = address;
  if (absl::StartsWith(host, "ipv4:") || absl::StartsWith(host, "ipv6:")) host.remove_prefix(5);
  if (absl::StartsWith(host, "[")) {
    const size_t close = host.find(']');
    host = host.substr(1, close == absl::string_view::npos ? absl::string_view::npos : close - 1);
  } else if (const size_t colon = host.rfind(':'); colon != absl::string_view::npos) {
    host = host.substr(0, colon);
  }
  return host == "localhost" || host == "::1" || absl::StartsWith(host, "127.");
}

absl::StatusOr<std::shared_ptr<const ServerConnection>> ServerConnection::Create(
    const ConnectionFlags& flags, int max_message_bytes) {
  if (flags.server.empty()) return absl::InvalidArgumentError("--server is empty");
  std::shared_ptr<ServerConnection> connection(new ServerConnection());
  connection->address_ = flags.server;

  const std::string token(absl::StripAsciiWhitespace(flags.token));
  if (!token.empty()) {
    if (!IsWellFormedToken(token)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--token (or GRAPHOPT_TOKEN) is not a graphopt token: those are '", kTokenPrefix,
          "' followed by 43 characters of [A-Za-z0-9_-] (`graphopt token new` makes one)"));
    }
    connection->metadata_.emplace_back(kAuthorizationMetadataKey, absl::StrCat("Bearer ", token));
    connection->has_token_ = true;
  }
  if (!flags.tenant.empty()) {
    if (absl::Status s = ValidateTenantName(flags.tenant); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--tenant: ", s.message()));
    }
    connection->metadata_.emplace_back(kTenantMetadataKey, flags.tenant);
  }

  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(max_message_bytes);
  arguments.SetMaxSendMessageSize(max_message_bytes);
  ChannelSecurity security;
  if (flags.tls_ca.empty()) {
    for (const auto& [value, flag] : {std::pair(&flags.tls_cert, "--tls-cert"),
                                      std::pair(&flags.tls_key, "--tls-key"),
                                      std::pair(&flags.tls_server_name, "--tls-server-name")}) {
      if (!value->empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(flag, " needs --tls-ca (the CA that signed the server's certificate)"));
      }
    }
  } else {
    ChannelTlsOptions tls;
    tls.ca = {flags.tls_ca, "--tls-ca"};
    tls.cert = {flags.tls_cert, "--tls-cert"};
    tls.key = {flags.tls_key, "--tls-key"};
    tls.server_name = flags.tls_server_name;
    absl::StatusOr<ChannelSecurity> made = MakeChannelCredentials(tls);
    if (!made.ok()) return made.status();
    security = *std::move(made);
    connection->tls_ = true;
  }
  connection->channel_ = security.CreateChannel(flags.server, arguments);
  return std::shared_ptr<const ServerConnection>(std::move(connection));
}

void ServerConnection::PrepareCall(grpc::ClientContext* context, absl::Duration timeout) const {
  context->set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout));
  for (const auto& [key, value] : metadata_) context->AddMetadata(key, value);
}

std::string ServerConnection::PlaintextTokenWarning() const {
  if (!has_token_ || tls_ || IsLoopbackAddress(address_)) return "";
  return absl::StrCat("warning: the token goes to ", address_,
                      " in plaintext (no --tls-ca); anyone on the path can read and reuse it");
}

}  // namespace graphopt
