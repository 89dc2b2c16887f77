#ifndef GRAPHOPT_SERVER_OPTIMIZER_SERVICE_H_
#define GRAPHOPT_SERVER_OPTIMIZER_SERVICE_H_

#include <atomic>
#include <memory>
#include <string>

#include "grpcpp/grpcpp.h"
#include "proto/optimizer.grpc.pb.h"
#include "server/rpc_call.h"
#include "server/work_queue.h"
#include "service/blob_store.h"
#include "service/optimizer.h"
#include "spdlog/logger.h"

namespace graphopt {

// Per-call limits of the blob RPCs.
struct BlobRpcLimits {
  // Most digests one HasBlobs request may name.
  int max_digests_per_request = 100000;
  // Most blobs one PutBlobs call may upload.
  int max_blobs_per_upload = 100000;
  // PutBlobs streams open at once, all tenants together (each also takes one of its tenant's
  // concurrency slots).
  int max_uploads = 16;
};

// Where the service's work runs (see server/rpc_call.h). Null queues: the service makes its
// own small ones.
struct OptimizerQueues {
  // Optimize.
  WorkQueue* optimize = nullptr;
  // RegisterOps, UnregisterOps (validation, compilation, the op store's file).
  WorkQueue* control = nullptr;
  // PutBlobs' chunks (copying and hashing).
  WorkQueue* upload = nullptr;
  // HasBlobs when the blob store has a fetcher (blobs copied from other replicas). Kept apart
  // from `upload`, which is sized for one chunk per open upload.
  WorkQueue* fetch = nullptr;
};

// The graphopt.v1.GraphOptimizer gRPC service (callback API): a thin adapter over
// graphopt::Optimizer and the blob store, served through ServeUnary (server/rpc_call.h), which
// authenticates the caller, applies the tenant's quotas, queues the work and converts the
// status. Every call is on behalf of the caller's tenant; one log line per call.
//
// Access: every method needs a tenant credential (an admin one acts for the tenant its
// "graphopt-tenant" metadata names). Optimize runs on the optimize queue, RegisterOps and
// UnregisterOps on the control queue; the listings and HasBlobs are answered on gRPC's
// thread. HasBlobs and PutBlobs serve the tenant's namespace of the blob store `blobs`;
// without one (null) they answer UNIMPLEMENTED.
// Every method is registered raw (server/rpc_call.h, ServeRaw): requests are parsed after
// admission, on the work's own thread.
using OptimizerServiceBase = v1::GraphOptimizer::WithRawCallbackMethod_Optimize<
    v1::GraphOptimizer::WithRawCallbackMethod_ListPasses<
        v1::GraphOptimizer::WithRawCallbackMethod_ListOps<
            v1::GraphOptimizer::WithRawCallbackMethod_RegisterOps<
                v1::GraphOptimizer::WithRawCallbackMethod_UnregisterOps<
                    v1::GraphOptimizer::WithRawCallbackMethod_HasBlobs<
                        v1::GraphOptimizer::WithRawCallbackMethod_PutBlobs<
                            v1::GraphOptimizer::Service>>>>>>>;

class OptimizerService final : public OptimizerServiceBase {
 public:
  // `optimizer`, `env`, `blobs` (when given) and the queues must outlive the service.
  OptimizerService(const Optimizer* optimizer, RpcEnvironment* env, BlobStore* blobs,
                   BlobRpcLimits blob_limits, OptimizerQueues queues);
  // For tests and single-user setups: an environment of its own that takes the tenant from the
  // "graphopt-tenant" metadata (as an --insecure server without tokens does), no quotas, and
  // queues of its own.
  OptimizerService(const Optimizer* optimizer, std::shared_ptr<spdlog::logger> logger,
                   BlobStore* blobs = nullptr, BlobRpcLimits blob_limits = BlobRpcLimits());
  ~OptimizerService() override;

  OptimizerService(const OptimizerService&) = delete;
  OptimizerService& operator=(const OptimizerService&) = delete;

  grpc::ServerUnaryReactor* Optimize(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ListPasses(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ListOps(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* RegisterOps(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* UnregisterOps(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;

  // The digests of the request the tenant's namespace lacks (each once, in request order) and
  // the bytes the tenant may still upload. INVALID_ARGUMENT naming a malformed digest or for
  // more digests than BlobRpcLimits allows. When the store has a fetcher (server replicas
  // sharing blobs), missing blobs another replica holds are fetched first, on the fetch queue.
  grpc::ServerUnaryReactor* HasBlobs(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;

  // Receives blobs chunk by chunk (see BlobChunk) straight into the tenant's namespace. The
  // sequence is checked strictly: INVALID_ARGUMENT naming the blob and the byte offsets for a
  // blob whose first chunk lacks digest or total_size, data past total_size, a new digest
  // before the previous blob is complete, a stream that ends inside a blob, or data that hashes
  // to another digest; RESOURCE_EXHAUSTED when a blob does not fit in the tenant's quota or the
  // store, or when max_uploads streams are open. Blobs completed before an error stay stored;
  // an incomplete or bad one is dropped. Data of a blob the tenant already holds is read and
  // discarded.
  grpc::ServerReadReactor<grpc::ByteBuffer>* PutBlobs(grpc::CallbackServerContext* context,
                                                     grpc::ByteBuffer* response) override;

 private:
  class BlobUpload;

  void MakePolicies();

  const Optimizer* optimizer_;
  // Set by the single-user constructor: the environment and queues it owns.
  std::unique_ptr<RpcEnvironment> owned_env_;
  std::unique_ptr<WorkQueue> owned_optimize_, owned_control_, owned_upload_, owned_fetch_;
  RpcEnvironment* env_;
  BlobStore* blobs_;
  BlobRpcLimits blob_limits_;
  OptimizerQueues queues_;
  std::atomic<int> uploads_{0};
  MethodPolicy optimize_policy_, list_passes_policy_, list_ops_policy_, register_policy_,
      unregister_policy_, has_blobs_policy_, put_blobs_policy_;
};

}  // namespace graphopt

#endif  // GRAPHOPT_SERVER_OPTIMIZER_SERVICE_H_
