#ifndef GRAPHOPT_SERVICE_DIGEST_H_
#define GRAPHOPT_SERVICE_DIGEST_H_

#include <string>

#include "absl/strings/string_view.h"

// Content digests naming blobs: "sha256:" followed by the 64 lowercase hex digits of the
// SHA-256 of the bytes (the form OCI and Docker use).

typedef struct evp_md_ctx_st EVP_MD_CTX;

namespace graphopt {

inline constexpr absl::string_view kBlobDigestPrefix = "sha256:";
// "sha256:" + 64 hex digits.
inline constexpr size_t kBlobDigestLength = 7 + 64;

// The digest of `bytes`, "sha256:<64 lowercase hex digits>".
std::string Sha256Digest(absl::string_view bytes);

// Whether `digest` is well formed: "sha256:" and exactly 64 lowercase hex digits. Says nothing
// about which bytes it names.
bool IsBlobDigest(absl::string_view digest);

// SHA-256 over data that arrives in pieces: Update with each piece in order, then Finish.
// Finish gives the same digest as Sha256Digest over the concatenation. Not thread-safe;
// movable, not copyable.
class Sha256Hasher {
 public:
  Sha256Hasher();
  ~Sha256Hasher();
  Sha256Hasher(Sha256Hasher&& other) noexcept;
  Sha256Hasher& operator=(Sha256Hasher&& other) noexcept;
  Sha256Hasher(const Sha256Hasher&) = delete;
  Sha256Hasher& operator=(const Sha256Hasher&) = delete;

  void Update(absl::string_view bytes);

  // The digest of everything passed to Update since construction or the last Finish, which
  // also starts a new hash.
  std::string Finish();

 private:
  EVP_MD_CTX* context_;
};

}  // namespace graphopt

#endif  // GRAPHOPT_SERVICE_DIGEST_H_
