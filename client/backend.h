#ifndef GRAPHOPT_CLIENT_BACKEND_H_
#define GRAPHOPT_CLIENT_BACKEND_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "client/blob_upload.h"
#include "client/credentials.h"
#include "proto/optimizer.pb.h"

namespace graphopt {

// Where the CLI's requests go: an Optimizer in this process or a graphopt-server. Both give
// the same answers for the same request, errors included (the server's status code and
// message are passed through unchanged).
class OptimizerBackend {
 public:
  virtual ~OptimizerBackend() = default;

  virtual absl::StatusOr<v1::OptimizeResponse> Optimize(v1::OptimizeRequest request) = 0;
  virtual absl::StatusOr<v1::ListPassesResponse> ListPasses() = 0;
  virtual absl::StatusOr<v1::ListOpsResponse> ListOps(const v1::ListOpsRequest& request) = 0;
  // Custom op registration in the backend's tenant (see the RegisterOps/UnregisterOps RPCs).
  // The embedded backend keeps registered ops in memory for the life of the backend only.
  virtual absl::StatusOr<v1::RegisterOpsResponse> RegisterOps(
      const v1::RegisterOpsRequest& request) = 0;
  virtual absl::StatusOr<v1::UnregisterOpsResponse> UnregisterOps(
      const v1::UnregisterOpsRequest& request) = 0;

  // True when weights can be sent ahead as content-addressed blobs (a remote server).
  virtual bool SupportsBlobs() const = 0;
  // Makes `blobs` available to later Optimize calls (see client/blob_upload.h);
  // UNIMPLEMENTED when !SupportsBlobs().
  virtual absl::StatusOr<UploadStats> UploadBlobs(absl::Span<const BlobRef> blobs,
                                                  UploadOptions options) = 0;
};

// An in-process Optimizer over freshly built builtin op and pass registries and an in-memory
// op store (tenant "default"). INTERNAL when registering the builtins fails (a bug, reported
// rather than aborted on).
absl::StatusOr<std::unique_ptr<OptimizerBackend>> CreateEmbeddedBackend();

// Largest message the remote backend sends or accepts.
inline constexpr int kClientMaxMessageBytes = 512 * 1024 * 1024;

// A GraphOptimizer client over `connection`'s channel; each call has `timeout` as its deadline
// and carries the connection's metadata (token, tenant). Transport failures (UNAVAILABLE,
// DEADLINE_EXCEEDED, ...) and refusals (UNAUTHENTICATED, PERMISSION_DENIED) get the address
// prefixed to their message; errors produced by the optimizer are passed through.
std::unique_ptr<OptimizerBackend> CreateRemoteBackend(
    std::shared_ptr<const ServerConnection> connection, absl::Duration timeout);

}  // namespace graphopt

#endif  // GRAPHOPT_CLIENT_BACKEND_H_
