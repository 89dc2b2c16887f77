#ifndef GRAPHOPT_SERVICE_OP_STORE_H_
#define GRAPHOPT_SERVICE_OP_STORE_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "google/protobuf/repeated_field.h"
#include "graph/op_registry.h"
#include "proto/op.pb.h"
#include "proto/optimizer.pb.h"
#include "service/op_compiler.h"
#include "service/op_persistence.h"
#include "service/op_validation.h"
#include "service/quota.h"

namespace graphopt {

// One tenant's registered ops at one moment. Immutable: a request keeps the snapshot it
// started with while registrations replace the tenant's current one.
class OpSnapshot {
 public:
  OpSnapshot(std::string tenant, std::unique_ptr<OpRegistry> registry, OpSources sources);

  const std::string& tenant() const { return tenant_; }
  // The builtins (parent) with the tenant's ops on top.
  const OpRegistry& registry() const { return *registry_; }
  // The tenant's ops as their clients sent them, by (domain, name).
  const OpSources& sources() const { return sources_; }
  // The op set's version: a "sha256:<hex>" digest of the tenant's descriptors as registered
  // (every registration that changes them changes it; equal sets on any replica give the same
  // one). Keys the Optimize result cache.
  const std::string& digest() const { return digest_; }

 private:
  const std::string tenant_;
  const std::unique_ptr<OpRegistry> registry_;
  const OpSources sources_;
  const std::string digest_;
};

struct OpStoreOptions {
  // Turns descriptors into OpDefs; empty: RuleLanguageCompiler(builtins). This is where the
  // rule language plugs in.
  OpCompiler compiler;
  // Where registered ops are kept across restarts; null: nowhere (in memory only).
  std::shared_ptr<OpPersistence> persistence;
  OpStoreLimits limits;
  // Per-tenant quotas (max_ops, op_store_bytes) that tighten `limits` for each tenant; null:
  // `limits` alone. Must outlive the store.
  const QuotaBook* quotas = nullptr;
  // How often Register/Unregister are tried again when the persistence reports that another
  // replica changed the tenant's ops at the same moment (ABORTED), with 20, 40, 80... ms pauses.
  int conflict_retries = 5;
};

// What OpStore::Load found.
struct OpStoreLoadReport {
  int tenants = 0;
  int ops = 0;
  // One line per unreadable file and per stored op that no longer validates (skipped, named
  // with its tenant and the reason).
  std::vector<std::string> errors;
};

// The op descriptors a server knows: the builtins (shared, never changed) and, per tenant, the
// custom ops registered over RPC. Each tenant's ops are an immutable OpSnapshot whose registry
// layers them over the builtins; RegisterOps/UnregisterOps build a new snapshot, persist the
// tenant's ops and only then swap it in (copy-on-write), so a failed write changes nothing and
// requests in flight keep the snapshot they started with. Registrations are serialized; reads
// (Snapshot, List, LayerRequestOps) only take a short lock and may run from any thread.
//
// Tenant names must pass ValidateTenantName (INVALID_ARGUMENT otherwise). A tenant sees only
// the builtins and its own ops.
class OpStore {
 public:
  // `builtins` must outlive the store and not change.
  explicit OpStore(const OpRegistry* builtins, OpStoreOptions options = {});
  OpStore(const OpStore&) = delete;
  OpStore& operator=(const OpStore&) = delete;

  // Reads the persisted ops (call once, before serving) and re-validates every descriptor as
  // one batch per tenant; a descriptor that no longer validates (or depends on one that does
  // not, or exceeds the limits) is skipped and reported, the rest is loaded. An error only when
  // the persistence cannot be read at all.
  absl::StatusOr<OpStoreLoadReport> Load();

  // Checks `descriptors` (see CheckOps for every rule) all or nothing and, unless
  // `validate_only`, stores them in `tenant`: one line per descriptor, in order —
  // "registered my.ops::Foo v1", "registered my.ops::Foo v2 (was v1)",
  // "unchanged my.ops::Bar v1"; with validate_only "valid my.ops::Foo v1" (or "unchanged").
  // Errors: INVALID_ARGUMENT (UNIMPLEMENTED for rules the compiler lacks) naming the first
  // refused descriptor as "ops[i]: op domain::name: ..."; RESOURCE_EXHAUSTED when a new tenant
  // would exceed max_tenants, the tenant its quota (max_ops, op_store_mb) or all tenants
  // together max_total_bytes; the persistence's error (nothing registered) when saving fails
  // (ABORTED: other replicas kept changing the tenant's ops through every retry).
  absl::StatusOr<std::vector<std::string>> Register(
      absl::string_view tenant,
      const google::protobuf::RepeatedPtrField<v1::OpDescriptor>& descriptors, bool validate_only);

