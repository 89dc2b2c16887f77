// graphopt: command-line client. Optimizes graph files in-process (the embedded default) or
// through a graphopt-server (--server), differentiates them (`grad`), and lists the passes and ops either one knows. Runs
// models in-process or, with --server, through the server's coordinator on a worker node
// (`run`), lists a server's workers (`workers`) and asks its health service (`health`). `token new` makes bearer tokens for a
// server's tokens file. Calls to a server carry --token (default: GRAPHOPT_TOKEN) and go over
// TLS when --tls-ca is given (client/credentials.h).
//
// Exit status: 0 on success, 1 when the request fails (the status code name and message are
// printed to stderr), 2 for usage errors.

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "client/backend.h"
#include "client/backend_args.h"
#include "client/cli_options.h"
#include "client/coordinator_client.h"
#include "client/credentials.h"
#include "client/cli_errors.h"
#include "client/grad_command.h"
#include "client/graph_io.h"
#include "client/health_check.h"
#include "client/model_summary.h"
#include "client/op_file.h"
#include "client/optimize_verify.h"
#include "client/progress.h"
#include "client/cost_table.h"
#include "client/report_table.h"
#include "client/run_model.h"
#include "graph/proto_convert.h"
#include "client/weights.h"
#include "google/protobuf/stubs/common.h"
#include "graph/proto_util.h"
#include "grpcpp/grpcpp.h"
#include "onnx/onnx_pb.h"
#include "onnx_io/external_data.h"
#include "onnx_io/onnx_export.h"
#include "onnx_io/onnx_import.h"
#include "proto/optimizer.pb.h"
#include "runtime/executor.h"
#include "runtime/kernels/cpu_kernels.h"
#include "runtime/npy.h"
#include "server/token_store.h"
#include "util/cpu_quota.h"
#include "util/file_util.h"
#include "util/malloc_tuning.h"
#include "util/mutex_mode.h"
#include "util/openmp_wait.h"
#include "util/version.h"

namespace graphopt {
namespace {



struct TokenNewArgs {
  std::string tenant;
  bool admin = false;
  std::string label;
};

// The most model bytes one request carries: protobuf's 2 GiB limit, less room for the rest.
constexpr int64_t kMaxRequestModelBytes = (int64_t{1} << 31) - (int64_t{64} << 20);

struct OptimizeArgs {
  BackendArgs backend;
  std::string input;
  std::string output;
  std::string passes;
  int opt_level = 2;
  bool has_opt_level = false;  // -O given
  std::vector<std::string> bindings;
  bool verify_each_pass = false;
  bool strip_value_info = false;
  bool native_ops = false;
  std::string report_json;
  bool quiet = false;
  // How many of the costliest nodes to list after the cost line (0: none).
  int cost_top = 0;
  std::string upload_weights = "auto";
  // Write the output's initializers to OUTPUT.data beside it (ONNX external data).
  bool external_data = false;
  // The most model bytes one request carries (a hidden option, so that tests reach the path
  // of models over 2 GiB with small ones).
  int64_t request_limit_bytes = kMaxRequestModelBytes;
  std::string ops_file;
  OptimizeVerifyArgs verify;
};

struct InspectArgs {
  std::string input;
};

struct RunArgs {
  std::string model;
  std::vector<std::string> inputs;
  std::string output_dir;
  int threads = 1;
  bool profile = false;
  // How many of the slowest nodes --profile lists.
  int profile_nodes = 10;
  std::vector<std::string> bindings;
  uint64_t seed = 0;
  int repeat = 1;
  // --server: run through its coordinator; --tenant; --timeout.
  BackendArgs backend;
  std::string request_id;
  int opt_level = 1;
  bool has_opt_level = false;  // -O given
  // The memory budget of each run, in MiB (0: none here; with --server, the worker's).
  int64_t memory_limit_mb = 0;
};

struct OpsArgs {
  BackendArgs backend;
  std::string domain;
  std::string name;
  bool registered_only = false;
};

struct OpsRegisterArgs {
  BackendArgs backend;
  std::string file;
  bool validate_only = false;
};

struct OpsUnregisterArgs {
  BackendArgs backend;
  std::vector<std::string> names;  // domain::Name
};

std::string VersionText() {
  return absl::StrCat("graphopt ", kGraphoptVersion, " (gRPC ", grpc::Version(), ", protobuf ",
                      google::protobuf::internal::VersionString(GOOGLE_PROTOBUF_VERSION), ")");
}


// Models of at least this size go to a server with their weights sent ahead as blobs when
// --upload-weights=auto.
constexpr int64_t kAutoUploadBytes = 16 << 20;

// Initializers of at least this size go to the data file with --external-data.
constexpr int64_t kExternalDataThresholdBytes = 1024;

// Whether an ONNX file's bytes may hold tensors with external data: every such tensor names
// its file under the key "location". A false positive costs one parse.
bool MayHaveExternalData(absl::string_view bytes) { return absl::StrContains(bytes, "location"); }

bool IsOnnxPath(absl::string_view path) {
  return absl::EndsWithIgnoreCase(path, ".onnx");
}

// Reads an ONNX file into a ModelProto (for weight upload and inspect).
absl::StatusOr<onnx::ModelProto> ReadOnnxModel(const std::string& path, std::string bytes) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' does not parse as an ONNX model (onnx.ModelProto)"));
  }
  return model;
}

absl::StatusOr<v1::Graph> ReadAnyModel(const std::string& path) {
  if (!IsOnnxPath(path)) return ReadGraphFile(path);
  return GraphFromOnnxFile(path);
}

// Moves `model`'s weights to OUTPUT.data beside the output `path` (ONNX external data),
// saying so unless quiet.
absl::Status MoveWeightsBeside(onnx::ModelProto& model, const std::string& path, bool quiet) {
  const std::filesystem::path out(path);
  const std::string data_file = absl::StrCat(out.filename().string(), ".data");
  if (absl::Status s = SaveExternalData(model, out.parent_path().string(), data_file,
                                        kExternalDataThresholdBytes);
      !s.ok()) {
    return s;
  }
  if (!quiet) std::printf("weights in %s beside it\n", data_file.c_str());
  return absl::OkStatus();
}

