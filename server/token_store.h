#ifndef GRAPHOPT_SERVER_TOKEN_STORE_H_
#define GRAPHOPT_SERVER_TOKEN_STORE_H_

// Bearer tokens of graphopt clients and the file of their hashes that a server checks them
// against.
//
// A token is kTokenPrefix followed by the unpadded base64url encoding of 32 random bytes
// (43 characters of [A-Za-z0-9_-]), e.g. "gopt_3q2-...". Clients send it as the metadata
// "authorization: Bearer <token>". The server never stores a token: the tokens file holds the
// lowercase hex SHA-256 of each token's full text (prefix included), one token per line:
//
//   # role    tenant  sha256 of the token                                                label
//   tenant    acme    9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  ci-bot
//   admin     -       60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752  ops on-call
//
// Fields are separated by blanks; the label is optional and is the rest of the line (printable
// ASCII, at most kMaxTokenLabelLength characters). An admin line's tenant is "-". Blank lines
// and lines starting with '#' are ignored. Revoking a token is deleting its line.

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace graphopt {

inline constexpr absl::string_view kTokenPrefix = "gopt_";
// kTokenPrefix plus 43 base64url characters (32 bytes).
inline constexpr size_t kTokenLength = 5 + 43;
inline constexpr size_t kMaxTokenLabelLength = 128;

// A fresh token from OpenSSL's CSPRNG. INTERNAL when the generator fails.
absl::StatusOr<std::string> GenerateToken();

// Whether `token` has the form above (says nothing about whether any server accepts it).
bool IsWellFormedToken(absl::string_view token);

// The 64 lowercase hex digits of the SHA-256 of `token`, as the tokens file holds them.
std::string TokenHash(absl::string_view token);

enum class TokenRole {
  kTenant,  // acts for its own tenant only
  kAdmin,   // cluster operations; acts for any tenant
};

// "tenant" or "admin".
absl::string_view TokenRoleName(TokenRole role);

// What the tokens file says of one token.
struct TokenEntry {
  TokenRole role = TokenRole::kTenant;
  // The tenant a kTenant token acts for; "-" for kAdmin.
  std::string tenant;
  // Free text naming the token's holder, for logs; may be empty. Never the token.
  std::string label;
};

// The line to append to a tokens file for a token with `hash` (see TokenHash). `tenant` is
// ignored for kAdmin (written as "-"). INVALID_ARGUMENT for a tenant name that
// ValidateTenantName rejects, a label that is too long or not printable ASCII, or a hash that
// is not 64 hex digits.
absl::StatusOr<std::string> TokensFileLine(TokenRole role, absl::string_view tenant,
                                           absl::string_view hash, absl::string_view label);

// Token hash -> entry.
using TokenTable = absl::flat_hash_map<std::string, TokenEntry>;

// Parses the text of a tokens file. INVALID_ARGUMENT naming `source` and the line number for a
// malformed line, an unknown role, a bad tenant name, an admin line whose tenant is not "-", a
// hash that is not 64 hex digits (upper case is accepted and folded) or a hash listed twice
// (both lines named).
absl::StatusOr<TokenTable> ParseTokensFile(absl::string_view text, absl::string_view source);

// What a reload of the tokens file found; handed to TokenStoreOptions::on_reload.
struct TokenReload {
  // OK: the new file is in force. Otherwise why it was refused, and the previous tokens stay
  // in force: missing (NOT_FOUND; a Secret volume's update may briefly show no file, so
  // deleting the file revokes nothing: empty it instead), unreadable, too large, or a parse
  // error naming the line (INVALID_ARGUMENT).
  absl::Status status;
  // Tokens now in force, by role.
  size_t tenant_tokens = 0;
  size_t admin_tokens = 0;
};

struct TokenStoreOptions {
  // The file is checked for a change (stat: device, inode, size, modification time, following
  // symlinks, so that a Kubernetes Secret's symlink swap counts) at most this often, by the
  // Lookup that finds the last check this old. Zero: every Lookup checks (for tests).
  absl::Duration check_interval = absl::Seconds(1);
  // Called once for each change found (a new version read, successfully or not, or the file
  // gone), on the thread that checked and outside the store's locks. Not called for the
  // initial load in Open. May be empty.
  std::function<void(const TokenReload&)> on_reload;
};

// Largest tokens file read, 16 MiB (about 150,000 tokens).
inline constexpr size_t kMaxTokensFileBytes = size_t{16} << 20;

// The tokens of a server, read from a file and re-read when it changes. Thread-safe. A lookup
// never waits on file I/O done by another thread: one caller per check interval stats (and,
// when changed, re-reads and parses) the file while the others keep using the tokens in force.
class TokenStore {
 public:
  // Reads `path` once. INVALID_ARGUMENT or NOT_FOUND (naming the file, and the line for a parse
  // error) when it cannot be read or parsed: a server must not start with it.
  static absl::StatusOr<std::unique_ptr<TokenStore>> Open(std::string path,
                                                          TokenStoreOptions options = {});

  TokenStore(const TokenStore&) = delete;
  TokenStore& operator=(const TokenStore&) = delete;

  // The entry of `token`, compared by hash; nullopt when unknown (revoked tokens included) or
  // ill-formed. Checks the file first when the check interval has passed.
  std::optional<TokenEntry> Lookup(absl::string_view token);

  // Checks the file now and re-reads it when it changed; returns what on_reload gets (an OK
  // status and the current counts when nothing changed).
  TokenReload CheckNow();

  const std::string& path() const { return path_; }
  // Tokens in force, by role.
  TokenReload Counts() const;

 private:
  // What stat() says of the file; a difference in any field means "changed".
  struct FileVersion {
    dev_t device = 0;
    ino_t inode = 0;
    off_t size = -1;
    int64_t mtime_ns = -1;
    bool operator==(const FileVersion& other) const;
  };

  TokenStore(std::string path, TokenStoreOptions options);

  // Stats the file and, when it changed since the last read, reads and parses it.
  // `changed` says whether the file differed. Callers hold reload_mu_.
  TokenReload ReloadIfChanged(bool* changed) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reload_mu_);
  static TokenReload CountsOf(const TokenTable& table);

  const std::string path_;
  const TokenStoreOptions options_;

  // Serialises reloads (never held by a plain lookup).
  absl::Mutex reload_mu_;
  FileVersion version_ ABSL_GUARDED_BY(reload_mu_);

  mutable absl::Mutex mu_;
  std::shared_ptr<const TokenTable> table_ ABSL_GUARDED_BY(mu_);
  absl::Time next_check_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace graphopt

#endif  // GRAPHOPT_SERVER_TOKEN_STORE_H_
