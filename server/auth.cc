#include "server/auth.h"

#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "grpc/grpc_security_constants.h"
#include "grpcpp/security/auth_context.h"
#include "service/tenant.h"

namespace graphopt {
namespace {

constexpr absl::string_view kHowToSendToken =
    "send the metadata 'authorization: Bearer <token>' (graphopt CLI: --token or the "
    "GRAPHOPT_TOKEN environment variable; Python client: Client(token=...) or GRAPHOPT_TOKEN)";

// All values of metadata `key` (gRPC lower-cases keys on the wire).
std::vector<absl::string_view> MetadataValues(const grpc::ServerContextBase& context,
                                              absl::string_view key) {
  std::vector<absl::string_view> values;
  const auto& metadata = context.client_metadata();
  auto [begin, end] = metadata.equal_range(grpc::string_ref(key.data(), key.size()));
  for (auto it = begin; it != end; ++it) {
    values.emplace_back(it->second.data(), it->second.size());
  }
  return values;
}

std::vector<std::string> PropertyValues(const grpc::AuthContext& auth, const char* name) {
  std::vector<std::string> values;
  for (const grpc::string_ref& value : auth.FindPropertyValues(name)) {
    values.emplace_back(value.data(), value.size());
  }
  return values;
}

}  // namespace

absl::string_view PrincipalRoleName(PrincipalRole role) {
  switch (role) {
    case PrincipalRole::kTenant:
      return "tenant";
    case PrincipalRole::kAdmin:
      return "admin";
    case PrincipalRole::kAnonymousDev:
      return "anonymous-dev";
  }
  return "unknown";
}

std::string Principal::Describe() const {
  const std::string token = label.empty() ? "" : absl::StrCat(" (token '", label, "')");
  switch (role) {
    case PrincipalRole::kTenant:
      return absl::StrCat("tenant ", tenant, token);
    case PrincipalRole::kAdmin:
      return absl::StrCat("admin", token, " for tenant ", tenant);
    case PrincipalRole::kAnonymousDev:
      return absl::StrCat("anonymous-dev for tenant ", tenant);
  }
  return "unknown principal";
}

absl::StatusOr<Principal> AuthenticateMetadata(TokenStore* tokens,
                                               absl::Span<const absl::string_view> authorization,
                                               absl::Span<const absl::string_view> tenant_header) {
  // The credential is checked before the request's tenant: a caller without one learns
  // nothing about tenant names.
  std::optional<TokenEntry> entry;
  if (tokens != nullptr) {
    if (authorization.empty()) {
      return absl::UnauthenticatedError(
          absl::StrCat("this server requires a bearer token: ", kHowToSendToken));
    }
    if (authorization.size() > 1) {
      return absl::UnauthenticatedError(
          "the call has more than one 'authorization' metadata value; send exactly one");
    }
    absl::string_view value = authorization.front();
    constexpr absl::string_view kScheme = "bearer ";
    if (value.size() <= kScheme.size() ||
        !absl::EqualsIgnoreCase(value.substr(0, kScheme.size()), kScheme)) {
      return absl::UnauthenticatedError(absl::StrCat(
          "the 'authorization' metadata is not of the form 'Bearer <token>': ", kHowToSendToken));
    }
    const absl::string_view token = absl::StripAsciiWhitespace(value.substr(kScheme.size()));
    if (!IsWellFormedToken(token)) {
      return absl::UnauthenticatedError(
          absl::StrCat("the bearer token is ill-formed (a graphopt token is '", kTokenPrefix,
                       "' followed by 43 characters of [A-Za-z0-9_-]; `graphopt token new` "
                       "makes one)"));
    }
    entry = tokens->Lookup(token);
    if (!entry.has_value()) {
      return absl::UnauthenticatedError(
          "the bearer token is not valid on this server (unknown or revoked)");
    }
  }

  std::optional<std::string> requested;
  if (tenant_header.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the call has ", tenant_header.size(), " '", kTenantMetadataKey,
        "' metadata values; send at most one"));
  }
  if (tenant_header.size() == 1) {
    if (absl::Status s = ValidateTenantName(tenant_header.front()); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("metadata '", kTenantMetadataKey, "': ", s.message()));
    }
    requested = std::string(tenant_header.front());
  }

  Principal principal;
  if (!entry.has_value()) {
    principal.role = PrincipalRole::kAnonymousDev;
    principal.tenant = requested.value_or(kDefaultTenant);
    return principal;
  }
  principal.label = entry->label;
  if (entry->role == TokenRole::kAdmin) {
    principal.role = PrincipalRole::kAdmin;
    principal.tenant = requested.value_or(kDefaultTenant);
    return principal;
  }
  if (requested.has_value() && *requested != entry->tenant) {
    return absl::PermissionDeniedError(
        absl::StrCat("the token is for tenant '", entry->tenant, "' and cannot act for tenant '",
                     *requested, "' (metadata '", kTenantMetadataKey, "')"));
  }
  principal.role = PrincipalRole::kTenant;
  principal.tenant = entry->tenant;
  return principal;
}

Authenticator::Authenticator(TransportSecurity transport, std::shared_ptr<TokenStore> tokens)
    : transport_(transport), tokens_(std::move(tokens)) {}

absl::StatusOr<Principal> Authenticator::Authenticate(
    const grpc::ServerContextBase& context) const {
  if (tokens_ == nullptr && transport_ == TransportSecurity::kTls) {
    return absl::UnauthenticatedError(
        "this listener accepts no client credentials (the server has no tokens file)");
  }
  const std::vector<absl::string_view> authorization =
      MetadataValues(context, kAuthorizationMetadataKey);
  const std::vector<absl::string_view> tenant = MetadataValues(context, kTenantMetadataKey);
  return AuthenticateMetadata(tokens_.get(), authorization, tenant);
}

absl::StatusOr<std::string> Authenticator::ClusterPeer(
    const grpc::ServerContextBase& context, absl::Span<const std::string> allowed) const {
  if (transport_ == TransportSecurity::kInsecure) return std::string(kInsecurePeer);
  const std::string needs = absl::StrCat("this call is only for ", absl::StrJoin(allowed, ", "));
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth == nullptr) {
    return absl::UnauthenticatedError(
        absl::StrCat("the connection has no TLS peer information; ", needs));
  }
  const std::vector<std::string> security =
      PropertyValues(*auth, GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME);
  const bool tls = !security.empty() && (security.front() == GRPC_SSL_TRANSPORT_SECURITY_TYPE ||
                                         security.front() == GRPC_TLS_TRANSPORT_SECURITY_TYPE);
  std::vector<std::string> names = PropertyValues(*auth, GRPC_X509_SAN_PROPERTY_NAME);
  for (std::string& cn : PropertyValues(*auth, GRPC_X509_CN_PROPERTY_NAME)) {
    names.push_back(std::move(cn));
  }
  if (!tls || names.empty()) {
    return absl::UnauthenticatedError(absl::StrCat(
        "the caller presented no client certificate signed by the cluster CA; ", needs));
  }
  for (const std::string& name : names) {
    for (const std::string& identity : allowed) {
      if (name == identity) return name;
    }
  }
  return absl::PermissionDeniedError(absl::StrCat(
      "the caller's certificate names ", absl::StrJoin(names, ", "), "; ", needs));
}

absl::Status RequireAdmin(const Principal& principal, absl::string_view operation) {
  if (principal.is_admin()) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(operation, " needs an admin token; the call's is ",
                                                  principal.Describe()));
}

}  // namespace graphopt
