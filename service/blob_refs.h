#ifndef GRAPHOPT_SERVICE_BLOB_REFS_H_
#define GRAPHOPT_SERVICE_BLOB_REFS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proto/graph.pb.h"
#include "service/blob_store.h"

namespace graphopt {

// Tensors of a graph that refer to content-addressed blobs (Tensor.blob) instead of carrying
// their bytes. The tensors looked at are the initializers and the top-level attribute tensors.

// Checks every such tensor of `graph`: the digest is well formed (else INVALID_ARGUMENT), `blobs`
// holds it in `tenant`'s namespace, or its fetcher brings it from another replica (else
// FAILED_PRECONDITION; also when `blobs` is null), and
// its size matches the tensor's dims and type (else INVALID_ARGUMENT). Messages name the
// tensor. The blobs found are
// appended to `pins`, which keeps them from eviction for as long as the caller holds them.
absl::Status CheckBlobReferences(const v1::Graph& graph, BlobStore* blobs,
                                 absl::string_view tenant,
                                 std::vector<std::shared_ptr<const std::string>>* pins);

// Checks as CheckBlobReferences does, then replaces each reference by the blob's bytes
// (raw_data). On error `graph` may be partly inlined.
absl::Status InlineBlobReferences(v1::Graph* graph, BlobStore* blobs, absl::string_view tenant);

// The digests `graph`'s tensors refer to, each once, sorted.
std::vector<std::string> BlobDigests(const v1::Graph& graph);

// Whether any initializer or top-level attribute tensor of `graph` refers to a blob.
bool HasBlobReferences(const v1::Graph& graph);

}  // namespace graphopt

#endif  // GRAPHOPT_SERVICE_BLOB_REFS_H_
