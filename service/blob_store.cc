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
namespace {

// "157286400 bytes (150.0 MiB)": a size for messages.
std::string FormatBytes(int64_t bytes) {
  return absl::StrFormat("%d bytes (%.1f MiB)", bytes, static_cast<double>(bytes) / (1 << 20));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// BlobWriter

BlobWriter::BlobWriter(BlobStore* store, std::string tenant, std::string digest,
                       int64_t total_size, std::shared_ptr<const std::string> existing)
    : store_(store),
      tenant_(std::move(tenant)),
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
  if (!skipping()) store_->Unreserve(tenant_, total_size_);
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
  if (store_->CommitReserved(tenant_, digest_, std::move(buffer_))) {
    store_->NotifyCommitted(tenant_, digest_, total_size_);
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// BlobStore

BlobStore::BlobStore(int64_t budget_bytes, const QuotaBook* quotas)
    : budget_bytes_(std::max<int64_t>(budget_bytes, 0)), quotas_(quotas) {}

BlobStore::~BlobStore() = default;

void BlobStore::Touch(Namespace& ns, Entry& entry) {
  ns.lru.splice(ns.lru.begin(), ns.lru, entry.lru_position);
}

int64_t BlobStore::TenantLimit(absl::string_view tenant) const {
  return quotas_ == nullptr ? budget_bytes_
                            : std::min(budget_bytes_, quotas_->For(tenant).blob_bytes);
}

std::shared_ptr<const std::string> BlobStore::Lookup(absl::string_view tenant,
                                                     absl::string_view digest) {
  absl::MutexLock lock(&mu_);
  auto ns = tenants_.find(tenant);
  if (ns == tenants_.end()) {
    ++misses_;
    return nullptr;
  }
  auto it = ns->second.blobs.find(digest);
  if (it == ns->second.blobs.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  Touch(ns->second, it->second);
  return it->second.data;
}

std::shared_ptr<const std::string> BlobStore::LookupOrFetch(absl::string_view tenant,
                                                            absl::string_view digest) {
  std::shared_ptr<const std::string> data = Lookup(tenant, digest);
  if (data != nullptr || fetcher_ == nullptr || !IsBlobDigest(digest)) return data;
  fetcher_->Fetch(*this, std::string(tenant), {std::string(digest)});
  return Lookup(tenant, digest);
}

std::vector<std::string> BlobStore::MissingAfterFetch(
    absl::string_view tenant, absl::Span<const absl::string_view> digests) {
  std::vector<std::string> missing = Missing(tenant, digests);
  if (missing.empty() || fetcher_ == nullptr) return missing;
  fetcher_->Fetch(*this, std::string(tenant), missing);
  std::vector<absl::string_view> again(missing.begin(), missing.end());
  return Missing(tenant, again);
}

std::vector<BlobStore::Held> BlobStore::List() const {
  std::vector<Held> out;
  absl::MutexLock lock(&mu_);
  for (const auto& [tenant, ns] : tenants_) {
    for (const auto& [digest, entry] : ns.blobs) {
      out.push_back({tenant, digest, static_cast<int64_t>(entry.data->size())});
    }
  }
  return out;
}

void BlobStore::NotifyEvicted(const std::string& tenant,
                              const std::vector<std::string>& evicted) {
  if (observer_ == nullptr) return;
  for (const std::string& digest : evicted) observer_->OnBlobEvicted(tenant, digest);
}

void BlobStore::NotifyCommitted(const std::string& tenant, const std::string& digest,
                                int64_t size) {
  if (observer_ != nullptr) observer_->OnBlobCommitted(tenant, digest, size);
}

bool BlobStore::Contains(absl::string_view tenant, absl::string_view digest) const {
  absl::MutexLock lock(&mu_);
  auto ns = tenants_.find(tenant);
  return ns != tenants_.end() && ns->second.blobs.contains(digest);
}

std::vector<std::string> BlobStore::Missing(absl::string_view tenant,
                                            absl::Span<const absl::string_view> digests) {
  std::vector<std::string> missing;
  absl::flat_hash_set<absl::string_view> seen;
  absl::MutexLock lock(&mu_);
  auto ns = tenants_.find(tenant);
  for (absl::string_view digest : digests) {
    if (!seen.insert(digest).second) continue;
    if (ns == tenants_.end()) {
      ++misses_;
      missing.emplace_back(digest);
      continue;
    }
    auto it = ns->second.blobs.find(digest);
    if (it == ns->second.blobs.end()) {
      ++misses_;
      missing.emplace_back(digest);
    } else {
      ++hits_;
      Touch(ns->second, it->second);
    }
  }
  return missing;
}

int64_t BlobStore::BytesInUse(const Namespace& ns) {
  int64_t in_use = 0;
  for (const auto& [digest, entry] : ns.blobs) {
    if (entry.data.use_count() > 1) in_use += static_cast<int64_t>(entry.data->size());
  }
  return in_use;
}

int64_t BlobStore::BytesInUse() const {
  int64_t in_use = 0;
  for (const auto& [tenant, ns] : tenants_) in_use += BytesInUse(ns);
  return in_use;
}

void BlobStore::DropIfEmpty(const std::string& tenant) {
  auto it = tenants_.find(tenant);
  if (it != tenants_.end() && it->second.blobs.empty() && it->second.bytes_reserved == 0) {
    tenants_.erase(it);
  }
}

absl::Status BlobStore::Reserve(const std::string& tenant, Namespace& ns,
                                absl::string_view digest, int64_t size,
                                std::vector<std::string>* evicted) {
  const int64_t limit = TenantLimit(tenant);
  if (size > limit) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "blob ", digest, " of ", FormatBytes(size), " is larger than ",
        limit < budget_bytes_
            ? absl::StrCat("tenant '", tenant, "''s quota blob_bytes=", FormatBytes(limit))
            : absl::StrCat("the blob store's whole budget of ", FormatBytes(budget_bytes_))));
  }
  // Room is needed under the tenant's limit and under the store's budget; only the tenant's
  // own blobs may be evicted for either.
  const int64_t tenant_needed = ns.bytes_held + ns.bytes_reserved + size - limit;
  const int64_t store_needed = bytes_held_ + bytes_reserved_ + size - budget_bytes_;
  const int64_t needed = std::max(tenant_needed, store_needed);
  if (needed > 0) {
    // Only evict when evicting is enough: a doomed upload must not empty the cache.
    const int64_t in_use = BytesInUse(ns);
    const int64_t evictable = ns.bytes_held - in_use;
    if (evictable < needed) {
      if (limit < budget_bytes_ && tenant_needed >= store_needed) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "blob ", digest, " of ", FormatBytes(size), ": tenant '", tenant,
            "' would go over its quota blob_bytes=", FormatBytes(limit), " (",
            FormatBytes(in_use), " held by its blobs in use, ", FormatBytes(ns.bytes_reserved),
            " reserved by its uploads in progress)"));
      }
      const int64_t others =
          bytes_held_ + bytes_reserved_ - ns.bytes_held - ns.bytes_reserved;
      return absl::ResourceExhaustedError(absl::StrCat(
          "blob ", digest, " of ", FormatBytes(size),
          " does not fit in the server's blob store: budget ", FormatBytes(budget_bytes_), ", ",
          others > 0 ? absl::StrCat(FormatBytes(others), " held or reserved by other tenants, ")
                     : "",
          FormatBytes(in_use), " held by blobs in use, ", FormatBytes(ns.bytes_reserved),
          " reserved by uploads in progress"));
    }
    int64_t freed = 0;
    auto it = ns.lru.end();
    while (freed < needed && it != ns.lru.begin()) {
      --it;
      auto entry = ns.blobs.find(*it);
      if (entry->second.data.use_count() > 1) continue;
      const int64_t bytes = static_cast<int64_t>(entry->second.data->size());
      freed += bytes;
      ns.bytes_held -= bytes;
      bytes_held_ -= bytes;
      ++ns.evictions;
      ++evictions_;
      evicted->push_back(*it);
      ns.blobs.erase(entry);
      it = ns.lru.erase(it);
    }
  }
  ns.bytes_reserved += size;
  bytes_reserved_ += size;
  ns.peak_bytes = std::max(ns.peak_bytes, ns.bytes_held + ns.bytes_reserved);
  peak_bytes_ = std::max(peak_bytes_, bytes_held_ + bytes_reserved_);
  return absl::OkStatus();
}

