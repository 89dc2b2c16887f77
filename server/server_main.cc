// graphopt-server: serves graphopt.v1.GraphOptimizer and graphopt.v1.Coordinator (plans run on
// graphopt-worker nodes), plus grpc.health.v1 and server reflection, over insecure gRPC.
//
// Lifecycle: SIGINT/SIGTERM are blocked before any thread starts and received with sigwait()
// on the main thread. On either signal the health status turns NOT_SERVING, in-flight calls
// get --shutdown_grace_s seconds to finish (then they are cancelled) and the process exits 0.
// Exit status 2 for bad flags, 1 when the server cannot start.

#include <signal.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "graph/builtin_ops.h"
#include "graph/op_registry.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "passes/builtin_passes.h"
#include "passes/pass.h"
#include "server/coordinator_service.h"
#include "server/optimizer_service.h"
#include "server/serving.h"
#include "service/blob_store.h"
#include "service/coordinator.h"
#include "service/op_persistence.h"
#include "service/op_store.h"
#include "service/optimizer.h"
#include "spdlog/logger.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"
#include "util/malloc_tuning.h"
#include "util/mutex_mode.h"

// Command-line flags. absl flags are process-wide by design; main reads each one exactly once
// into ServerConfig and nothing else touches them.
ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "Address to listen on, host:port. Port 0 picks a free port (see --port_file).");
ABSL_FLAG(std::string, port_file, "",
          "If set, write the port actually listened on to this file (atomically, via a "
          "temporary file and rename) once the server accepts calls.");
ABSL_FLAG(int, max_message_mb, 512,
          "Largest request or response message in MiB, 1..2047.");
ABSL_FLAG(int, threads, 8,
          "Most threads the synchronous server may use to poll and run calls (>= 2).");
ABSL_FLAG(std::string, log_level, "info",
          "Log level: trace, debug, info, warn, error, critical or off.");
ABSL_FLAG(int, shutdown_grace_s, 5,
          "Seconds in-flight calls get to finish after SIGTERM/SIGINT before they are "
          "cancelled, 0..600.");
ABSL_FLAG(int64_t, blob_store_mb, 4096,
          "MiB of memory for uploaded weight blobs (HasBlobs/PutBlobs), 0..1048576; also the "
          "largest blob. Least recently used blobs not in use are evicted to make room. 0 turns "
          "the blob RPCs off.");
ABSL_FLAG(int, max_blob_digests, 100000,
          "Most digests one HasBlobs request may name, 1..10000000.");
ABSL_FLAG(int, max_blobs_per_upload, 100000,
          "Most blobs one PutBlobs call may upload, 1..10000000.");
ABSL_FLAG(std::string, op_store_dir, "graphopt-state/ops",
          "Directory where the custom ops tenants register (RegisterOps) are kept across "
          "restarts, one file per tenant; relative paths are relative to the working directory; "
          "created if missing. Empty: registered ops live in memory only and are lost on exit. "
          "One server per directory.");

ABSL_FLAG(std::string, workers, "",
          "Workers the coordinator runs plans on (Run), comma-separated host:port; "
          "dns:NAME:PORT for every address NAME resolves to (a Kubernetes headless service). "
          "Workers may also announce themselves (graphopt-worker --register_with).");
ABSL_FLAG(int, probe_interval_ms, 500,
          "How often the coordinator probes each worker (Describe), 10..60000.");
ABSL_FLAG(int, probe_timeout_ms, 1000,
          "A worker not answering a probe within this is marked down and its in-flight calls "
          "are retried elsewhere, 10..60000.");
ABSL_FLAG(int, max_run_attempts, 3, "Workers one Run tries before UNAVAILABLE, 1..100.");
ABSL_FLAG(int, worker_call_timeout_s, 120,
          "Deadline of one LoadPlan or Execute call on a worker; a worker past it is taken as "
          "stalled (marked down, the request retried elsewhere), 1..86400.");

