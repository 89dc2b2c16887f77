// graphopt-server: serves graphopt.v1.GraphOptimizer and graphopt.v1.Coordinator (plans run on
// graphopt-worker nodes), plus grpc.health.v1 and server reflection: over TLS with bearer
// tokens for clients and mTLS with the workers, or with --insecure in plaintext for local
// development (docs/security.md).
//
// Lifecycle: SIGINT/SIGTERM are blocked before any thread starts and received with sigwait()
// on the main thread. On either signal the health status turns NOT_SERVING, in-flight calls
// get --shutdown_grace_s seconds to finish (then they are cancelled) and the process exits 0.
// Exit status 2 for bad flags, 1 when the server cannot start.

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <initializer_list>
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
#include "etcd/blob_holders.h"
#include "etcd/etcd_client.h"
#include "etcd/etcd_op_persistence.h"
#include "etcd/etcd_request_log.h"
#include "etcd/replica_presence.h"
#include "etcd/worker_membership.h"
#include "graph/op_registry.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "ops/builtin_ops.h"
#include "passes/builtin_passes.h"
#include "passes/pass.h"
#include "passes/pipeline.h"
#include "server/auth.h"
#include "server/health_port.h"
#include "server/coordinator_service.h"
#include "server/grpc_worker_client.h"
#include "server/metrics_endpoint.h"
#include "server/metrics_export.h"
#include "server/optimizer_service.h"
#include "server/peer_blob_fetcher.h"
#include "server/peer_service.h"
#include "server/process_flags.h"
#include "server/rpc_call.h"
#include "server/security.h"
#include "server/serving.h"
#include "server/work_queue.h"
#include "service/blob_store.h"
#include "service/coordinator.h"
#include "service/op_persistence.h"
#include "service/op_store.h"
#include "service/optimizer.h"
#include "service/quota.h"
#include "service/result_cache.h"
#include "spdlog/logger.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"
#include "util/cpu_quota.h"
#include "util/file_util.h"
#include "util/file_version.h"
#include "util/http_endpoint.h"
#include "util/log_format.h"
#include "util/malloc_tuning.h"
#include "util/metrics.h"
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
ABSL_FLAG(int, threads, 0,
          "Threads that run Optimize calls at once (the optimize queue), 1..1024; 0: one per "
          "CPU this process may use (its affinity mask and cgroup CPU quota).");
ABSL_FLAG(int, optimize_queue, 64,
          "Optimize calls that may wait for a thread, 0..100000; more are refused with "
          "RESOURCE_EXHAUSTED and a retry hint.");
ABSL_FLAG(int, run_threads, 64,
          "Run calls handled at once (each mostly waits for a worker), 1..4096.");
ABSL_FLAG(int, run_queue, 256, "Run calls that may wait for a run thread, 0..100000.");
ABSL_FLAG(int, max_uploads, 16, "PutBlobs uploads open at once, all tenants together, 1..4096.");
ABSL_FLAG(int, max_call_s, 600,
          "The longest any call may run, whatever the client's deadline, 1..86400.");
ABSL_FLAG(bool, insecure, false,
          "Serve in plaintext, with no TLS and (without --tokens_file) the tenant taken from the "
          "\"graphopt-tenant\" header: for local development only.");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate of this server (it must name graphopt-server); re-read when the "
          "file changes.");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert.");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM certificate of the cluster CA: workers' certificates must chain to it.");
ABSL_FLAG(std::string, tokens_file, "",
          "File of hashed bearer tokens (see `graphopt token new`); required without "
          "--insecure; re-read when it changes.");
ABSL_FLAG(std::string, worker_tls_name, "graphopt-worker",
          "The name workers' certificates must carry (they are called at their pod address).");
ABSL_FLAG(std::string, quotas_file, "",
          "Per-tenant quota overrides, one line per tenant: '<tenant|*> key=value ...' "
          "(max_concurrent, requests_per_s, burst, blob_mb, op_store_mb, max_ops); re-read "
          "when it changes. The --tenant_* flags are the defaults.");
ABSL_FLAG(int, tenant_max_concurrent, 16,
          "Default quota: calls of one tenant being served or queued at once.");
ABSL_FLAG(double, tenant_requests_per_s, 200, "Default quota: calls per second of one tenant.");
ABSL_FLAG(double, tenant_burst, 400, "Default quota: calls one tenant may make in a burst.");
ABSL_FLAG(int64_t, tenant_blob_mb, 1024, "Default quota: MiB of weight blobs one tenant holds.");
ABSL_FLAG(int64_t, tenant_op_store_mb, 16,
          "Default quota: MiB of op descriptors one tenant registers.");