// Sends the weights in `stash` ahead of the request, reporting what was sent.
absl::Status UploadWeights(OptimizerBackend& backend, const WeightStash& stash, bool quiet) {
  UploadOptions options;
  TransferProgress::Options progress_options;
  progress_options.out = stderr;
  progress_options.is_tty = IsTerminal(stderr);
  progress_options.label = "uploading weights";
  TransferProgress progress(progress_options);
  if (!quiet) {
    options.progress = [&progress](int64_t sent, int64_t total) { progress.Update(sent, total); };
  }
  absl::StatusOr<UploadStats> stats = backend.UploadBlobs(stash.Blobs(), options);
  progress.Finish();
  if (!stats.ok()) return stats.status();
  if (!quiet) {
    std::printf("weights: %lld blobs (%.1f MiB): %lld sent (%.1f MiB) in %.2f s, %lld already "
                "on the server\n",
                static_cast<long long>(stats->blobs_total), stats->bytes_total / 1048576.0,
                static_cast<long long>(stats->blobs_sent), stats->bytes_sent / 1048576.0,
                stats->seconds, static_cast<long long>(stats->blobs_total - stats->blobs_sent));
  }
  return absl::OkStatus();
}

int RunOptimize(const OptimizeArgs& args) {
  v1::OptimizeRequest request;
  if (!args.passes.empty()) {
    absl::StatusOr<std::vector<v1::PassSpec>> passes = ParsePassList(args.passes);
    if (!passes.ok()) return UsageError(std::string(passes.status().message()));
    for (v1::PassSpec& spec : *passes) *request.mutable_pipeline()->add_passes() = std::move(spec);
  }
  if (args.has_opt_level) request.mutable_pipeline()->set_opt_level(args.opt_level);
  absl::StatusOr<std::map<std::string, int64_t>> bindings = ParseDimBindings(args.bindings);
  if (!bindings.ok()) return UsageError(std::string(bindings.status().message()));
  for (const auto& [symbol, size] : *bindings) (*request.mutable_dim_bindings())[symbol] = size;
  request.mutable_options()->set_verify_each_pass(args.verify_each_pass);
  request.mutable_options()->set_strip_value_info(args.strip_value_info);
  request.mutable_options()->set_native_ops(args.native_ops);
  // The estimate is computed only when something shows it.
  if (args.cost_top > 0) {
    request.mutable_options()->set_cost_estimate(v1::COST_ESTIMATE_PER_NODE);
  } else if (!args.quiet || !args.report_json.empty()) {
    request.mutable_options()->set_cost_estimate(v1::COST_ESTIMATE_TOTALS);
  }
  const bool onnx_out = IsOnnxPath(args.output);
  request.set_result_format(onnx_out ? v1::MODEL_FORMAT_ONNX : v1::MODEL_FORMAT_GRAPH);
  if (absl::Status s = ApplyOptimizeVerifyArgs(args.verify, &request); !s.ok()) {
    return s.code() == absl::StatusCode::kInvalidArgument ? UsageError(std::string(s.message()))
                                                          : ReportError(s);
  }

  if (!args.ops_file.empty()) {
    absl::StatusOr<v1::OpDescriptorList> ops = ReadOpDescriptorFile(args.ops_file);
    if (!ops.ok()) return ReportError(ops.status());
    *request.mutable_ops() = std::move(*ops->mutable_ops());
  }

  absl::StatusOr<std::unique_ptr<OptimizerBackend>> backend = MakeBackend(args.backend);
  if (!backend.ok()) return ReportError(backend.status());
  if (args.upload_weights == "always" && !(*backend)->SupportsBlobs()) {
    return UsageError("--upload-weights=always needs --server");
  }

  // Weights of a large model go to the server once, as blobs, ahead of the request.
  WeightStash stash;
  // Set when a model too large for one request is optimized in this process: the result comes
  // back as a graph and is exported to ONNX here, with these options.
  std::optional<OnnxExportOptions> export_here;
  auto want_upload = [&](int64_t size) {
    if (!(*backend)->SupportsBlobs() || args.upload_weights == "never") return false;
    return args.upload_weights == "always" || size >= kAutoUploadBytes;
  };
  if (IsOnnxPath(args.input)) {
    absl::StatusOr<std::string> bytes = ReadFileBytes(args.input);
    if (!bytes.ok()) return ReportError(bytes.status());
    // Weights in external files beside the model are read in (memory-mapped), then travel as
    // blobs or inline like any others.
    std::optional<onnx::ModelProto> model;
    if (want_upload(static_cast<int64_t>(bytes->size())) ||
        MayHaveExternalData(*bytes)) {
      absl::StatusOr<onnx::ModelProto> read = OnnxFromFileBytes(args.input, *std::move(bytes));
      if (!read.ok()) return ReportError(read.status());
      model = *std::move(read);
    }
    if (model.has_value()) {
      const int64_t size = static_cast<int64_t>(model->ByteSizeLong());
      if (want_upload(size)) stash.Externalize(&*model);
      if (static_cast<int64_t>(model->ByteSizeLong()) <= args.request_limit_bytes) {
        request.set_onnx_model(SerializeDeterministic(*model));
      } else if (!(*backend)->SupportsBlobs()) {
        // In this process nothing crosses a wire: the model goes as a graph and comes back as
        // one, and the ONNX output is written here, its weights in a data file.
        absl::StatusOr<v1::Graph> graph = GraphFromOnnx(*std::move(model));
        if (!graph.ok()) {
          return ReportError(absl::Status(
              graph.status().code(), absl::StrCat("'", args.input, "': ", graph.status().message())));
        }
        *request.mutable_graph() = *std::move(graph);
        request.set_result_format(v1::MODEL_FORMAT_GRAPH);
        export_here.emplace();
        export_here->native_ops = request.options().native_ops();
        export_here->strip_value_info = request.options().strip_value_info();
        // Portable bodies are built from the value types; the export strips them after.
        request.mutable_options()->set_strip_value_info(false);
      } else {
        return ReportError(absl::InvalidArgumentError(absl::StrCat(
            "'", args.input, "' holds ", size, " bytes with its external data, more than one ",
            "request can carry (2 GiB); let its weights go ahead as blobs (--upload-weights)")));
      }
    } else {
      request.set_onnx_model(*std::move(bytes));
    }
  } else {
    absl::StatusOr<v1::Graph> graph = ReadGraphFile(args.input);
    if (!graph.ok()) return ReportError(graph.status());
    if (want_upload(InitializerBytes(*graph))) stash.Externalize(&*graph);
    *request.mutable_graph() = *std::move(graph);
  }
  if (stash.blob_count() > 0) {
    if (absl::Status s = UploadWeights(**backend, stash, args.quiet); !s.ok()) {
      return ReportError(s);
    }
  }

  // With weights sent ahead, the request is small: keep a copy in case the server evicted a
  // blob between the upload and the request, then upload again (HasBlobs tells what is
  // missing) and retry once.
  const v1::OptimizeRequest retry_request =
      stash.blob_count() > 0 ? request : v1::OptimizeRequest();
  absl::StatusOr<v1::OptimizeResponse> response = (*backend)->Optimize(std::move(request));
  if (!response.ok() && stash.blob_count() > 0 &&
      response.status().code() == absl::StatusCode::kFailedPrecondition &&
      absl::StrContains(response.status().message(), "does not hold")) {
    if (!args.quiet) {
      std::fprintf(stderr, "the server dropped some weights before the request ran; "
                           "sending them again\n");
    }
    if (absl::Status s = UploadWeights(**backend, stash, args.quiet); !s.ok()) {
      return ReportError(s);
    }
    response = (*backend)->Optimize(retry_request);
  }
  if (!response.ok()) return ReportError(response.status());

  // Nodes of the model written (unknown only when the server's ONNX bytes do not parse).
  std::optional<int64_t> nodes;
  if (onnx_out && export_here.has_value()) {
    absl::StatusOr<onnx::ModelProto> model =
        GraphToOnnx(std::move(*response->mutable_graph()), *export_here);
    if (!model.ok()) return ReportError(model.status());
    if (absl::Status s = MoveWeightsBeside(*model, args.output, args.quiet); !s.ok()) {
      return ReportError(s);
    }
    nodes = model->graph().node_size();
    if (absl::Status s = WriteFileAtomically(args.output, SerializeDeterministic(*model));
        !s.ok()) {
      return ReportError(s);
    }
  } else if (onnx_out) {
    std::string bytes = std::move(*response->mutable_onnx_model());
    if (stash.blob_count() > 0 || args.external_data) {
      absl::StatusOr<onnx::ModelProto> model = ReadOnnxModel("the server's result", std::move(bytes));
      if (!model.ok()) return ReportError(model.status());
      if (absl::Status s = stash.Reattach(&*model); !s.ok()) return ReportError(s);
      // Weights that would not fit one file go to a data file beside it, as ONNX does.
      if (args.external_data ||
          static_cast<int64_t>(model->ByteSizeLong()) > kMaxRequestModelBytes) {
        if (absl::Status s = MoveWeightsBeside(*model, args.output, args.quiet); !s.ok()) {
          return ReportError(s);
        }
      }
      bytes = SerializeDeterministic(*model);
      nodes = model->graph().node_size();
    } else {
      onnx::ModelProto model;
      if (model.ParseFromString(bytes)) nodes = model.graph().node_size();
    }
    if (absl::Status s = WriteFileAtomically(args.output, bytes); !s.ok()) return ReportError(s);
  } else {
    if (absl::Status s = stash.Reattach(response->mutable_graph()); !s.ok()) return ReportError(s);
    if (absl::Status s = WriteGraphFile(args.output, response->graph()); !s.ok()) {
      return ReportError(s);
    }
    nodes = response->graph().nodes_size();
  }
  if (!args.report_json.empty()) {
    if (absl::Status status =
            WriteFileAtomically(args.report_json, FormatReportJson(*response, nodes));
        !status.ok()) {
      return ReportError(status);
    }
  }
  if (!args.quiet) {
    std::fputs(FormatPassReports(*response).c_str(), stdout);
    std::fputs(FormatCacheLine(response->cache()).c_str(), stdout);
    // A server that predates the estimate sends none.
    if (response->has_cost()) {
      std::fputs(FormatCostSummary(response->cost()).c_str(), stdout);
      std::fputs(FormatTopNodeCosts(response->cost(), args.cost_top).c_str(), stdout);
    }
    if (response->has_verification()) {
      std::fputs(FormatVerifyReport(response->verification()).c_str(), stdout);
    }
    std::printf("wrote %s (%s nodes)\n", args.output.c_str(),
                nodes.has_value() ? absl::StrCat(*nodes).c_str() : "?");
  }
  return kExitOk;
}

