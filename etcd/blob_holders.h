#ifndef GRAPHOPT_ETCD_BLOB_HOLDERS_H_
#define GRAPHOPT_ETCD_BLOB_HOLDERS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "etcd/etcd_client.h"
#include "etcd/replica_presence.h"
#include "service/blob_store.h"
#include "spdlog/logger.h"

namespace graphopt {

// Which server replicas hold which tenants' weight blobs, in etcd: one key per (tenant, blob,
// replica), PREFIX blobs/TENANT/DIGEST/ADDRESS -> size in decimal (etcd/keys.h), put under the
// replica's lease so that the record dies with the replica. As the observer of this replica's
// BlobStore it puts one key per committed blob and deletes one per evicted blob: etcd traffic
// grows with uploads and evictions, never with lookups of blobs held. Other replicas read the
// holders of a blob they lack (Holders) and fetch it from one of them.
//
// etcd out of reach: the put or delete fails, is logged, and the replica carries on alone (a
// missing record costs another replica a re-upload; a stale one is answered "not held" by the
// replica it names). For retry_after after a failure no record is written at all, so that
// uploads do not each wait for etcd's timeout; then the whole store is published again. A
// lease replaced after a long outage drops every record under the old one; the same
// background check republishes the store under the new lease.
class EtcdBlobHolders final : public BlobStoreObserver {
 public:
  struct Holder {
    std::string address;
    int64_t size = 0;
  };
  // Most holders Holders returns: enough to survive replicas dying, bounded per lookup.
  static constexpr int kMaxHolders = 16;

  // `client`, `presence` and `store` must outlive this object; install it with
  // store->set_observer(this).
  EtcdBlobHolders(EtcdClient* client, std::string prefix, ReplicaPresence* presence,
                  const BlobStore* store, std::shared_ptr<spdlog::logger> logger);
  ~EtcdBlobHolders() override;

  // Sets this replica's address (what the records name; nothing is recorded before), publishes
  // what the store already holds, and starts checking every `check_interval` whether the lease
  // was replaced.
  void Announce(const std::string& address, absl::Duration check_interval = absl::Seconds(2),
                absl::Duration retry_after = absl::Seconds(5));

  void OnBlobCommitted(const std::string& tenant, const std::string& digest,
                       int64_t size) override;
  void OnBlobEvicted(const std::string& tenant, const std::string& digest) override;

  // The replicas other than this one that recorded the tenant's blob, in key order; at most
  // kMaxHolders. UNAVAILABLE when etcd cannot be read.
  absl::StatusOr<std::vector<Holder>> Holders(const std::string& tenant,
                                              const std::string& digest) const;

  std::string self() const;
  // Records put and deleted so far (tests, logs).
  int64_t puts() const { return puts_.load(); }
  int64_t deletes() const { return deletes_.load(); }

 private:
  static constexpr int kStripes = 16;
  absl::Mutex& StripeOf(const std::string& tenant, const std::string& digest);
  // False when etcd failed (then the store is published again later).
  bool Put(const std::string& self, const std::string& tenant, const std::string& digest,
           int64_t size, int64_t lease);
  bool PublishAll(const std::string& self, int64_t lease);
  void CheckLoop(absl::Duration interval);
  // Whether etcd failed less than retry_after ago (then the caller skips its write).
  bool Backing() const;
  void Failed();

  EtcdClient* const client_;
  const std::string prefix_;
  ReplicaPresence* const presence_;
  const BlobStore* const store_;
  const std::shared_ptr<spdlog::logger> logger_;
  mutable absl::Mutex mu_;
  std::string self_ ABSL_GUARDED_BY(mu_);
  absl::Duration retry_after_ ABSL_GUARDED_BY(mu_) = absl::Seconds(5);
  absl::Time failed_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // Records were skipped or failed: the checker publishes the whole store again.
  bool republish_ ABSL_GUARDED_BY(mu_) = false;
  // Serialises the check of the store and the etcd write for one blob, so that a commit and
  // an eviction of the same blob racing leave the record matching the store (see
  // BlobStoreObserver). Striped: blobs of different stripes do not wait for each other.
  std::array<absl::Mutex, kStripes> stripes_;
  std::atomic<int64_t> puts_{0};
  std::atomic<int64_t> deletes_{0};
  absl::Notification stop_;
  std::thread checker_;
};

}  // namespace graphopt

#endif  // GRAPHOPT_ETCD_BLOB_HOLDERS_H_
