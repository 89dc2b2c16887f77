#ifndef GRAPHOPT_SERVICE_OPTIMIZER_H_
#define GRAPHOPT_SERVICE_OPTIMIZER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/op_registry.h"
#include "passes/pass.h"
#include "passes/pipeline.h"
#include "proto/optimizer.pb.h"
#include "service/blob_store.h"
#include "service/op_store.h"
#include "service/result_cache.h"
#include "service/tenant.h"
#include "service/verify.h"
#include "util/stop_token.h"

namespace graphopt {

// The request handling shared by the gRPC server and the CLI's embedded mode: turns an
// OptimizeRequest into an OptimizeResponse with the IR, the verifier and the pass pipeline, and
// serves the op registration calls over an OpStore. Every call is on behalf of a tenant (a
// name ValidateTenantName accepts; kDefaultTenant when the caller names none), which sees the
// builtin ops and its own registered ops. Safe to call from many threads at once.
class Optimizer {
 public:
  // Over an op store (its builtins and per-tenant ops). `ops`, `passes` and `blobs` (optional,
  // thread-safe) must outlive the Optimizer. `blobs` resolves tensors that refer to
  // content-addressed blobs; without it such references are refused.
  Optimizer(OpStore* ops, const PassRegistry* passes, BlobStore* blobs = nullptr);
  // Over a fixed registry of builtins, with an in-memory op store of its own (registrations
  // are not persisted). The registry must outlive the Optimizer and not change.
  Optimizer(const OpRegistry* ops, const PassRegistry* passes, BlobStore* blobs = nullptr);

  // The model comes as request.graph or as request.onnx_model (a serialized ONNX ModelProto);
  // the result is written in request.result_format (default: the input's format). The ops are
  // the tenant's snapshot at the start of the call with request.ops on top (checked as
  // RegisterOps checks them, visible to this request only).
  // Errors: INVALID_ARGUMENT for a malformed tenant, a refused request op (naming it as
  // "ops[i]: op domain::name: ..."), a malformed graph or ONNX model (naming the node/value/
  // tensor; an op the tenant does not know is "unknown op 'domain::name'"), both graph and
  // onnx_model given, an unknown option key, a bad opt_level, both passes and opt_level given,
  // a negative dim binding, a malformed blob digest or a blob whose size does not match its
  // tensor; UNIMPLEMENTED for ONNX parts graphopt does not carry (sequence values, local
  // functions, ...) and request ops with rules this server cannot compile; NOT_FOUND for an
  // unknown pass; FAILED_PRECONDITION naming the tensor for a blob the store does not hold.
  // Takes the request by value so a large model can be moved in. `stop` (may be null) ends
  // the work early with its status (CANCELLED, DEADLINE_EXCEEDED naming the stage or pass).
  //
  // Result cache (set_result_cache): unless options.no_cache or the model alone is larger than
  // a tenant's share of the cache (its result could not be kept), a request whose key
  // (OptimizeCacheKey: model, pipeline, options, bindings, format, the tenant's op set, the
  // request's ops, graphopt's version) was answered before gets that response again (its pass
  // reports are the ones of the run that made it; cache says HIT and total_time_us is this
  // call's). Its blob references are checked again, with the errors above.
  // Verification (options.verify.enabled, see service/verify.h) runs on every request, hit or
  // miss, on the result as it is sent (the ONNX bytes or the graph), within the verify limits
  // and `stop`; its time is part of total_time_us. FAILED_PRECONDITION naming the outputs over
  // tolerance when it fails; the errors of VerifyOptimization when it cannot run.
  absl::StatusOr<v1::OptimizeResponse> Optimize(v1::OptimizeRequest request,
                                                absl::string_view tenant = kDefaultTenant,
                                                const StopToken* stop = nullptr) const;

  v1::ListPassesResponse ListPasses() const;
  // The tenant's ops (builtins and registered, or registered only), filtered by domain and
  // name, sorted by (domain, name); `tenant` is echoed in the response.
  v1::ListOpsResponse ListOps(const v1::ListOpsRequest& request,
                              absl::string_view tenant = kDefaultTenant) const;

  // See OpStore::Register and OpStore::Unregister for the rules and errors.
  absl::StatusOr<v1::RegisterOpsResponse> RegisterOps(
      const v1::RegisterOpsRequest& request, absl::string_view tenant = kDefaultTenant) const;
  absl::StatusOr<v1::UnregisterOpsResponse> UnregisterOps(
      const v1::UnregisterOpsRequest& request, absl::string_view tenant = kDefaultTenant) const;

  OpStore& op_store() const { return *ops_; }

  // The server's ceilings on the budget options a request may set (passes/pipeline.h);
  // DefaultOptionCeilings() until set. Set before serving.
  void set_option_ceilings(OptionCeilings ceilings) { ceilings_ = std::move(ceilings); }

  // Told each pass's name and wall time after every pipeline that ran to the end (for the
  // per-pass time metrics); runs on the calling thread, so it must be cheap and thread-safe.
  // Set before serving.
  using PassObserver = std::function<void(const std::string& pass, int64_t wall_time_us)>;
  void set_pass_observer(PassObserver observer) { pass_observer_ = std::move(observer); }

  // The result cache (null: none, every response says CACHE_RESULT_NOT_USED); thread-safe, must
  // outlive the Optimizer. Set before serving.
  void set_result_cache(ResultCache* cache) { cache_ = cache; }
  // The bounds of verification on request. Set before serving.
  void set_verify_limits(VerifyLimits limits) { verify_limits_ = limits; }

 private:
  // The pipeline for `request` over `snapshot` with the request's ops on top; the blob digests
  // its model refers to go to `blob_digests` when not null.
  absl::StatusOr<v1::OptimizeResponse> OptimizeUncached(
      v1::OptimizeRequest request, absl::string_view tenant,
      std::shared_ptr<const OpSnapshot> snapshot, const StopToken* stop,
      std::vector<std::string>* blob_digests) const;
  // Runs verification of `response` against the model of the request it answers.
  absl::StatusOr<v1::VerifyReport> Verify(v1::Graph original, std::string original_onnx,
                                          const v1::OptimizeResponse& response,
                                          const v1::VerifyOptions& options,
                                          const std::map<std::string, int64_t>& dim_bindings,
                                          absl::string_view tenant, const StopToken* stop) const;

  // Set by the registry constructor: the store it wraps.
  std::unique_ptr<OpStore> owned_ops_;
  OpStore* ops_;
  const PassRegistry* passes_;
  BlobStore* blobs_;
  OptionCeilings ceilings_ = DefaultOptionCeilings();
  PassObserver pass_observer_;
  ResultCache* cache_ = nullptr;
  VerifyLimits verify_limits_;
};

}  // namespace graphopt

#endif  // GRAPHOPT_SERVICE_OPTIMIZER_H_