int RunInspect(const InspectArgs& args) {
  absl::StatusOr<v1::Graph> graph = ReadAnyModel(args.input);
  if (!graph.ok()) return ReportError(graph.status());
  const char* format = IsOnnxPath(args.input)                          ? "ONNX"
                       : FormatForPath(args.input) == GraphFormat::kText ? "graphopt text"
                                                                         : "graphopt binary";
  std::fputs(FormatModelSummary(*graph, absl::StrCat(args.input, " (", format, ")")).c_str(),
             stdout);
  return kExitOk;
}

// A model's inputs by name.
using NamedInputs = std::vector<std::pair<std::string, runtime::Tensor>>;

// What a run produced, locally or on a worker.
struct RunOutcome {
  std::vector<runtime::Tensor> outputs;
  std::vector<runtime::NodeTiming> profile;  // each node's median over profile_runs runs
  int profile_runs = 0;
  // The line after the output summaries: where and how long.
  std::string summary;
};

std::string RepeatSummary(std::vector<double> run_ms) {
  if (run_ms.size() < 2) return "";
  std::sort(run_ms.begin(), run_ms.end());
  return absl::StrFormat(" (first), median of %d %.2f ms, min %.2f ms", run_ms.size(),
                         run_ms[run_ms.size() / 2], run_ms.front());
}

