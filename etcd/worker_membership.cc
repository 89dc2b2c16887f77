#include "etcd/worker_membership.h"

#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "etcd/keys.h"

namespace graphopt {

EtcdWorkerAnnouncer::EtcdWorkerAnnouncer(EtcdClient* client, std::string prefix,
                                         std::string worker_id, std::string address,
                                         absl::Duration ttl)
    : client_(client),
      prefix_(std::move(prefix)),
      worker_id_(std::move(worker_id)),
      address_(std::move(address)),
      ttl_(ttl) {}

EtcdWorkerAnnouncer::~EtcdWorkerAnnouncer() { Withdraw(); }

std::string EtcdWorkerAnnouncer::key() const {
  return absl::StrCat(etcd_keys::Workers(prefix_), worker_id_);
}

absl::Status EtcdWorkerAnnouncer::Start() {
  keeper_ = std::make_unique<EtcdLeaseKeeper>(client_, ttl_, [this](int64_t lease) {
    // A later lease's put that fails shows as a worker missing from the servers until the next
    // lease; the worker serves anyone who calls it either way.
    absl::Status put = client_->Put(key(), address_, lease).status();
    absl::MutexLock lock(&mu_);
    last_put_ = std::move(put);
  });
  if (absl::Status s = keeper_->Start(); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  return last_put_;
}

void EtcdWorkerAnnouncer::Withdraw() {
  // The keeper's destructor revokes the lease, which deletes the key.
  keeper_.reset();
}

EtcdWorkerWatcher::EtcdWorkerWatcher(EtcdClient* client, std::string prefix, AddressFn add,
                                     AddressFn remove)
    : client_(client),
      prefix_(std::move(prefix)),
      add_(std::move(add)),
      remove_(std::move(remove)) {}

EtcdWorkerWatcher::~EtcdWorkerWatcher() { watcher_.reset(); }

void EtcdWorkerWatcher::Set(const std::string& id, const std::string& address) {
  auto it = workers_.find(id);
  const std::string old = it == workers_.end() ? "" : it->second;
  if (old == address) return;
  if (!old.empty()) {
    if (--ids_at_[old] == 0) {
      ids_at_.erase(old);
      remove_(old);
    }
  }
  if (address.empty()) {
    workers_.erase(id);
    return;
  }
  workers_[id] = address;
  if (++ids_at_[address] == 1) add_(address);
}

absl::Status EtcdWorkerWatcher::Start(absl::Duration timeout) {
  const std::string base = etcd_keys::Workers(prefix_);
  watcher_ = std::make_unique<EtcdPrefixWatcher>(
      client_, base,
      [this, base](const std::vector<EtcdKeyValue>& kvs) {
        absl::MutexLock lock(&mu_);
        absl::flat_hash_set<std::string> present;
        for (const EtcdKeyValue& kv : kvs) {
          const std::string id = kv.key.substr(base.size());
          present.insert(id);
          Set(id, kv.value);
        }
        std::vector<std::string> gone;
        for (const auto& [id, address] : workers_) {
          if (!present.contains(id)) gone.push_back(id);
        }
        for (const std::string& id : gone) Set(id, "");
      },
      [this, base](const EtcdPrefixWatcher::Event& e) {
        absl::MutexLock lock(&mu_);
        Set(e.kv.key.substr(base.size()), e.deleted ? "" : e.kv.value);
      });
  return watcher_->Start(timeout);
}

absl::btree_map<std::string, std::string> EtcdWorkerWatcher::Workers() const {
  absl::MutexLock lock(&mu_);
  return workers_;
}

}  // namespace graphopt