void BlobStore::Unreserve(const std::string& tenant, int64_t size) {
  absl::MutexLock lock(&mu_);
  bytes_reserved_ -= size;
  auto it = tenants_.find(tenant);
  if (it == tenants_.end()) return;
  it->second.bytes_reserved -= size;
  DropIfEmpty(tenant);
}

bool BlobStore::CommitReserved(const std::string& tenant, const std::string& digest,
                               std::string data) {
  // Wrap before locking: a move, no copy of the bytes.
  auto blob = std::make_shared<const std::string>(std::move(data));
  const int64_t size = static_cast<int64_t>(blob->size());
  {
    absl::MutexLock lock(&mu_);
    Namespace& ns = tenants_[tenant];
    bytes_reserved_ -= size;
    ns.bytes_reserved -= size;
    if (!ns.blobs.contains(digest)) {
      ns.lru.push_front(digest);
      ns.blobs.emplace(digest, Entry{std::move(blob), ns.lru.begin()});
      ns.bytes_held += size;
      bytes_held_ += size;
      ++ns.commits;
      ++commits_;
      return true;
    }
  }
  // Another upload of the same digest committed first; `blob` is dropped outside the lock.
  return false;
}

absl::StatusOr<std::unique_ptr<BlobWriter>> BlobStore::StartWrite(absl::string_view tenant,
                                                                  absl::string_view digest,
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
  const std::string name(tenant);
  std::shared_ptr<const std::string> existing;
  std::vector<std::string> evicted;
  {
    absl::MutexLock lock(&mu_);
    Namespace& ns = tenants_[name];
    auto it = ns.blobs.find(digest);
    if (it != ns.blobs.end()) {
      Touch(ns, it->second);
      existing = it->second.data;
    } else if (absl::Status status = Reserve(name, ns, digest, total_size, &evicted);
               !status.ok()) {
      DropIfEmpty(name);
      return status;
    }
  }
  NotifyEvicted(name, evicted);
  return std::unique_ptr<BlobWriter>(
      new BlobWriter(this, name, std::string(digest), total_size, std::move(existing)));
}

