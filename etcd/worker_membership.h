#ifndef GRAPHOPT_ETCD_WORKER_MEMBERSHIP_H_
#define GRAPHOPT_ETCD_WORKER_MEMBERSHIP_H_

// Worker membership as etcd leases: a worker keeps PREFIX workers/WORKER_ID -> its address under
// a lease of its own (etcd/keys.h), and every server replica watches the prefix. A worker that
// stops cleanly revokes the lease (its key goes at once); one that dies loses it after the TTL.
// The coordinator's probing still marks workers down and up within a second; the lease only says
// which workers exist.

#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "etcd/etcd_client.h"

namespace graphopt {

// A worker's own key, kept while this object lives (or until Withdraw).
class EtcdWorkerAnnouncer {
 public:
  // `client` must outlive this object.
  EtcdWorkerAnnouncer(EtcdClient* client, std::string prefix, std::string worker_id,
                      std::string address, absl::Duration ttl);
  ~EtcdWorkerAnnouncer();
  EtcdWorkerAnnouncer(const EtcdWorkerAnnouncer&) = delete;
  EtcdWorkerAnnouncer& operator=(const EtcdWorkerAnnouncer&) = delete;

  // Grants the lease and puts the key (again on every new lease: after an etcd outage longer than
  // the TTL).
  absl::Status Start();
  // Revokes the lease: servers stop sending work here (a worker shutting down calls this before it
  // drains).
  void Withdraw();
  std::string key() const;

 private:
  EtcdClient* const client_;
  const std::string prefix_;
  const std::string worker_id_;
  const std::string address_;
  const absl::Duration ttl_;
  absl::Mutex mu_;
  // The newest lease's put.
  absl::Status last_put_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<EtcdLeaseKeeper> keeper_;
};

// A server's view of the workers in etcd: `add` for each worker address that appears, `remove`
// for one no worker key names any more (a snapshot after a reconnect drops the vanished ones).
// Both run on the watcher's thread.
class EtcdWorkerWatcher {
 public:
  using AddressFn = std::function<void(const std::string& address)>;

  // `client` must outlive this object.
  EtcdWorkerWatcher(EtcdClient* client, std::string prefix, AddressFn add, AddressFn remove);
  ~EtcdWorkerWatcher();
  EtcdWorkerWatcher(const EtcdWorkerWatcher&) = delete;
  EtcdWorkerWatcher& operator=(const EtcdWorkerWatcher&) = delete;

  // Starts watching; returns after the first snapshot or `timeout` (UNAVAILABLE; it keeps trying).
  absl::Status Start(absl::Duration timeout);
  // Workers known now, by worker id.
  absl::btree_map<std::string, std::string> Workers() const;

 private:
  // Records worker `id` at `address` ("" when its key went) and tells add/remove what changed.
  void Set(const std::string& id, const std::string& address) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  EtcdClient* const client_;
  const std::string prefix_;
  const AddressFn add_;
  const AddressFn remove_;
  mutable absl::Mutex mu_;
  absl::btree_map<std::string, std::string> workers_ ABSL_GUARDED_BY(mu_);
  // Worker ids per address (two ids may share one address for a moment: a restart under a new
  // id while the old key's lease runs out).
  absl::btree_map<std::string, int> ids_at_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<EtcdPrefixWatcher> watcher_;
};

}  // namespace graphopt

#endif  // GRAPHOPT_ETCD_WORKER_MEMBERSHIP_H_