  // Removes ops from `tenant`, all or nothing: "unregistered my.ops::Foo v1" per op.
  // INVALID_ARGUMENT for no ops, a ref named twice or a builtin op; NOT_FOUND for an op the
  // tenant has not registered; FAILED_PRECONDITION when a remaining op's body uses one (remove
  // both in one call); the persistence's error when saving fails.
  absl::StatusOr<std::vector<std::string>> Unregister(
      absl::string_view tenant, const google::protobuf::RepeatedPtrField<v1::OpRef>& refs);

  // The tenant's current ops (never null; a tenant without ops sees the builtins). A malformed
  // tenant name gets the builtins only.
  std::shared_ptr<const OpSnapshot> Snapshot(absl::string_view tenant) const;

  // The descriptors `tenant` sees, sorted by (domain, name): builtins and its ops, or with
  // `registered_only` its ops alone (as registered).
  std::vector<v1::OpDescriptor> List(absl::string_view tenant, bool registered_only) const;

  // A registry for one request: `descriptors` (checked as Register checks them, against the
  // snapshot's tenant) layered over `snapshot`, which the result keeps alive. A request op
  // identical to a registered one is the registered one; a changed one must raise the version
  // and then shadows it for this request only. Errors as Register's.
  absl::StatusOr<std::shared_ptr<const OpRegistry>> LayerRequestOps(
      std::shared_ptr<const OpSnapshot> snapshot,
      const google::protobuf::RepeatedPtrField<v1::OpDescriptor>& descriptors) const;

  // Replaces `tenant`'s ops with `list` as stored by another replica (the shared persistence's
  // watch), validated as Load validates them and not saved again. An empty list removes the
  // tenant's ops; a list equal to the current ops changes nothing. Problems are reported as
  // Load reports them (skipped ops).
  absl::StatusOr<OpStoreLoadReport> ApplyStored(const std::string& tenant,
                                                const v1::OpDescriptorList& list);

  // Serialized descriptor bytes of each tenant with ops, sorted by tenant (for per-tenant
  // quota metrics).
  std::vector<std::pair<std::string, int64_t>> BytesByTenant() const;

  const OpRegistry& builtins() const { return *builtins_; }
  const OpStoreLimits& limits() const { return options_.limits; }
  // "directory '...'" or "memory".
  std::string PersistenceDescription() const;

 private:
  OpCheckContext CheckContext(const OpSnapshot& snapshot) const;
  template <typename Attempt>
  auto RetryConflicts(Attempt attempt) -> decltype(attempt());
  absl::StatusOr<std::vector<std::string>> RegisterOnce(
      absl::string_view tenant,
      const google::protobuf::RepeatedPtrField<v1::OpDescriptor>& descriptors, bool validate_only);
  absl::StatusOr<std::vector<std::string>> UnregisterOnce(
      absl::string_view tenant, const google::protobuf::RepeatedPtrField<v1::OpRef>& refs);
  // Builds the tenant's next snapshot from `sources` with the compiled ops of `current` and
  // `layer` (the new and changed ones win); saves `sources` and swaps it in.
  absl::Status Commit(const std::string& tenant, const OpSnapshot& current, const OpRegistry* layer,
                      OpSources sources) ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);

  // Validates `list` and swaps it in as the tenant's snapshot (Load and ApplyStored).
  void LoadTenantLocked(const std::string& tenant, const v1::OpDescriptorList& list,
                        OpStoreLoadReport* report) ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);

  const OpRegistry* builtins_;
  OpStoreOptions options_;

  // Held by Register/Unregister/Load from reading the current snapshot to swapping the next.
  absl::Mutex write_mu_;
  mutable absl::Mutex mu_ ABSL_ACQUIRED_AFTER(write_mu_);
  // Tenants with at least one op.
  absl::btree_map<std::string, std::shared_ptr<const OpSnapshot>> tenants_ ABSL_GUARDED_BY(mu_);
  // Serialized bytes of every tenant's descriptors (OpStoreLimits::max_total_bytes).
  int64_t total_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace graphopt

#endif  // GRAPHOPT_SERVICE_OP_STORE_H_
