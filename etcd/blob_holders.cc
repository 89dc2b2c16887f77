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

bool EtcdBlobHolders::Backing() const {
  absl::MutexLock lock(&mu_);
  return absl::Now() - failed_at_ < retry_after_;
}

void EtcdBlobHolders::Failed() {
  absl::MutexLock lock(&mu_);
  failed_at_ = absl::Now();
  republish_ = true;
}

bool EtcdBlobHolders::Put(const std::string& self, const std::string& tenant,
                          const std::string& digest, int64_t size, int64_t lease) {
  absl::StatusOr<int64_t> put = client_->Put(
      absl::StrCat(etcd_keys::Blobs(prefix_, tenant, digest), self), absl::StrCat(size), lease);
  if (put.ok()) {
    ++puts_;
    return true;
  }
  Failed();
  logger_->warn("blob holders: cannot record tenant {} blob {} in etcd (other replicas ask for "
                "an upload instead; retried in the background): {}",
                tenant, digest, put.status().ToString());
  return false;
}

bool EtcdBlobHolders::PublishAll(const std::string& self, int64_t lease) {
  const std::vector<BlobStore::Held> held = store_->List();
  for (const BlobStore::Held& blob : held) {
    absl::MutexLock lock(&StripeOf(blob.tenant, blob.digest));
    if (!store_->Contains(blob.tenant, blob.digest)) continue;
    // The first failure ends the round: etcd is out of reach, the next round retries all.
    if (!Put(self, blob.tenant, blob.digest, blob.size, lease)) return false;
  }
  if (!held.empty()) {
    logger_->info("blob holders: {} blobs recorded under lease {:x}", held.size(), lease);
  }
  return true;
}

void EtcdBlobHolders::Announce(const std::string& address, absl::Duration check_interval,
                               absl::Duration retry_after) {
  {
    absl::MutexLock lock(&mu_);
    self_ = address;
    retry_after_ = retry_after;
  }
  PublishAll(address, presence_->lease());
  if (!checker_.joinable()) {
    checker_ = std::thread([this, check_interval] { CheckLoop(check_interval); });
  }
}

void EtcdBlobHolders::CheckLoop(absl::Duration interval) {
  int64_t published = presence_->lease();
  while (!stop_.WaitForNotificationWithTimeout(interval)) {
    const int64_t lease = presence_->lease();
    if (lease == 0 || Backing()) continue;
    bool republish = false;
    {
      absl::MutexLock lock(&mu_);
      // A new lease: the old one expired (etcd was out of reach for longer than its TTL) and
      // took this replica's records with it.
      republish = republish_ || lease != published;
      republish_ = false;
    }
    if (!republish) continue;
    published = lease;
    PublishAll(self(), lease);  // a failure sets republish_ again
  }
}

void EtcdBlobHolders::OnBlobCommitted(const std::string& tenant, const std::string& digest,
                                      int64_t size) {
  const std::string me = self();
  if (me.empty()) return;  // Announce publishes it.
  if (Backing()) {
    // The checker publishes it (with the rest) once etcd answers.
    absl::MutexLock lock(&mu_);
    republish_ = true;
    return;
  }
  absl::MutexLock lock(&StripeOf(tenant, digest));
  // Evicted meanwhile: the eviction's call deletes (or deleted) the record.
  if (!store_->Contains(tenant, digest)) return;
  Put(me, tenant, digest, size, presence_->lease());
}

void EtcdBlobHolders::OnBlobEvicted(const std::string& tenant, const std::string& digest) {
  const std::string me = self();
  // While etcd is out of reach the record stays: the replica it names answers "not held".
  if (me.empty() || Backing()) return;
  absl::MutexLock lock(&StripeOf(tenant, digest));
  // Committed again meanwhile: the record stays.
  if (store_->Contains(tenant, digest)) return;
  absl::StatusOr<int64_t> deleted =
      client_->Delete(absl::StrCat(etcd_keys::Blobs(prefix_, tenant, digest), me));
  if (deleted.ok()) {
    ++deletes_;
  } else {
    Failed();
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
