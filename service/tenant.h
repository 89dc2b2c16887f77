#ifndef GRAPHOPT_SERVICE_TENANT_H_
#define GRAPHOPT_SERVICE_TENANT_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace graphopt {

// A tenant is a namespace of registered custom ops: one tenant never sees or changes another's
// ops. Callers name theirs in the request metadata kTenantMetadataKey.
inline constexpr char kTenantMetadataKey[] = "graphopt-tenant";
// The tenant of a call without kTenantMetadataKey.
inline constexpr char kDefaultTenant[] = "default";

// OK when `name` matches [a-z0-9][a-z0-9_.-]{0,62}; else INVALID_ARGUMENT quoting it (escaped,
// shortened) and stating the rule. Tenant names are safe as file names.
absl::Status ValidateTenantName(absl::string_view name);

}  // namespace graphopt

#endif  // GRAPHOPT_SERVICE_TENANT_H_
