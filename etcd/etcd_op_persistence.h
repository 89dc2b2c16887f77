#ifndef GRAPHOPT_ETCD_ETCD_OP_PERSISTENCE_H_
#define GRAPHOPT_ETCD_ETCD_OP_PERSISTENCE_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "etcd/etcd_client.h"
#include "proto/optimizer.pb.h"
#include "service/op_persistence.h"

namespace graphopt {

// Tenants' registered ops in etcd, one key per tenant (etcd/keys.h), shared by every server
// replica. Writes are optimistic: Save succeeds only when the tenant's key is still at the
// revision this replica last saw, so two replicas registering for one tenant at once cannot
// lose each other's ops; the loser gets ABORTED and retries against the newer set. Watch()
// keeps this replica's op store in step with the others'.
class EtcdOpPersistence final : public OpPersistence {
 public:
  // Called with a tenant's ops as stored (empty: the tenant has none any more).
  using ApplyFn = std::function<void(const std::string& tenant, const v1::OpDescriptorList& ops)>;

  // `client` must outlive this object.
  EtcdOpPersistence(EtcdClient* client, std::string prefix);
  ~EtcdOpPersistence() override;

  absl::StatusOr<LoadedOps> LoadAll() override;
  absl::Status Save(absl::string_view tenant, const v1::OpDescriptorList& ops) override;
  std::string Describe() const override;

  // Starts following other replicas' changes: `apply` runs on the watch thread for every tenant
  // whose stored ops changed (and for every tenant after a reconnect). Call once, after the op
  // store's Load.
  absl::Status Watch(ApplyFn apply);
  // Stops the watch (before whatever `apply` touches goes away).
  void StopWatching() { watcher_.reset(); }

 private:
  struct Seen {
    int64_t revision = 0;  // the newest revision of the key seen
    bool exists = false;   // whether the key existed at that revision
  };
  // Records a revision of a tenant's key; older news is ignored.
  void Observe(const std::string& tenant, int64_t revision, bool exists);
  // The tenant named by a key under the ops prefix; empty for anything else.
  std::string TenantOf(absl::string_view key) const;

  EtcdClient* const client_;
  const std::string prefix_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Seen> seen_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<EtcdPrefixWatcher> watcher_;
};

}  // namespace graphopt

#endif  // GRAPHOPT_ETCD_ETCD_OP_PERSISTENCE_H_
