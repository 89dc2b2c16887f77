#ifndef GRAPHOPT_SERVICE_OPTIMIZER_H_
#define GRAPHOPT_SERVICE_OPTIMIZER_H_

#include "absl/status/statusor.h"
#include "graph/op_registry.h"
#include "passes/pass.h"
#include "proto/optimizer.pb.h"
#include "service/blob_store.h"

namespace graphopt {

// The request handling shared by the gRPC server and the CLI's embedded mode: turns an
// OptimizeRequest into an OptimizeResponse with the IR, the verifier and the pass pipeline.
// Stateless apart from the registries it reads; safe to call from many threads at once.
class Optimizer {
 public:
  // Both registries must outlive the Optimizer and must not be mutated while it is used.
  // `blobs` (optional, thread-safe, must outlive the Optimizer) resolves tensors that refer to
  // content-addressed blobs; without it such references are refused.
  Optimizer(const OpRegistry* ops, const PassRegistry* passes, BlobStore* blobs = nullptr)
      : ops_(ops), passes_(passes), blobs_(blobs) {}

  // The model comes as request.graph or as request.onnx_model (a serialized ONNX ModelProto);
  // the result is written in request.result_format (default: the input's format).
  // Errors: INVALID_ARGUMENT for a malformed graph or ONNX model (naming the node/value/
  // tensor), both graph and onnx_model given, an unknown option key, a bad opt_level, both
  // passes and opt_level given, a negative dim binding, a malformed blob digest or a blob whose
  // size does not match its tensor; UNIMPLEMENTED for ONNX parts graphopt does not carry
  // (sequence values, local functions, ...); NOT_FOUND for an unknown pass; FAILED_PRECONDITION
  // naming the tensor for a blob the store does not hold. Takes the request by value so a large
  // model can be moved in.
  absl::StatusOr<v1::OptimizeResponse> Optimize(v1::OptimizeRequest request) const;

  v1::ListPassesResponse ListPasses() const;
  v1::ListOpsResponse ListOps(const v1::ListOpsRequest& request) const;

 private:
  const OpRegistry* ops_;
  const PassRegistry* passes_;
  BlobStore* blobs_;
};

}  // namespace graphopt

#endif  // GRAPHOPT_SERVICE_OPTIMIZER_H_
