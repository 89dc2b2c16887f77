// graphopt-worker: executes plans (optimized graphs with their weights) on this machine's CPU,
// serving graphopt.v1.Worker and grpc.health.v1: over mTLS, to the cluster's servers only, or
// with --insecure in plaintext for local development. With --register_with it announces
// itself to a graphopt-server's coordinator and repeats that as a heartbeat; with
// --etcd_endpoints it keeps a key under a lease of its own in etcd, which every server replica
// watches. Every execution runs under a memory budget and a time limit, at most
// --max_concurrent at once.
//
// Lifecycle as graphopt-server's: SIGINT/SIGTERM turn health NOT_SERVING, in-flight calls get
// --shutdown_grace_s seconds, then the process exits 0. Exit 2 for bad flags, 1 when the
// worker cannot start.


#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "etcd/etcd_client.h"
#include "etcd/worker_membership.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "proto/coordinator.grpc.pb.h"
#include "runtime/kernels/cpu_kernels.h"
#include "server/auth.h"
#include "server/health_port.h"
#include "server/process_flags.h"
#include "server/metrics_endpoint.h"
#include "server/rpc_call.h"
#include "server/security.h"
#include "server/serving.h"
#include "server/work_queue.h"
#include "service/tenant.h"
#include "spdlog/logger.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "util/cpu_quota.h"
#include "util/http_endpoint.h"
#include "util/log_format.h"
#include "util/metrics.h"
#include "util/mutex_mode.h"
#include "util/openmp_wait.h"
#include "worker/worker_metrics.h"
#include "worker/worker_service.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50061",
          "Address to listen on, host:port. Port 0 picks a free port (see --port_file).");
ABSL_FLAG(std::string, port_file, "",
          "If set, write the port actually listened on to this file once serving.");
ABSL_FLAG(std::string, worker_id, "",
          "Name of this worker in responses and logs (default: hostname:port).");
ABSL_FLAG(int, threads, 1, "Kernel threads per execution, 1..256.");
ABSL_FLAG(int, max_concurrent, 0,
          "Executions run at once (advertised to the coordinator, which sends no more), "
          "1..1024; 0: CPU cores / --threads, at least 1.");
ABSL_FLAG(int, queue, 4,
          "Executions that may wait for a free slot, 0..100000; more are refused with "
          "RESOURCE_EXHAUSTED (\"graphopt-busy\").");
ABSL_FLAG(int64_t, execution_memory_mb, 0,
          "Memory budget of one execution in MiB, 1..1048576; an execution that would go over "
          "it fails with RESOURCE_EXHAUSTED naming the node and size before allocating. 0: half "
          "the machine's memory divided among --max_concurrent executions.");
ABSL_FLAG(int, max_execution_s, 300,
          "The longest one execution may run, 1..86400 (the caller's deadline may cut it "
          "shorter).");
ABSL_FLAG(bool, insecure, false,
          "Serve in plaintext and execute plans for any caller: for local development only.");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate of this worker (it must name graphopt-worker); re-read when the file "
          "changes.");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert.");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM certificate of the cluster CA: callers' and the server's certificates must "
          "chain to it.");
ABSL_FLAG(std::string, allowed_peers, "graphopt-server",
          "Comma-separated certificate names that may call this worker.");
ABSL_FLAG(std::string, server_tls_name, "graphopt-server",
          "The name the --register_with server's certificate must carry.");
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
// Shared with graphopt-server (server/process_flags.h): --etcd_*, --metrics_*, --log_format,
// --health_listen.

