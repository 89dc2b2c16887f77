#ifndef GRAPHOPT_SERVER_TLS_H_
#define GRAPHOPT_SERVER_TLS_H_

// TLS credentials of graphopt's listeners and channels, from PEM files.
//
// Built on gRPC's TLS API (grpc::experimental::TlsServerCredentials / TlsCredentials) with a
// FileWatcherCertificateProvider: the certificate, key and CA files are re-read every
// refresh_interval, so replacing them rotates them without a restart (new connections use the
// new files; open connections keep theirs).
//
// Replace the certificate and its key together, atomically: a Kubernetes Secret volume does
// (one symlink swap for all its files); by hand, write both into a new folder and swap a
// symlink to it. gRPC 1.51's watcher does not keep the old pair when the new files do not load:
// a certificate read without its new key, or a broken file, makes every new handshake fail
// (gRPC logs "Invalid private key" / "Invalid cert chain file") until the next refresh that
// reads a good pair. Open connections are not affected. (Tested in auth_test.)
//
// The files are checked before anything is built (readable, PEM, key matching certificate,
// certificate valid now), so a bad flag fails at start with a message naming the flag and the
// file rather than at the first handshake.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace graphopt {

// A file given by a command-line flag; errors name both.
struct FlagFile {
  std::string path;
  std::string flag;  // e.g. "--tls_cert"
};

// What a certificate says of itself, for start-up logs and checks.
struct CertificateInfo {
  std::string subject;             // one line, e.g. "O=graphopt development, CN=graphopt-server"
  std::vector<std::string> names;  // DNS and IP SANs in certificate order, then the CN
  absl::Time not_before;
  absl::Time not_after;

  // e.g. "graphopt-server, localhost, 127.0.0.1 (valid until 2029-03-01 12:00:00 UTC)".
  std::string Describe() const;
  bool Names(const std::string& name) const;
};

// Reads the first certificate of a PEM file. INVALID_ARGUMENT (NOT_FOUND for a missing file)
// naming the flag and the file when it cannot be read or holds no PEM certificate.
absl::StatusOr<CertificateInfo> ReadCertificateFile(const FlagFile& file);

// Checks a certificate/key pair: both readable PEM, the key the certificate's, the certificate
// valid at `now`, and, when `expected_identity` is not empty, naming it (a DNS SAN or the CN).
// Errors name the flags and the files.
absl::StatusOr<CertificateInfo> CheckKeyPair(const FlagFile& cert, const FlagFile& key,
                                             const std::string& expected_identity,
                                             absl::Time now = absl::Now());

// Checks that a CA file holds at least one PEM certificate; returns how many.
absl::StatusOr<int> CheckCaFile(const FlagFile& ca);

// How a TLS listener treats client certificates.
enum class ClientCertMode {
  kNone,             // not requested: server-authenticated TLS only
  kVerifyIfOffered,  // requested; one that is offered must verify against the CA (a server:
                     // end clients come without, workers with their certificate)
  kRequire,          // required and verified against the CA
};

struct ServerTlsOptions {
  FlagFile cert{"", "--tls_cert"};
  FlagFile key{"", "--tls_key"};
  // The CA client certificates must chain to; required unless client_certs is kNone.
  FlagFile ca{"", "--tls_ca"};
  ClientCertMode client_certs = ClientCertMode::kNone;
  // When not empty, the certificate must name it (kServerIdentity, kWorkerIdentity).
  std::string expected_identity;
  absl::Duration refresh_interval = absl::Seconds(10);
};

struct ServerTls {
  std::shared_ptr<grpc::ServerCredentials> credentials;
  CertificateInfo certificate;  // the listener's own, as read at start
};

// Listener credentials for ServerBuilder::AddListeningPort. Errors as CheckKeyPair's and
// CheckCaFile's.
absl::StatusOr<ServerTls> MakeServerCredentials(const ServerTlsOptions& options);

struct ChannelTlsOptions {
  // The CA that the server's certificate must chain to. Required.
  FlagFile ca{"", "--tls_ca"};
  // This side's certificate and key, presented when the server asks: both or neither.
  FlagFile cert{"", "--tls_cert"};
  FlagFile key{"", "--tls_key"};
  // The name the server's certificate must carry; empty: the host of the address dialled.
  // Cluster channels name the peer's role (kWorkerIdentity, kServerIdentity), since they dial
  // pod IPs.
  std::string server_name;
  // When not empty, this side's certificate must name it.
  std::string expected_identity;
  absl::Duration refresh_interval = absl::Seconds(10);
};

// How a channel secures itself: credentials plus the name the server's certificate is checked
// against (a channel argument). Cheap to copy; one per process and peer kind is enough.
// Default-constructed: plaintext.
class ChannelSecurity {
 public:
  // Plaintext (grpc::InsecureChannelCredentials()).
  ChannelSecurity();
  // TLS with `credentials`; `server_name` empty: the address's host.
  ChannelSecurity(std::shared_ptr<grpc::ChannelCredentials> credentials, std::string server_name);

  bool is_tls() const { return tls_; }
  const std::shared_ptr<grpc::ChannelCredentials>& credentials() const { return credentials_; }
  const std::string& server_name() const { return server_name_; }

  // Sets GRPC_SSL_TARGET_NAME_OVERRIDE_ARG when server_name is not empty.
  void AddTo(grpc::ChannelArguments* arguments) const;
  // grpc::CreateCustomChannel(address, credentials(), `arguments` plus AddTo's).
  std::shared_ptr<grpc::Channel> CreateChannel(const std::string& address,
                                               grpc::ChannelArguments arguments = {}) const;

 private:
  std::shared_ptr<grpc::ChannelCredentials> credentials_;
  std::string server_name_;
  bool tls_ = false;
};

// TLS channel credentials. Errors as CheckKeyPair's and CheckCaFile's, and INVALID_ARGUMENT
// naming the flags when only one of cert and key is given.
absl::StatusOr<ChannelSecurity> MakeChannelCredentials(const ChannelTlsOptions& options);

}  // namespace graphopt

#endif  // GRAPHOPT_SERVER_TLS_H_