namespace graphopt {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// gRPC takes message limits as int bytes; 2047 MiB is the largest that fits.
constexpr int kMaxMessageMb = 2047;
// The sync server needs one thread polling for calls while another runs one.
constexpr int kMinThreads = 2;
// 1 TiB: a sanity bound on --blob_store_mb.
constexpr int64_t kMaxBlobStoreMb = int64_t{1} << 20;
constexpr int kMaxBlobLimit = 10000000;

struct ServerConfig {
  std::string listen;
  std::string port_file;
  int max_message_mb = 0;
  int threads = 0;
  spdlog::level::level_enum log_level = spdlog::level::info;
  int shutdown_grace_s = 0;
  int64_t blob_store_mb = 0;
  BlobRpcLimits blob_limits;
  std::string op_store_dir;
  std::vector<std::string> workers;
  CoordinatorOptions coordinator;
};

// Reads and checks the flags. INVALID_ARGUMENT naming the flag for a bad value.
absl::StatusOr<ServerConfig> ConfigFromFlags() {
  ServerConfig config;
  config.listen = absl::GetFlag(FLAGS_listen);
  config.port_file = absl::GetFlag(FLAGS_port_file);
  config.max_message_mb = absl::GetFlag(FLAGS_max_message_mb);
  config.threads = absl::GetFlag(FLAGS_threads);
  config.shutdown_grace_s = absl::GetFlag(FLAGS_shutdown_grace_s);
  if (config.listen.empty()) {
    return absl::InvalidArgumentError("--listen must not be empty");
  }
  if (config.max_message_mb < 1 || config.max_message_mb > kMaxMessageMb) {
    return absl::InvalidArgumentError(absl::StrCat("--max_message_mb must be in 1..",
                                                   kMaxMessageMb, ", got ",
                                                   config.max_message_mb));
  }
  if (config.threads < kMinThreads) {
    return absl::InvalidArgumentError(
        absl::StrCat("--threads must be at least ", kMinThreads, ", got ", config.threads));
  }
  if (config.shutdown_grace_s < 0 || config.shutdown_grace_s > 600) {
    return absl::InvalidArgumentError(
        absl::StrCat("--shutdown_grace_s must be in 0..600, got ", config.shutdown_grace_s));
  }
  config.blob_store_mb = absl::GetFlag(FLAGS_blob_store_mb);
  if (config.blob_store_mb < 0 || config.blob_store_mb > kMaxBlobStoreMb) {
    return absl::InvalidArgumentError(absl::StrCat("--blob_store_mb must be in 0..",
                                                   kMaxBlobStoreMb, ", got ",
                                                   config.blob_store_mb));
  }
  config.blob_limits.max_digests_per_request = absl::GetFlag(FLAGS_max_blob_digests);
  if (config.blob_limits.max_digests_per_request < 1 ||
      config.blob_limits.max_digests_per_request > kMaxBlobLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_blob_digests must be in 1..", kMaxBlobLimit, ", got ",
                     config.blob_limits.max_digests_per_request));
  }
  config.blob_limits.max_blobs_per_upload = absl::GetFlag(FLAGS_max_blobs_per_upload);
  if (config.blob_limits.max_blobs_per_upload < 1 ||
      config.blob_limits.max_blobs_per_upload > kMaxBlobLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_blobs_per_upload must be in 1..", kMaxBlobLimit, ", got ",
                     config.blob_limits.max_blobs_per_upload));
  }
  config.op_store_dir = absl::GetFlag(FLAGS_op_store_dir);
  for (absl::string_view w :
       absl::StrSplit(absl::GetFlag(FLAGS_workers), ',', absl::SkipWhitespace())) {
    const std::string worker(absl::StripAsciiWhitespace(w));
    const bool dns = absl::StartsWith(worker, "dns:");
    if (absl::Status s = CheckHostPort(dns ? worker.substr(4) : worker, "--workers"); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          s.message(), "; give host:port or dns:NAME:PORT, comma-separated"));
    }
    config.workers.push_back(worker);
  }
  struct RangeFlag {
    const char* name;
    int value;
    int low, high;
  };
  const RangeFlag coordinator_flags[] = {
      {"--probe_interval_ms", absl::GetFlag(FLAGS_probe_interval_ms), 10, 60000},
      {"--probe_timeout_ms", absl::GetFlag(FLAGS_probe_timeout_ms), 10, 60000},
      {"--max_run_attempts", absl::GetFlag(FLAGS_max_run_attempts), 1, 100},
      {"--worker_call_timeout_s", absl::GetFlag(FLAGS_worker_call_timeout_s), 1, 86400},
  };
  for (const RangeFlag& f : coordinator_flags) {
    if (f.value < f.low || f.value > f.high) {
      return absl::InvalidArgumentError(
          absl::StrCat(f.name, " must be in ", f.low, "..", f.high, ", got ", f.value));
    }
  }
  config.coordinator.probe_interval = absl::Milliseconds(absl::GetFlag(FLAGS_probe_interval_ms));
  config.coordinator.probe_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_probe_timeout_ms));
  config.coordinator.max_attempts = absl::GetFlag(FLAGS_max_run_attempts);
  config.coordinator.call_timeout = absl::Seconds(absl::GetFlag(FLAGS_worker_call_timeout_s));
  const std::string level_name = absl::GetFlag(FLAGS_log_level);
  std::optional<spdlog::level::level_enum> level = ParseLogLevel(level_name);
  if (!level.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--log_level must be one of trace, debug, info, warn, error, critical, off; got '",
        level_name, "'"));
  }
  config.log_level = *level;
  return config;
}

