#ifndef GRAPHOPT_CLIENT_CREDENTIALS_H_
#define GRAPHOPT_CLIENT_CREDENTIALS_H_

// How the CLI reaches a graphopt-server: the channel (plaintext, or TLS when --tls-ca is given)
// and the metadata of every call (the bearer token and the tenant). The one place that turns
// the connection flags into gRPC objects.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"

namespace graphopt {

// The CLI's connection flags (--server, --token, --tenant, --tls-ca, --tls-cert, --tls-key,
// --tls-server-name). The token's default, the GRAPHOPT_TOKEN environment variable, is read by
// main's flag parsing, not here.
struct ConnectionFlags {
  std::string server;           // host:port
  std::string token;            // empty: none sent
  std::string tenant;           // empty: none sent (the server's default, or the token's)
  std::string tls_ca;           // given: TLS, the server's certificate must chain to this CA
  std::string tls_cert;         // this client's certificate (with tls_key), when the server
  std::string tls_key;          //   wants one
  std::string tls_server_name;  // the name the server's certificate must carry (default: the
                                //   host of --server)
};

// A connection to one server. Thread-safe; share it between the backend and coordinator calls.
class ServerConnection {
 public:
  // Checks the flags and builds the channel. INVALID_ARGUMENT naming the flag for: an empty
  // --server, a token that is not of graphopt's form (the message does not repeat it),
  // --tls-cert without --tls-key (or the reverse), --tls-cert/--tls-key/--tls-server-name
  // without --tls-ca, or a TLS file that cannot be read or is not PEM (see server/tls.h).
  // `max_message_bytes` is the channel's send and receive limit.
  static absl::StatusOr<std::shared_ptr<const ServerConnection>> Create(
      const ConnectionFlags& flags, int max_message_bytes);

  const std::string& address() const { return address_; }
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  bool is_tls() const { return tls_; }

  // The metadata every call carries: "authorization: Bearer <token>" with a token,
  // "graphopt-tenant: <tenant>" with a tenant. gRPC refuses call credentials on plaintext
  // channels, so the token travels as plain metadata on both kinds.
  const std::vector<std::pair<std::string, std::string>>& call_metadata() const {
    return metadata_;
  }
  // Sets `timeout` as the deadline and adds call_metadata().
  void PrepareCall(grpc::ClientContext* context, absl::Duration timeout) const;

  // A warning for stderr when a token would travel without TLS to a host that is not loopback;
  // empty otherwise.
  std::string PlaintextTokenWarning() const;

 private:
  ServerConnection() = default;

  std::string address_;
  std::shared_ptr<grpc::Channel> channel_;
  std::vector<std::pair<std::string, std::string>> metadata_;
  bool tls_ = false;
  bool has_token_ = false;
};

// Whether `address` ("host:port", "[::1]:port", "unix:...") is this machine: localhost,
// 127.0.0.0/8, ::1 or a unix socket.
bool IsLoopbackAddress(const std::string& address);

}  // namespace graphopt

#endif  // GRAPHOPT_CLIENT_CREDENTIALS_H_
