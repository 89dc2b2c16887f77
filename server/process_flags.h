#ifndef GRAPHOPT_SERVER_PROCESS_FLAGS_H_
#define GRAPHOPT_SERVER_PROCESS_FLAGS_H_

// The flags graphopt-server and graphopt-worker share, defined once for both: shared state in
// etcd, the metrics endpoint, the log format and the plaintext health port. Each binary reads
// them once, at start, with ReadProcessFlags.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "etcd/etcd_client.h"
#include "util/log_format.h"

namespace graphopt {

struct ProcessFlags {
  // --etcd_endpoints; empty: no etcd (the embedded default).
  std::vector<std::string> etcd_endpoints;
  std::string etcd_prefix;
  absl::Duration etcd_lease_ttl;
  // PEM files for TLS to etcd; all empty: plaintext.
  std::string etcd_tls_ca;
  std::string etcd_tls_cert;
  std::string etcd_tls_key;
  // Empty: off.
  std::string metrics_listen;
  std::string metrics_port_file;
  std::string health_listen;
  LogFormat log_format = LogFormat::kText;
};

// INVALID_ARGUMENT naming the flag for a value out of range or malformed.
absl::StatusOr<ProcessFlags> ReadProcessFlags();

// The etcd client's options from the flags: the endpoints and, with --etcd_tls_ca, TLS (with
// the client certificate when --etcd_tls_cert/--etcd_tls_key are given). INVALID_ARGUMENT
// naming the flag and file for a file that cannot be read.
absl::StatusOr<EtcdOptions> EtcdOptionsFromFlags(const ProcessFlags& flags);

// The usage lines of these flags, for the binaries' --help.
inline constexpr char kProcessFlagsUsage[] =
    "  [--etcd_endpoints=HOST:PORT,... [--etcd_prefix=/graphopt/] [--etcd_lease_ttl_s=N]\n"
    "   [--etcd_tls_ca=PEM [--etcd_tls_cert=PEM --etcd_tls_key=PEM]]]\n"
    "  [--metrics_listen=HOST:PORT] [--metrics_port_file=FILE] [--log_format=text|json]\n"
    "  [--health_listen=HOST:PORT]\n";

}  // namespace graphopt

#endif  // GRAPHOPT_SERVER_PROCESS_FLAGS_H_