int RunServer(const ServerConfig& config, const sigset_t& shutdown_signals,
              std::shared_ptr<spdlog::logger> logger_ptr) {
  spdlog::logger& logger = *logger_ptr;
  OpRegistry ops;
  if (absl::Status status = RegisterBuiltinOps(&ops); !status.ok()) {
    logger.critical("cannot register builtin ops: {}", status.ToString());
    return kExitFailure;
  }
  PassRegistry passes;
  if (absl::Status status = RegisterBuiltinPasses(&passes); !status.ok()) {
    logger.critical("cannot register builtin passes: {}", status.ToString());
    return kExitFailure;
  }
  // Weight blobs; absent with --blob_store_mb=0.
  std::unique_ptr<BlobStore> blobs;
  if (config.blob_store_mb > 0) {
    blobs = std::make_unique<BlobStore>(config.blob_store_mb << 20);
  }
  // Custom ops registered by tenants, persisted under --op_store_dir.
  OpStoreOptions store_options;
  // Descriptors are compiled with the rule language (store_options.compiler's default,
  // RuleLanguageCompiler).
  if (!config.op_store_dir.empty()) {
    absl::StatusOr<std::unique_ptr<FileOpPersistence>> persistence =
        FileOpPersistence::Create(config.op_store_dir);
    if (!persistence.ok()) {
      logger.critical("--op_store_dir: {}", persistence.status().ToString());
      return kExitFailure;
    }
    store_options.persistence = std::shared_ptr<OpPersistence>(std::move(*persistence));
  }
  OpStore op_store(&ops, std::move(store_options));
  absl::StatusOr<OpStoreLoadReport> loaded = op_store.Load();
  if (!loaded.ok()) {
    logger.critical("{}", loaded.status().ToString());
    return kExitFailure;
  }
  for (const std::string& error : loaded->errors) logger.error("op store: {}", error);
  logger.info("op store: {}: {} ops of {} tenants loaded, {} problems",
              op_store.PersistenceDescription(), loaded->ops, loaded->tenants,
              loaded->errors.size());
  const Optimizer optimizer(&op_store, &passes, blobs.get());
  OptimizerService service(&optimizer, logger_ptr, blobs.get(), config.blob_limits);
  CoordinatorOptions coordinator_options = config.coordinator;
  coordinator_options.max_message_bytes = config.max_message_mb * 1024 * 1024;
  Coordinator coordinator(coordinator_options, &optimizer, blobs.get(), logger_ptr);
  for (const std::string& worker : config.workers) {
    // Checked with the flags already.
    absl::Status added = absl::StartsWith(worker, "dns:") ? coordinator.AddDnsName(worker.substr(4))
                                                          : coordinator.AddWorker(worker, "flag");
    if (!added.ok()) logger.error("--workers: {}", added.ToString());
  }
  coordinator.Start();
  CoordinatorService coordinator_service(&coordinator, logger_ptr);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  const int max_message_bytes = config.max_message_mb * 1024 * 1024;
  grpc::ResourceQuota quota("graphopt-server");
  quota.SetMaxThreads(config.threads);

  grpc::ServerBuilder builder;
  int selected_port = 0;
  builder.AddListeningPort(config.listen, grpc::InsecureServerCredentials(), &selected_port);
  builder.RegisterService(&service);
  builder.RegisterService(&coordinator_service);
  builder.SetMaxReceiveMessageSize(max_message_bytes);
  builder.SetMaxSendMessageSize(max_message_bytes);
  builder.SetResourceQuota(quota);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || selected_port == 0) {
    logger.critical("cannot listen on '{}' (address in use or malformed?)", config.listen);
    if (server != nullptr) server->Shutdown();
    return kExitFailure;
  }
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  if (health == nullptr) {
    logger.critical("the gRPC health service is not available");
    server->Shutdown(std::chrono::system_clock::now());
    return kExitFailure;
  }
  health->SetServingStatus(true);

  const std::string address = ResolvedAddress(config.listen, selected_port);
  if (!config.port_file.empty()) {
    if (absl::Status status = WritePortFile(config.port_file, selected_port); !status.ok()) {
      logger.critical("--port_file: {}", status.ToString());
      server->Shutdown(std::chrono::system_clock::now());
      return kExitFailure;
    }
  }
  logger.info(
      "graphopt-server listening on {} (threads={}, max_message_mb={}, blob_store_mb={}, "
      "ops={}, passes={}, workers named={})",
      address, config.threads, config.max_message_mb, config.blob_store_mb, ops.size(),
      passes.List().size(), config.workers.size());
  logger.flush();

  const std::string signal_name = WaitForShutdownSignal(shutdown_signals, logger);
  logger.info("received {}: not serving any more, letting in-flight calls finish (up to {} s)",
              signal_name, config.shutdown_grace_s);
  health->SetServingStatus(false);
  // Runs still waiting on workers when the grace period ends are cancelled too (gRPC cancels
  // the calls, but a synchronous handler blocked on a worker would hold the shutdown).
  absl::Notification stopped;
  std::thread canceller([&] {
    if (!stopped.WaitForNotificationWithTimeout(absl::Seconds(config.shutdown_grace_s))) {
      coordinator.CancelAll();
    }
  });
  server->Shutdown(std::chrono::system_clock::now() +
                   std::chrono::seconds(config.shutdown_grace_s));
  server->Wait();
  stopped.Notify();
  canceller.join();
  logger.info("graphopt-server on {} stopped", address);
  logger.flush();
  return kExitOk;
}