// Runs `model` on the CPU runtime in this process.
absl::StatusOr<RunOutcome> RunInProcess(const RunArgs& args, Graph model,
                                        const NamedInputs& inputs) {
  runtime::KernelRegistry registry;
  if (absl::Status s = runtime::RegisterCpuKernels(registry); !s.ok()) return s;
  runtime::ExecutorOptions options;
  // No more threads than the process can run at once (its affinity mask, its container's CPU
  // quota): a thread beyond those only waits to be scheduled.
  const CpuLimits limits = ReadCpuLimits();
  options.num_threads = CapThreads(args.threads, limits);
  const std::string capped =
      options.num_threads < args.threads
          ? absl::StrFormat(" (--threads %d capped to the %d CPU%s this process may use, %s)",
                            args.threads, limits.cpus, limits.cpus == 1 ? "" : "s", limits.source)
          : "";
  const absl::Time plan_start = absl::Now();
  absl::StatusOr<std::unique_ptr<runtime::Executor>> executor =
      runtime::Executor::Create(std::move(model), registry, options);
  if (!executor.ok()) return executor.status();
  const double plan_ms = absl::ToDoubleMilliseconds(absl::Now() - plan_start);
  RunOutcome outcome;
  std::vector<double> run_ms;
  ProfileMedian profile;
  for (int i = 0; i < args.repeat; ++i) {
    runtime::RunOptions run_options{.profile = args.profile};
    if (args.memory_limit_mb > 0) {
      run_options.memory = std::make_shared<runtime::MemoryBudget>(args.memory_limit_mb << 20);
    }
    const absl::Time start = absl::Now();
    absl::StatusOr<runtime::RunResult> result = (*executor)->Run(inputs, run_options);
    if (!result.ok()) return result.status();
    run_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - start));
    outcome.outputs = std::move(result->outputs);
    // With --repeat, the first run (cold caches, first-use setup) is left out of the profile.
    if (args.profile && (i > 0 || args.repeat == 1)) profile.Add(std::move(result->timings));
  }
  outcome.profile = profile.Median();
  outcome.profile_runs = profile.runs();
  outcome.summary = absl::StrFormat("plan %.1f ms; run %.2f ms%s on %d thread%s%s", plan_ms,
                                    run_ms.front(), RepeatSummary(run_ms), options.num_threads,
                                    options.num_threads == 1 ? "" : "s", capped);
  return outcome;
}

// Runs `model` through the coordinator of --server, on one of its workers. A model with
// kAutoUploadBytes of weights or more sends them ahead as blobs (once per server).
absl::StatusOr<RunOutcome> RunOnServer(const RunArgs& args, v1::Graph model,
                                       const NamedInputs& inputs) {
  const absl::Duration timeout = absl::Seconds(args.backend.timeout_s);
  absl::StatusOr<std::shared_ptr<const ServerConnection>> connection = Connect(args.backend);
  if (!connection.ok()) return connection.status();
  WeightStash stash;
  std::unique_ptr<OptimizerBackend> blob_backend;
  if (InitializerBytes(model) >= kAutoUploadBytes) {
    stash.Externalize(&model);
    blob_backend = CreateRemoteBackend(*connection, timeout);
    if (absl::Status s = UploadWeights(*blob_backend, stash, /*quiet=*/true); !s.ok()) return s;
  }
  v1::RunRequest request;
  *request.mutable_graph() = std::move(model);
  for (const auto& [name, tensor] : inputs) {
    if (!tensor.is_tensor()) {
      return absl::UnimplementedError(absl::StrCat(
          "input '", name, "' is ", tensor.DebugString(),
          ": runs through a server carry tensors only; run the model in-process"));
    }
    v1::NamedTensor* in = request.add_inputs();
    in->set_name(name);
    tensor.ToProto(in->mutable_tensor());
  }
  request.set_profile(args.profile);
  request.set_memory_limit_bytes(args.memory_limit_mb << 20);
  if (args.has_opt_level) request.mutable_optimize()->set_opt_level(args.opt_level);
  std::vector<double> run_ms;
  absl::StatusOr<v1::RunResponse> response;
  ProfileMedian profile;
  for (int i = 0; i < args.repeat; ++i) {
    // Each repetition is a request of its own.
    request.set_request_id(args.request_id.empty() || i == 0
                               ? args.request_id
                               : absl::StrCat(args.request_id, "#", i + 1));
    const absl::Time start = absl::Now();
    response = RemoteRun(**connection, timeout, request);
    if (!response.ok() && stash.blob_count() > 0 &&
        response.status().code() == absl::StatusCode::kFailedPrecondition &&
        absl::StrContains(response.status().message(), "does not hold")) {
      // The server dropped weights since the upload: send them again, once.
      if (absl::Status s = UploadWeights(*blob_backend, stash, /*quiet=*/true); !s.ok()) return s;
      response = RemoteRun(**connection, timeout, request);
    }
    if (!response.ok()) return response.status();
    run_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - start));
    if (args.profile && (i > 0 || args.repeat == 1)) {
      std::vector<runtime::NodeTiming> timings;
      for (const v1::NodeTiming& t : response->timings()) {
        timings.push_back({t.node(), t.op_type(), t.micros()});
      }
      profile.Add(std::move(timings));
    }
  }
  RunOutcome outcome;
  for (const v1::NamedTensor& out : response->outputs()) {
    absl::StatusOr<runtime::Tensor> t =
        runtime::Tensor::FromProto(out.tensor(), absl::StrCat("output '", out.name(), "'"));
    if (!t.ok()) return t.status();
    outcome.outputs.push_back(*std::move(t));
  }
  outcome.profile = profile.Median();
  outcome.profile_runs = profile.runs();
  outcome.summary = absl::StrFormat(
      "ran on worker %s (%s), attempt %d%s%s; load %.1f ms, execute %.2f ms, round trip %.2f "
      "ms%s",
      response->worker_id(), response->worker_address(), response->attempts(),
      response->loaded_plan() ? ", plan loaded" : "", response->replayed() ? ", replayed" : "",
      response->load_micros() / 1000, response->execute_micros() / 1000, run_ms.front(),
      RepeatSummary(run_ms));
  if (response->reports_size() > 0) {
    const v1::PassReport& first = response->reports(0);
    const v1::PassReport& last = response->reports(response->reports_size() - 1);
    outcome.summary = absl::StrFormat(
        "optimized on the server: %d passes, %d -> %d nodes, %.1f ms\n%s",
        response->reports_size(), first.nodes_before(), last.nodes_after(),
        response->optimize_micros() / 1000, outcome.summary);
  }
  return outcome;
}

