#ifndef GRAPHOPT_SERVER_OPTIMIZER_SERVICE_H_
#define GRAPHOPT_SERVER_OPTIMIZER_SERVICE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "proto/optimizer.grpc.pb.h"
#include "service/blob_store.h"
#include "service/optimizer.h"
#include "spdlog/logger.h"

namespace graphopt {

// The tenant a call is made for: the value of the "graphopt-tenant" metadata, kDefaultTenant
// when absent. INVALID_ARGUMENT for a malformed name or a key given more than once.
absl::StatusOr<std::string> TenantOf(const grpc::ServerContext& context);

// Per-call limits of the blob RPCs.
struct BlobRpcLimits {
  // Most digests one HasBlobs request may name.
  int max_digests_per_request = 100000;
  // Most blobs one PutBlobs call may upload.
  int max_blobs_per_upload = 100000;
};

// The graphopt.v1.GraphOptimizer gRPC service (synchronous API): a thin adapter over
// graphopt::Optimizer. absl::Status results become gRPC statuses here and nowhere else. Every
// call is logged to `logger` with its method, peer, tenant, node counts, duration and status
// (info for OK, warn otherwise). Thread-safe: gRPC may call it from any number of threads.
//
// Every call is on behalf of the tenant named by the request metadata "graphopt-tenant"
// (kTenantMetadataKey; kDefaultTenant when absent). A malformed name, or the key given more
// than once, fails the call with INVALID_ARGUMENT whatever the method.
//
// HasBlobs and PutBlobs serve the content-addressed weight store `blobs`; without one (null)
// they answer UNIMPLEMENTED.
class OptimizerService final : public v1::GraphOptimizer::Service {
 public:
  // `optimizer` and `blobs` (when given) must outlive the service; `logger` must not be null.
  OptimizerService(const Optimizer* optimizer, std::shared_ptr<spdlog::logger> logger,
                   BlobStore* blobs = nullptr, BlobRpcLimits blob_limits = BlobRpcLimits());

  OptimizerService(const OptimizerService&) = delete;
  OptimizerService& operator=(const OptimizerService&) = delete;

  grpc::Status Optimize(grpc::ServerContext* context, const v1::OptimizeRequest* request,
                        v1::OptimizeResponse* response) override;
  grpc::Status ListPasses(grpc::ServerContext* context, const v1::ListPassesRequest* request,
                          v1::ListPassesResponse* response) override;
  grpc::Status ListOps(grpc::ServerContext* context, const v1::ListOpsRequest* request,
                       v1::ListOpsResponse* response) override;
  grpc::Status RegisterOps(grpc::ServerContext* context, const v1::RegisterOpsRequest* request,
                           v1::RegisterOpsResponse* response) override;
  grpc::Status UnregisterOps(grpc::ServerContext* context,
                             const v1::UnregisterOpsRequest* request,
                             v1::UnregisterOpsResponse* response) override;

  // The digests of the request the store lacks (each once, in request order) and the bytes it
  // may still accept. INVALID_ARGUMENT naming a malformed digest or for more digests than
  // BlobRpcLimits allows.
  grpc::Status HasBlobs(grpc::ServerContext* context, const v1::HasBlobsRequest* request,
                        v1::HasBlobsResponse* response) override;

  // Receives blobs chunk by chunk (see BlobChunk) straight into the store. The sequence is
  // checked strictly: INVALID_ARGUMENT naming the blob and the byte offsets for a blob whose
  // first chunk lacks digest or total_size, data past total_size, a new digest before the
  // previous blob is complete, a stream that ends inside a blob, or data that hashes to another
  // digest; RESOURCE_EXHAUSTED when a blob does not fit in the store. Blobs completed before an
  // error stay stored; an incomplete or bad one is dropped. Data of a blob the store already
  // holds is read and discarded.
  grpc::Status PutBlobs(grpc::ServerContext* context,
                        grpc::ServerReader<v1::BlobChunk>* reader,
                        v1::PutBlobsResponse* response) override;

 private:
  // PutBlobs' work; fills `response` as blobs complete.
  absl::Status ReceiveBlobs(grpc::ServerContext& context,
                            grpc::ServerReader<v1::BlobChunk>& reader,
                            v1::PutBlobsResponse& response);

  const Optimizer* optimizer_;
  std::shared_ptr<spdlog::logger> logger_;
  BlobStore* blobs_;
  BlobRpcLimits blob_limits_;
};

}  // namespace graphopt

#endif  // GRAPHOPT_SERVER_OPTIMIZER_SERVICE_H_
