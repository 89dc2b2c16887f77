#ifndef GRAPHOPT_ETCD_REPLICA_PRESENCE_H_
#define GRAPHOPT_ETCD_REPLICA_PRESENCE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "etcd/etcd_client.h"

namespace graphopt {

// One server replica's presence in etcd: a lease kept alive while the replica lives (what its
// running request ids and blob holdings hang on, so they vanish with it), its address under
// PREFIX replicas/ (etcd/keys.h), and the other live replicas, watched.
class ReplicaPresence {
 public:
  // `client` must outlive this object.
  ReplicaPresence(EtcdClient* client, std::string prefix, absl::Duration ttl);
  ~ReplicaPresence();

  // Called (on the watch thread) with the number of live replicas whenever it changes.
  // Set before Start.
  void set_on_count(std::function<void(int)> on_count) { on_count_ = std::move(on_count); }
  // Grants the lease and starts watching the replicas.
  absl::Status Start();
  // Publishes this replica as `address` (host:port the others can reach); again after a lost
  // lease is replaced.
  absl::Status Announce(const std::string& address);

  // The current lease (it changes only when etcd was out of reach for longer than the TTL).
  int64_t lease() const;
  const std::string& address() const { return address_; }
  // Live replicas' addresses, this one included once announced; sorted.
  std::vector<std::string> LiveReplicas() const;
  // At least 1.
  int live_count() const;
  // Leases granted so far: 1, plus one per lease lost (etcd out of reach past the TTL).
  int lease_grants() const { return keeper_ == nullptr ? 0 : keeper_->grants(); }

 private:
  void PutSelf(int64_t lease);
  void CountChanged() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  EtcdClient* const client_;
  const std::string prefix_;
  const absl::Duration ttl_;
  std::string address_;
  std::function<void(int)> on_count_;
  std::unique_ptr<EtcdLeaseKeeper> keeper_;
  std::unique_ptr<EtcdPrefixWatcher> watcher_;
  mutable absl::Mutex mu_;
  absl::btree_map<std::string, std::string> replicas_ ABSL_GUARDED_BY(mu_);
};

}  // namespace graphopt

#endif  // GRAPHOPT_ETCD_REPLICA_PRESENCE_H_
