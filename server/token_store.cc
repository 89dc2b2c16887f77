#include "server/token_store.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "openssl/rand.h"
#include "service/digest.h"
#include "service/tenant.h"

namespace graphopt {
namespace {

constexpr size_t kTokenRandomBytes = 32;
constexpr size_t kHashHexDigits = 64;
constexpr absl::string_view kAdminTenant = "-";

bool IsBase64UrlChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
}

bool IsHexDigits(absl::string_view text) {
  for (char c : text) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// A label for logs: printable ASCII only (no control characters that could forge log lines).
absl::Status CheckLabel(absl::string_view label) {
  if (label.size() > kMaxTokenLabelLength) {
    return absl::InvalidArgumentError(absl::StrCat("label is ", label.size(),
                                                   " characters long; at most ",
                                                   kMaxTokenLabelLength, " are allowed"));
  }
  for (char c : label) {
    if (c < 0x20 || c > 0x7e) {
      return absl::InvalidArgumentError("label must be printable ASCII");
    }
  }
  return absl::OkStatus();
}

// The next blank-separated field of `*rest`, which loses it and the blanks before it; empty at
// the end.
absl::string_view NextField(absl::string_view* rest) {
  size_t start = 0;
  while (start < rest->size() && ((*rest)[start] == ' ' || (*rest)[start] == '\t')) ++start;
  size_t end = start;
  while (end < rest->size() && (*rest)[end] != ' ' && (*rest)[end] != '\t') ++end;
  const absl::string_view field = rest->substr(start, end - start);
  rest->remove_prefix(end);
  return field;
}

// Reads at most kMaxTokensFileBytes of `path`.
absl::StatusOr<std::string> ReadBounded(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    const int error = errno;
    const std::string message =
        absl::StrCat("cannot open tokens file '", path, "': ", std::strerror(error));
    return error == ENOENT ? absl::NotFoundError(message) : absl::InvalidArgumentError(message);
  }
  std::string text;
  char buffer[1 << 16];
  size_t got;
  while ((got = std::fread(buffer, 1, sizeof(buffer), file)) > 0) {
    text.append(buffer, got);
    if (text.size() > kMaxTokensFileBytes) {
      std::fclose(file);
      return absl::InvalidArgumentError(absl::StrCat("tokens file '", path, "' is larger than ",
                                                     kMaxTokensFileBytes >> 20, " MiB"));
    }
  }
  const bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read tokens file '", path, "'"));
  }
  return text;
}

}  // namespace

absl::StatusOr<std::string> GenerateToken() {
  unsigned char bytes[kTokenRandomBytes];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    return absl::InternalError("OpenSSL's random generator failed (RAND_bytes)");
  }
  std::string encoded;
  absl::WebSafeBase64Escape(
      absl::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)), &encoded);
  return absl::StrCat(kTokenPrefix, encoded);
}

bool IsWellFormedToken(absl::string_view token) {
  if (token.size() != kTokenLength || !absl::StartsWith(token, kTokenPrefix)) return false;
  for (char c : token.substr(kTokenPrefix.size())) {
    if (!IsBase64UrlChar(c)) return false;
  }
  return true;
}

std::string TokenHash(absl::string_view token) {
  return Sha256Digest(token).substr(kBlobDigestPrefix.size());
}

absl::string_view TokenRoleName(TokenRole role) {
  return role == TokenRole::kAdmin ? "admin" : "tenant";
}

absl::StatusOr<std::string> TokensFileLine(TokenRole role, absl::string_view tenant,
                                           absl::string_view hash, absl::string_view label) {
  if (role == TokenRole::kTenant) {
    if (absl::Status s = ValidateTenantName(tenant); !s.ok()) return s;
  }
  if (hash.size() != kHashHexDigits || !IsHexDigits(hash)) {
    return absl::InvalidArgumentError("a token hash is 64 hex digits (SHA-256)");
  }
  if (absl::Status s = CheckLabel(label); !s.ok()) return s;
  std::string line = absl::StrCat(TokenRoleName(role), " ",
                                  role == TokenRole::kAdmin ? kAdminTenant : tenant, " ",
                                  absl::AsciiStrToLower(hash));
  if (!label.empty()) absl::StrAppend(&line, " ", label);
  return line;
}

