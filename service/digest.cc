#include "service/digest.h"

#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace graphopt {
namespace {

constexpr int kSha256Bytes = 32;

// OpenSSL's SHA-256 only fails when it cannot allocate or is misconfigured: neither is a
// request's fault, and there is nothing sensible to return.
[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "graphopt: OpenSSL SHA-256 failed in %s\n", what);
  std::abort();
}

std::string HexDigest(const unsigned char* hash) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string digest(kBlobDigestPrefix);
  digest.resize(kBlobDigestLength);
  char* out = &digest[kBlobDigestPrefix.size()];
  for (int i = 0; i < kSha256Bytes; ++i) {
    out[2 * i] = kHex[hash[i] >> 4];
    out[2 * i + 1] = kHex[hash[i] & 0xf];
  }
  return digest;
}

EVP_MD_CTX* NewSha256Context() {
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  if (context == nullptr) Die("EVP_MD_CTX_new");
  if (EVP_DigestInit_ex(context, EVP_sha256(), nullptr) != 1) Die("EVP_DigestInit_ex");
  return context;
}

}  // namespace

std::string Sha256Digest(absl::string_view bytes) {
  unsigned char hash[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), hash, &length, EVP_sha256(), nullptr) != 1 ||
      length != kSha256Bytes) {
    Die("EVP_Digest");
  }
  return HexDigest(hash);
}

bool IsBlobDigest(absl::string_view digest) {
  if (digest.size() != kBlobDigestLength) return false;
  if (digest.substr(0, kBlobDigestPrefix.size()) != kBlobDigestPrefix) return false;
  for (char c : digest.substr(kBlobDigestPrefix.size())) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Sha256Hasher::Sha256Hasher() : context_(NewSha256Context()) {}

Sha256Hasher::~Sha256Hasher() { EVP_MD_CTX_free(context_); }

Sha256Hasher::Sha256Hasher(Sha256Hasher&& other) noexcept
    : context_(std::exchange(other.context_, nullptr)) {}

Sha256Hasher& Sha256Hasher::operator=(Sha256Hasher&& other) noexcept {
  if (this != &other) {
    EVP_MD_CTX_free(context_);
    context_ = std::exchange(other.context_, nullptr);
  }
  return *this;
}

void Sha256Hasher::Update(absl::string_view bytes) {
  // A moved-from hasher starts afresh rather than crashing.
  if (context_ == nullptr) context_ = NewSha256Context();
  if (EVP_DigestUpdate(context_, bytes.data(), bytes.size()) != 1) Die("EVP_DigestUpdate");
}

std::string Sha256Hasher::Finish() {
  if (context_ == nullptr) context_ = NewSha256Context();
  unsigned char hash[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(context_, hash, &length) != 1 || length != kSha256Bytes) {
    Die("EVP_DigestFinal_ex");
  }
  if (EVP_DigestInit_ex(context_, EVP_sha256(), nullptr) != 1) Die("EVP_DigestInit_ex");
  return HexDigest(hash);
}

}  // namespace graphopt
