#include "service/op_store.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "service/digest.h"
#include "service/tenant.h"

namespace graphopt {
namespace {

std::vector<const v1::OpDescriptor*> Pointers(
    const google::protobuf::RepeatedPtrField<v1::OpDescriptor>& descriptors) {
  std::vector<const v1::OpDescriptor*> out;
  out.reserve(descriptors.size());
  for (const v1::OpDescriptor& d : descriptors) out.push_back(&d);
  return out;
}

v1::OpDescriptorList ToList(const OpSources& sources) {
  v1::OpDescriptorList list;
  list.mutable_ops()->Reserve(static_cast<int>(sources.size()));
  for (const auto& [key, d] : sources) *list.add_ops() = d;
  return list;
}

// The digest of a tenant's descriptors in key order (OpSnapshot::digest).
std::string SourcesDigest(const OpSources& sources) {
  Sha256Hasher hasher;
  for (const auto& [key, d] : sources) {
    std::string bytes;
    google::protobuf::io::StringOutputStream stream(&bytes);
    {
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.SetSerializationDeterministic(true);
      d.SerializeToCodedStream(&coded);
    }
    hasher.Update(absl::StrCat(bytes.size(), ":"));
    hasher.Update(bytes);
  }
  return hasher.Finish();
}

}  // namespace

OpSnapshot::OpSnapshot(std::string tenant, std::unique_ptr<OpRegistry> registry,
                       OpSources sources)
    : tenant_(std::move(tenant)),
      registry_(std::move(registry)),
      sources_(std::move(sources)),
      digest_(SourcesDigest(sources_)) {}

OpStore::OpStore(const OpRegistry* builtins, OpStoreOptions options)
    : builtins_(builtins), options_(std::move(options)) {
  if (!options_.compiler) options_.compiler = RuleLanguageCompiler(builtins_);
}

namespace {

// Serialized bytes of a tenant's descriptors (what the limits count).
v1::OpDescriptorList SingleOp(const v1::OpDescriptor& d) {
  v1::OpDescriptorList list;
  *list.add_ops() = d;
  return list;
}

int64_t SourcesBytes(const OpSources& sources) {
  int64_t bytes = 0;
  for (const auto& [key, d] : sources) bytes += static_cast<int64_t>(d.ByteSizeLong());
  return bytes;
}

}  // namespace

std::vector<std::pair<std::string, int64_t>> OpStore::BytesByTenant() const {
  std::vector<std::shared_ptr<const OpSnapshot>> snapshots;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [tenant, snapshot] : tenants_) snapshots.push_back(snapshot);
  }
  // Sized outside the lock: registrations need not wait for a scrape.
  std::vector<std::pair<std::string, int64_t>> out;
  out.reserve(snapshots.size());
  for (const auto& s : snapshots) out.emplace_back(s->tenant(), SourcesBytes(s->sources()));
  return out;
}

std::string OpStore::PersistenceDescription() const {
  return options_.persistence == nullptr ? "none (in memory only)"
                                         : options_.persistence->Describe();
}

OpCheckContext OpStore::CheckContext(const OpSnapshot& snapshot) const {
  OpCheckContext context;
  context.builtins = builtins_;
  context.visible = &snapshot.registry();
  context.existing = &snapshot.sources();
  context.compiler = &options_.compiler;
  context.limits = options_.limits;
  if (options_.quotas != nullptr) {
    const TenantQuota quota = options_.quotas->For(snapshot.tenant());
    context.limits.max_ops_per_tenant = std::min(context.limits.max_ops_per_tenant, quota.max_ops);
    context.limits.max_tenant_bytes =
        std::min(context.limits.max_tenant_bytes, quota.op_store_bytes);
  }
  return context;
}

std::shared_ptr<const OpSnapshot> OpStore::Snapshot(absl::string_view tenant) const {
  {
    absl::MutexLock lock(&mu_);
    auto it = tenants_.find(tenant);
    if (it != tenants_.end()) return it->second;
  }
  return std::make_shared<const OpSnapshot>(std::string(tenant),
                                            std::make_unique<OpRegistry>(builtins_), OpSources());
}

std::vector<v1::OpDescriptor> OpStore::List(absl::string_view tenant, bool registered_only) const {
  std::shared_ptr<const OpSnapshot> snapshot = Snapshot(tenant);
  std::vector<v1::OpDescriptor> out;
  if (registered_only) {
    out.reserve(snapshot->sources().size());
    for (const auto& [key, d] : snapshot->sources()) out.push_back(d);
    return out;
  }
  for (const OpDef* op : snapshot->registry().List()) {
    auto it = snapshot->sources().find(OpKey(op->descriptor.domain(), op->descriptor.name()));
    out.push_back(it != snapshot->sources().end() ? it->second : op->descriptor);
  }
  return out;
}