ABSL_FLAG(int, tenant_max_ops, 1000, "Default quota: ops one tenant registers.");
ABSL_FLAG(int64_t, max_fold_mb, 64,
          "Ceiling on the constant-folding budgets a request may ask for (max_folded_bytes, "
          "max_growth_bytes), in MiB.");
ABSL_FLAG(int64_t, optimize_cache_mb, 256,
          "MiB of Optimize results kept to answer repeated requests (all tenants together; "
          "least recently used first out), 0..1048576; 0 turns the result cache off.");
ABSL_FLAG(int64_t, optimize_cache_tenant_mb, 0,
          "MiB of the result cache one tenant may fill, 0..--optimize_cache_mb; 0: a quarter of "
          "--optimize_cache_mb.");
ABSL_FLAG(int64_t, verify_memory_mb, 2048,
          "MiB one verification (OptimizeOptions.verify) may hold: the weights of the graph "
          "being run, the inputs and what both runs allocate, 1..1048576.");
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
          "A worker not answering this many probes in a row in time (or refusing the "
          "connection) is marked down and its in-flight calls are retried elsewhere, 10..60000.");
ABSL_FLAG(int, max_run_attempts, 2,
          "Workers one Run tries when a worker fails it (died, stalled, over its memory or time "
          "limit): 2 retries a possible poison request once elsewhere, 1..100.");
ABSL_FLAG(int, max_workers, 1024, "Workers the coordinator knows at once, 1..100000.");
ABSL_FLAG(int, slot_wait_s, 30,
          "How long a Run waits for a free worker slot before RESOURCE_EXHAUSTED, 0..3600.");
ABSL_FLAG(int, quarantine_s, 600,
          "How long a plan that killed or stalled two workers is refused, 0..604800.");
ABSL_FLAG(int, max_sessions_per_tenant, 16,
          "Training sessions (Run with a session) one tenant may hold at once, 1..100000.");
ABSL_FLAG(int, session_idle_s, 1800,
          "A training session without a Run or FetchState for this long is ended and its state "
          "dropped on its worker, 1..2592000.");
ABSL_FLAG(int, worker_call_timeout_s, 120,
          "Deadline of one LoadPlan or Execute call on a worker; a worker past it is taken as "
          "stalled (marked down, the request retried elsewhere), 1..86400.");

// Shared state with --etcd_endpoints (server/process_flags.h), docs/operations.md, "Replicas and
// shared state".
ABSL_FLAG(int, request_id_ttl_s, 86400,
          "With --etcd_endpoints: how long an answered Run request id is remembered (replayed "
          "by any replica), 60..2592000.");
ABSL_FLAG(int, request_ids_per_tenant, 10000,
          "With --etcd_endpoints: answered request ids kept per tenant (the oldest are "
          "forgotten beyond), 1..10000000.");
ABSL_FLAG(std::string, advertise_address, "",
          "host:port at which the other replicas reach this one (with --etcd_endpoints); "
          "default: --listen with the selected port.");

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
  int optimize_queue = 0;
  int run_threads = 0;
  int run_queue = 0;
  absl::Duration max_call_time;
  spdlog::level::level_enum log_level = spdlog::level::info;
  int shutdown_grace_s = 0;
  int64_t blob_store_mb = 0;
  BlobRpcLimits blob_limits;
  std::string op_store_dir;
  std::vector<std::string> workers;
  CoordinatorOptions coordinator;
  ServerSecurityFlags security;
  TenantQuota default_quota;
  std::string quotas_file;
  int64_t max_fold_bytes = 0;
  ResultCacheOptions result_cache;
  int64_t verify_memory_bytes = 0;
  // Shared state, metrics, logs, the health port: the flags shared with the worker.
  ProcessFlags process;
  EtcdRequestLogOptions request_ids;
  std::string advertise_address;
};

// A flag's value with its allowed range, for one check loop.
struct RangeFlag {
  const char* name;
  int64_t value;
  int64_t low, high;
};

absl::Status CheckRanges(std::initializer_list<RangeFlag> flags) {
  for (const RangeFlag& f : flags) {
    if (f.value < f.low || f.value > f.high) {
      return absl::InvalidArgumentError(
          absl::StrCat(f.name, " must be in ", f.low, "..", f.high, ", got ", f.value));
    }
  }
  return absl::OkStatus();
}

