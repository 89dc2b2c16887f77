#ifndef GRAPHOPT_SERVICE_BLOB_STORE_H_
#define GRAPHOPT_SERVICE_BLOB_STORE_H_

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "service/digest.h"
#include "service/quota.h"

namespace graphopt {

struct BlobStoreStats {
  // The byte budget the store was built with.
  int64_t budget_bytes = 0;
  // Bytes of committed blobs.
  int64_t bytes_held = 0;
  // Bytes of committed blobs someone outside the store holds (not evictable now).
  int64_t bytes_in_use = 0;
  // Bytes reserved by uploads in progress.
  int64_t bytes_reserved = 0;
  int64_t blob_count = 0;
  // Blobs evicted to make room, since construction.
  int64_t evictions = 0;
  // Blobs committed (not counting ones that were already present), since construction.
  int64_t commits = 0;
  // Highest bytes_held + bytes_reserved seen.
  int64_t peak_bytes = 0;
  // Digests looked up (Lookup, Missing) that were held, and that were not, since construction.
  int64_t hits = 0;
  int64_t misses = 0;
};

class BlobStore;

// Told when a tenant's namespace gains or loses a blob, so that others can learn which blobs
// this store holds (a cluster's replicas record it in etcd). Called after the store's lock is
// released, on the thread that committed or evicted, once per committed and once per evicted
// blob; calls for one blob may arrive out of order when a commit and an eviction race, so an
// observer that needs the truth checks Contains. Must not throw; may block briefly.
class BlobStoreObserver {
 public:
  virtual ~BlobStoreObserver() = default;
  virtual void OnBlobCommitted(const std::string& tenant, const std::string& digest,
                               int64_t size) = 0;
  virtual void OnBlobEvicted(const std::string& tenant, const std::string& digest) = 0;
};

// Brings blobs the store lacks from elsewhere (another replica that holds them) into the
// store, through StartWrite/Append/Commit, so they count against the tenant's quota and their
// digests are verified. Failures are not errors: a blob that could not be brought is simply
// still missing, and the client uploads it as it would anyway. Thread-safe.
class BlobFetcher {
 public:
  virtual ~BlobFetcher() = default;
  virtual void Fetch(BlobStore& store, const std::string& tenant,
                     const std::vector<std::string>& digests) = 0;
};

// One blob being uploaded (BlobStore::StartWrite). The bytes go, in order, into one buffer of
// total_size bytes allocated up front, and are hashed as they arrive; Commit checks the digest
// and hands the buffer to the store without copying it. Destroying a writer that was not
// committed drops the data and releases its reservation. When the store already held the
// digest at StartWrite, the writer only counts the bytes it is given and discards them
// (skipping() is true; Commit succeeds without hashing). Not thread-safe: one upload, one
// thread. Must not outlive its store.
class BlobWriter {
 public:
  ~BlobWriter();
  BlobWriter(const BlobWriter&) = delete;
  BlobWriter& operator=(const BlobWriter&) = delete;

  const std::string& digest() const { return digest_; }
  int64_t total_size() const { return total_size_; }
  // Bytes appended so far.
  int64_t received() const { return received_; }
  bool complete() const { return received_ == total_size_; }
  // The store already holds this blob; the data is discarded.
  bool skipping() const { return existing_ != nullptr; }

  // INVALID_ARGUMENT when `data` would go beyond total_size (nothing is appended then);
  // FAILED_PRECONDITION after Commit.
  absl::Status Append(absl::string_view data);

  // Verifies and stores the blob. INVALID_ARGUMENT when fewer than total_size bytes arrived
  // or when they hash to another digest ("blob sha256:... : received data hashes to
  // sha256:..."); FAILED_PRECONDITION when called twice. A failed commit stores nothing; the
  // writer is then finished either way.
  absl::Status Commit();

  // The buffer the bytes are appended to (tests check that it is allocated once).
  const std::string& buffer_for_test() const { return buffer_; }

 private:
  friend class BlobStore;
  BlobWriter(BlobStore* store, std::string tenant, std::string digest, int64_t total_size,
             std::shared_ptr<const std::string> existing);

  // Gives back the reservation (if any) exactly once.
  void Release();

  BlobStore* store_;
  std::string tenant_;
  std::string digest_;
  int64_t total_size_;
  int64_t received_ = 0;
  bool finished_ = false;
  // Set when skipping: pins the stored copy for the duration of the upload.
  std::shared_ptr<const std::string> existing_;
  std::string buffer_;
  Sha256Hasher hasher_;
};

// A thread-safe, memory-bounded, content-addressed store of immutable byte blobs keyed by
// "sha256:<hex>" digest (see digest.h), in one namespace per tenant: a tenant sees, uses and
// evicts only its own blobs, so asking whether a digest is present tells nothing about other
// tenants, and one tenant's uploads never push out another's weights. The same bytes uploaded
// by two tenants are held twice.
//
// Memory: committed blobs plus the reservations of uploads in progress never exceed the byte
// budget, nor a tenant's share its quota (TenantQuota::blob_bytes, when a QuotaBook is given).
// To make room for a tenant's upload, that tenant's least recently used blobs that nobody
// outside the store holds are evicted; a live Lookup result pins its blob. A Lookup result owns
// its bytes: it stays valid whatever happens to the store afterwards, its destruction included.
// Each blob's bytes live in exactly one allocation, made when its upload starts and never
// copied.
class BlobStore {
 public:
  // `budget_bytes` (> 0) bounds the bytes held and reserved by all tenants; it is also the
  // largest blob. `quotas` (optional, must outlive the store) bounds each tenant's.
  explicit BlobStore(int64_t budget_bytes, const QuotaBook* quotas = nullptr);
  ~BlobStore();
  BlobStore(const BlobStore&) = delete;
  BlobStore& operator=(const BlobStore&) = delete;

