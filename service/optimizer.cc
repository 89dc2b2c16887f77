#include "service/optimizer.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "graph/proto_convert.h"
#include "graph/types.h"
#include "onnx_io/onnx_export.h"
#include "onnx_io/onnx_import.h"
#include "passes/cost_report.h"
#include "passes/pipeline.h"
#include "service/blob_refs.h"
#include "service/digest.h"

namespace graphopt {

Optimizer::Optimizer(OpStore* ops, const PassRegistry* passes, BlobStore* blobs)
    : ops_(ops), passes_(passes), blobs_(blobs) {}

Optimizer::Optimizer(const OpRegistry* ops, const PassRegistry* passes, BlobStore* blobs)
    : owned_ops_(std::make_unique<OpStore>(ops)),
      ops_(owned_ops_.get()),
      passes_(passes),
      blobs_(blobs) {}

absl::StatusOr<v1::OptimizeResponse> Optimizer::Optimize(v1::OptimizeRequest request,
                                                         absl::string_view tenant,
                                                         const StopToken* stop) const {
  if (absl::Status s = ValidateTenantName(tenant); !s.ok()) return s;
  const absl::Time start = absl::Now();
  // The tenant's ops as they are now; registrations during the call do not affect it.
  std::shared_ptr<const OpSnapshot> snapshot = ops_->Snapshot(tenant);
  // Verification is not part of the result: it is taken out of the request and runs on every
  // request, answered from the cache or not.
  v1::VerifyOptions verify;
  if (request.options().has_verify()) {
    verify = std::move(*request.mutable_options()->mutable_verify());
    request.mutable_options()->clear_verify();
  }
  v1::Graph original;
  std::string original_onnx;
  std::map<std::string, int64_t> bindings(request.dim_bindings().begin(),
                                          request.dim_bindings().end());
  if (verify.enabled()) {
    if (absl::Status s = CheckVerifyOptions(verify); !s.ok()) return s;
    // The pipeline consumes the model; verification runs the one the client sent.
    if (!request.onnx_model().empty()) {
      original_onnx = request.onnx_model();
    } else {
      original = request.graph();
    }
  }

  // A model larger than a tenant's share of the cache would give a result too large to keep
  // (the weights come back with it): such a request is not hashed and looked up for nothing.
  const bool use_cache =
      cache_ != nullptr && !request.options().no_cache() &&
      cache_->Admits(request.onnx_model().empty()
                         ? static_cast<int64_t>(request.graph().ByteSizeLong())
                         : static_cast<int64_t>(request.onnx_model().size()));
  std::string key;
  std::shared_ptr<const CachedResult> cached;
  if (use_cache) {
    key = OptimizeCacheKey(&request, snapshot->digest());
    cached = cache_->Lookup(tenant, key);
  }
  v1::OptimizeResponse response;
  if (cached != nullptr) {
    // The same answer as without the cache when the tenant no longer holds a weight.
    for (const std::string& digest : cached->blob_digests) {
      if (blobs_ == nullptr || blobs_->LookupOrFetch(tenant, digest) == nullptr) {
        return absl::FailedPreconditionError(absl::StrCat(
            "the model refers to blob ", digest, ", which tenant '", tenant,
            "' does not hold on this server: upload it with PutBlobs first"));
      }
    }
    response = cached->response;
    response.set_cache(v1::CACHE_RESULT_HIT);
  } else {
    std::vector<std::string> digests;
    absl::StatusOr<v1::OptimizeResponse> result = OptimizeUncached(
        std::move(request), tenant, std::move(snapshot), stop, use_cache ? &digests : nullptr);
    if (!result.ok()) return result.status();
    response = *std::move(result);
    if (use_cache && cache_->Admits(static_cast<int64_t>(response.ByteSizeLong()))) {
      auto entry = std::make_shared<CachedResult>();
      entry->response = response;
      entry->blob_digests = std::move(digests);
      cache_->Insert(tenant, key, std::move(entry));
    }
    if (use_cache) response.set_cache(v1::CACHE_RESULT_MISS);
  }

  if (verify.enabled()) {
    const absl::Time verify_start = absl::Now();
    absl::StatusOr<v1::VerifyReport> report =
        Verify(std::move(original), std::move(original_onnx), response, verify, bindings, tenant,
               stop);
    if (!report.ok()) return report.status();
    if (absl::Status failed = VerifyFailure(*report); !failed.ok()) return failed;
    *response.mutable_verification() = *std::move(report);
    if (cached == nullptr) {
      response.set_total_time_us(response.total_time_us() +
                                 absl::ToInt64Microseconds(absl::Now() - verify_start));
    }
  }
  if (cached != nullptr) response.set_total_time_us(absl::ToInt64Microseconds(absl::Now() - start));
  return response;
}

absl::StatusOr<v1::VerifyReport> Optimizer::Verify(
    v1::Graph original, std::string original_onnx, const v1::OptimizeResponse& response,
    const v1::VerifyOptions& options, const std::map<std::string, int64_t>& dim_bindings,
    absl::string_view tenant, const StopToken* stop) const {
  if (absl::Status s = CheckStop(stop, "verification"); !s.ok()) return s;
  if (!original_onnx.empty()) {
    absl::StatusOr<v1::Graph> imported = GraphFromOnnxBytes(std::move(original_onnx));
    if (!imported.ok()) return imported.status();
    original = *std::move(imported);
  }
  v1::Graph optimized;
  if (!response.onnx_model().empty()) {
    absl::StatusOr<v1::Graph> imported = GraphFromOnnxBytes(response.onnx_model());
    if (!imported.ok()) {
      return absl::Status(imported.status().code(),
                          absl::StrCat("verify: reading the optimized ONNX model back: ",
                                       imported.status().message()));
    }
    optimized = *std::move(imported);
  } else {
    optimized = response.graph();
  }
  // The runs need the weights themselves.
  for (v1::Graph* g : {&original, &optimized}) {
    if (absl::Status s = InlineBlobReferences(g, blobs_, tenant); !s.ok()) return s;
  }
  return VerifyOptimization(std::move(original), std::move(optimized), options, dim_bindings,
                            verify_limits_, stop);
}

absl::StatusOr<v1::OptimizeResponse> Optimizer::OptimizeUncached(
    v1::OptimizeRequest request, absl::string_view tenant,
    std::shared_ptr<const OpSnapshot> snapshot, const StopToken* stop,
    std::vector<std::string>* blob_digests) const {
  absl::StatusOr<std::shared_ptr<const OpRegistry>> ops =
      ops_->LayerRequestOps(std::move(snapshot), request.ops());
  if (!ops.ok()) return ops.status();
  const v1::Pipeline& pipeline = request.pipeline();
  std::vector<PassSpec> specs;
  if (pipeline.passes_size() > 0) {
    if (pipeline.has_opt_level()) {
      return absl::InvalidArgumentError(
          "pipeline: give either passes or opt_level, not both");
    }
    for (int i = 0; i < pipeline.passes_size(); ++i) {
      const v1::PassSpec& p = pipeline.passes(i);
      if (p.name().empty()) {
        return absl::InvalidArgumentError(absl::StrCat("pipeline.passes[", i, "]: empty name"));
      }
      // Sorted option order keeps the run deterministic.
      specs.push_back({p.name(), PassOptions(p.options().begin(), p.options().end())});
    }
  } else {
    absl::StatusOr<std::vector<PassSpec>> level =
        PipelineForLevel(*passes_, pipeline.has_opt_level() ? pipeline.opt_level()
                                                            : kDefaultOptLevel);
    if (!level.ok()) return level.status();
    specs = std::move(*level);
  }

  PipelineOptions options;
  options.stop = stop;
  options.option_ceilings = ceilings_;
  options.verify_each_pass = request.options().verify_each_pass();
  for (const auto& [symbol, size] : request.dim_bindings()) {
    options.dim_bindings[symbol] = size;
  }

  // The model: graphopt's own graph or a serialized ONNX ModelProto.
  const bool onnx_in = !request.onnx_model().empty();
  if (onnx_in && request.has_graph()) {
    return absl::InvalidArgumentError("give either graph or onnx_model, not both");
  }
  v1::ModelFormat result_format = request.result_format();
  if (!v1::ModelFormat_IsValid(result_format)) {
    return absl::InvalidArgumentError(
        absl::StrCat("result_format: unknown value ", static_cast<int>(result_format)));
  }
  if (result_format == v1::MODEL_FORMAT_UNSPECIFIED) {
    result_format = onnx_in ? v1::MODEL_FORMAT_ONNX : v1::MODEL_FORMAT_GRAPH;
  }
  v1::Graph input;
  if (onnx_in) {
    absl::StatusOr<v1::Graph> imported = GraphFromOnnxBytes(std::move(*request.mutable_onnx_model()));
    if (!imported.ok()) {
      return absl::Status(imported.status().code(),
                          absl::StrCat("onnx_model: ", imported.status().message()));
    }
    input = std::move(*imported);
  } else {
    input = std::move(*request.mutable_graph());
  }
  std::vector<std::shared_ptr<const std::string>> pinned_blobs;
  if (absl::Status s = CheckBlobReferences(input, blobs_, tenant, &pinned_blobs); !s.ok()) return s;
  if (blob_digests != nullptr) *blob_digests = BlobDigests(input);

  if (absl::Status s = CheckStop(stop, "reading the model"); !s.ok()) return s;
  absl::StatusOr<Graph> graph = GraphFromProto(std::move(input));
  if (!graph.ok()) return graph.status();
  if (absl::Status s = CheckStop(stop, "converting the model"); !s.ok()) return s;
  absl::StatusOr<PipelineResult> result = RunPipeline(*graph, specs, *passes_, **ops, options);
  if (!result.ok()) return result.status();

  if (absl::Status s = CheckStop(stop, "the end of the pipeline"); !s.ok()) return s;
  v1::OptimizeResponse response;
  if (request.options().cost_estimate() != v1::COST_ESTIMATE_NONE) {
    absl::StatusOr<v1::CostReport> cost =
        MakeCostReport(*graph, **ops, request.options().cost_estimate());
    if (!cost.ok()) return cost.status();
    *response.mutable_cost() = *std::move(cost);
  }
  ToProtoOptions to_proto;
  // Portable ONNX bodies read value types; the exporter strips them after.
  const bool portable_onnx =
      result_format == v1::MODEL_FORMAT_ONNX && !request.options().native_ops();
  to_proto.value_info = !request.options().strip_value_info() || portable_onnx;
  v1::Graph optimized = GraphToProto(*std::move(graph), to_proto);
  if (result_format == v1::MODEL_FORMAT_ONNX) {
    OnnxExportOptions export_options;
    export_options.native_ops = request.options().native_ops();
    export_options.strip_value_info = request.options().strip_value_info();
    absl::StatusOr<std::string> onnx = GraphToOnnxBytes(std::move(optimized), export_options);
    if (!onnx.ok()) {
      return absl::Status(onnx.status().code(),
                          absl::StrCat("writing the result as ONNX: ", onnx.status().message()));
    }
    response.set_onnx_model(std::move(*onnx));
  } else {
    *response.mutable_graph() = std::move(optimized);
  }
  for (PassRun& run : result->runs) {
    if (pass_observer_) pass_observer_(run.name, run.wall_time_us);
    v1::PassReport* r = response.add_reports();
    r->set_name(run.name);
    r->set_wall_time_us(run.wall_time_us);
    r->set_changed(run.changed);
    r->set_nodes_before(run.nodes_before);
    r->set_nodes_after(run.nodes_after);
    for (std::string& m : run.messages) r->add_messages(std::move(m));
    r->set_added_for(run.added_for);
    r->set_verify_time_us(run.verify_time_us);
    r->set_round(run.round);
  }
  response.set_total_time_us(result->total_time_us);
  response.set_fixpoint_rounds(result->fixpoint_rounds);
  return response;
}

v1::ListPassesResponse Optimizer::ListPasses() const {
  v1::ListPassesResponse response;
  for (const PassInfo* info : passes_->List()) {
    v1::PassInfo* p = response.add_passes();
    p->set_name(info->name);
    p->set_description(info->description);
    for (Analysis a : info->requires_analyses.ToVector()) {
      p->add_requires(std::string(AnalysisName(a)));
    }
    for (Analysis a : info->provides.ToVector()) p->add_provides(std::string(AnalysisName(a)));
    for (const auto& [key, doc] : info->options) (*p->mutable_options())[key] = doc;
    p->set_min_opt_level(info->min_opt_level);
  }
  return response;
}

v1::ListOpsResponse Optimizer::ListOps(const v1::ListOpsRequest& request,
                                       absl::string_view tenant) const {
  v1::ListOpsResponse response;
  response.set_tenant(std::string(tenant));
  for (v1::OpDescriptor& d : ops_->List(tenant, request.registered_only())) {
    if (!request.domain().empty() && d.domain() != request.domain()) continue;
    if (!request.name().empty() && d.name() != request.name()) continue;
    *response.add_ops() = std::move(d);
  }
  return response;
}

absl::StatusOr<v1::RegisterOpsResponse> Optimizer::RegisterOps(
    const v1::RegisterOpsRequest& request, absl::string_view tenant) const {
  absl::StatusOr<std::vector<std::string>> lines =
      ops_->Register(tenant, request.ops(), request.validate_only());
  if (!lines.ok()) return lines.status();
  v1::RegisterOpsResponse response;
  for (std::string& line : *lines) response.add_results(std::move(line));
  response.set_tenant(std::string(tenant));
  return response;
}

absl::StatusOr<v1::UnregisterOpsResponse> Optimizer::UnregisterOps(
    const v1::UnregisterOpsRequest& request, absl::string_view tenant) const {
  absl::StatusOr<std::vector<std::string>> lines = ops_->Unregister(tenant, request.ops());
  if (!lines.ok()) return lines.status();
  v1::UnregisterOpsResponse response;
  for (std::string& line : *lines) response.add_unregistered(std::move(line));
  response.set_tenant(std::string(tenant));
  return response;
}

}  // namespace graphopt