int RunRun(const RunArgs& args) {
  absl::StatusOr<std::map<std::string, int64_t>> bindings = ParseDimBindings(args.bindings);
  if (!bindings.ok()) return UsageError(std::string(bindings.status().message()));
  absl::StatusOr<std::vector<InputSpec>> specs = ParseInputSpecs(args.inputs);
  if (!specs.ok()) return UsageError(std::string(specs.status().message()));
  if (args.backend.server.empty() && !args.request_id.empty()) {
    return UsageError("--request-id needs --server");
  }
  absl::StatusOr<v1::Graph> proto = ReadAnyModel(args.model);
  if (!proto.ok()) return ReportError(proto.status());
  const bool remote = !args.backend.server.empty();
  std::string optimized_line;
  if (args.has_opt_level && !remote) {
    // Optimized here first, as the server's coordinator would (-O with --server).
    absl::StatusOr<std::unique_ptr<OptimizerBackend>> backend = CreateEmbeddedBackend();
    if (!backend.ok()) return ReportError(backend.status());
    v1::OptimizeRequest request;
    *request.mutable_graph() = *std::move(proto);
    request.mutable_pipeline()->set_opt_level(args.opt_level);
    request.set_result_format(v1::MODEL_FORMAT_GRAPH);
    absl::StatusOr<v1::OptimizeResponse> optimized = (*backend)->Optimize(std::move(request));
    if (!optimized.ok()) return ReportError(optimized.status());
    proto = std::move(*optimized->mutable_graph());
  }
  // The model as read goes to the server; the IR here gives the inputs and output names.
  std::optional<v1::Graph> plan;
  if (remote) plan = *proto;
  absl::StatusOr<Graph> graph = GraphFromProto(*std::move(proto));
  if (!graph.ok()) return ReportError(graph.status());
  absl::StatusOr<std::vector<std::pair<std::string, runtime::Tensor>>> inputs =
      PrepareInputs(*graph, *specs, *bindings, args.seed);
  if (!inputs.ok()) return ReportError(inputs.status());
  std::vector<std::string> output_names;
  for (ValueId v : graph->outputs()) output_names.push_back(graph->value(v).name);
  for (const auto& [name, tensor] : *inputs) {
    std::printf("input  %s\n", FormatTensorSummary(name, tensor).c_str());
  }
  // The output folder is made before the run, so that a long run does not end in this error.
  if (!args.output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(args.output_dir, ec);
    if (ec) {
      return ReportError(absl::PermissionDeniedError(
          absl::StrCat("cannot create '", args.output_dir, "': ", ec.message())));
    }
  }
  absl::StatusOr<RunOutcome> outcome = remote ? RunOnServer(args, *std::move(plan), *inputs)
                                              : RunInProcess(args, *std::move(graph), *inputs);
  if (!outcome.ok()) return ReportError(outcome.status());
  if (outcome->outputs.size() != output_names.size()) {
    return ReportError(absl::InternalError(absl::StrCat("the model has ", output_names.size(),
                                                        " outputs; the run returned ",
                                                        outcome->outputs.size())));
  }
  for (size_t i = 0; i < outcome->outputs.size(); ++i) {
    std::printf("output %s\n", FormatTensorSummary(output_names[i], outcome->outputs[i]).c_str());
  }
  std::printf("%s\n", outcome->summary.c_str());
  if (args.profile) {
    if (outcome->profile_runs > 1) {
      std::printf("\nprofile: each node's median over %d runs (the first left out)\n",
                  outcome->profile_runs);
    }
    std::printf("\n%s", FormatProfile(outcome->profile, args.profile_nodes).c_str());
  }
  if (!args.output_dir.empty()) {
    const std::vector<std::string> files = NpyFileNames(output_names);
    for (size_t i = 0; i < outcome->outputs.size(); ++i) {
      absl::StatusOr<std::string> bytes = runtime::SerializeNpy(outcome->outputs[i]);
      if (!bytes.ok()) {
        return ReportError(absl::Status(bytes.status().code(),
                                        absl::StrCat("output '", output_names[i], "': ",
                                                     bytes.status().message())));
      }
      const std::string path =
          (std::filesystem::path(args.output_dir) / files[i]).string();
      absl::Status written = WriteFileAtomically(path, *bytes);
      if (!written.ok()) return ReportError(written);
      const std::string note = runtime::NpyConversionNote(outcome->outputs[i]);
      std::printf("wrote %s%s\n", path.c_str(), note.empty() ? "" : (" (" + note + ")").c_str());
    }
  }
  return kExitOk;
}

int RunWorkers(const BackendArgs& args) {
  absl::StatusOr<std::shared_ptr<const ServerConnection>> connection = Connect(args);
  if (!connection.ok()) return ReportError(connection.status());
  absl::StatusOr<v1::ListWorkersResponse> workers =
      RemoteListWorkers(**connection, absl::Seconds(args.timeout_s));
  if (!workers.ok()) return ReportError(workers.status());
  std::fputs(FormatWorkers(*workers).c_str(), stdout);
  return kExitOk;
}

// Exit 0 only when the server answers SERVING: the contract of a container health check.
int RunHealth(const BackendArgs& args, const std::string& service) {
  absl::StatusOr<std::shared_ptr<const ServerConnection>> connection = Connect(args);
  if (!connection.ok()) return ReportError(connection.status());
  absl::StatusOr<ServingStatus> status =
      CheckHealth(**connection, service, absl::Seconds(args.timeout_s));
  if (!status.ok()) return ReportError(status.status());
  std::printf("%s\n", ServingStatusName(*status).c_str());
  return *status == ServingStatus::kServing ? kExitOk : kExitFailure;
}

int RunPasses(const BackendArgs& args) {
  absl::StatusOr<std::unique_ptr<OptimizerBackend>> backend = MakeBackend(args);
  if (!backend.ok()) return ReportError(backend.status());
  absl::StatusOr<v1::ListPassesResponse> passes = (*backend)->ListPasses();
  if (!passes.ok()) return ReportError(passes.status());
  std::fputs(FormatPassList(*passes).c_str(), stdout);
  return kExitOk;
}