// Reads and checks the flags. INVALID_ARGUMENT naming the flag for a bad value.
absl::StatusOr<ServerConfig> ConfigFromFlags() {
  ServerConfig config;
  config.listen = absl::GetFlag(FLAGS_listen);
  config.port_file = absl::GetFlag(FLAGS_port_file);
  config.max_message_mb = absl::GetFlag(FLAGS_max_message_mb);
  config.threads = absl::GetFlag(FLAGS_threads);
  if (config.threads == 0) {
    // The CPUs this process may use (affinity, cgroup CPU quota), not the host's: a server in
    // a container limited to 2 CPUs on a 64-core node runs 2 optimizations at once.
    config.threads = ReadCpuLimits().cpus;
  }
  config.optimize_queue = absl::GetFlag(FLAGS_optimize_queue);
  config.run_threads = absl::GetFlag(FLAGS_run_threads);
  config.run_queue = absl::GetFlag(FLAGS_run_queue);
  config.shutdown_grace_s = absl::GetFlag(FLAGS_shutdown_grace_s);
  config.blob_store_mb = absl::GetFlag(FLAGS_blob_store_mb);
  config.blob_limits.max_digests_per_request = absl::GetFlag(FLAGS_max_blob_digests);
  config.blob_limits.max_blobs_per_upload = absl::GetFlag(FLAGS_max_blobs_per_upload);
  config.blob_limits.max_uploads = absl::GetFlag(FLAGS_max_uploads);
  config.max_fold_bytes = absl::GetFlag(FLAGS_max_fold_mb) << 20;
  config.result_cache.max_bytes = absl::GetFlag(FLAGS_optimize_cache_mb) << 20;
  config.result_cache.max_tenant_bytes = absl::GetFlag(FLAGS_optimize_cache_tenant_mb) << 20;
  config.verify_memory_bytes = absl::GetFlag(FLAGS_verify_memory_mb) << 20;
  if (config.listen.empty()) {
    return absl::InvalidArgumentError("--listen must not be empty");
  }
  if (absl::Status s = CheckRanges({
          {"--max_message_mb", config.max_message_mb, 1, kMaxMessageMb},
          {"--threads", config.threads, 1, 1024},
          {"--optimize_queue", config.optimize_queue, 0, 100000},
          {"--run_threads", config.run_threads, 1, 4096},
          {"--run_queue", config.run_queue, 0, 100000},
          {"--max_uploads", config.blob_limits.max_uploads, 1, 4096},
          {"--max_call_s", absl::GetFlag(FLAGS_max_call_s), 1, 86400},
          {"--shutdown_grace_s", config.shutdown_grace_s, 0, 600},
          {"--blob_store_mb", config.blob_store_mb, 0, kMaxBlobStoreMb},
          {"--max_blob_digests", config.blob_limits.max_digests_per_request, 1, kMaxBlobLimit},
          {"--max_blobs_per_upload", config.blob_limits.max_blobs_per_upload, 1, kMaxBlobLimit},
          {"--max_fold_mb", absl::GetFlag(FLAGS_max_fold_mb), 0, 1 << 20},
          {"--optimize_cache_mb", absl::GetFlag(FLAGS_optimize_cache_mb), 0, kMaxBlobStoreMb},
          {"--optimize_cache_tenant_mb", absl::GetFlag(FLAGS_optimize_cache_tenant_mb), 0,
           absl::GetFlag(FLAGS_optimize_cache_mb)},
          {"--verify_memory_mb", absl::GetFlag(FLAGS_verify_memory_mb), 1, kMaxBlobStoreMb},
          {"--probe_interval_ms", absl::GetFlag(FLAGS_probe_interval_ms), 10, 60000},
          {"--probe_timeout_ms", absl::GetFlag(FLAGS_probe_timeout_ms), 10, 60000},
          {"--max_run_attempts", absl::GetFlag(FLAGS_max_run_attempts), 1, 100},
          {"--worker_call_timeout_s", absl::GetFlag(FLAGS_worker_call_timeout_s), 1, 86400},
          {"--max_workers", absl::GetFlag(FLAGS_max_workers), 1, 100000},
          {"--slot_wait_s", absl::GetFlag(FLAGS_slot_wait_s), 0, 3600},
          {"--quarantine_s", absl::GetFlag(FLAGS_quarantine_s), 0, 604800},
          {"--max_sessions_per_tenant", absl::GetFlag(FLAGS_max_sessions_per_tenant), 1, 100000},
          {"--session_idle_s", absl::GetFlag(FLAGS_session_idle_s), 1, 2592000},
          {"--tenant_max_concurrent", absl::GetFlag(FLAGS_tenant_max_concurrent), 1, 1000000},
          {"--tenant_blob_mb", absl::GetFlag(FLAGS_tenant_blob_mb), 0, kMaxBlobStoreMb},
          {"--tenant_op_store_mb", absl::GetFlag(FLAGS_tenant_op_store_mb), 0, 1 << 20},
          {"--tenant_max_ops", absl::GetFlag(FLAGS_tenant_max_ops), 0, 1000000},
      });
      !s.ok()) {
    return s;
  }
  if (!(absl::GetFlag(FLAGS_tenant_requests_per_s) > 0) ||
      !(absl::GetFlag(FLAGS_tenant_burst) >= 1)) {
    return absl::InvalidArgumentError(
        "--tenant_requests_per_s must be above 0 and --tenant_burst at least 1");
  }
  config.max_call_time = absl::Seconds(absl::GetFlag(FLAGS_max_call_s));
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
  config.coordinator.probe_interval = absl::Milliseconds(absl::GetFlag(FLAGS_probe_interval_ms));
  config.coordinator.probe_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_probe_timeout_ms));
  config.coordinator.max_attempts = absl::GetFlag(FLAGS_max_run_attempts);
  config.coordinator.call_timeout = absl::Seconds(absl::GetFlag(FLAGS_worker_call_timeout_s));
  config.coordinator.max_workers = absl::GetFlag(FLAGS_max_workers);
  config.coordinator.slot_wait = absl::Seconds(absl::GetFlag(FLAGS_slot_wait_s));
  config.coordinator.quarantine = absl::Seconds(absl::GetFlag(FLAGS_quarantine_s));
  config.coordinator.max_sessions_per_tenant = absl::GetFlag(FLAGS_max_sessions_per_tenant);
  config.coordinator.session_idle_timeout = absl::Seconds(absl::GetFlag(FLAGS_session_idle_s));
  config.security.insecure = absl::GetFlag(FLAGS_insecure);
  config.security.tls_cert = absl::GetFlag(FLAGS_tls_cert);
  config.security.tls_key = absl::GetFlag(FLAGS_tls_key);
  config.security.tls_ca = absl::GetFlag(FLAGS_tls_ca);
  config.security.tokens_file = absl::GetFlag(FLAGS_tokens_file);
  config.security.worker_tls_name = absl::GetFlag(FLAGS_worker_tls_name);
  config.default_quota.max_concurrent = absl::GetFlag(FLAGS_tenant_max_concurrent);
  config.default_quota.requests_per_s = absl::GetFlag(FLAGS_tenant_requests_per_s);
  config.default_quota.burst = absl::GetFlag(FLAGS_tenant_burst);
  config.default_quota.blob_bytes = absl::GetFlag(FLAGS_tenant_blob_mb) << 20;
  config.default_quota.op_store_bytes = absl::GetFlag(FLAGS_tenant_op_store_mb) << 20;
  config.default_quota.max_ops = absl::GetFlag(FLAGS_tenant_max_ops);
  config.quotas_file = absl::GetFlag(FLAGS_quotas_file);
  absl::StatusOr<ProcessFlags> process = ReadProcessFlags();
  if (!process.ok()) return process.status();
  config.process = *std::move(process);
  if (absl::Status s = CheckRanges(
          {{"--request_id_ttl_s", absl::GetFlag(FLAGS_request_id_ttl_s), 60, 2592000},
           {"--request_ids_per_tenant", absl::GetFlag(FLAGS_request_ids_per_tenant), 1, 10000000}});
      !s.ok()) {
    return s;
  }
  config.request_ids.answer_ttl = absl::Seconds(absl::GetFlag(FLAGS_request_id_ttl_s));
  config.request_ids.max_per_tenant = absl::GetFlag(FLAGS_request_ids_per_tenant);
  config.advertise_address = absl::GetFlag(FLAGS_advertise_address);
  if (!config.advertise_address.empty()) {
    if (absl::Status s = CheckHostPort(config.advertise_address, "--advertise_address");
        !s.ok()) {
      return s;
    }
  }
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

