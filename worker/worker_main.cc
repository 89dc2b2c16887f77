// graphopt-worker: executes plans (optimized graphs with their weights) on this machine's CPU,
// serving graphopt.v1.Worker and grpc.health.v1 over insecure gRPC. With --register_with it
// announces itself to a graphopt-server's coordinator and repeats that as a heartbeat.
//
// Lifecycle as graphopt-server's: SIGINT/SIGTERM turn health NOT_SERVING, in-flight calls get
// --shutdown_grace_s seconds, then the process exits 0. Exit 2 for bad flags, 1 when the
// worker cannot start.

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "proto/coordinator.grpc.pb.h"
#include "runtime/kernels/cpu_kernels.h"
#include "server/serving.h"
#include "spdlog/logger.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "util/mutex_mode.h"
#include "worker/worker_service.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50061",
          "Address to listen on, host:port. Port 0 picks a free port (see --port_file).");
ABSL_FLAG(std::string, port_file, "",
          "If set, write the port actually listened on to this file once serving.");
ABSL_FLAG(std::string, worker_id, "",
          "Name of this worker in responses and logs (default: hostname:port).");
ABSL_FLAG(int, threads, 1, "Kernel threads per execution, 1..256.");
ABSL_FLAG(int, rpc_threads, 8, "Most threads for gRPC calls (concurrent executions), >= 2.");
ABSL_FLAG(int64_t, plan_cache_mb, 4096, "MiB of loaded plans kept, 1..1048576.");
ABSL_FLAG(int, max_message_mb, 1024, "Largest request or response message in MiB, 1..2047.");
ABSL_FLAG(std::string, log_level, "info",
          "Log level: trace, debug, info, warn, error, critical or off.");
ABSL_FLAG(int, shutdown_grace_s, 5, "Seconds in-flight calls get after SIGTERM, 0..600.");
ABSL_FLAG(std::string, register_with, "",
          "A graphopt-server (host:port) to announce this worker to, with a heartbeat from then "
          "on (the server's coordinator then runs plans here).");
ABSL_FLAG(std::string, advertise_address, "",
          "With --register_with: the host:port the server should call this worker at (default: "
          "the listen address with the port bound; the host name for a wildcard address).");

namespace graphopt {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

int Usage(const std::string& message) {
  std::fprintf(stderr, "graphopt-worker: %s\n", message.c_str());
  return kExitUsage;
}

int Main(int argc, char** argv) {
  DisableMutexDeadlockDetection();  // before any thread starts (see util/mutex_mode.h)
  sigset_t shutdown_signals;
  if (absl::Status blocked = BlockShutdownSignals(&shutdown_signals); !blocked.ok()) {
    std::fprintf(stderr, "graphopt-worker: %s\n", blocked.ToString().c_str());
    return kExitFailure;
  }
  absl::SetProgramUsageMessage(
      "graphopt-worker [--listen=HOST:PORT] [--port_file=FILE] [--threads=N] "
      "[--plan_cache_mb=N] [--worker_id=NAME] [--register_with=SERVER] "
      "[--advertise_address=HOST:PORT]\nServes graphopt.v1.Worker and grpc.health.v1.");
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() > 1) return Usage(absl::StrCat("unexpected argument '", positional[1], "'"));
  const std::string listen = absl::GetFlag(FLAGS_listen);
  const int threads = absl::GetFlag(FLAGS_threads);
  const int rpc_threads = absl::GetFlag(FLAGS_rpc_threads);
  const int64_t cache_mb = absl::GetFlag(FLAGS_plan_cache_mb);
  const int max_message_mb = absl::GetFlag(FLAGS_max_message_mb);
  const int grace_s = absl::GetFlag(FLAGS_shutdown_grace_s);
  if (listen.empty()) return Usage("--listen must not be empty");
  if (const std::string a = absl::GetFlag(FLAGS_advertise_address);
      !a.empty() && (a.rfind(':') == std::string::npos || a.back() == ':')) {
    return Usage(absl::StrCat("--advertise_address must be host:port, got '", a, "'"));
  }
  if (threads < 1 || threads > 256) return Usage(absl::StrCat("--threads must be in 1..256, got ", threads));
  if (rpc_threads < 2) return Usage(absl::StrCat("--rpc_threads must be at least 2, got ", rpc_threads));
  if (cache_mb < 1 || cache_mb > (int64_t{1} << 20)) {
    return Usage(absl::StrCat("--plan_cache_mb must be in 1..1048576, got ", cache_mb));
  }
  if (max_message_mb < 1 || max_message_mb > 2047) {
    return Usage(absl::StrCat("--max_message_mb must be in 1..2047, got ", max_message_mb));
  }
  if (grace_s < 0 || grace_s > 600) return Usage(absl::StrCat("--shutdown_grace_s must be in 0..600, got ", grace_s));
  std::optional<spdlog::level::level_enum> level = ParseLogLevel(absl::GetFlag(FLAGS_log_level));
  if (!level.has_value()) return Usage("--log_level must be one of trace, debug, info, warn, error, critical, off");

