#include "service/tenant.h"

#include <cstddef>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace graphopt {

absl::Status ValidateTenantName(absl::string_view name) {
  constexpr size_t kMaxLength = 63;
  bool ok = !name.empty() && name.size() <= kMaxLength;
  for (size_t i = 0; ok && i < name.size(); ++i) {
    const char c = name[i];
    const bool alnum = absl::ascii_isdigit(c) || (c >= 'a' && c <= 'z');
    ok = alnum || (i > 0 && (c == '_' || c == '.' || c == '-'));
  }
  if (ok) return absl::OkStatus();
  constexpr size_t kMaxShown = 80;
  return absl::InvalidArgumentError(absl::StrCat(
      "tenant '", absl::CHexEscape(name.substr(0, kMaxShown)), name.size() > kMaxShown ? "..." : "",
      "' is not a tenant name: 1 to 63 characters of a-z, 0-9, '_', '.', '-', starting with a "
      "letter or digit (metadata \"",
      kTenantMetadataKey, "\")"));
}

}  // namespace graphopt
