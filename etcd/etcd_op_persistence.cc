#include "etcd/etcd_op_persistence.h"

#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "etcd/keys.h"

namespace graphopt {

EtcdOpPersistence::EtcdOpPersistence(EtcdClient* client, std::string prefix)
    : client_(client), prefix_(std::move(prefix)) {}

EtcdOpPersistence::~EtcdOpPersistence() { watcher_.reset(); }

std::string EtcdOpPersistence::Describe() const {
  return absl::StrCat(client_->Describe(), " under '", etcd_keys::Ops(prefix_), "'");
}

std::string EtcdOpPersistence::TenantOf(absl::string_view key) const {
  const std::string base = etcd_keys::Ops(prefix_);
  if (!absl::StartsWith(key, base)) return "";
  return std::string(key.substr(base.size()));
}

void EtcdOpPersistence::Observe(const std::string& tenant, int64_t revision, bool exists) {
  absl::MutexLock lock(&mu_);
  Seen& seen = seen_[tenant];
  if (revision < seen.revision) return;
  seen.revision = revision;
  seen.exists = exists;
}

absl::StatusOr<LoadedOps> EtcdOpPersistence::LoadAll() {
  absl::StatusOr<EtcdRange> range = client_->GetPrefix(etcd_keys::Ops(prefix_));
  if (!range.ok()) return range.status();
  LoadedOps loaded;
  for (const EtcdKeyValue& kv : range->kvs) {
    const std::string tenant = TenantOf(kv.key);
    Observe(tenant, kv.mod_revision, true);
    v1::OpDescriptorList list;
    if (!list.ParseFromString(kv.value)) {
      loaded.errors.push_back(
          absl::StrCat("etcd key '", kv.key, "' does not parse as an OpDescriptorList: skipped"));
      continue;
    }
    loaded.tenants[tenant] = std::move(list);
  }
  return loaded;
}

absl::Status EtcdOpPersistence::Save(absl::string_view tenant_view,
                                     const v1::OpDescriptorList& ops) {
  const std::string tenant(tenant_view);
  const std::string key = etcd_keys::Ops(prefix_, tenant);
  Seen seen;
  {
    absl::MutexLock lock(&mu_);
    if (auto it = seen_.find(tenant); it != seen_.end()) seen = it->second;
  }
  etcdserverpb::TxnRequest txn;
  etcdserverpb::Compare* unchanged = txn.add_compare();
  unchanged->set_key(key);
  unchanged->set_target(etcdserverpb::Compare::MOD);
  unchanged->set_result(etcdserverpb::Compare::EQUAL);
  // An absent key compares as mod revision 0.
  unchanged->set_mod_revision(seen.exists ? seen.revision : 0);
  if (ops.ops().empty()) {
    txn.add_success()->mutable_request_delete_range()->set_key(key);
  } else {
    etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
    put->set_key(key);
    put->set_value(SerializeOpsDeterministically(ops));
  }
  absl::StatusOr<etcdserverpb::TxnResponse> done = client_->Txn(txn);
  if (!done.ok()) {
    return absl::Status(done.status().code(),
                        absl::StrCat("saving tenant '", tenant, "''s ops: ", done.status().message()));
  }
  if (!done->succeeded()) {
    return absl::AbortedError(absl::StrCat(
        "tenant '", tenant,
        "''s ops were changed through another replica at the same moment; nothing was "
        "registered: send the request again"));
  }
  Observe(tenant, done->header().revision(), !ops.ops().empty());
  return absl::OkStatus();
}

absl::Status EtcdOpPersistence::Watch(ApplyFn apply) {
  // Tenants the last snapshot had, so a reconnect's snapshot can drop the ones deleted since.
  auto known = std::make_shared<absl::flat_hash_set<std::string>>();
  auto apply_kv = [this, apply](const std::string& tenant, const EtcdKeyValue& kv, bool deleted) {
    v1::OpDescriptorList list;
    if (!deleted && !list.ParseFromString(kv.value)) return;
    // Swapped in first, then the revision noted: a registration in between sees the new
    // snapshot or fails its compare, never overwrites the change.
    apply(tenant, list);
    Observe(tenant, kv.mod_revision, !deleted);
  };
  watcher_ = std::make_unique<EtcdPrefixWatcher>(
      client_, etcd_keys::Ops(prefix_),
      [this, known, apply, apply_kv](const std::vector<EtcdKeyValue>& kvs) {
        absl::flat_hash_set<std::string> now;
        for (const EtcdKeyValue& kv : kvs) {
          const std::string tenant = TenantOf(kv.key);
          now.insert(tenant);
          apply_kv(tenant, kv, false);
        }
        for (const std::string& gone : *known) {
          if (!now.contains(gone)) apply(gone, v1::OpDescriptorList());
        }
        *known = std::move(now);
      },
      [this, known, apply_kv](const EtcdPrefixWatcher::Event& event) {
        const std::string tenant = TenantOf(event.kv.key);
        if (event.deleted) {
          known->erase(tenant);
        } else {
          known->insert(tenant);
        }
        apply_kv(tenant, event.kv, event.deleted);
      });
  return watcher_->Start(absl::Seconds(10));
}

}  // namespace graphopt