  auto logger = std::make_shared<spdlog::logger>(
      "graphopt-worker", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_level(*level);
  logger->flush_on(spdlog::level::info);

  runtime::KernelRegistry kernels;
  if (absl::Status s = runtime::RegisterCpuKernels(kernels); !s.ok()) {
    logger->critical("cannot register kernels: {}", s.ToString());
    return kExitFailure;
  }

  grpc::EnableDefaultHealthCheckService(true);
  grpc::ResourceQuota quota("graphopt-worker");
  quota.SetMaxThreads(rpc_threads);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(max_message_mb * 1024 * 1024);
  builder.SetMaxSendMessageSize(max_message_mb * 1024 * 1024);
  builder.SetResourceQuota(quota);

  // The worker id names the address, which is known only once the port is bound; the core is
  // built after BuildAndStart and registered as a service before it (gRPC needs the service
  // object at build time), so the service forwards to a core set just after.
  WorkerOptions options;
  options.threads = threads;
  options.plan_cache_bytes = cache_mb << 20;
  std::unique_ptr<WorkerCore> core;
  WorkerService service(nullptr, logger);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    logger->critical("cannot listen on '{}' (address in use or malformed?)", listen);
    return kExitFailure;
  }
  const std::string address = ResolvedAddress(listen, port);
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  const std::string hostname = host;
  options.worker_id = absl::GetFlag(FLAGS_worker_id).empty()
                          ? absl::StrCat(hostname, ":", port)
                          : absl::GetFlag(FLAGS_worker_id);
  core = std::make_unique<WorkerCore>(&kernels, options);
  service.set_core(core.get());
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  if (health == nullptr) {
    logger->critical("the gRPC health service is not available");
    server->Shutdown(std::chrono::system_clock::now());
    return kExitFailure;
  }
  health->SetServingStatus(true);
  if (const std::string port_file = absl::GetFlag(FLAGS_port_file); !port_file.empty()) {
    if (absl::Status s = WritePortFile(port_file, port); !s.ok()) {
      logger->critical("--port_file: {}", s.ToString());
      server->Shutdown(std::chrono::system_clock::now());
      return kExitFailure;
    }
  }
  logger->info("graphopt-worker {} listening on {} (threads={}, plan_cache_mb={}, kernels={})",
               options.worker_id, address, threads, cache_mb, kernels.Keys().size());
  // Announce this worker to a server's coordinator, and keep announcing it (the heartbeat, which
  // also brings it back after a server restart) until shutdown.
  absl::Notification stop_heartbeat;
  std::thread heartbeat;
  if (const std::string server_address = absl::GetFlag(FLAGS_register_with);
      !server_address.empty()) {
    std::string advertised = absl::GetFlag(FLAGS_advertise_address);
    if (advertised.empty()) {
      // A wildcard listen address is no address to call: name the host instead.
      const std::string host = address.substr(0, address.rfind(':'));
      advertised = host == "0.0.0.0" || host == "[::]" || host.empty()
                       ? absl::StrCat(hostname, ":", port)
                       : address;
    }
    heartbeat = std::thread([&stop_heartbeat, &logger, server_address, advertised,
                             worker_id = options.worker_id] {
      auto stub = v1::Coordinator::NewStub(
          grpc::CreateChannel(server_address, grpc::InsecureChannelCredentials()));
      bool registered = false;
      bool warned = false;
      absl::Duration interval = absl::Seconds(1);
      while (!stop_heartbeat.HasBeenNotified()) {
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
        v1::RegisterWorkerRequest request;
        request.set_address(advertised);
        request.set_worker_id(worker_id);
        v1::RegisterWorkerResponse response;
        const grpc::Status s = stub->RegisterWorker(&context, request, &response);
        if (s.ok() && !registered) {
          logger->info("registered with {} as {}", server_address, advertised);
        } else if (!s.ok() && (registered || !warned)) {
          // Once per outage, not once per try.
          logger->warn("cannot register with {}: {}", server_address, s.error_message());
          warned = true;
        }
        registered = s.ok();
        interval = s.ok() && response.heartbeat_interval_ms() > 0
                       ? absl::Milliseconds(response.heartbeat_interval_ms())
                       : absl::Seconds(1);
        stop_heartbeat.WaitForNotificationWithTimeout(interval);
      }
    });
  }
  const std::string signal_name = WaitForShutdownSignal(shutdown_signals, *logger);
  stop_heartbeat.Notify();
  if (heartbeat.joinable()) heartbeat.join();
  logger->info("received {}: not serving any more, letting in-flight calls finish (up to {} s)",
               signal_name, grace_s);
  health->SetServingStatus(false);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(grace_s));
  server->Wait();
  logger->info("graphopt-worker on {} stopped", address);
  return kExitOk;
}

}  // namespace
}  // namespace graphopt

int main(int argc, char** argv) { return graphopt::Main(argc, argv); }
