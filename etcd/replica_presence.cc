#include "etcd/replica_presence.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "etcd/keys.h"

namespace graphopt {

ReplicaPresence::ReplicaPresence(EtcdClient* client, std::string prefix, absl::Duration ttl)
    : client_(client), prefix_(std::move(prefix)), ttl_(ttl) {}

ReplicaPresence::~ReplicaPresence() {
  watcher_.reset();
  // Revokes the lease: the replica's key and claims vanish now rather than after the TTL.
  keeper_.reset();
}

absl::Status ReplicaPresence::Start() {
  keeper_ = std::make_unique<EtcdLeaseKeeper>(client_, ttl_, [this](int64_t lease) {
    if (!address_.empty()) PutSelf(lease);
  });
  if (absl::Status s = keeper_->Start(); !s.ok()) return s;
  const std::string base = etcd_keys::Replicas(prefix_);
  watcher_ = std::make_unique<EtcdPrefixWatcher>(
      client_, base,
      [this, base](const std::vector<EtcdKeyValue>& kvs) {
        absl::MutexLock lock(&mu_);
        replicas_.clear();
        for (const EtcdKeyValue& kv : kvs) replicas_[kv.key.substr(base.size())] = kv.value;
        CountChanged();
      },
      [this, base](const EtcdPrefixWatcher::Event& e) {
        absl::MutexLock lock(&mu_);
        if (e.deleted) {
          replicas_.erase(e.kv.key.substr(base.size()));
        } else {
          replicas_[e.kv.key.substr(base.size())] = e.kv.value;
        }
        CountChanged();
      });
  return watcher_->Start(absl::Seconds(10));
}

void ReplicaPresence::CountChanged() {
  if (on_count_) on_count_(std::max<int>(1, static_cast<int>(replicas_.size())));
}

void ReplicaPresence::PutSelf(int64_t lease) {
  // Failure is retried by the next lease (or shows as a missing replica in `etcdctl`); the
  // replica serves either way.
  client_->Put(absl::StrCat(etcd_keys::Replicas(prefix_), address_), address_, lease)
      .IgnoreError();
}

absl::Status ReplicaPresence::Announce(const std::string& address) {
  address_ = address;
  absl::StatusOr<int64_t> put =
      client_->Put(absl::StrCat(etcd_keys::Replicas(prefix_), address_), address_, lease());
  return put.status();
}

int64_t ReplicaPresence::lease() const { return keeper_ == nullptr ? 0 : keeper_->lease(); }

std::vector<std::string> ReplicaPresence::LiveReplicas() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const auto& [id, address] : replicas_) out.push_back(address);
  return out;
}

int ReplicaPresence::live_count() const {
  absl::MutexLock lock(&mu_);
  return std::max<int>(1, static_cast<int>(replicas_.size()));
}

}  // namespace graphopt