absl::StatusOr<std::string> BlobStore::Put(absl::string_view tenant, std::string data) {
  std::string digest = Sha256Digest(data);
  const int64_t size = static_cast<int64_t>(data.size());
  const std::string name(tenant);
  std::vector<std::string> evicted;
  {
    absl::MutexLock lock(&mu_);
    Namespace& ns = tenants_[name];
    auto it = ns.blobs.find(digest);
    if (it != ns.blobs.end()) {
      Touch(ns, it->second);
      return digest;
    }
    if (absl::Status status = Reserve(name, ns, digest, size, &evicted); !status.ok()) {
      DropIfEmpty(name);
      return status;
    }
  }
  NotifyEvicted(name, evicted);
  if (CommitReserved(name, digest, std::move(data))) NotifyCommitted(name, digest, size);
  return digest;
}

int64_t BlobStore::free_bytes(absl::string_view tenant) const {
  absl::MutexLock lock(&mu_);
  const int64_t store_free = budget_bytes_ - bytes_reserved_ - BytesInUse();
  auto it = tenants_.find(tenant);
  const int64_t tenant_used =
      it == tenants_.end() ? 0 : it->second.bytes_reserved + BytesInUse(it->second);
  return std::max<int64_t>(0, std::min(store_free, TenantLimit(tenant) - tenant_used));
}

BlobStoreStats BlobStore::stats() const {
  absl::MutexLock lock(&mu_);
  BlobStoreStats stats;
  stats.budget_bytes = budget_bytes_;
  stats.bytes_held = bytes_held_;
  stats.bytes_in_use = BytesInUse();
  stats.bytes_reserved = bytes_reserved_;
  for (const auto& [tenant, ns] : tenants_) {
    stats.blob_count += static_cast<int64_t>(ns.blobs.size());
  }
  stats.evictions = evictions_;
  stats.commits = commits_;
  stats.peak_bytes = peak_bytes_;
  stats.hits = hits_;
  stats.misses = misses_;
  return stats;
}

std::vector<std::pair<std::string, int64_t>> BlobStore::BytesHeldByTenant() const {
  std::vector<std::pair<std::string, int64_t>> out;
  {
    absl::MutexLock lock(&mu_);
    out.reserve(tenants_.size());
    for (const auto& [tenant, ns] : tenants_) {
      if (ns.bytes_held > 0) out.emplace_back(tenant, ns.bytes_held);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

BlobStoreStats BlobStore::stats(absl::string_view tenant) const {
  BlobStoreStats stats;
  stats.budget_bytes = TenantLimit(tenant);
  absl::MutexLock lock(&mu_);
  auto it = tenants_.find(tenant);
  if (it == tenants_.end()) return stats;
  const Namespace& ns = it->second;
  stats.bytes_held = ns.bytes_held;
  stats.bytes_in_use = BytesInUse(ns);
  stats.bytes_reserved = ns.bytes_reserved;
  stats.blob_count = static_cast<int64_t>(ns.blobs.size());
  stats.evictions = ns.evictions;
  stats.commits = ns.commits;
  stats.peak_bytes = ns.peak_bytes;
  return stats;
}

}  // namespace graphopt
