#include "etcd/blob_holders.h"

#include <functional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "etcd/keys.h"

namespace graphopt {

EtcdBlobHolders::EtcdBlobHolders(EtcdClient* client, std::string prefix,
                                 ReplicaPresence* presence, const BlobStore* store,
                                 std::shared_ptr<spdlog::logger> logger)
    : client_(client),
      prefix_(std::move(prefix)),
      presence_(presence),
      store_(store),
      logger_(std::move(logger)) {}

EtcdBlobHolders::~EtcdBlobHolders() {
  stop_.Notify();
  if (checker_.joinable()) checker_.join();
}

std::string EtcdBlobHolders::self() const {
  absl::MutexLock lock(&mu_);
  return self_;
}

absl::Mutex& EtcdBlobHolders::StripeOf(const std::string& tenant, const std::string& digest) {
  const size_t h = std::hash<std::string>()(digest) ^ (std::hash<std::string>()(tenant) << 1);
  return stripes_[h % kStripes];
}

void EtcdBlobHolders::Put(const std::string& self, const std::string& tenant,
                          const std::string& digest, int64_t size, int64_t lease) {
  absl::StatusOr<int64_t> put = client_->Put(
      absl::StrCat(etcd_keys::Blobs(prefix_, tenant, digest), self), absl::StrCat(size), lease);
  if (put.ok()) {
    ++puts_;
  } else {
    logger_->warn("blob holders: cannot record tenant {} blob {} in etcd (other replicas will "
                  "ask for an upload instead): {}",
                  tenant, digest, put.status().ToString());
  }
}

void EtcdBlobHolders::PublishAll(const std::string& self, int64_t lease) {
  const std::vector<BlobStore::Held> held = store_->List();
  for (const BlobStore::Held& blob : held) {
    absl::MutexLock lock(&StripeOf(blob.tenant, blob.digest));
    if (store_->Contains(blob.tenant, blob.digest)) {
      Put(self, blob.tenant, blob.digest, blob.size, lease);
    }
  }
  if (!held.empty()) {
    logger_->info("blob holders: {} blobs recorded under lease {:x}", held.size(), lease);
  }
}

void EtcdBlobHolders::Announce(const std::string& address, absl::Duration check_interval) {
  {
    absl::MutexLock lock(&mu_);
    self_ = address;
  }
  const int64_t lease = presence_->lease();
  PublishAll(address, lease);
  if (!checker_.joinable()) {
    checker_ = std::thread([this, check_interval] { CheckLeaseLoop(check_interval); });
  }
}

void EtcdBlobHolders::CheckLeaseLoop(absl::Duration interval) {
  int64_t published = presence_->lease();
  while (!stop_.WaitForNotificationWithTimeout(interval)) {
    const int64_t lease = presence_->lease();
    if (lease == published || lease == 0) continue;
    // The old lease expired (etcd was out of reach for longer than its TTL) and took this
    // replica's records with it.
    published = lease;
    PublishAll(self(), lease);
  }
}

void EtcdBlobHolders::OnBlobCommitted(const std::string& tenant, const std::string& digest,
                                      int64_t size) {
  const std::string me = self();
  if (me.empty()) return;  // Announce publishes it.
  absl::MutexLock lock(&StripeOf(tenant, digest));
  // Evicted meanwhile: the eviction's call deletes (or deleted) the record.
  if (!store_->Contains(tenant, digest)) return;
  Put(me, tenant, digest, size, presence_->lease());
}

void EtcdBlobHolders::OnBlobEvicted(const std::string& tenant, const std::string& digest) {
  const std::string me = self();
  if (me.empty()) return;
  absl::MutexLock lock(&StripeOf(tenant, digest));
  // Committed again meanwhile: the record stays.
  if (store_->Contains(tenant, digest)) return;
  absl::StatusOr<int64_t> deleted =
      client_->Delete(absl::StrCat(etcd_keys::Blobs(prefix_, tenant, digest), me));
  if (deleted.ok()) {
    ++deletes_;
  } else {
    logger_->warn("blob holders: cannot delete the record of evicted tenant {} blob {} (another "
                  "replica asking for it is told it is not held): {}",
                  tenant, digest, deleted.status().ToString());
  }
}

absl::StatusOr<std::vector<EtcdBlobHolders::Holder>> EtcdBlobHolders::Holders(
    const std::string& tenant, const std::string& digest) const {
  const std::string base = etcd_keys::Blobs(prefix_, tenant, digest);
  // One more than returned: this replica's own record may be among them.
  absl::StatusOr<EtcdRange> range = client_->GetPrefix(base, kMaxHolders + 1);
  if (!range.ok()) return range.status();
  const std::string me = self();
  std::vector<Holder> holders;
  for (const EtcdKeyValue& kv : range->kvs) {
    Holder holder;
    holder.address = kv.key.substr(base.size());
    if (holder.address.empty() || holder.address == me) continue;
    if (!absl::SimpleAtoi(kv.value, &holder.size) || holder.size < 0) continue;
    holders.push_back(std::move(holder));
    if (static_cast<int>(holders.size()) == kMaxHolders) break;
  }
  return holders;
}

}  // namespace graphopt