int RunOps(const OpsArgs& args) {
  absl::StatusOr<std::unique_ptr<OptimizerBackend>> backend = MakeBackend(args.backend);
  if (!backend.ok()) return ReportError(backend.status());
  v1::ListOpsRequest request;
  request.set_domain(args.domain);
  request.set_name(args.name);
  request.set_registered_only(args.registered_only);
  absl::StatusOr<v1::ListOpsResponse> ops = (*backend)->ListOps(request);
  if (!ops.ok()) return ReportError(ops.status());
  if (args.name.empty()) {
    if (args.registered_only && ops->ops_size() == 0) {
      std::printf("tenant '%s' has no registered ops\n", ops->tenant().c_str());
      return kExitOk;
    }
    std::fputs(FormatOpList(*ops).c_str(), stdout);
    return kExitOk;
  }
  if (ops->ops_size() == 0) {
    return ReportError(absl::NotFoundError(
        absl::StrCat("no op named '", args.name, "'",
                     args.domain.empty() ? "" : absl::StrCat(" in domain '", args.domain, "'"),
                     ops->tenant().empty() ? "" : absl::StrCat(" for tenant '", ops->tenant(), "'"))));
  }
  for (int i = 0; i < ops->ops_size(); ++i) {
    const v1::OpDescriptor& op = ops->ops(i);
    if (ops->ops_size() > 1) {
      std::printf("%s# %s\n", i > 0 ? "\n" : "",
                  (op.domain().empty() ? op.name() : absl::StrCat(op.domain(), "::", op.name()))
                      .c_str());
    }
    std::fputs(FormatOpDescriptor(op).c_str(), stdout);
  }
  return kExitOk;
}

int RunOpsRegister(const OpsRegisterArgs& args) {
  absl::StatusOr<v1::OpDescriptorList> ops = ReadOpDescriptorFile(args.file);
  if (!ops.ok()) return ReportError(ops.status());
  absl::StatusOr<std::unique_ptr<OptimizerBackend>> backend = MakeBackend(args.backend);
  if (!backend.ok()) return ReportError(backend.status());
  v1::RegisterOpsRequest request;
  *request.mutable_ops() = std::move(*ops->mutable_ops());
  // In-process nothing outlives this command: only check.
  const bool validate_only = args.validate_only || args.backend.server.empty();
  request.set_validate_only(validate_only);
  absl::StatusOr<v1::RegisterOpsResponse> response = (*backend)->RegisterOps(request);
  if (!response.ok()) return ReportError(response.status());
  for (const std::string& line : response->results()) std::printf("%s\n", line.c_str());
  if (validate_only) {
    std::printf("%d descriptors are valid; nothing registered (%s)\n", request.ops_size(),
                args.backend.server.empty() ? "no --server" : "--validate-only");
  } else {
    std::printf("tenant '%s': %d descriptors registered\n", response->tenant().c_str(),
                request.ops_size());
  }
  return kExitOk;
}

int RunOpsUnregister(const OpsUnregisterArgs& args) {
  if (args.backend.server.empty()) return UsageError("ops unregister needs --server");
  v1::UnregisterOpsRequest request;
  for (const std::string& name : args.names) {
    const size_t sep = name.rfind("::");
    if (sep == std::string::npos || sep == 0 || sep + 2 == name.size()) {
      return UsageError(absl::StrCat("'", name, "': name ops as domain::Name"));
    }
    v1::OpRef* ref = request.add_ops();
    ref->set_domain(name.substr(0, sep));
    ref->set_name(name.substr(sep + 2));
  }
  absl::StatusOr<std::unique_ptr<OptimizerBackend>> backend = MakeBackend(args.backend);
  if (!backend.ok()) return ReportError(backend.status());
  absl::StatusOr<v1::UnregisterOpsResponse> response = (*backend)->UnregisterOps(request);
  if (!response.ok()) return ReportError(response.status());
  for (const std::string& line : response->unregistered()) std::printf("%s\n", line.c_str());
  return kExitOk;
}

// Prints a fresh token and its tokens-file line. The token goes to stdout only: nothing is
// logged or stored.
int RunTokenNew(const TokenNewArgs& args) {
  if (args.admin == !args.tenant.empty()) {
    return UsageError("token new needs --tenant NAME or --admin (not both)");
  }
  absl::StatusOr<std::string> token = GenerateToken();
  if (!token.ok()) return ReportError(token.status());
  absl::StatusOr<std::string> line =
      TokensFileLine(args.admin ? TokenRole::kAdmin : TokenRole::kTenant, args.tenant,
                     TokenHash(*token), args.label);
  if (!line.ok()) return UsageError(std::string(line.status().message()));
  std::printf("token: %s\ntokens file line: %s\n", token->c_str(), line->c_str());
  std::fprintf(stderr,
               "Give the token to its user (e.g. as GRAPHOPT_TOKEN); it is shown only now. Append "
               "the line to the server's --tokens_file: the server re-reads the file within a "
               "second. Deleting the line revokes the token.\n");
  return kExitOk;
}