int Main(int argc, char** argv) {
  TuneMallocForGraphs();  // before any thread starts (see util/malloc_tuning.h)
  DisableMutexDeadlockDetection();  // likewise (see util/mutex_mode.h)
  // Block the shutdown signals before anything can start a thread, so every thread inherits
  // the mask and only the sigwait() in RunServer receives them.
  sigset_t shutdown_signals;
  if (absl::Status blocked = BlockShutdownSignals(&shutdown_signals); !blocked.ok()) {
    std::fprintf(stderr, "graphopt-server: %s\n", blocked.ToString().c_str());
    return kExitFailure;
  }

  absl::SetProgramUsageMessage(
      "graphopt-server [--listen=HOST:PORT] [--port_file=FILE] [--threads=N] "
      "[--max_message_mb=N] [--blob_store_mb=N] [--max_blob_digests=N] "
      "[--max_blobs_per_upload=N] [--op_store_dir=DIR] [--log_level=LEVEL]\n"
      "  [--workers=HOST:PORT,dns:NAME:PORT,...] [--probe_interval_ms=N] [--probe_timeout_ms=N]\n"
      "  [--max_run_attempts=N] [--worker_call_timeout_s=N]\n"
      "Serves graphopt.v1.GraphOptimizer, graphopt.v1.Coordinator, grpc.health.v1.Health and "
      "server reflection.");
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() > 1) {
    std::fprintf(stderr, "graphopt-server: unexpected argument '%s' (see --help)\n",
                 positional[1]);
    return kExitUsage;
  }
  absl::StatusOr<ServerConfig> config = ConfigFromFlags();
  if (!config.ok()) {
    std::fprintf(stderr, "graphopt-server: %s\n", std::string(config.status().message()).c_str());
    return kExitUsage;
  }

  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>("graphopt-server", std::move(sink));
  logger->set_level(config->log_level);
  logger->flush_on(spdlog::level::info);
  return RunServer(*config, shutdown_signals, std::move(logger));
}

}  // namespace
}  // namespace graphopt

int main(int argc, char** argv) { return graphopt::Main(argc, argv); }