  // Both optional, set before the store is shared between threads; they must outlive it.
  void set_observer(BlobStoreObserver* observer) { observer_ = observer; }
  void set_fetcher(BlobFetcher* fetcher) { fetcher_ = fetcher; }
  bool has_fetcher() const { return fetcher_ != nullptr; }

  // The tenant's blob, or nullptr when absent. Marks it recently used.
  std::shared_ptr<const std::string> Lookup(absl::string_view tenant, absl::string_view digest);
  // Lookup; on a miss, the fetcher (when set) is asked for the blob first. May block for as
  // long as the fetch takes.
  std::shared_ptr<const std::string> LookupOrFetch(absl::string_view tenant,
                                                   absl::string_view digest);

  bool Contains(absl::string_view tenant, absl::string_view digest) const;

  // The digests of `digests` the tenant does not hold, each once, in first-occurrence order.
  // The ones it holds are marked recently used (a client checks, then uses them).
  std::vector<std::string> Missing(absl::string_view tenant,
                                   absl::Span<const absl::string_view> digests);
  // Missing; the missing ones are then asked of the fetcher (when set), and only those it
  // could not bring are returned. May block for as long as the fetches take.
  std::vector<std::string> MissingAfterFetch(absl::string_view tenant,
                                             absl::Span<const absl::string_view> digests);

  // The tenant's digests and sizes, for an observer that publishes the whole store again.
  struct Held {
    std::string tenant;
    std::string digest;
    int64_t size = 0;
  };
  std::vector<Held> List() const;

  // Starts an upload of `total_size` bytes named `digest` into the tenant's namespace,
  // reserving the memory now (evicting the tenant's own blobs as needed). INVALID_ARGUMENT for a
  // malformed digest or a negative size; RESOURCE_EXHAUSTED naming the blob, the sizes and the
  // limit (the tenant's quota blob_bytes, or the store's budget) when it cannot fit even after
  // eviction. When the tenant already holds the blob the writer skips (no reservation).
  absl::StatusOr<std::unique_ptr<BlobWriter>> StartWrite(absl::string_view tenant,
                                                         absl::string_view digest,
                                                         int64_t total_size);

  // Stores `data` (moved in, not copied) under its SHA-256 digest in the tenant's namespace and
  // returns the digest. RESOURCE_EXHAUSTED as for StartWrite.
  absl::StatusOr<std::string> Put(absl::string_view tenant, std::string data);

  // Bytes an upload of the tenant may still get: the budget and its quota less reservations
  // and blobs in use.
  int64_t free_bytes(absl::string_view tenant) const;
  int64_t budget_bytes() const { return budget_bytes_; }
  // The whole store's figures, or (with a tenant) that tenant's share of them.
  BlobStoreStats stats() const;
  BlobStoreStats stats(absl::string_view tenant) const;
  // Bytes held by each tenant holding any, sorted by tenant (for per-tenant quota metrics).
  std::vector<std::pair<std::string, int64_t>> BytesHeldByTenant() const;

 private:
  friend class BlobWriter;

  struct Entry {
    std::shared_ptr<const std::string> data;
    // Position in its namespace's lru.
    std::list<std::string>::iterator lru_position;
  };
  struct Namespace {
    // Digests, most recently used first.
    std::list<std::string> lru;
    absl::flat_hash_map<std::string, Entry> blobs;
    int64_t bytes_held = 0;
    int64_t bytes_reserved = 0;
    int64_t evictions = 0;
    int64_t commits = 0;
    int64_t peak_bytes = 0;
  };

  // The tenant's byte limit: its quota, or the budget without quotas.
  int64_t TenantLimit(absl::string_view tenant) const;
  // Reserves `size` bytes for the tenant's `digest`, evicting its unpinned blobs (least
  // recently used first) when needed.
  // The digests evicted go to `evicted`, for the observer.
  absl::Status Reserve(const std::string& tenant, Namespace& ns, absl::string_view digest,
                       int64_t size, std::vector<std::string>* evicted)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Tells the observer, outside the lock.
  void NotifyEvicted(const std::string& tenant, const std::vector<std::string>& evicted);
  void NotifyCommitted(const std::string& tenant, const std::string& digest, int64_t size);
  void Unreserve(const std::string& tenant, int64_t size);
  // Turns a writer's reservation into a stored blob. Returns true when it was stored, false
  // when the digest had arrived meanwhile by another upload (the data is then dropped).
  bool CommitReserved(const std::string& tenant, const std::string& digest, std::string data);
  static void Touch(Namespace& ns, Entry& entry);
  static int64_t BytesInUse(const Namespace& ns);
  int64_t BytesInUse() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets a namespace that holds and reserves nothing.
  void DropIfEmpty(const std::string& tenant) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int64_t budget_bytes_;
  const QuotaBook* const quotas_;
  BlobStoreObserver* observer_ = nullptr;
  BlobFetcher* fetcher_ = nullptr;
  mutable absl::Mutex mu_;
  absl::node_hash_map<std::string, Namespace> tenants_ ABSL_GUARDED_BY(mu_);
  int64_t bytes_held_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t bytes_reserved_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t evictions_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t commits_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t peak_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t hits_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t misses_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace graphopt

#endif  // GRAPHOPT_SERVICE_BLOB_STORE_H_
