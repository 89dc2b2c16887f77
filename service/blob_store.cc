#include "service/blob_store.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace graphopt {

std::string FormatBytes(int64_t bytes) {
  return absl::StrFormat("%d bytes (%.1f MiB)", bytes, static_cast<double>(bytes) / (1 << 20));
}

// ---------------------------------------------------------------------------------------------
// BlobWriter

BlobWriter::BlobWriter(BlobStore* store, std::string digest, int64_t total_size,
                       std::shared_ptr<const std::string> existing)
    : store_(store),
      digest_(std::move(digest)),
      total_size_(total_size),
      existing_(std::move(existing)) {
  // The one allocation of this blob's bytes (reserve only: pages are touched as data arrives).
  if (!skipping()) buffer_.reserve(static_cast<size_t>(total_size_));
}

BlobWriter::~BlobWriter() { Release(); }

void BlobWriter::Release() {
  if (finished_) return;
  finished_ = true;
  std::string().swap(buffer_);
  if (!skipping()) store_->Unreserve(total_size_);
  existing_.reset();
}

absl::Status BlobWriter::Append(absl::string_view data) {
  if (finished_) {
    return absl::FailedPreconditionError(
        absl::StrCat("blob ", digest_, ": data appended after the upload finished"));
  }
  const int64_t size = static_cast<int64_t>(data.size());
  if (size > total_size_ - received_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "blob ", digest_, ": data runs past its total_size of ", total_size_,
        " bytes (this piece covers bytes ", received_, "..", received_ + size, ")"));
  }
  received_ += size;
  if (skipping()) return absl::OkStatus();
  buffer_.append(data.data(), data.size());
  hasher_.Update(data);
  return absl::OkStatus();
}

absl::Status BlobWriter::Commit() {
  if (finished_) {
    return absl::FailedPreconditionError(
        absl::StrCat("blob ", digest_, ": committed after the upload finished"));
  }
  if (received_ != total_size_) {
    const std::string message = absl::StrCat("blob ", digest_, ": only ", received_, " of ",
                                              total_size_, " bytes received");
    Release();
    return absl::InvalidArgumentError(message);
  }
  if (skipping()) {
    Release();
    return absl::OkStatus();
  }
  const std::string actual = hasher_.Finish();
  if (actual != digest_) {
    Release();
    return absl::InvalidArgumentError(
        absl::StrCat("blob ", digest_, ": received data hashes to ", actual));
  }
  finished_ = true;
  store_->CommitReserved(digest_, std::move(buffer_));
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// BlobStore

BlobStore::BlobStore(int64_t budget_bytes) : budget_bytes_(std::max<int64_t>(budget_bytes, 0)) {}

BlobStore::~BlobStore() = default;

void BlobStore::Touch(Entry& entry) {
  lru_.splice(lru_.begin(), lru_, entry.lru_position);
}

std::shared_ptr<const std::string> BlobStore::Lookup(absl::string_view digest) {
  absl::MutexLock lock(&mu_);
  auto it = blobs_.find(digest);
  if (it == blobs_.end()) return nullptr;
  Touch(it->second);
  return it->second.data;
}

bool BlobStore::Contains(absl::string_view digest) const {
  absl::MutexLock lock(&mu_);
  return blobs_.contains(digest);
}

std::vector<std::string> BlobStore::Missing(absl::Span<const absl::string_view> digests) {
  std::vector<std::string> missing;
  absl::flat_hash_set<absl::string_view> seen;
  absl::MutexLock lock(&mu_);
  for (absl::string_view digest : digests) {
    if (!seen.insert(digest).second) continue;
    auto it = blobs_.find(digest);
    if (it == blobs_.end()) {
      missing.emplace_back(digest);
    } else {
      Touch(it->second);
    }
  }
  return missing;
}

int64_t BlobStore::BytesInUse() const {
  int64_t in_use = 0;
  for (const auto& [digest, entry] : blobs_) {
    if (entry.data.use_count() > 1) in_use += static_cast<int64_t>(entry.data->size());
  }
  return in_use;
}

absl::Status BlobStore::Reserve(absl::string_view digest, int64_t size) {
  if (size > budget_bytes_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("blob ", digest, " of ", FormatBytes(size),
                     " is larger than the blob store's whole budget of ",
                     FormatBytes(budget_bytes_)));
  }
  const int64_t needed = bytes_held_ + bytes_reserved_ + size - budget_bytes_;
  if (needed > 0) {
    // Only evict when evicting is enough: a doomed upload must not empty the cache.
    const int64_t in_use = BytesInUse();
    const int64_t evictable = bytes_held_ - in_use;
    if (evictable < needed) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "blob ", digest, " of ", FormatBytes(size), " does not fit in the blob store: budget ",
          FormatBytes(budget_bytes_), ", ", FormatBytes(in_use), " held by blobs in use, ",
          FormatBytes(bytes_reserved_), " reserved by uploads in progress"));
    }
    int64_t freed = 0;
    auto it = lru_.end();
    while (freed < needed && it != lru_.begin()) {
      --it;
      auto entry = blobs_.find(*it);
      if (entry->second.data.use_count() > 1) continue;
      freed += static_cast<int64_t>(entry->second.data->size());
      bytes_held_ -= static_cast<int64_t>(entry->second.data->size());
      ++evictions_;
      blobs_.erase(entry);
      it = lru_.erase(it);
    }
  }
  bytes_reserved_ += size;
  peak_bytes_ = std::max(peak_bytes_, bytes_held_ + bytes_reserved_);
  return absl::OkStatus();
}