int Main(int argc, char** argv) {
  TuneMallocForGraphs();  // optimizing in this process builds and frees graphs
  DisableMutexDeadlockDetection();  // see util/mutex_mode.h
  CLI::App app("graphopt: optimize machine-learning computation graphs (ONNX models and "
               "graphopt.v1.Graph files), in this process or through a graphopt-server.",
               "graphopt");
  app.set_version_flag("--version", VersionText());
  app.require_subcommand(1);

  OptimizeArgs optimize_args;
  CLI::App* optimize = app.add_subcommand(
      "optimize",
      "Optimize a model. Files ending in .onnx are ONNX models; .pbtxt, .txt, .textproto and "
      ".prototxt are graphopt graphs in protobuf text format; anything else a binary graphopt "
      "graph (input that does not parse as binary is also tried as text). The output is "
      "written in the format its name says, whatever the input's.");
  optimize->add_option("input", optimize_args.input, "Input model file")->required();
  optimize->add_option("-o,--output", optimize_args.output, "Output model file")->required();
  CLI::Option* passes_option = optimize->add_option(
      "--passes", optimize_args.passes,
      "Passes to run, in order: name[:key=value[;key=value...]][,name...], e.g. "
      "'dead_code_elimination,common_subexpression_elimination:key=value'. A value holding "
      "',', ';', '=' or blanks goes in double quotes: "
      "'plan_memory:dim_bounds=\"batch:8,seq:128\"', 'gradient:wrt=\"a;b\";loss=l'; "
      "\\ escapes the next character. Put the whole list in single quotes for the shell. "
      "Required analyses are added automatically. See `graphopt passes`.");
  CLI::Option* level_option =
      optimize->add_option("-O,--opt-level", optimize_args.opt_level,
                           "Optimization level instead of --passes (default 2; 0 only "
                           "verifies)");
  passes_option->excludes(level_option);
  optimize
      ->add_option("--bind", optimize_args.bindings,
                   "Bind a symbolic dim before optimizing: symbol=N (repeatable, or "
                   "comma-separated), e.g. --bind batch=8")
      ->delimiter(',')
      ->allow_extra_args(false);
  optimize->add_flag("--verify-each-pass", optimize_args.verify_each_pass,
                     "Run the verifier after every pass that changed the graph");
  optimize->add_flag("--native-ops", optimize_args.native_ops,
                     "Write graphopt's own ops (fused groups, layout ops) as graphopt-domain "
                     "nodes, which only graphopt runs; by default they are ONNX model-local "
                     "functions of standard ops");
  optimize->add_flag("--strip-value-info", optimize_args.strip_value_info,
                     "Do not write types/shapes of intermediate values to the output");
  optimize->add_option("--report-json", optimize_args.report_json,
                       "Also write the per-pass report as JSON to this file");
  optimize->add_flag("-q,--quiet", optimize_args.quiet, "Do not print the report");
  optimize
      ->add_option("--cost-top", optimize_args.cost_top,
                   "After the report's cost line (the estimated flops and bytes moved of the "
                   "optimized graph; symbolic dims need --bind), list the N nodes with the "
                   "most flops")
      ->check(CLI::NonNegativeNumber);
  optimize
      ->add_option("--upload-weights", optimize_args.upload_weights,
                   "With --server: send initializers of 64 KiB or more ahead of the request "
                   "as content-addressed blobs, which the server keeps, so they cross the "
                   "wire once and never come back (auto: for models of 16 MiB or more)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "always", "never"}));
  optimize->add_option("--request-limit-bytes", optimize_args.request_limit_bytes)
      ->group("")
      ->check(CLI::PositiveNumber);
  optimize->add_flag("--external-data", optimize_args.external_data,
                     "With an .onnx output: write its initializers of 1 KiB or more to "
                     "OUTPUT.data beside it (ONNX external data, offsets aligned to 4 KiB); "
                     "outputs over 2 GiB are always written so");
  optimize->add_option("--ops", optimize_args.ops_file,
                       "Custom op descriptors (a file as for `ops register`) visible to this "
                       "request only");
  AddOptimizeVerifyOptions(optimize, &optimize_args.verify);
  AddBackendOptions(optimize, &optimize_args.backend);

  GradArgs grad_args;
  BackendArgs grad_backend;
  CLI::App* grad = AddGradCommand(app, &grad_args);
  AddBackendOptions(grad, &grad_backend);

  InspectArgs inspect_args;
  CLI::App* inspect = app.add_subcommand(
      "inspect", "Summarize a model: inputs and outputs with shapes, parameter count and bytes, "
                 "op histogram");
  inspect->add_option("model", inspect_args.input, "Model file (.onnx or a graphopt graph)")
      ->required();

  RunArgs run_args;
  CLI::App* run = app.add_subcommand(
      "run", "Run a model on the CPU runtime, in this process or (--server) on a worker node "
             "through the server's coordinator: inputs from .npy files or seeded random values "
             "of each input's declared type; prints output summaries and, with --profile, the "
             "time per op");
  run->add_option("model", run_args.model, "Model file (.onnx or a graphopt graph)")->required();
  run->add_option("--input", run_args.inputs,
                  "An input from a .npy file: NAME=FILE.npy (repeatable; NAME=FILE.pb reads an "
                  "ONNX TensorProto, SequenceProto or OptionalProto); inputs not given get "
                  "random values. Strings: '<U' or '|S' arrays; bfloat16: float32 (rounded to "
                  "nearest even) or ml_dtypes.bfloat16 saved by np.save")
      ->allow_extra_args(false);
  run->add_option("-o,--output-dir", run_args.output_dir,
                  "Write each output to DIR/<output name>.npy (bfloat16 as float32, exactly; "
                  "strings as '<U', or '|S' when not UTF-8)");
  run->add_option("--threads", run_args.threads,
                  "Kernel threads (in this process; a worker uses its own --threads)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  run->add_flag("--profile", run_args.profile,
                "Print the time per op and the slowest nodes (with --repeat: each node's median "
                "over the runs after the first, the last 1001 at most)");
  run->add_option("--profile-nodes", run_args.profile_nodes,
                  "With --profile: how many of the slowest nodes to list (0: none)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  run->add_option("--bind", run_args.bindings,
                  "Size of a symbolic input dim for random inputs: symbol=N (default 1)")
      ->delimiter(',')
      ->allow_extra_args(false);
  run->add_option("--seed", run_args.seed, "Seed of the random inputs")->capture_default_str();
  run->add_option("--repeat", run_args.repeat,
                  "Run this many times and print the median time (the outputs are those of "
                  "the last run)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  CLI::Option* run_level_option =
      run->add_option("-O,--opt-level", run_args.opt_level,
                      "Optimize at this level first (with --server, on the server)");
  run->add_option("--server", run_args.backend.server,
                  "graphopt-server address (host:port): run through its coordinator on one of "
                  "its workers; without it the model runs in this process");
  run->add_option("--timeout", run_args.backend.timeout_s,
                  "With --server: deadline in seconds for each call")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  run->add_option("--tenant", run_args.backend.tenant,
                  "With --server: the tenant the run is for (its registered ops, with -O)");
  AddCredentialOptions(run, &run_args.backend);
  run->add_option("--memory-limit-mb", run_args.memory_limit_mb,
                  "Memory budget of each run in MiB: going over it fails the run with "
                  "RESOURCE_EXHAUSTED naming the node, before the allocation (0: none in this "
                  "process; with --server, the worker's --execution_memory_mb, which also caps "
                  "it)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  run->add_option("--request-id", run_args.request_id,
                  "With --server: the request's id; sent again with the same id, it runs at "
                  "most once and gets the first answer (--repeat appends #2, #3, ...)");

  BackendArgs workers_args;
  CLI::App* workers = app.add_subcommand(
      "workers", "List the workers of a server's coordinator: address, id, health, devices, "
                 "load, plans, last probe");
  workers->add_option("--server", workers_args.server, "graphopt-server address (host:port)")
      ->required();
  workers->add_option("--timeout", workers_args.timeout_s, "Deadline in seconds")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  AddCredentialOptions(workers, &workers_args);

  BackendArgs health_args{.timeout_s = 5};
  std::string health_service;
  CLI::App* health = app.add_subcommand(
      "health", "Ask a server's (or worker's) grpc.health.v1.Health service; prints its status "
                "and exits 0 only when it is SERVING");
  health->add_option("--server", health_args.server, "Address (host:port)")->required();
  health->add_option("--service", health_service, "Service name (default: the whole server)");
  health->add_option("--timeout", health_args.timeout_s, "Deadline in seconds")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  AddCredentialOptions(health, &health_args);

  BackendArgs passes_args;
  CLI::App* passes =
      app.add_subcommand("passes", "List the passes (what they need and provide, options)");
  AddBackendOptions(passes, &passes_args);

  OpsArgs ops_args;
  CLI::App* ops = app.add_subcommand(
      "ops", "List the known ops, or with NAME print that op's full descriptor; subcommands "
             "register and unregister custom ops on a server");
  ops->add_option("name", ops_args.name, "Op name");
  ops->add_option("--domain", ops_args.domain, "Only ops of this domain");
  ops->add_flag("--registered", ops_args.registered_only,
                "Only the tenant's registered ops, not the builtins");
  AddBackendOptions(ops, &ops_args.backend);

  OpsArgs list_args;
  CLI::App* ops_list = ops->add_subcommand("list", "List the ops (builtins and registered)");
  ops_list->add_option("--domain", list_args.domain, "Only ops of this domain");
  ops_list->add_flag("--registered", list_args.registered_only,
                     "Only the tenant's registered ops, not the builtins");
  AddBackendOptions(ops_list, &list_args.backend);

  OpsArgs show_args;
  CLI::App* ops_show = ops->add_subcommand("show", "Print one op's full descriptor");
  ops_show->add_option("name", show_args.name, "Op name")->required();
  ops_show->add_option("--domain", show_args.domain, "The op's domain");
  AddBackendOptions(ops_show, &show_args.backend);

  OpsRegisterArgs register_args;
  CLI::App* ops_register = ops->add_subcommand(
      "register",
      "Register custom op descriptors from FILE (graphopt.v1.OpDescriptorList in protobuf "
      "text format, see examples/custom_ops.pbtxt and docs/rule-language.md) into the "
      "tenant's namespace on --server; they persist across server restarts. All or nothing. "
      "Without --server the descriptors are only checked.");
  ops_register->add_option("file", register_args.file, "Descriptor file")->required();
  ops_register->add_flag("--validate-only", register_args.validate_only,
                         "Check every descriptor, register nothing");
  AddBackendOptions(ops_register, &register_args.backend);

  OpsUnregisterArgs unregister_args;
  CLI::App* ops_unregister =
      ops->add_subcommand("unregister", "Remove registered ops (domain::Name ...) from --server");
  ops_unregister->add_option("names", unregister_args.names, "Ops as domain::Name")->required();
  AddBackendOptions(ops_unregister, &unregister_args.backend);

  TokenNewArgs token_new_args;
  CLI::App* token = app.add_subcommand(
      "token", "Bearer tokens for a server's --tokens_file (see docs/security.md)");
  token->require_subcommand(1);
  CLI::App* token_new = token->add_subcommand(
      "new", "Print a fresh random token and the line to append to the server's tokens file "
             "(which holds only the token's SHA-256)");
  CLI::Option* token_tenant =
      token_new->add_option("--tenant", token_new_args.tenant, "The tenant the token acts for");
  CLI::Option* token_admin = token_new->add_flag(
      "--admin", token_new_args.admin,
      "An admin token: cluster operations (workers), and acting for any tenant");
  token_tenant->excludes(token_admin);
  token_new->add_option("--label", token_new_args.label,
                        "Who holds the token, for the server's logs (printable ASCII)");

  CLI::App* version = app.add_subcommand("version", "Print the version");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Prints help/version (exit 0) or the parse error with a usage hint.
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }

  if (optimize->parsed()) {
    optimize_args.has_opt_level = level_option->count() > 0;
    return RunOptimize(optimize_args);
  }
  if (grad->parsed()) {
    absl::StatusOr<std::unique_ptr<OptimizerBackend>> backend = MakeBackend(grad_backend);
    return backend.ok() ? RunGrad(grad_args, **backend) : ReportError(backend.status());
  }
  if (inspect->parsed()) return RunInspect(inspect_args);
  if (run->parsed()) {
    if (run_args.threads > 1 && run_args.backend.server.empty()) {
      // Before any OpenMP region (util/openmp_wait.h); returns only when nothing was to do.
      std::string note;
      ReexecWithShortOpenMpSpin(argv, &note);
      if (!note.empty()) std::fprintf(stderr, "note: %s\n", note.c_str());
    }
    run_args.has_opt_level = run_level_option->count() > 0;
    return RunRun(run_args);
  }
  if (workers->parsed()) return RunWorkers(workers_args);
  if (health->parsed()) return RunHealth(health_args, health_service);
  if (passes->parsed()) return RunPasses(passes_args);
  if (ops_list->parsed()) return RunOps(list_args);
  if (ops_show->parsed()) return RunOps(show_args);
  if (ops_register->parsed()) return RunOpsRegister(register_args);
  if (ops_unregister->parsed()) return RunOpsUnregister(unregister_args);
  if (ops->parsed()) return RunOps(ops_args);
  if (token_new->parsed()) return RunTokenNew(token_new_args);
  if (version->parsed()) {
    std::printf("%s\n", VersionText().c_str());
    return kExitOk;
  }
  return UsageError("no subcommand given");
}

}  // namespace
}  // namespace graphopt

int main(int argc, char** argv) { return graphopt::Main(argc, argv); }
