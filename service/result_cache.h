#ifndef GRAPHOPT_SERVICE_RESULT_CACHE_H_
#define GRAPHOPT_SERVICE_RESULT_CACHE_H_

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/node_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "proto/optimizer.pb.h"
#include "util/version.h"

namespace graphopt {

// The key of an Optimize request's result: a "sha256:<hex>" digest over graphopt's version, the
// tenant's op set (`op_set_digest`, OpSnapshot::digest), the request's own ops, and the request
// without OptimizeOptions.verify and OptimizeOptions.no_cache (which do not change the result)
// serialized deterministically: the model (graph or ONNX bytes; weights sent as blobs enter by
// their content digest, weights sent inline by their bytes), the pipeline and pass options,
// dim_bindings, the other OptimizeOptions and result_format. Any field added to the request later
// is part of the key by default: a field that changes the result can give a miss, never a wrong
// hit. Two requests that differ only in how the client serialized an equal model may get
// different keys (a miss, not an error).
// Leaves `request` as it was: its model and ops are set aside while the rest is hashed, so no
// part of it is copied.
std::string OptimizeCacheKey(v1::OptimizeRequest* request, absl::string_view op_set_digest);

// One cached result: the response as the pipeline made it (cache and verification unset) and
// the blob digests its input referred to (checked again on a hit: a tenant whose blobs were
// evicted gets the same FAILED_PRECONDITION as without the cache).
struct CachedResult {
  v1::OptimizeResponse response;
  std::vector<std::string> blob_digests;
};

struct ResultCacheOptions {
  // Bytes of all tenants' entries together; 0 turns the cache off.
  int64_t max_bytes = int64_t{256} << 20;
  // Bytes of one tenant's entries (at most max_bytes), so one tenant cannot flush the others'
  // results; 0: max_bytes / 4.
  int64_t max_tenant_bytes = 0;
};

// One tenant's figures (for the metrics).
struct ResultCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t evictions = 0;
  // Entries held and their bytes (ResultCache::EntryBytes).
  int64_t entries = 0;
  int64_t bytes = 0;
};

// Optimize results by (tenant, OptimizeCacheKey), bounded in bytes: least recently used entries
// go first, the tenant's own when it is over its share, anyone's when all are over max_bytes. A
// result larger than a tenant's share is not kept. Entries are immutable and shared: a lookup
// hands out a reference, never a copy under the lock. Thread-safe; every call is O(1) but for
// the evictions it makes (amortized O(1) per insert).
class ResultCache {
 public:
  explicit ResultCache(ResultCacheOptions options = {});
  ResultCache(const ResultCache&) = delete;
  ResultCache& operator=(const ResultCache&) = delete;

  bool enabled() const { return options_.max_bytes > 0; }
  const ResultCacheOptions& options() const { return options_; }

  // The entry, made most recently used, or null; counted as the tenant's hit or miss.
  std::shared_ptr<const CachedResult> Lookup(absl::string_view tenant, absl::string_view key);

  // Keeps `result` under (tenant, key), replacing an entry there, evicting as needed. False when
  // it is not kept (disabled, or larger than the tenant's share).
  bool Insert(absl::string_view tenant, absl::string_view key,
              std::shared_ptr<const CachedResult> result);

  // Each tenant that has used the cache, sorted by tenant. Tenants past kMaxTrackedTenants are
  // counted together under "other".
  std::vector<std::pair<std::string, ResultCacheStats>> Stats() const;
  // Bytes of all entries.
  int64_t bytes() const;

  // The bytes an entry is charged: the response's serialized size, the digests and the key.
  static int64_t EntryBytes(const CachedResult& result, absl::string_view key);
  // Whether a response of this serialized size can be kept at all (so that one too large is
  // not copied for nothing).
  bool Admits(int64_t response_bytes) const {
    return enabled() && response_bytes <= options_.max_tenant_bytes;
  }

  // Tenants whose figures are kept apart; a bound on the stats' memory when tenant names are
  // invented (an --insecure server takes them from a header).
  static constexpr int kMaxTrackedTenants = 1000;

 private:
  struct Entry;
  struct TenantState {
    // Whether `stats` holds the tenant's figures (else they go to other_).
    bool tracked = false;
    ResultCacheStats stats;
    // The tenant's entries and their bytes, whether tracked or not (its share is enforced).
    int64_t entries = 0;
    int64_t bytes = 0;
    // Most recently used first.
    std::list<Entry*> lru;
  };
  struct Entry {
    std::string full_key;
    std::string tenant;
    std::shared_ptr<const CachedResult> result;
    int64_t bytes = 0;
    std::list<Entry*>::iterator global_it;
    std::list<Entry*>::iterator tenant_it;
  };

  TenantState& StateFor(absl::string_view tenant) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Where the tenant's hits, misses and evictions are counted.
  ResultCacheStats& Counters(TenantState& state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return state.tracked ? state.stats : other_;
  }
  // Drops the state of an untracked tenant without entries.
  void ForgetIfIdle(absl::string_view tenant) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Erase(absl::node_hash_map<std::string, Entry>::iterator it, bool eviction)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ResultCacheOptions options_;
  mutable absl::Mutex mu_;
  // By tenant + '\0' + key (tenant names have no NUL).
  absl::node_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  // Most recently used first, all tenants.
  std::list<Entry*> global_lru_ ABSL_GUARDED_BY(mu_);
  // A node map: entries keep iterators into their tenant's list.
  std::map<std::string, TenantState, std::less<>> tenants_ ABSL_GUARDED_BY(mu_);
  // Figures of tenants past kMaxTrackedTenants.
  ResultCacheStats other_ ABSL_GUARDED_BY(mu_);
  int tracked_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace graphopt

#endif  // GRAPHOPT_SERVICE_RESULT_CACHE_H_
