#ifndef GRAPHOPT_SERVICE_QUOTA_H_
#define GRAPHOPT_SERVICE_QUOTA_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace graphopt {

// What one tenant may use of a shared server. Going over any of them is RESOURCE_EXHAUSTED
// naming the quota, the tenant and the limit.
struct TenantQuota {
  // Calls of the tenant being served or queued at once (Optimize, Run, RegisterOps,
  // PutBlobs...; the cheap listing calls are not counted).
  int max_concurrent = 16;
  // Calls per second, every call counted, averaged by a token bucket...
  double requests_per_s = 200;
  // ...which holds at most this many calls (a burst after a quiet period).
  double burst = 400;
  // Bytes of uploaded weight blobs the tenant's namespace may hold.
  int64_t blob_bytes = int64_t{1} << 30;
  // Serialized bytes and count of the tenant's registered op descriptors.
  int64_t op_store_bytes = int64_t{16} << 20;
  int max_ops = 1000;
};

// The quota of every tenant: defaults, and overrides per tenant. Immutable.
//
// Text form (one line per tenant, `#` starts a comment):
//   <tenant> key=value [key=value...]
// where <tenant> is a tenant name or `*` (the defaults for every tenant not named), and the
// keys are max_concurrent, requests_per_s, burst, blob_mb, op_store_mb, max_ops. Keys not given
// keep the defaults' value.
class QuotaTable {
 public:
  explicit QuotaTable(TenantQuota defaults = {}) : defaults_(defaults) {}

  // INVALID_ARGUMENT naming the line and the key for anything malformed (an unknown key, a
  // negative or non-numeric value, a tenant named twice, a bad tenant name).
  static absl::StatusOr<QuotaTable> Parse(absl::string_view text, TenantQuota defaults);

  const TenantQuota& For(absl::string_view tenant) const;
  const TenantQuota& defaults() const { return defaults_; }
  int overrides() const { return static_cast<int>(tenants_.size()); }

 private:
  TenantQuota defaults_;
  absl::flat_hash_map<std::string, TenantQuota> tenants_;
};

// The current quota table, replaceable while the server runs (a reloaded --quotas_file).
// Thread-safe; readers get a consistent snapshot.
class QuotaBook {
 public:
  explicit QuotaBook(QuotaTable table = QuotaTable())
      : table_(std::make_shared<const QuotaTable>(std::move(table))) {}

  std::shared_ptr<const QuotaTable> table() const {
    absl::MutexLock lock(&mu_);
    return table_;
  }
  // The tenant's quota on this server: the table's, with the call quotas (max_concurrent,
  // requests_per_s, burst) split evenly over the replicas sharing the tenant's traffic, so a
  // tenant gets the table's figures from the whole service (rounded up, at least 1 each). The
  // storage quotas stay whole: each replica holds its own copy of a tenant's blobs, and the
  // op store is one shared set.
  TenantQuota For(absl::string_view tenant) const {
    TenantQuota quota = table()->For(tenant);
    const int replicas = replicas_.load(std::memory_order_relaxed);
    if (replicas > 1) {
      quota.max_concurrent = std::max(1, (quota.max_concurrent + replicas - 1) / replicas);
      quota.requests_per_s = quota.requests_per_s / replicas;
      quota.burst = std::max(1.0, quota.burst / replicas);
    }
    return quota;
  }
  // The number of live server replicas (1 without shared state).
  void set_replicas(int replicas) {
    replicas_.store(std::max(1, replicas), std::memory_order_relaxed);
  }
  int replicas() const { return replicas_.load(std::memory_order_relaxed); }
  void Replace(QuotaTable table) {
    auto next = std::make_shared<const QuotaTable>(std::move(table));
    absl::MutexLock lock(&mu_);
    table_ = std::move(next);
  }

 private:
  mutable absl::Mutex mu_;
  std::shared_ptr<const QuotaTable> table_ ABSL_GUARDED_BY(mu_);
  std::atomic<int> replicas_{1};
};

// Enforces the per-tenant call quotas: concurrency and rate. Thread-safe.
class TenantLimiter {
 public:
  // A call let in; releases its concurrency slot when destroyed.
  class Admission {
   public:
    Admission() = default;
    Admission(Admission&& other) noexcept { *this = std::move(other); }
    Admission& operator=(Admission&& other) noexcept;
    ~Admission() { Release(); }
    void Release();

   private:
    friend class TenantLimiter;
    TenantLimiter* limiter_ = nullptr;
    std::string tenant_;
  };

  // `quotas` must outlive the limiter.
  explicit TenantLimiter(const QuotaBook* quotas) : quotas_(quotas) {}

  // Counts the call against the tenant's rate and, with `concurrent`, takes one of its
  // concurrency slots. RESOURCE_EXHAUSTED naming the quota ("tenant 'acme': quota
  // max_concurrent=4 reached: 4 calls in progress") when either is used up; `retry_after`
  // (when not null) is then set to when trying again may succeed.
  absl::StatusOr<Admission> Admit(absl::string_view tenant, bool concurrent,
                                  absl::Duration* retry_after = nullptr);

  // Calls of `tenant` holding a slot now.
  int InFlight(absl::string_view tenant) const;
  // Tenants with calls holding a slot now, and how many, sorted by tenant (for metrics).
  std::vector<std::pair<std::string, int>> InFlightByTenant() const;
  // Tenants with state kept (for tests: bounded however many tenants call).
  int TrackedTenants() const;

 private:
  struct State {
    int in_flight = 0;
    double tokens = -1;  // < 0: not yet initialised (starts full)
    absl::Time refilled;
  };
  void Release(const std::string& tenant);

  const QuotaBook* quotas_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, State> tenants_ ABSL_GUARDED_BY(mu_);
  // The map's size at which idle tenants are next swept out (doubling keeps sweeps amortised
  // O(1) per call when few are idle).
  size_t next_sweep_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace graphopt

#endif  // GRAPHOPT_SERVICE_QUOTA_H_
