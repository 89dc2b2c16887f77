#include "server/process_flags.h"

#include <tuple>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "etcd/etcd_client.h"
#include "grpcpp/grpcpp.h"
#include "util/file_util.h"
#include "util/http_endpoint.h"

// Shared state (docs/operations.md, "Replicas and shared state"). Without --etcd_endpoints a
// server keeps its state itself (--op_store_dir and memory): one server, no etcd needed.
ABSL_FLAG(std::string, etcd_endpoints, "",
          "etcd members' client addresses, host:port,...: the state server replicas share "
          "(tenants' ops, worker membership, request ids, blob holders). Empty: no etcd.");
ABSL_FLAG(std::string, etcd_prefix, "/graphopt/",
          "Key prefix of graphopt's state in etcd (one per graphopt cluster).");
ABSL_FLAG(int, etcd_lease_ttl_s, 10,
          "TTL of this process's etcd lease, 2..300: how long after a crash its keys (a "
          "replica's claims and blob holdings, a worker's membership) outlive it.");
ABSL_FLAG(std::string, etcd_tls_ca, "",
          "PEM certificate(s) of the CA that etcd's certificates chain to: talk to etcd over "
          "TLS. Empty: plaintext (keep etcd reachable only from servers and workers).");
ABSL_FLAG(std::string, etcd_tls_cert, "",
          "PEM client certificate to present to etcd (etcd --client-cert-auth); with "
          "--etcd_tls_key and --etcd_tls_ca.");
ABSL_FLAG(std::string, etcd_tls_key, "", "PEM private key of --etcd_tls_cert.");

// Metrics and logs (docs/operations.md, "Metrics and logs").
ABSL_FLAG(std::string, metrics_listen, "",
          "Serve Prometheus metrics (GET /metrics) and GET /healthz over plain HTTP at "
          "HOST:PORT, on a port of their own; port 0 picks a free one. Empty: off.");
ABSL_FLAG(std::string, metrics_port_file, "",
          "If set, write the port --metrics_listen bound to this file (as --port_file).");
ABSL_FLAG(std::string, log_format, "text",
          "text, or json: one JSON object per line (ts, level, logger, msg, trace_id, "
          "request_id).");
ABSL_FLAG(std::string, health_listen, "",
          "Also serve grpc.health.v1.Health, and nothing else, in plaintext at HOST:PORT: for "
          "the kubelet's gRPC probes, which cannot speak TLS. Empty: off.");

namespace graphopt {
namespace {

absl::Status CheckListen(const std::string& address, const std::string& flag) {
  if (address.empty()) return absl::OkStatus();
  std::string host;
  int port = 0;
  return SplitHostPort(address, flag, &host, &port);
}

}  // namespace

absl::StatusOr<ProcessFlags> ReadProcessFlags() {
  ProcessFlags flags;
  if (const std::string etcd = absl::GetFlag(FLAGS_etcd_endpoints); !etcd.empty()) {
    absl::StatusOr<std::vector<std::string>> endpoints =
        ParseEtcdEndpoints(etcd, "--etcd_endpoints");
    if (!endpoints.ok()) return endpoints.status();
    flags.etcd_endpoints = *std::move(endpoints);
  }
  flags.etcd_prefix = absl::GetFlag(FLAGS_etcd_prefix);
  if (flags.etcd_prefix.empty() || flags.etcd_prefix.back() != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("--etcd_prefix must end with '/', got '", flags.etcd_prefix, "'"));
  }
  const int ttl_s = absl::GetFlag(FLAGS_etcd_lease_ttl_s);
  if (ttl_s < 2 || ttl_s > 300) {
    return absl::InvalidArgumentError(
        absl::StrCat("--etcd_lease_ttl_s must be in 2..300, got ", ttl_s));
  }
  flags.etcd_lease_ttl = absl::Seconds(ttl_s);
  flags.etcd_tls_ca = absl::GetFlag(FLAGS_etcd_tls_ca);
  flags.etcd_tls_cert = absl::GetFlag(FLAGS_etcd_tls_cert);
  flags.etcd_tls_key = absl::GetFlag(FLAGS_etcd_tls_key);
  if (flags.etcd_tls_cert.empty() != flags.etcd_tls_key.empty()) {
    return absl::InvalidArgumentError("--etcd_tls_cert and --etcd_tls_key go together");
  }
  if (!flags.etcd_tls_cert.empty() && flags.etcd_tls_ca.empty()) {
    return absl::InvalidArgumentError(
        "--etcd_tls_cert needs --etcd_tls_ca (the CA etcd's own certificate chains to)");
  }
  flags.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  flags.metrics_port_file = absl::GetFlag(FLAGS_metrics_port_file);
  flags.health_listen = absl::GetFlag(FLAGS_health_listen);
  for (const auto& [address, flag] : {std::pair{flags.metrics_listen, "--metrics_listen"},
                                      std::pair{flags.health_listen, "--health_listen"}}) {
    if (absl::Status s = CheckListen(address, flag); !s.ok()) return s;
  }
  absl::StatusOr<LogFormat> format = ParseLogFormat(absl::GetFlag(FLAGS_log_format));
  if (!format.ok()) return format.status();
  flags.log_format = *format;
  return flags;
}

absl::StatusOr<EtcdOptions> EtcdOptionsFromFlags(const ProcessFlags& flags) {
  EtcdOptions options;
  options.endpoints = flags.etcd_endpoints;
  if (flags.etcd_tls_ca.empty()) return options;
  grpc::SslCredentialsOptions tls;
  for (const auto& [path, flag, pem] :
       {std::tuple{flags.etcd_tls_ca, "--etcd_tls_ca", &tls.pem_root_certs},
        std::tuple{flags.etcd_tls_cert, "--etcd_tls_cert", &tls.pem_cert_chain},
        std::tuple{flags.etcd_tls_key, "--etcd_tls_key", &tls.pem_private_key}}) {
    if (path.empty()) continue;
    absl::StatusOr<std::string> bytes = ReadFileBytes(path);
    if (!bytes.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": ", path, ": ", bytes.status().message()));
    }
    *pem = *std::move(bytes);
  }
  options.credentials = grpc::SslCredentials(tls);
  return options;
}

}  // namespace graphopt