absl::StatusOr<TokenTable> ParseTokensFile(absl::string_view text, absl::string_view source) {
  TokenTable table;
  // Line number of each hash, to name both lines of a duplicate.
  absl::flat_hash_map<std::string, int> line_of;
  int line_number = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    const absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || line.front() == '#') continue;
    auto error = [&](absl::string_view what) {
      return absl::InvalidArgumentError(
          absl::StrCat("tokens file '", source, "' line ", line_number, ": ", what,
                       " (expected: tenant NAME SHA256 [LABEL] or admin - SHA256 [LABEL])"));
    };
    // role, tenant, hash, then the label as the rest of the line.
    absl::string_view rest = line;
    const absl::string_view role = NextField(&rest);
    const absl::string_view tenant = NextField(&rest);
    const absl::string_view hash_text = NextField(&rest);
    const absl::string_view label = absl::StripAsciiWhitespace(rest);
    if (hash_text.empty()) return error("too few fields");
    TokenEntry entry;
    if (role == "tenant") {
      entry.role = TokenRole::kTenant;
      if (absl::Status s = ValidateTenantName(tenant); !s.ok()) return error(s.message());
    } else if (role == "admin") {
      entry.role = TokenRole::kAdmin;
      if (tenant != kAdminTenant) {
        return error(absl::StrCat("an admin token's tenant must be '-', not '",
                                  absl::CEscape(tenant.substr(0, 64)), "'"));
      }
    } else {
      return error(absl::StrCat("unknown role '", absl::CEscape(role.substr(0, 64)),
                                "' (tenant or admin)"));
    }
    entry.tenant = std::string(tenant);
    if (hash_text.size() != kHashHexDigits || !IsHexDigits(hash_text)) {
      return error("the third field must be the token's SHA-256 as 64 hex digits");
    }
    std::string hash = absl::AsciiStrToLower(hash_text);
    if (absl::Status s = CheckLabel(label); !s.ok()) return error(s.message());
    entry.label = std::string(label);
    auto [it, inserted] = line_of.emplace(hash, line_number);
    if (!inserted) {
      return error(absl::StrCat("the same token hash is already on line ", it->second));
    }
    table.emplace(std::move(hash), std::move(entry));
  }
  return table;
}

bool TokenStore::FileVersion::operator==(const FileVersion& other) const {
  return device == other.device && inode == other.inode && size == other.size &&
         mtime_ns == other.mtime_ns;
}

TokenStore::TokenStore(std::string path, TokenStoreOptions options)
    : path_(std::move(path)), options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<TokenStore>> TokenStore::Open(std::string path,
                                                             TokenStoreOptions options) {
  if (path.empty()) return absl::InvalidArgumentError("the tokens file path is empty");
  std::unique_ptr<TokenStore> store(new TokenStore(std::move(path), std::move(options)));
  absl::MutexLock lock(&store->reload_mu_);
  bool changed = false;
  TokenReload loaded = store->ReloadIfChanged(&changed);
  if (!loaded.status.ok()) return loaded.status;
  return store;
}

TokenReload TokenStore::CountsOf(const TokenTable& table) {
  TokenReload counts;
  for (const auto& [hash, entry] : table) {
    ++(entry.role == TokenRole::kAdmin ? counts.admin_tokens : counts.tenant_tokens);
  }
  return counts;
}

TokenReload TokenStore::Counts() const {
  absl::ReaderMutexLock lock(&mu_);
  return table_ == nullptr ? TokenReload() : CountsOf(*table_);
}

TokenReload TokenStore::ReloadIfChanged(bool* changed) {
  *changed = false;
  TokenReload result;
  // stat() follows symlinks: a Secret volume's swapped "..data" link shows as a new inode.
  struct stat info;
  if (::stat(path_.c_str(), &info) != 0) {
    const int error = errno;
    result = Counts();
    const std::string message =
        absl::StrCat("cannot stat tokens file '", path_, "': ", std::strerror(error));
    result.status =
        error == ENOENT ? absl::NotFoundError(message) : absl::InvalidArgumentError(message);
    // A file that vanished is reported once; its tokens stay in force (a Secret volume's
    // update may briefly show no file).
    *changed = !(version_ == FileVersion());
    version_ = FileVersion();
    return result;
  }
  FileVersion version;
  version.device = info.st_dev;
  version.inode = info.st_ino;
  version.size = info.st_size;
  version.mtime_ns = int64_t{info.st_mtim.tv_sec} * 1000000000 + info.st_mtim.tv_nsec;
  if (version == version_) return Counts();
  *changed = true;
  // Recorded before reading: a write that lands after this stat changes the version again,
  // so the next check reads the file again.
  version_ = version;
  absl::StatusOr<std::string> text = ReadBounded(path_);
  absl::StatusOr<TokenTable> table =
      text.ok() ? ParseTokensFile(*text, path_) : absl::StatusOr<TokenTable>(text.status());
  if (!table.ok()) {
    result = Counts();
    result.status = table.status();
    return result;
  }
  result = CountsOf(*table);
  auto shared = std::make_shared<const TokenTable>(*std::move(table));
  absl::MutexLock lock(&mu_);
  table_ = std::move(shared);
  return result;
}

TokenReload TokenStore::CheckNow() {
  TokenReload result;
  bool changed = false;
  {
    absl::MutexLock lock(&reload_mu_);
    result = ReloadIfChanged(&changed);
  }
  if (changed && options_.on_reload) options_.on_reload(result);
  return result;
}

std::optional<TokenEntry> TokenStore::Lookup(absl::string_view token) {
  bool check = false;
  {
    const absl::Time now = absl::Now();
    absl::MutexLock lock(&mu_);
    if (now >= next_check_) {
      next_check_ = now + options_.check_interval;
      check = true;
    }
  }
  // Only the caller that moved next_check_ checks; the others go on with the table in force.
  if (check) CheckNow();
  if (!IsWellFormedToken(token)) return std::nullopt;
  const std::string hash = TokenHash(token);
  std::shared_ptr<const TokenTable> table;
  {
    absl::ReaderMutexLock lock(&mu_);
    table = table_;
  }
  if (table == nullptr) return std::nullopt;
  auto it = table->find(hash);
  if (it == table->end()) return std::nullopt;
  return it->second;
}

}  // namespace graphopt