namespace graphopt {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

int Usage(const std::string& message) {
  std::fprintf(stderr, "graphopt-worker: %s\n", message.c_str());
  return kExitUsage;
}

// The handlers' view of the caller: a cluster peer named in --allowed_peers.
CallAuthenticator WorkerCallAuthenticator(std::shared_ptr<Authenticator> auth,
                                          std::vector<std::string> allowed) {
  return [auth = std::move(auth), allowed = std::move(allowed)](
             const grpc::CallbackServerContext& context, Access) -> absl::StatusOr<Caller> {
    absl::StatusOr<std::string> peer = auth->ClusterPeer(context, allowed);
    if (!peer.ok()) return peer.status();
    Caller caller;
    caller.tenant = kDefaultTenant;
    caller.admin = true;
    caller.credential = *peer;
    return caller;
  };
}

int Main(int argc, char** argv) {
  // First, before any thread starts or signal is blocked (the exec keeps the mask).
  std::string openmp_note;
  ReexecWithShortOpenMpSpin(argv, &openmp_note);
  DisableMutexDeadlockDetection();  // before any thread starts (see util/mutex_mode.h)
  sigset_t shutdown_signals;
  if (absl::Status blocked = BlockShutdownSignals(&shutdown_signals); !blocked.ok()) {
    std::fprintf(stderr, "graphopt-worker: %s\n", blocked.ToString().c_str());
    return kExitFailure;
  }
  absl::SetProgramUsageMessage(absl::StrCat(
      "graphopt-worker (--tls_cert=PEM --tls_key=PEM --tls_ca=PEM | --insecure) "
      "[--listen=HOST:PORT] [--port_file=FILE] [--threads=N]\n"
      "  [--max_concurrent=N] [--queue=N] [--execution_memory_mb=N] [--max_execution_s=N] "
      "[--plan_cache_mb=N]\n"
      "  [--worker_id=NAME] [--register_with=SERVER] [--advertise_address=HOST:PORT]\n",
      kProcessFlagsUsage, "Serves graphopt.v1.Worker and grpc.health.v1."));
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() > 1) return Usage(absl::StrCat("unexpected argument '", positional[1], "'"));
  const std::string listen = absl::GetFlag(FLAGS_listen);
  const int requested_threads = absl::GetFlag(FLAGS_threads);
  const int64_t cache_mb = absl::GetFlag(FLAGS_plan_cache_mb);
  const int max_message_mb = absl::GetFlag(FLAGS_max_message_mb);
  const int grace_s = absl::GetFlag(FLAGS_shutdown_grace_s);
  int max_concurrent = absl::GetFlag(FLAGS_max_concurrent);
  const int queue = absl::GetFlag(FLAGS_queue);
  int64_t execution_mb = absl::GetFlag(FLAGS_execution_memory_mb);
  const int max_execution_s = absl::GetFlag(FLAGS_max_execution_s);
  if (listen.empty()) return Usage("--listen must not be empty");
  if (const std::string a = absl::GetFlag(FLAGS_advertise_address);
      !a.empty() && (a.rfind(':') == std::string::npos || a.back() == ':')) {
    return Usage(absl::StrCat("--advertise_address must be host:port, got '", a, "'"));
  }
  if (requested_threads < 1 || requested_threads > 256) {
    return Usage(absl::StrCat("--threads must be in 1..256, got ", requested_threads));
  }
  // Kernel threads and the default concurrency count the CPUs this process may use at once
  // (affinity, the container's CPU quota), not the host's: a pod limited to 2 CPUs on a
  // 64-core node must not run 64 threads that the quota then parks.
  const CpuLimits cpu_limits = ReadCpuLimits();
  const int threads = CapThreads(requested_threads, cpu_limits);
  if (max_concurrent == 0) max_concurrent = std::max(1, cpu_limits.cpus / threads);
  if (max_concurrent < 1 || max_concurrent > 1024) {
    return Usage(absl::StrCat("--max_concurrent must be in 1..1024, got ", max_concurrent));
  }
  if (queue < 0 || queue > 100000) return Usage(absl::StrCat("--queue must be in 0..100000, got ", queue));
  const int64_t physical_mb =
      static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE) >> 20;
  if (execution_mb == 0) execution_mb = std::max<int64_t>(64, physical_mb / 2 / max_concurrent);
  if (execution_mb < 1 || execution_mb > (int64_t{1} << 20)) {
    return Usage(absl::StrCat("--execution_memory_mb must be in 1..1048576, got ", execution_mb));
  }
  if (max_execution_s < 1 || max_execution_s > 86400) {
    return Usage(absl::StrCat("--max_execution_s must be in 1..86400, got ", max_execution_s));
  }
  if (cache_mb < 1 || cache_mb > (int64_t{1} << 20)) {
    return Usage(absl::StrCat("--plan_cache_mb must be in 1..1048576, got ", cache_mb));
  }
  if (max_message_mb < 1 || max_message_mb > 2047) {
    return Usage(absl::StrCat("--max_message_mb must be in 1..2047, got ", max_message_mb));
  }
  if (grace_s < 0 || grace_s > 600) return Usage(absl::StrCat("--shutdown_grace_s must be in 0..600, got ", grace_s));
  absl::StatusOr<ProcessFlags> process = ReadProcessFlags();
  if (!process.ok()) return Usage(std::string(process.status().message()));
  const std::vector<std::string>& etcd_endpoints = process->etcd_endpoints;
  const std::string& etcd_prefix = process->etcd_prefix;
  const int64_t etcd_lease_ttl_s = absl::ToInt64Seconds(process->etcd_lease_ttl);
  const std::string& metrics_listen = process->metrics_listen;
  std::optional<spdlog::level::level_enum> level = ParseLogLevel(absl::GetFlag(FLAGS_log_level));
  if (!level.has_value()) return Usage("--log_level must be one of trace, debug, info, warn, error, critical, off");

  WorkerSecurityFlags security_flags;
  security_flags.insecure = absl::GetFlag(FLAGS_insecure);
  security_flags.tls_cert = absl::GetFlag(FLAGS_tls_cert);
  security_flags.tls_key = absl::GetFlag(FLAGS_tls_key);
  security_flags.tls_ca = absl::GetFlag(FLAGS_tls_ca);
  security_flags.allowed_peers =
      absl::StrSplit(absl::GetFlag(FLAGS_allowed_peers), ',', absl::SkipWhitespace());
  security_flags.server_tls_name = absl::GetFlag(FLAGS_server_tls_name);
  absl::StatusOr<WorkerSecurity> security = MakeWorkerSecurity(security_flags);
  if (!security.ok()) return Usage(std::string(security.status().message()));

  auto logger = std::make_shared<spdlog::logger>(
      "graphopt-worker", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_level(*level);
  logger->flush_on(spdlog::level::info);
  ApplyLogFormat(*logger, process->log_format);
  if (threads < requested_threads) {
    logger->warn("--threads {} capped to {}: the CPUs this process may use ({})",
                 requested_threads, threads, cpu_limits.source);
  }
  if (!openmp_note.empty()) logger->warn("{}", openmp_note);

  runtime::KernelRegistry kernels;
  if (absl::Status s = runtime::RegisterCpuKernels(kernels); !s.ok()) {
    logger->critical("cannot register kernels: {}", s.ToString());
    return kExitFailure;
  }

  // Executions on a bounded queue whose threads are the slots; loads on their own, so that a
  // large plan's load does not hold up executions; probes answered on gRPC's threads.
  WorkQueue execute_queue({"execute", max_concurrent, queue});
  WorkQueue load_queue({"load", 1, 16});
  RpcEnvironment env(WorkerCallAuthenticator(security->auth, security->allowed_peers), nullptr,
                     logger, absl::Seconds(max_execution_s) + absl::Minutes(1));
  env.set_answer_trailers({{kOriginKey, kOriginWorker}});
  MetricsRegistry metrics;
  if (!metrics_listen.empty()) env.EnableMetrics(&metrics);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, security->listener, &port);
  builder.SetMaxReceiveMessageSize(max_message_mb * 1024 * 1024);
  builder.SetMaxSendMessageSize(max_message_mb * 1024 * 1024);

  // The worker id names the address, which is known only once the port is bound; the core is
  // built after BuildAndStart and registered as a service before it (gRPC needs the service
  // object at build time), so the service forwards to a core set just after.
  WorkerOptions options;
  options.threads = threads;
  options.plan_cache_bytes = cache_mb << 20;
  options.execution_memory_bytes = execution_mb << 20;
  options.max_execution = absl::Seconds(max_execution_s);
  std::unique_ptr<WorkerCore> core;
  WorkerService service(nullptr, &env, {&execute_queue, &load_queue});
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
  // Metrics: the endpoint is made after everything its collectors read, so it stops first.
  std::unique_ptr<HttpEndpoint> metrics_endpoint;
  if (!metrics_listen.empty()) {
    ExportWorkQueues(&metrics, {&execute_queue, &load_queue});
    ExportWorkerCore(&metrics, core.get());
    absl::StatusOr<std::unique_ptr<HttpEndpoint>> started = StartMetricsEndpoint(
        metrics_listen, process->metrics_port_file, &metrics, *logger);
    if (!started.ok()) {
      logger->critical("{}", std::string(started.status().message()));
      server->Shutdown(std::chrono::system_clock::now());
      return kExitFailure;
    }
    metrics_endpoint = *std::move(started);
  }
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  if (health == nullptr) {
    logger->critical("the gRPC health service is not available");
    server->Shutdown(std::chrono::system_clock::now());
    return kExitFailure;
  }
  health->SetServingStatus(true);
  std::unique_ptr<HealthPort> health_port;
  if (!process->health_listen.empty()) {
    absl::StatusOr<std::unique_ptr<HealthPort>> started = HealthPort::Start(process->health_listen);
    if (!started.ok()) {
      logger->critical("{}", started.status().ToString());
      server->Shutdown(std::chrono::system_clock::now());
      return kExitFailure;
    }
    health_port = *std::move(started);
    health_port->SetServingStatus(true);
  }
  if (const std::string port_file = absl::GetFlag(FLAGS_port_file); !port_file.empty()) {
    if (absl::Status s = WritePortFile(port_file, port); !s.ok()) {
      logger->critical("--port_file: {}", s.ToString());
      server->Shutdown(std::chrono::system_clock::now());
      return kExitFailure;
    }
  }
  logger->info(
      "graphopt-worker {} listening on {} ({}; threads={}, max_concurrent={}, queue={}, "
      "execution_memory_mb={}, max_execution_s={}, plan_cache_mb={}, kernels={})",
      options.worker_id, address, security->description, threads, max_concurrent, queue,
      execution_mb, max_execution_s, cache_mb, kernels.Keys().size());
  std::string advertised = absl::GetFlag(FLAGS_advertise_address);
  if (advertised.empty()) {
    // A wildcard listen address is no address to call: name the host instead.
    const std::string host = address.substr(0, address.rfind(':'));
    advertised = host == "0.0.0.0" || host == "[::]" || host.empty()
                     ? absl::StrCat(hostname, ":", port)
                     : address;
  }
  // Membership in etcd: this worker's key under its own lease, renewed until shutdown.
  std::unique_ptr<EtcdClient> etcd;
  std::unique_ptr<EtcdWorkerAnnouncer> announcer;
  if (!etcd_endpoints.empty()) {
    absl::StatusOr<EtcdOptions> etcd_options = EtcdOptionsFromFlags(*process);
    absl::StatusOr<std::unique_ptr<EtcdClient>> client =
        etcd_options.ok() ? EtcdClient::Create(*std::move(etcd_options)) : etcd_options.status();
    absl::Status ready = client.ok() ? (*client)->WaitReady(absl::Seconds(30)) : client.status();
    if (ready.ok()) {
      etcd = *std::move(client);
      announcer = std::make_unique<EtcdWorkerAnnouncer>(etcd.get(), etcd_prefix, options.worker_id,
                                                        advertised,
                                                        absl::Seconds(etcd_lease_ttl_s));
      ready = announcer->Start();
    }
    if (!ready.ok()) {
      logger->critical("etcd: cannot announce this worker: {}", ready.ToString());
      server->Shutdown(std::chrono::system_clock::now());
      return kExitFailure;
    }
    logger->info("announced in {} as {} -> {} (lease TTL {} s)", etcd->Describe(),
                 announcer->key(), advertised, etcd_lease_ttl_s);
  }
  // Announce this worker to a server's coordinator, and keep announcing it (the heartbeat, which
  // also brings it back after a server restart) until shutdown.
  absl::Notification stop_heartbeat;
  std::thread heartbeat;
  if (const std::string server_address = absl::GetFlag(FLAGS_register_with);
      !server_address.empty()) {
    heartbeat = std::thread([&stop_heartbeat, &logger, &security, server_address, advertised,
                             worker_id = options.worker_id] {
      auto stub = v1::Coordinator::NewStub(security->to_server.CreateChannel(server_address));
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
  // Out of etcd first, so that servers stop sending work while the calls in flight finish.
  announcer.reset();
  stop_heartbeat.Notify();
  if (heartbeat.joinable()) heartbeat.join();
  logger->info("received {}: not serving any more, letting in-flight calls finish (up to {} s)",
               signal_name, grace_s);
  health->SetServingStatus(false);
  if (health_port != nullptr) health_port->SetServingStatus(false);
  absl::Notification stopped;
  std::thread canceller([&] {
    if (!stopped.WaitForNotificationWithTimeout(absl::Seconds(grace_s))) {
      env.CancelAll("the worker is shutting down");
    }
  });
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(grace_s));
  server->Wait();
  stopped.Notify();
  canceller.join();
  execute_queue.Shutdown();
  load_queue.Shutdown();
  logger->info("graphopt-worker on {} stopped", address);
  return kExitOk;
}

}  // namespace
}  // namespace graphopt

int main(int argc, char** argv) { return graphopt::Main(argc, argv); }
