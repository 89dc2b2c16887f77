#include "client/grad_command.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/cli_errors.h"
#include "client/cost_table.h"
#include "client/graph_io.h"
#include "onnx_io/external_data.h"
#include "client/report_table.h"
#include "onnx/onnx_pb.h"
#include "onnx_io/onnx_import.h"
#include "util/file_util.h"

namespace graphopt {
namespace {


bool IsOnnxPath(absl::string_view path) { return absl::EndsWithIgnoreCase(path, ".onnx"); }

// The model as a graphopt graph: read here, since --wrt params/inputs and the names checked
// need its values before anything is sent.
absl::StatusOr<v1::Graph> ReadModel(const std::string& path) {
  if (!IsOnnxPath(path)) return ReadGraphFile(path);
  return GraphFromOnnxFile(path);
}

// Whether the graph has ONNX RNN, GRU or LSTM nodes, which have no gradient of their own: the
// gradient pass differentiates them through their unrolling (the decompose_rnn pass).
bool HasRecurrentNodes(const v1::Graph& graph) {
  for (const v1::Node& n : graph.nodes()) {
    if ((n.domain().empty() || n.domain() == "ai.onnx") &&
        (n.op_type() == "LSTM" || n.op_type() == "GRU" || n.op_type() == "RNN")) {
      return true;
    }
  }
  return false;
}

void Progress(const GradArgs& args, const std::string& line) {
  if (!args.quiet) std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace

CLI::App* AddGradCommand(CLI::App& app, GradArgs* args) {
  CLI::App* grad = app.add_subcommand(
      "grad",
      "Differentiate a model: append the backward graph (gradients as outputs '<name>_grad'), "
      "then optimize it at -O (default 2). Seeds: --loss (the sum of its elements, seeded "
      "with ones) or --outputs (their gradients become inputs '<name>_grad'); without either, "
      "every graph output is seeded as with --outputs.");
  grad->add_option("input", args->input, "Input model file")->required();
  grad->add_option("-o,--output", args->output, "Output model file")->required();
  grad->add_option("--loss", args->names.loss, "Loss values, comma-separated")
      ->delimiter(',')
      ->allow_extra_args(false);
  grad->add_option("--wrt", args->names.wrt,
                   "Values to differentiate with respect to, comma-separated; 'params' is "
                   "every floating-point initializer, 'inputs' every floating-point graph "
                   "input")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->required();
  grad->add_option("--outputs", args->names.outputs,
                   "Values whose gradients are given as new inputs '<name>_grad' "
                   "(vector-Jacobian products)")
      ->delimiter(',')
      ->allow_extra_args(false);
  grad->add_option("--stop-gradient", args->names.stop_gradient,
                   "Values treated as constants, comma-separated")
      ->delimiter(',')
      ->allow_extra_args(false);
  grad->add_option("--suffix", args->suffix,
                   "Name suffix of the gradient outputs and of the --outputs seed inputs "
                   "(another one for a second differentiation, e.g. _hvp)")
      ->capture_default_str();
  grad->add_option("-O,--opt-level", args->opt_level,
                   "Optimization level of the differentiated graph (0 only verifies)")
      ->capture_default_str()
      ->check(CLI::Range(0, 3));
  grad->add_option("--bind", args->bindings, "Bind a symbolic dim: symbol=N (repeatable)")
      ->delimiter(',')
      ->allow_extra_args(false);
  grad->add_flag("--verify-each-pass", args->verify_each_pass,
                 "Run the verifier after every pass that changed the graph");
  grad->add_option("--report-json", args->report_json,
                   "Also write the per-pass report as JSON to this file");
  grad->add_flag("-q,--quiet", args->quiet, "Print neither progress nor the report");
  return grad;
}

int RunGrad(const GradArgs& args, OptimizerBackend& backend) {
  absl::StatusOr<std::map<std::string, int64_t>> bindings = ParseDimBindings(args.bindings);
  if (!bindings.ok()) return UsageError(std::string(bindings.status().message()));
  absl::StatusOr<v1::Graph> model = ReadModel(args.input);
  if (!model.ok()) return ReportError(model.status());
  absl::StatusOr<std::map<std::string, std::string>> options =
      GradientPassOptions(*model, args.names);
  if (!options.ok()) return ReportError(options.status());
  if (args.suffix.empty()) return UsageError("--suffix is empty");
  (*options)["suffix"] = args.suffix;
  const std::string& wrt = options->at("wrt");
  const int num_wrt = 1 + static_cast<int>(std::count(wrt.begin(), wrt.end(), ';'));
  std::string seeds = "every graph output";
  if (options->count("loss") > 0 || options->count("outputs") > 0) {
    std::vector<std::string> parts;
    if (options->count("loss") > 0) parts.push_back(absl::StrCat("loss ", options->at("loss")));
    if (options->count("outputs") > 0) {
      parts.push_back(absl::StrCat("outputs ", options->at("outputs")));
    }
    seeds = absl::StrJoin(parts, ", ");
  }
  Progress(args, absl::StrCat("differentiating ", args.input, " (", model->nodes_size(),
                              " nodes): ", seeds, " with respect to ", num_wrt, " value",
                              num_wrt == 1 ? "" : "s"));

  // First call: the backward graph. Recurrent ops are differentiated through their unrolled
  // steps, so a model holding one gets the decompose_rnn pass first where the optimizer has it.
  v1::OptimizeRequest request;
  if (HasRecurrentNodes(*model)) {
    absl::StatusOr<v1::ListPassesResponse> passes = backend.ListPasses();
    if (!passes.ok()) return ReportError(passes.status());
    for (const v1::PassInfo& pass : passes->passes()) {
      if (pass.name() == "decompose_rnn") {
        request.mutable_pipeline()->add_passes()->set_name(pass.name());
      }
    }
  }
  v1::PassSpec* gradient = request.mutable_pipeline()->add_passes();
  gradient->set_name("gradient");
  for (const auto& [key, value] : *options) (*gradient->mutable_options())[key] = value;
  for (const auto& [symbol, size] : *bindings) (*request.mutable_dim_bindings())[symbol] = size;
  request.mutable_options()->set_verify_each_pass(args.verify_each_pass);
  request.set_result_format(v1::MODEL_FORMAT_GRAPH);
  *request.mutable_graph() = *std::move(model);
  absl::Time start = absl::Now();
  absl::StatusOr<v1::OptimizeResponse> differentiated = backend.Optimize(std::move(request));
  if (!differentiated.ok()) return ReportError(differentiated.status());
  Progress(args, absl::StrCat("backward graph built: ", differentiated->graph().nodes_size(),
                              " nodes in ", absl::FormatDuration(absl::Now() - start),
                              "; optimizing at -O", args.opt_level));

  // Second call: the level's passes (at -O0 only the verifier, and the output format).
  v1::OptimizeRequest optimize;
  optimize.mutable_pipeline()->set_opt_level(args.opt_level);
  for (const auto& [symbol, size] : *bindings) (*optimize.mutable_dim_bindings())[symbol] = size;
  optimize.mutable_options()->set_verify_each_pass(args.verify_each_pass);
  if (!args.quiet || !args.report_json.empty()) {
    optimize.mutable_options()->set_cost_estimate(v1::COST_ESTIMATE_TOTALS);
  }
  const bool onnx_out = IsOnnxPath(args.output);
  optimize.set_result_format(onnx_out ? v1::MODEL_FORMAT_ONNX : v1::MODEL_FORMAT_GRAPH);
  // The pass names the gradient of each wrt value '<name><suffix>' (outputs, in wrt order).
  absl::flat_hash_set<std::string> expected;
  for (absl::string_view name : absl::StrSplit(wrt, ';')) {
    expected.insert(absl::StrCat(name, args.suffix));
  }
  std::vector<std::string> gradient_outputs;
  for (const v1::ValueInfo& out : differentiated->graph().outputs()) {
    if (expected.contains(out.name())) gradient_outputs.push_back(out.name());
  }
  *optimize.mutable_graph() = std::move(*differentiated->mutable_graph());
  start = absl::Now();
  absl::StatusOr<v1::OptimizeResponse> response = backend.Optimize(std::move(optimize));
  if (!response.ok()) return ReportError(response.status());

  std::optional<int64_t> nodes;
  if (onnx_out) {
    onnx::ModelProto written;
    if (written.ParseFromString(response->onnx_model())) nodes = written.graph().node_size();
    if (absl::Status s = WriteFileAtomically(args.output, response->onnx_model()); !s.ok()) {
      return ReportError(s);
    }
  } else {
    nodes = response->graph().nodes_size();
    if (absl::Status s = WriteGraphFile(args.output, response->graph()); !s.ok()) {
      return ReportError(s);
    }
  }
  // One report: the first call's passes, then the level's.
  v1::OptimizeResponse report;
  *report.mutable_reports() = differentiated->reports();
  for (const v1::PassReport& r : response->reports()) *report.add_reports() = r;
  report.set_total_time_us(differentiated->total_time_us() + response->total_time_us());
  report.set_fixpoint_rounds(response->fixpoint_rounds());
  if (response->has_cost()) *report.mutable_cost() = response->cost();
  if (!args.report_json.empty()) {
    if (absl::Status s = WriteFileAtomically(args.report_json, FormatReportJson(report, nodes));
        !s.ok()) {
      return ReportError(s);
    }
  }
  if (!args.quiet) {
    std::fputs(FormatPassReports(report).c_str(), stdout);
    if (report.has_cost()) std::fputs(FormatCostSummary(report.cost()).c_str(), stdout);
    std::printf("gradients: %s\n", absl::StrJoin(gradient_outputs, ", ").c_str());
    std::printf("wrote %s (%s nodes)\n", args.output.c_str(),
                nodes.has_value() ? absl::StrCat(*nodes).c_str() : "?");
  }
  return kExitOk;
}

}  // namespace graphopt