absl::StatusOr<std::shared_ptr<const OpRegistry>> OpStore::LayerRequestOps(
    std::shared_ptr<const OpSnapshot> snapshot,
    const google::protobuf::RepeatedPtrField<v1::OpDescriptor>& descriptors) const {
  const OpRegistry* base = &snapshot->registry();
  if (descriptors.empty()) return std::shared_ptr<const OpRegistry>(std::move(snapshot), base);
  OpCheckResult checked = CheckOps(Pointers(descriptors), CheckContext(*snapshot));
  if (!checked.ok()) return checked.FirstError();
  struct Layered {
    std::shared_ptr<const OpSnapshot> snapshot;
    std::unique_ptr<OpRegistry> layer;
  };
  auto layered = std::make_shared<Layered>();
  layered->snapshot = std::move(snapshot);
  layered->layer = std::move(checked.layer);
  const OpRegistry* layer = layered->layer.get();
  return std::shared_ptr<const OpRegistry>(std::move(layered), layer);
}

absl::Status OpStore::Commit(const std::string& tenant, const OpSnapshot& current,
                             const OpRegistry* layer, OpSources sources) {
  auto registry = std::make_unique<OpRegistry>(builtins_);
  for (const auto& [key, d] : sources) {
    const OpDef* def = layer == nullptr ? nullptr : layer->FindLocal(key.first, key.second);
    if (def == nullptr) def = current.registry().FindLocal(key.first, key.second);
    if (def == nullptr) {
      return absl::InternalError(
          absl::StrCat("op store: no compiled op for ", OpLabel(key.first, key.second)));
    }
    if (absl::Status s = registry->Register(*def); !s.ok()) {
      return absl::InternalError(
          absl::StrCat("op store: rebuilding tenant '", tenant, "': ", s.message()));
    }
  }
  if (options_.persistence != nullptr) {
    if (absl::Status s = options_.persistence->Save(tenant, ToList(sources)); !s.ok()) {
      return absl::Status(
          s.code(), absl::StrCat("nothing changed: cannot save the ops of tenant '", tenant,
                                 "' to ", options_.persistence->Describe(), ": ", s.message()));
    }
  }
  const bool empty = sources.empty();
  const int64_t delta = SourcesBytes(sources) - SourcesBytes(current.sources());
  auto next = std::make_shared<const OpSnapshot>(tenant, std::move(registry), std::move(sources));
  absl::MutexLock lock(&mu_);
  total_bytes_ += delta;
  if (empty) {
    tenants_.erase(tenant);
  } else {
    tenants_[tenant] = std::move(next);
  }
  return absl::OkStatus();
}

template <typename Attempt>
auto OpStore::RetryConflicts(Attempt attempt) -> decltype(attempt()) {
  // A shared persistence refuses a write made against ops another replica has changed since
  // (ABORTED); its watch brings the change here within milliseconds, so the same request is
  // tried again against the newer ops before the client hears of it.
  absl::Duration pause = absl::Milliseconds(20);
  for (int tries = 1;; ++tries) {
    auto result = attempt();
    if (result.ok() || !absl::IsAborted(result.status()) ||
        tries > options_.conflict_retries) {
      return result;
    }
    absl::SleepFor(pause);
    pause *= 2;
  }
}

absl::StatusOr<std::vector<std::string>> OpStore::Register(
    absl::string_view tenant,
    const google::protobuf::RepeatedPtrField<v1::OpDescriptor>& descriptors, bool validate_only) {
  return RetryConflicts([&] { return RegisterOnce(tenant, descriptors, validate_only); });
}

absl::StatusOr<std::vector<std::string>> OpStore::Unregister(
    absl::string_view tenant, const google::protobuf::RepeatedPtrField<v1::OpRef>& refs) {
  return RetryConflicts([&] { return UnregisterOnce(tenant, refs); });
}