void BlobStore::Unreserve(int64_t size) {
  absl::MutexLock lock(&mu_);
  bytes_reserved_ -= size;
}

bool BlobStore::CommitReserved(const std::string& digest, std::string data) {
  // Wrap before locking: a move, no copy of the bytes.
  auto blob = std::make_shared<const std::string>(std::move(data));
  const int64_t size = static_cast<int64_t>(blob->size());
  {
    absl::MutexLock lock(&mu_);
    bytes_reserved_ -= size;
    if (!blobs_.contains(digest)) {
      lru_.push_front(digest);
      blobs_.emplace(digest, Entry{std::move(blob), lru_.begin()});
      bytes_held_ += size;
      ++commits_;
      return true;
    }
  }
  // Another upload of the same digest committed first; `blob` is dropped outside the lock.
  return false;
}

absl::StatusOr<std::unique_ptr<BlobWriter>> BlobStore::StartWrite(absl::string_view digest,
                                                                  int64_t total_size) {
  if (!IsBlobDigest(digest)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", absl::CHexEscape(digest.substr(0, 100)),
        "' is not a blob digest (expected sha256:<64 lowercase hex digits>)"));
  }
  if (total_size < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("blob ", digest, ": negative total_size ", total_size));
  }
  std::shared_ptr<const std::string> existing;
  {
    absl::MutexLock lock(&mu_);
    auto it = blobs_.find(digest);
    if (it != blobs_.end()) {
      Touch(it->second);
      existing = it->second.data;
    } else if (absl::Status status = Reserve(digest, total_size); !status.ok()) {
      return status;
    }
  }
  return std::unique_ptr<BlobWriter>(
      new BlobWriter(this, std::string(digest), total_size, std::move(existing)));
}

absl::StatusOr<std::string> BlobStore::Put(std::string data) {
  std::string digest = Sha256Digest(data);
  const int64_t size = static_cast<int64_t>(data.size());
  {
    absl::MutexLock lock(&mu_);
    auto it = blobs_.find(digest);
    if (it != blobs_.end()) {
      Touch(it->second);
      return digest;
    }
    if (absl::Status status = Reserve(digest, size); !status.ok()) return status;
  }
  CommitReserved(digest, std::move(data));
  return digest;
}

int64_t BlobStore::free_bytes() const {
  absl::MutexLock lock(&mu_);
  return budget_bytes_ - bytes_reserved_ - BytesInUse();
}

BlobStoreStats BlobStore::stats() const {
  absl::MutexLock lock(&mu_);
  BlobStoreStats stats;
  stats.budget_bytes = budget_bytes_;
  stats.bytes_held = bytes_held_;
  stats.bytes_in_use = BytesInUse();
  stats.bytes_reserved = bytes_reserved_;
  stats.blob_count = static_cast<int64_t>(blobs_.size());
  stats.evictions = evictions_;
  stats.commits = commits_;
  stats.peak_bytes = peak_bytes_;
  return stats;
}

}  // namespace graphopt