// The quota table: the defaults from the flags with the --quotas_file overrides.
absl::StatusOr<QuotaTable> LoadQuotas(const ServerConfig& config) {
  if (config.quotas_file.empty()) return QuotaTable(config.default_quota);
  absl::StatusOr<std::string> text = ReadFileBytes(config.quotas_file);
  if (!text.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--quotas_file: ", config.quotas_file, ": ", text.status().message()));
  }
  absl::StatusOr<QuotaTable> table = QuotaTable::Parse(*text, config.default_quota);
  if (!table.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--quotas_file: ", config.quotas_file, ": ", table.status().message()));
  }
  return table;
}

// The handlers' view of the caller, from the process's Authenticator (server/auth.h).
CallAuthenticator ServerCallAuthenticator(std::shared_ptr<Authenticator> auth,
                                          std::vector<std::string> worker_identities) {
  return [auth = std::move(auth), workers = std::move(worker_identities)](
             const grpc::CallbackServerContext& context,
             Access access) -> absl::StatusOr<Caller> {
    Caller caller;
    if (access == Access::kClusterPeer) {
      absl::StatusOr<std::string> peer = auth->ClusterPeer(context, workers);
      if (!peer.ok()) return peer.status();
      caller.tenant = kDefaultTenant;
      caller.credential = *peer;
      return caller;
    }
    absl::StatusOr<Principal> principal = auth->Authenticate(context);
    if (!principal.ok()) return principal.status();
    caller.tenant = principal->tenant;
    caller.admin = principal->is_admin();
    switch (principal->role) {
      case PrincipalRole::kTenant:
        caller.credential = absl::StrCat("token '", principal->label, "'");
        break;
      case PrincipalRole::kAdmin:
        caller.credential = absl::StrCat("admin token '", principal->label, "'");
        break;
      case PrincipalRole::kAnonymousDev:
        caller.credential = "insecure";
        break;
    }
    return caller;
  };
}

