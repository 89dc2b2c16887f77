#ifndef GRAPHOPT_ETCD_KEYS_H_
#define GRAPHOPT_ETCD_KEYS_H_

// Where graphopt keeps its shared state in etcd, under one prefix (--etcd_prefix, default
// "/graphopt/"). One place for the layout, so that docs/operations.md and `etcdctl get
// --prefix` agree with the code:
//
//   PREFIX ops/TENANT                      a tenant's registered ops (OpDescriptorList bytes)
//   PREFIX replicas/REPLICA                a live server replica -> its address (its lease)
//   PREFIX workers/WORKER_ID               a live worker -> its address (the worker's lease)
//   PREFIX requests/TENANT/REQUEST_ID      a Run's request-id record (running: the replica's
//                                          lease; answered: a lease of the dedup TTL)
//   PREFIX blobs/TENANT/DIGEST/REPLICA     a replica holds this blob (the replica's lease)
//
// Tenant names are [a-z0-9][a-z0-9_.-]* (service/tenant.h), digests "sha256:HEX", so neither
// contains '/'; request ids are the last component and may contain anything.

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace graphopt {
namespace etcd_keys {

inline std::string Ops(absl::string_view prefix) { return absl::StrCat(prefix, "ops/"); }
inline std::string Ops(absl::string_view prefix, absl::string_view tenant) {
  return absl::StrCat(prefix, "ops/", tenant);
}
inline std::string Replicas(absl::string_view prefix) {
  return absl::StrCat(prefix, "replicas/");
}
inline std::string Workers(absl::string_view prefix) { return absl::StrCat(prefix, "workers/"); }
inline std::string Requests(absl::string_view prefix, absl::string_view tenant) {
  return absl::StrCat(prefix, "requests/", tenant, "/");
}
inline std::string Blobs(absl::string_view prefix, absl::string_view tenant,
                         absl::string_view digest) {
  return absl::StrCat(prefix, "blobs/", tenant, "/", digest, "/");
}

}  // namespace etcd_keys
}  // namespace graphopt

#endif  // GRAPHOPT_ETCD_KEYS_H_
