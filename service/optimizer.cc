#include "service/optimizer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/proto_convert.h"
#include "passes/pipeline.h"

namespace graphopt {

absl::StatusOr<v1::OptimizeResponse> Optimizer::Optimize(v1::OptimizeRequest request) const {
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
        PipelineForLevel(pipeline.has_opt_level() ? pipeline.opt_level() : 1);
    if (!level.ok()) return level.status();
    specs = std::move(*level);
  }

  PipelineOptions options;
  options.verify_each_pass = request.options().verify_each_pass();
  for (const auto& [symbol, size] : request.dim_bindings()) {
    options.dim_bindings[symbol] = size;
  }

  absl::StatusOr<Graph> graph = GraphFromProto(std::move(*request.mutable_graph()));
  if (!graph.ok()) return graph.status();
  absl::StatusOr<PipelineResult> result = RunPipeline(*graph, specs, *passes_, *ops_, options);
  if (!result.ok()) return result.status();

  v1::OptimizeResponse response;
  ToProtoOptions to_proto;
  to_proto.value_info = !request.options().strip_value_info();
  *response.mutable_graph() = GraphToProto(*graph, to_proto);
  for (PassRun& run : result->runs) {
    v1::PassReport* r = response.add_reports();
    r->set_name(run.name);
    r->set_wall_time_us(run.wall_time_us);
    r->set_changed(run.changed);
    r->set_nodes_before(run.nodes_before);
    r->set_nodes_after(run.nodes_after);
    for (std::string& m : run.messages) r->add_messages(std::move(m));
    r->set_added_for(run.added_for);
    r->set_verify_time_us(run.verify_time_us);
  }
  response.set_total_time_us(result->total_time_us);
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

v1::ListOpsResponse Optimizer::ListOps(const v1::ListOpsRequest& request) const {
  v1::ListOpsResponse response;
  for (const OpDef* op : ops_->List()) {
    const v1::OpDescriptor& d = op->descriptor;
    if (!request.domain().empty() && d.domain() != request.domain()) continue;
    if (!request.name().empty() && d.name() != request.name()) continue;
    *response.add_ops() = d;
  }
  return response;
}

}  // namespace graphopt
