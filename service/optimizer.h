#ifndef GRAPHOPT_SERVICE_OPTIMIZER_H_
#define GRAPHOPT_SERVICE_OPTIMIZER_H_

#include "absl/status/statusor.h"
#include "graph/op_registry.h"
#include "passes/pass.h"
#include "proto/optimizer.pb.h"

namespace graphopt {

// The request handling shared by the gRPC server and the CLI's embedded mode: turns an
// OptimizeRequest into an OptimizeResponse with the IR, the verifier and the pass pipeline.
// Stateless apart from the registries it reads; safe to call from many threads at once.
class Optimizer {
 public:
  // Both registries must outlive the Optimizer and must not be mutated while it is used.
  Optimizer(const OpRegistry* ops, const PassRegistry* passes) : ops_(ops), passes_(passes) {}

  // Errors: INVALID_ARGUMENT for a malformed graph (naming the node/value), an unknown option
  // key, a bad opt_level, both passes and opt_level given, a negative dim binding;
  // NOT_FOUND for an unknown pass. Takes the request by value so a large graph can be moved in.
  absl::StatusOr<v1::OptimizeResponse> Optimize(v1::OptimizeRequest request) const;

  v1::ListPassesResponse ListPasses() const;
  v1::ListOpsResponse ListOps(const v1::ListOpsRequest& request) const;

 private:
  const OpRegistry* ops_;
  const PassRegistry* passes_;
};

}  // namespace graphopt

#endif  // GRAPHOPT_SERVICE_OPTIMIZER_H_