absl::StatusOr<std::vector<std::string>> OpStore::RegisterOnce(
    absl::string_view tenant,
    const google::protobuf::RepeatedPtrField<v1::OpDescriptor>& descriptors, bool validate_only) {
  if (absl::Status s = ValidateTenantName(tenant); !s.ok()) return s;
  absl::MutexLock write_lock(&write_mu_);
  std::shared_ptr<const OpSnapshot> current = Snapshot(tenant);
  OpCheckResult checked = CheckOps(Pointers(descriptors), CheckContext(*current));
  if (!checked.ok()) return checked.FirstError();

  std::vector<std::string> lines;
  bool changes = false;
  for (const CheckedOp& op : checked.ops) {
    const v1::OpDescriptor& d = descriptors[op.index];
    switch (op.kind) {
      case CheckedOp::Kind::kUnchanged:
        lines.push_back(absl::StrCat("unchanged ", OpVersionLabel(d)));
        break;
      case CheckedOp::Kind::kNew:
        changes = true;
        lines.push_back(absl::StrCat(validate_only ? "valid " : "registered ", OpVersionLabel(d)));
        break;
      case CheckedOp::Kind::kChanged:
        changes = true;
        lines.push_back(absl::StrCat(validate_only ? "valid " : "registered ", OpVersionLabel(d),
                                     " (was v", op.previous_version, ")"));
        break;
    }
  }
  if (validate_only || !changes) return lines;

  if (current->sources().empty()) {
    absl::MutexLock lock(&mu_);
    if (static_cast<int>(tenants_.size()) >= options_.limits.max_tenants) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "tenant '", tenant, "' cannot register ops: this server already holds ops of ",
          tenants_.size(), " tenants, its limit"));
    }
  }
  OpSources sources = current->sources();
  for (const CheckedOp& op : checked.ops) {
    if (op.kind != CheckedOp::Kind::kUnchanged) sources[op.key] = descriptors[op.index];
  }
  {
    const int64_t growth = SourcesBytes(sources) - SourcesBytes(current->sources());
    absl::MutexLock lock(&mu_);
    if (growth > 0 && total_bytes_ + growth > options_.limits.max_total_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "tenant '", tenant, "' cannot register ops: the server's op store would hold ",
          total_bytes_ + growth, " bytes of descriptors; at most ",
          options_.limits.max_total_bytes, " for all tenants together"));
    }
  }
  if (absl::Status s =
          Commit(std::string(tenant), *current, checked.layer.get(), std::move(sources));
      !s.ok()) {
    return s;
  }
  return lines;
}

absl::StatusOr<std::vector<std::string>> OpStore::UnregisterOnce(
    absl::string_view tenant, const google::protobuf::RepeatedPtrField<v1::OpRef>& refs) {
  if (absl::Status s = ValidateTenantName(tenant); !s.ok()) return s;
  if (refs.empty()) return absl::InvalidArgumentError("no ops to unregister");
  absl::MutexLock write_lock(&write_mu_);
  std::shared_ptr<const OpSnapshot> current = Snapshot(tenant);
  absl::flat_hash_set<OpKey> removed;
  std::vector<std::string> lines;
  for (int i = 0; i < refs.size(); ++i) {
    OpKey key(refs[i].domain(), refs[i].name());
    const std::string label = OpLabel(key.first, key.second);
    if (builtins_->Find(key.first, key.second) != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("ops[", i, "]: op ", label, " is a builtin op and cannot be unregistered"));
    }
    auto it = current->sources().find(key);
    if (it == current->sources().end()) {
      return absl::NotFoundError(
          absl::StrCat("ops[", i, "]: op ", label, " is not registered in tenant '", tenant, "'"));
    }
    if (!removed.insert(key).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("ops[", i, "]: op ", label, " is named twice"));
    }
    lines.push_back(absl::StrCat("unregistered ", OpVersionLabel(it->second)));
  }
  OpSources sources;
  for (const auto& [key, d] : current->sources()) {
    if (!removed.contains(key)) sources.emplace(key, d);
  }
  for (const auto& [key, d] : sources) {
    std::vector<OpKey> used = BodyCustomOps(d, removed);
    if (!used.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("op ", OpLabel(used.front().first, used.front().second),
                       " is used by the body of op ", OpLabel(key.first, key.second),
                       " in tenant '", tenant, "'; unregister that op first or in the same call"));
    }
  }
  if (absl::Status s = Commit(std::string(tenant), *current, nullptr, std::move(sources));
      !s.ok()) {
    return s;
  }
  return lines;
}