int RunServer(const ServerConfig& config, const sigset_t& shutdown_signals,
              std::shared_ptr<spdlog::logger> logger_ptr) {
  spdlog::logger& logger = *logger_ptr;
  absl::StatusOr<ServerSecurity> security =
      MakeServerSecurity(config.security, [logger_ptr](const TokenReload& reload) {
        if (reload.status.ok()) {
          logger_ptr->info("tokens file reloaded: {} tenant and {} admin tokens in force",
                           reload.tenant_tokens, reload.admin_tokens);
        } else {
          logger_ptr->error("tokens file not reloaded, the previous tokens stay in force: {}",
                            reload.status.ToString());
        }
      });
  if (!security.ok()) {
    logger.critical("{}", std::string(security.status().message()));
    return kExitUsage;
  }
  absl::StatusOr<QuotaTable> quota_table = LoadQuotas(config);
  if (!quota_table.ok()) {
    logger.critical("{}", std::string(quota_table.status().message()));
    return kExitUsage;
  }
  QuotaBook quotas(*std::move(quota_table));
  TenantLimiter limiter(&quotas);

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
  // Shared state in etcd (--etcd_endpoints): connected before anything is served, so a replica
  // never answers from state it has not read.
  std::unique_ptr<EtcdClient> etcd;
  std::unique_ptr<ReplicaPresence> presence;
  std::shared_ptr<EtcdOpPersistence> etcd_ops;
  if (!config.process.etcd_endpoints.empty()) {
    absl::StatusOr<EtcdOptions> etcd_options = EtcdOptionsFromFlags(config.process);
    absl::StatusOr<std::unique_ptr<EtcdClient>> client =
        etcd_options.ok() ? EtcdClient::Create(*std::move(etcd_options)) : etcd_options.status();
    if (!client.ok()) {
      logger.critical("{}", std::string(client.status().message()));
      return kExitUsage;
    }
    etcd = *std::move(client);
    if (absl::Status ready = etcd->WaitReady(absl::Seconds(30)); !ready.ok()) {
      logger.critical("{}", ready.ToString());
      return kExitFailure;
    }
    presence = std::make_unique<ReplicaPresence>(etcd.get(), config.process.etcd_prefix,
                                                 config.process.etcd_lease_ttl);
    // Call quotas are the whole service's: each replica enforces its share.
    presence->set_on_count([&quotas](int replicas) { quotas.set_replicas(replicas); });
    if (absl::Status started = presence->Start(); !started.ok()) {
      logger.critical("etcd: cannot take this replica's lease: {}", started.ToString());
      return kExitFailure;
    }
    etcd_ops = std::make_shared<EtcdOpPersistence>(etcd.get(), config.process.etcd_prefix);
  }
  // Weight blobs; absent with --blob_store_mb=0.
  std::unique_ptr<BlobStore> blobs;
  if (config.blob_store_mb > 0) {
    blobs = std::make_unique<BlobStore>(config.blob_store_mb << 20, &quotas);
  }
  // With etcd, replicas share blobs: each records what it holds, and fetches what a client
  // refers to and it lacks from a replica that holds it (docs/operations.md).
  std::unique_ptr<EtcdBlobHolders> blob_holders;
  std::unique_ptr<PeerBlobFetcher> blob_fetcher;
  if (blobs != nullptr && presence != nullptr) {
    blob_holders = std::make_unique<EtcdBlobHolders>(etcd.get(), config.process.etcd_prefix,
                                                     presence.get(), blobs.get(), logger_ptr);
    PeerFetchOptions fetch_options;
    if (security->to_workers.is_tls()) {
      fetch_options.security =
          ChannelSecurity(security->to_workers.credentials(), kServerIdentity);
    }
    blob_fetcher = std::make_unique<PeerBlobFetcher>(blob_holders.get(),
                                                     std::move(fetch_options), logger_ptr);
    blobs->set_observer(blob_holders.get());
    blobs->set_fetcher(blob_fetcher.get());
  }
  // Custom ops registered by tenants, persisted under --op_store_dir.
  OpStoreOptions store_options;
  store_options.quotas = &quotas;
  // Descriptors are compiled with the rule language (store_options.compiler's default,
  // RuleLanguageCompiler).
  if (etcd_ops != nullptr) {
    store_options.persistence = etcd_ops;
    if (!config.op_store_dir.empty()) {
      logger.info("--op_store_dir '{}' is not used: with --etcd_endpoints ops are kept in etcd",
                  config.op_store_dir);
    }
  } else if (!config.op_store_dir.empty()) {
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
  if (etcd_ops != nullptr) {
    // Other replicas' registrations, applied as they land in etcd.
    absl::Status watching = etcd_ops->Watch(
        [&op_store, logger_ptr](const std::string& tenant, const v1::OpDescriptorList& list) {
          absl::StatusOr<OpStoreLoadReport> applied = op_store.ApplyStored(tenant, list);
          if (!applied.ok()) {
            logger_ptr->error("op store: tenant '{}' from etcd: {}", tenant,
                              applied.status().ToString());
            return;
          }
          for (const std::string& error : applied->errors) {
            logger_ptr->error("op store: {}", error);
          }
        });
    if (!watching.ok()) logger.warn("op store: {}", watching.ToString());
  }
  Optimizer optimizer(&op_store, &passes, blobs.get());
  OptionCeilings ceilings = DefaultOptionCeilings();
  for (const char* key : {"constant_fold.max_folded_bytes", "constant_fold.max_growth_bytes"}) {
    ceilings[key] = config.max_fold_bytes;
  }
  optimizer.set_option_ceilings(std::move(ceilings));
  // Repeated Optimize requests are answered from here (absent with --optimize_cache_mb=0).
  ResultCache result_cache(config.result_cache);
  if (result_cache.enabled()) optimizer.set_result_cache(&result_cache);
  // Verification runs on the optimize queue's thread: one kernel thread, as the queue counts
  // one core per call.
  optimizer.set_verify_limits({.max_memory_bytes = config.verify_memory_bytes, .num_threads = 1});

  // Admission: a bounded queue per class of calls (server/rpc_call.h).
  WorkQueue optimize_queue({"optimize", config.threads, config.optimize_queue});
  WorkQueue control_queue({"control", 2, 64});
  WorkQueue upload_queue({"upload", 2, config.blob_limits.max_uploads});
  WorkQueue run_queue({"run", config.run_threads, config.run_queue});
  RpcEnvironment env(ServerCallAuthenticator(security->auth, security->worker_identities),
                     &limiter, logger_ptr, config.max_call_time);
  MetricsRegistry metrics;
  if (!config.process.metrics_listen.empty()) env.EnableMetrics(&metrics);

  OptimizerService service(&optimizer, &env, blobs.get(), config.blob_limits,
                           {&optimize_queue, &control_queue, &upload_queue});
  GrpcWorkerClientOptions worker_clients;
  worker_clients.max_message_bytes = config.max_message_mb * 1024 * 1024;
  if (security->to_workers.is_tls()) {
    worker_clients.credentials = security->to_workers.credentials();
    worker_clients.tls_name = security->to_workers.server_name();
  }
  Coordinator coordinator(config.coordinator, GrpcWorkerClientFactory(std::move(worker_clients)),
                          &optimizer, blobs.get(), logger_ptr);
  for (const std::string& worker : config.workers) {
    // Checked with the flags already.
    absl::Status added = absl::StartsWith(worker, "dns:") ? coordinator.AddDnsName(worker.substr(4))
                                                          : coordinator.AddWorker(worker, "flag");
    if (!added.ok()) logger.error("--workers: {}", added.ToString());
  }
  // With etcd, request ids are claimed there (a retry on another replica waits for the first
  // answer instead of running again), and workers are the ones whose leases live.
  std::unique_ptr<EtcdWorkerWatcher> worker_watcher;
  if (etcd != nullptr) {
    coordinator.UseRequestLog(std::make_shared<EtcdRequestLog>(
        etcd.get(), config.process.etcd_prefix,
        config.advertise_address.empty() ? config.listen : config.advertise_address,
        [p = presence.get()] { return p->lease(); }, config.request_ids));
    worker_watcher = std::make_unique<EtcdWorkerWatcher>(
        etcd.get(), config.process.etcd_prefix,
        [&coordinator, logger_ptr](const std::string& address) {
          if (absl::Status s = coordinator.AddWorker(address, "etcd"); !s.ok()) {
            logger_ptr->error("etcd: worker {}: {}", address, s.ToString());
          }
        },
        [&coordinator](const std::string& address) { coordinator.RemoveWorker(address, "etcd"); });
    if (absl::Status s = worker_watcher->Start(absl::Seconds(10)); !s.ok()) {
      logger.error("etcd: workers not listed yet (still trying): {}", s.ToString());
    }
  }
  coordinator.Start();
  CoordinatorService coordinator_service(&coordinator, &env, &run_queue);
  // Other replicas fetch blobs here; only the server identity may (no tenant quotas apply).
  RpcEnvironment peer_env(PeerCallAuthenticator(security->auth), nullptr, logger_ptr,
                          config.max_call_time);
  std::unique_ptr<PeerService> peer_service;
  if (blob_holders != nullptr) peer_service = std::make_unique<PeerService>(blobs.get(), &peer_env);

  // Metrics: the endpoint is made after everything its collectors read, so it stops first.
  std::unique_ptr<HttpEndpoint> metrics_endpoint;
  if (!config.process.metrics_listen.empty()) {
    ExportWorkQueues(&metrics, {&optimize_queue, &control_queue, &upload_queue, &run_queue});
    ExportCoordinator(&metrics, &coordinator);
    if (blobs != nullptr) ExportBlobStore(&metrics, blobs.get());
    ExportTenantUsage(&metrics, &limiter, blobs.get(), &op_store);
    ExportPassTimes(&metrics, &optimizer);
    if (result_cache.enabled()) ExportResultCache(&metrics, &result_cache);
    if (presence != nullptr) {
      // Shared state's health: replicas seen, leases lost (etcd out of reach past the TTL) and
      // blobs brought from other replicas.
      metrics.AddCollector([p = presence.get(), f = blob_fetcher.get()](CollectedGauges& out) {
        out.Declare({"graphopt_replicas", "Live server replicas this one sees in etcd.", {}});
        out.Declare({"graphopt_etcd_lease_grants_total",
                     "Leases this replica was granted: 1, plus one per lease lost because etcd "
                     "was out of reach for longer than --etcd_lease_ttl_s.",
                     {}},
                    /*counter=*/true);
        out.Set("graphopt_replicas", {}, p->live_count());
        out.Set("graphopt_etcd_lease_grants_total", {}, p->lease_grants());
        if (f != nullptr) {
          out.Declare({"graphopt_peer_blob_fetches_total",
                       "Blobs sought from other replicas, by result (fetched, failed).",
                       {"result"}},
                      /*counter=*/true);
          out.Set("graphopt_peer_blob_fetches_total", {"fetched"},
                  static_cast<double>(f->fetched()));
          out.Set("graphopt_peer_blob_fetches_total", {"failed"},
                  static_cast<double>(f->failures()));
        }
      });
    }
    absl::StatusOr<std::unique_ptr<HttpEndpoint>> started =
        StartMetricsEndpoint(config.process.metrics_listen, config.process.metrics_port_file, &metrics, logger);
    if (!started.ok()) {
      logger.critical("{}", std::string(started.status().message()));
      return kExitFailure;
    }
    metrics_endpoint = *std::move(started);
  }

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  const int max_message_bytes = config.max_message_mb * 1024 * 1024;
  grpc::ServerBuilder builder;
  int selected_port = 0;
  builder.AddListeningPort(config.listen, security->listener, &selected_port);
  builder.RegisterService(&service);
  builder.RegisterService(&coordinator_service);
  if (peer_service != nullptr) builder.RegisterService(peer_service.get());
  builder.SetMaxReceiveMessageSize(max_message_bytes);
  builder.SetMaxSendMessageSize(max_message_bytes);
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
  std::unique_ptr<HealthPort> health_port;
  if (!config.process.health_listen.empty()) {
    absl::StatusOr<std::unique_ptr<HealthPort>> started =
        HealthPort::Start(config.process.health_listen);
    if (!started.ok()) {
      logger.critical("{}", started.status().ToString());
      server->Shutdown(std::chrono::system_clock::now());
      return kExitFailure;
    }
    health_port = *std::move(started);
    health_port->SetServingStatus(true);
  }

  // --quotas_file is re-read when it changes; a broken file keeps the quotas in force.
  absl::Notification stop_watching;
  std::thread quota_watcher;
  if (!config.quotas_file.empty()) {
    quota_watcher = std::thread([&] {
      FileVersion seen = FileVersion::Of(config.quotas_file);
      while (!stop_watching.WaitForNotificationWithTimeout(absl::Seconds(1))) {
        const FileVersion now = FileVersion::Of(config.quotas_file);
        if (now == seen) continue;
        seen = now;
        absl::StatusOr<QuotaTable> table = LoadQuotas(config);
        if (!table.ok()) {
          logger.error("quotas not reloaded, the previous ones stay in force: {}",
                       std::string(table.status().message()));
          continue;
        }
        logger.info("--quotas_file reloaded: {} tenants with their own quotas",
                    table->overrides());
        quotas.Replace(*std::move(table));
      }
    });
  }

  const std::string address = ResolvedAddress(config.listen, selected_port);
  if (presence != nullptr) {
    const std::string advertised =
        config.advertise_address.empty() ? address : config.advertise_address;
    if (absl::Status announced = presence->Announce(advertised); !announced.ok()) {
      logger.error("etcd: cannot announce this replica as {}: {}", advertised,
                   announced.ToString());
    }
    if (blob_holders != nullptr) blob_holders->Announce(advertised);
    logger.info("shared state in {} under '{}': replica {}, {} replicas live", etcd->Describe(),
                config.process.etcd_prefix, advertised, presence->live_count());
  }
  if (!config.port_file.empty()) {
    if (absl::Status status = WritePortFile(config.port_file, selected_port); !status.ok()) {
      logger.critical("--port_file: {}", status.ToString());
      server->Shutdown(std::chrono::system_clock::now());
      return kExitFailure;
    }
  }
  logger.info(
      "graphopt-server listening on {} ({}; threads={}, run_threads={}, max_message_mb={}, "
      "blob_store_mb={}, optimize_cache_mb={}, ops={}, passes={}, workers named={})",
      address, security->description, config.threads, config.run_threads, config.max_message_mb,
      config.blob_store_mb, config.result_cache.max_bytes >> 20, ops.size(), passes.List().size(),
      config.workers.size());
  logger.flush();

  const std::string signal_name = WaitForShutdownSignal(shutdown_signals, logger);
  logger.info("received {}: not serving any more, letting in-flight calls finish (up to {} s)",
              signal_name, config.shutdown_grace_s);
  health->SetServingStatus(false);
  if (health_port != nullptr) health_port->SetServingStatus(false);
  // When the grace period ends, every call still running is told to stop (its stop token
  // fires, so CPU-bound optimization ends at its next check), and Runs waiting on workers are
  // cancelled.
  absl::Notification stopped;
  std::thread canceller([&] {
    if (!stopped.WaitForNotificationWithTimeout(absl::Seconds(config.shutdown_grace_s))) {
      env.CancelAll("the server is shutting down");
      peer_env.CancelAll("the server is shutting down");
      coordinator.CancelAll();
    }
  });
  server->Shutdown(std::chrono::system_clock::now() +
                   std::chrono::seconds(config.shutdown_grace_s));
  server->Wait();
  stopped.Notify();
  canceller.join();
  stop_watching.Notify();
  if (quota_watcher.joinable()) quota_watcher.join();
  for (WorkQueue* q : {&optimize_queue, &control_queue, &upload_queue, &run_queue}) q->Shutdown();
  // The watch applies to the op store, which goes first; the lease is revoked so the other
  // replicas see this one leave at once.
  if (etcd_ops != nullptr) etcd_ops->StopWatching();
  // Its collectors read the shared-state parts released below.
  metrics_endpoint.reset();
  if (blob_holders != nullptr) {
    // Every call is over: nothing commits, evicts or fetches any more. The records go with
    // the lease.
    blobs->set_fetcher(nullptr);
    blobs->set_observer(nullptr);
    blob_fetcher.reset();
    blob_holders.reset();
  }
  presence.reset();
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

  absl::SetProgramUsageMessage(absl::StrCat(
      "graphopt-server (--tls_cert=PEM --tls_key=PEM --tls_ca=PEM --tokens_file=FILE | "
      "--insecure) [--listen=HOST:PORT] [--port_file=FILE]\n"
      "  [--threads=N] [--optimize_queue=N] [--run_threads=N] [--run_queue=N] [--max_call_s=N]\n"
      "  [--max_message_mb=N] [--blob_store_mb=N] [--op_store_dir=DIR] [--quotas_file=FILE] "
      "[--tenant_*=N] [--log_level=LEVEL]\n"
      "  [--optimize_cache_mb=N] [--optimize_cache_tenant_mb=N] [--verify_memory_mb=N]\n"
      "  [--workers=HOST:PORT,dns:NAME:PORT,...] [--probe_interval_ms=N] [--probe_timeout_ms=N]\n"
      "  [--max_run_attempts=N] [--worker_call_timeout_s=N] [--slot_wait_s=N] [--quarantine_s=N]\n"
      "  [--max_sessions_per_tenant=N] [--session_idle_s=N]\n"
      "  [--advertise_address=HOST:PORT] [--request_id_ttl_s=N] [--request_ids_per_tenant=N]\n",
      kProcessFlagsUsage,
      "Serves graphopt.v1.GraphOptimizer, graphopt.v1.Coordinator, grpc.health.v1.Health and "
      "server reflection."));
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
  ApplyLogFormat(*logger, config->process.log_format);
  return RunServer(*config, shutdown_signals, std::move(logger));
}

}  // namespace
}  // namespace graphopt

int main(int argc, char** argv) { return graphopt::Main(argc, argv); }
