#ifndef GRAPHOPT_SERVICE_OP_PERSISTENCE_H_
#define GRAPHOPT_SERVICE_OP_PERSISTENCE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "proto/optimizer.pb.h"

namespace graphopt {

// What OpPersistence::LoadAll found.
struct LoadedOps {
  // Tenant -> its stored descriptors, in tenant order.
  absl::btree_map<std::string, v1::OpDescriptorList> tenants;
  // Stored state that could not be read (one line each, naming the file or key and what was
  // done about it); the rest is loaded anyway.
  std::vector<std::string> errors;
};

// Where the op store keeps the tenants' registered descriptors across restarts. The op store
// calls Save with a tenant's complete op set after every change, before the change becomes
// visible, and LoadAll once at start. A store shared by several replicas (a database, an
// object store) implements this interface; FileOpPersistence serves one server.
// Implementations must be thread-safe.
class OpPersistence {
 public:
  virtual ~OpPersistence() = default;

  // Every tenant's stored descriptors. An error status only when nothing can be read at all
  // (the directory or service is unreachable); unreadable parts are reported in
  // LoadedOps::errors instead.
  virtual absl::StatusOr<LoadedOps> LoadAll() = 0;

  // Durably replaces the stored descriptors of `tenant` with `ops` (an empty list removes the
  // tenant). When it fails, the previous state must still be stored.
  virtual absl::Status Save(absl::string_view tenant, const v1::OpDescriptorList& ops) = 0;

  // For logs: "directory 'graphopt-state/ops'", "memory".
  virtual std::string Describe() const = 0;
};

// Keeps the state in memory: for the CLI's embedded mode and for tests. Survives the op store
// that uses it (share it with a std::shared_ptr to "restart" a store in a test).
class InMemoryOpPersistence final : public OpPersistence {
 public:
  absl::StatusOr<LoadedOps> LoadAll() override;
  absl::Status Save(absl::string_view tenant, const v1::OpDescriptorList& ops) override;
  std::string Describe() const override { return "memory"; }

  // Test hook: while set, Save fails with UNAVAILABLE and stores nothing.
  void set_fail_saves(bool fail);
  // The number of successful Save calls.
  int saves() const;

 private:
  mutable absl::Mutex mu_;
  absl::btree_map<std::string, v1::OpDescriptorList> tenants_ ABSL_GUARDED_BY(mu_);
  bool fail_saves_ ABSL_GUARDED_BY(mu_) = false;
  int saves_ ABSL_GUARDED_BY(mu_) = 0;
};

// One file per tenant in a directory: "<tenant>.ops.pb", a serialized OpDescriptorList
// (deterministic serialization: the same ops give the same bytes). Save writes
// "<tenant>.ops.pb.tmp", fsyncs it, renames it over the file and fsyncs the directory, so a
// crash leaves either the old or the new file. LoadAll deletes leftover ".tmp" files and moves
// a file that does not parse aside to "<file>.corrupt" (reported in LoadedOps::errors; the
// tenant starts without ops). One server per directory: replicas need a shared implementation.
class FileOpPersistence final : public OpPersistence {
 public:
  // Creates `dir` (and its parents) when missing. INVALID_ARGUMENT for an empty path; the
  // errno-derived status naming the path when it cannot be created or is not a directory.
  static absl::StatusOr<std::unique_ptr<FileOpPersistence>> Create(std::string dir);

  absl::StatusOr<LoadedOps> LoadAll() override;
  absl::Status Save(absl::string_view tenant, const v1::OpDescriptorList& ops) override;
  std::string Describe() const override;

  // The file holding `tenant`'s ops.
  std::string PathFor(absl::string_view tenant) const;
  const std::string& dir() const { return dir_; }

 private:
  explicit FileOpPersistence(std::string dir) : dir_(std::move(dir)) {}

  const std::string dir_;
  // Serializes Save calls (the temp file name is per tenant).
  absl::Mutex mu_;
};

// The bytes FileOpPersistence writes for `ops`: deterministic serialization.
std::string SerializeOpsDeterministically(const v1::OpDescriptorList& ops);

}  // namespace graphopt

#endif  // GRAPHOPT_SERVICE_OP_PERSISTENCE_H_