void OpStore::LoadTenantLocked(const std::string& tenant, const v1::OpDescriptorList& list,
                               OpStoreLoadReport* report_out) {
  OpStoreLoadReport& report = *report_out;
  const OpStoreLimits& limits = options_.limits;
  auto skip = [&, tenant = tenant](const v1::OpDescriptor& d, absl::string_view why) {
    report.errors.push_back(
        absl::StrCat("tenant '", tenant, "': skipping stored op ", OpVersionLabel(d), ": ", why));
  };
  if (absl::Status s = ValidateTenantName(tenant); !s.ok()) {
    report.errors.push_back(absl::StrCat("skipping stored ops: ", s.message()));
    return;
  }
  // The limits first, in stored order, so that one batch check can pass.
  std::vector<const v1::OpDescriptor*> candidates;
  int64_t bytes = 0;
  for (const v1::OpDescriptor& d : list.ops()) {
    const int64_t size = static_cast<int64_t>(d.ByteSizeLong());
    if (static_cast<int>(candidates.size()) >= limits.max_ops_per_tenant ||
        static_cast<int>(candidates.size()) >= limits.max_ops_per_call ||
        bytes + size > limits.max_tenant_bytes) {
      skip(d, "over the tenant's limits");
      continue;
    }
    bytes += size;
    candidates.push_back(&d);
  }
  // Drop what fails and check the rest again, until all of it passes.
  const OpSnapshot empty(tenant, std::make_unique<OpRegistry>(builtins_), OpSources());
  OpCheckContext context = CheckContext(empty);
  context.visible = builtins_;
  OpCheckResult checked;
  while (true) {
    checked = CheckOps(candidates, context);
    if (checked.ok()) break;
    if (!checked.call_error.ok()) {
      for (const v1::OpDescriptor* d : candidates) skip(*d, checked.call_error.message());
      candidates.clear();
      continue;
    }
    std::vector<bool> refused(candidates.size(), false);
    for (const auto& [index, status] : checked.errors) {
      refused[index] = true;
      skip(*candidates[index], status.message());
    }
    std::vector<const v1::OpDescriptor*> rest;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (!refused[i]) rest.push_back(candidates[i]);
    }
    candidates = std::move(rest);
  }
  if (candidates.empty()) {
    absl::MutexLock lock(&mu_);
    if (auto old = tenants_.find(tenant); old != tenants_.end()) {
      total_bytes_ -= SourcesBytes(old->second->sources());
      tenants_.erase(old);
    }
    return;
  }
  OpSources sources;
  for (const v1::OpDescriptor* d : candidates) {
    sources.emplace(OpKey(d->domain(), d->name()), *d);
  }
  // The checked layer sits right on the builtins: it is the tenant's registry. (Commit would
  // save the same ops again.)
  std::unique_ptr<OpRegistry> registry = std::move(checked.layer);
  report.ops += static_cast<int>(sources.size());
  ++report.tenants;
  const int64_t stored_bytes = SourcesBytes(sources);
  auto snapshot =
      std::make_shared<const OpSnapshot>(tenant, std::move(registry), std::move(sources));
  absl::MutexLock lock(&mu_);
  if (auto old = tenants_.find(tenant); old != tenants_.end()) {
    total_bytes_ -= SourcesBytes(old->second->sources());
  }
  total_bytes_ += stored_bytes;
  tenants_[tenant] = std::move(snapshot);
}

absl::StatusOr<OpStoreLoadReport> OpStore::ApplyStored(const std::string& tenant,
                                                       const v1::OpDescriptorList& list) {
  OpStoreLoadReport report;
  absl::MutexLock write_lock(&write_mu_);
  {
    // This replica's own writes come back through the watch: nothing to do for them.
    absl::MutexLock lock(&mu_);
    auto it = tenants_.find(tenant);
    const OpSources* current = it == tenants_.end() ? nullptr : &it->second->sources();
    if ((current == nullptr ? 0 : static_cast<int>(current->size())) == list.ops_size()) {
      bool same = true;
      for (int i = 0; same && i < list.ops_size(); ++i) {
        const v1::OpDescriptor& d = list.ops(i);
        auto found = current->find(OpKey(d.domain(), d.name()));
        same = found != current->end() &&
               SerializeOpsDeterministically(SingleOp(found->second)) ==
                   SerializeOpsDeterministically(SingleOp(d));
      }
      if (same) return report;
    }
  }
  LoadTenantLocked(tenant, list, &report);
  return report;
}

absl::StatusOr<OpStoreLoadReport> OpStore::Load() {
  OpStoreLoadReport report;
  if (options_.persistence == nullptr) return report;
  absl::MutexLock write_lock(&write_mu_);
  absl::StatusOr<LoadedOps> loaded = options_.persistence->LoadAll();
  if (!loaded.ok()) {
    return absl::Status(loaded.status().code(), absl::StrCat("loading registered ops from ",
                                                             options_.persistence->Describe(), ": ",
                                                             loaded.status().message()));
  }
  report.errors = std::move(loaded->errors);
  for (const auto& [tenant, list] : loaded->tenants) LoadTenantLocked(tenant, list, &report);
  return report;
}

}  // namespace graphopt
