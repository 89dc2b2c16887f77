#include "client/credentials.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/backend.h"
#include "client/coordinator_client.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "server/auth.h"
#include "server/auth_echo_service.h"
#include "server/security.h"
#include "server/test_certs.h"
#include "server/token_store.h"
#include "util/file_util.h"

namespace graphopt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;

constexpr int kMessageBytes = 4 << 20;

absl::StatusOr<std::shared_ptr<const ServerConnection>> Connect(const ConnectionFlags& flags) {
  return ServerConnection::Create(flags, kMessageBytes);
}

TEST(LoopbackTest, KnowsThisMachinesAddresses) {
  for (const char* address : {"localhost:50051", "127.0.0.1:1", "127.1.2.3:80", "[::1]:50051",
                              "unix:/tmp/socket", "ipv4:127.0.0.1:5"}) {
    EXPECT_TRUE(IsLoopbackAddress(address)) << address;
  }
  for (const char* address : {"10.0.0.1:50051", "graphopt.example.com:443", "[2001:db8::1]:1",
                              "localhost.evil.com:1", "128.0.0.1:1"}) {
    EXPECT_FALSE(IsLoopbackAddress(address)) << address;
  }
}

TEST(ServerConnectionTest, CallMetadataCarriesTheTokenAndTheTenant) {
  const std::string token = GenerateToken().value();
  absl::StatusOr<std::shared_ptr<const ServerConnection>> connection =
      Connect({.server = "127.0.0.1:1", .token = token + "\n", .tenant = "acme"});
  ASSERT_TRUE(connection.ok()) << connection.status();
  EXPECT_FALSE((*connection)->is_tls());
  EXPECT_THAT((*connection)->call_metadata(),
              ElementsAre(Pair("authorization", "Bearer " + token), Pair("graphopt-tenant", "acme")));
  EXPECT_EQ((*connection)->PlaintextTokenWarning(), "");

  connection = Connect({.server = "10.1.2.3:50051", .token = token});
  ASSERT_TRUE(connection.ok());
  EXPECT_THAT((*connection)->PlaintextTokenWarning(), HasSubstr("in plaintext"));
  EXPECT_THAT((*connection)->PlaintextTokenWarning(), Not(HasSubstr(token)));

  connection = Connect({.server = "10.1.2.3:50051"});
  ASSERT_TRUE(connection.ok());
  EXPECT_TRUE((*connection)->call_metadata().empty());
  EXPECT_EQ((*connection)->PlaintextTokenWarning(), "");
}

TEST(ServerConnectionTest, RefusesBadFlagsNamingThem) {
  absl::Status status = Connect({}).status();
  EXPECT_THAT(status.message(), HasSubstr("--server is empty"));

  status = Connect({.server = "h:1", .token = "not-a-secret-token"}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("--token (or GRAPHOPT_TOKEN) is not a graphopt token"));
  EXPECT_THAT(status.message(), Not(HasSubstr("not-a-secret-token")));

  status = Connect({.server = "h:1", .tenant = "Bad Tenant"}).status();
  EXPECT_THAT(status.message(), HasSubstr("--tenant: "));

  status = Connect({.server = "h:1", .tls_cert = "c.pem", .tls_key = "k.pem"}).status();
  EXPECT_THAT(status.message(), HasSubstr("--tls-cert needs --tls-ca"));
  status = Connect({.server = "h:1", .tls_server_name = "graphopt-server"}).status();
  EXPECT_THAT(status.message(), HasSubstr("--tls-server-name needs --tls-ca"));

  const std::string missing = test_certs::TestTempDir() + "/missing-ca.pem";
  status = Connect({.server = "h:1", .tls_ca = missing}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("--tls-ca '" + missing + "'"));
}

// The remote backend and the coordinator client against a server that echoes the principal.
class RemoteCredentialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    acme_ = GenerateToken().value();
    admin_ = GenerateToken().value();
    tokens_ = test_certs::TestTempDir() + "/client_tokens";
    ASSERT_TRUE(WriteFileAtomically(
                    tokens_, TokensFileLine(TokenRole::kTenant, "acme", TokenHash(acme_), "ci")
                                     .value() +
                                 "\n" +
                                 TokensFileLine(TokenRole::kAdmin, "-", TokenHash(admin_), "ops")
                                     .value() +
                                 "\n")
                    .ok());
  }

  // Serves the echo services behind MakeServerSecurity(flags); returns the port.
  int Start(ServerSecurityFlags flags) {
    flags.tokens_file = tokens_;
    absl::StatusOr<ServerSecurity> security = MakeServerSecurity(flags);
    EXPECT_TRUE(security.ok()) << security.status();
    if (!security.ok()) return 0;
    security_ = *std::move(security);
    optimizer_ = std::make_unique<AuthEchoOptimizer>(security_.auth.get(),
                                                     security_.worker_identities);
    coordinator_ = std::make_unique<AuthEchoCoordinator>(security_.auth.get());
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", security_.listener, &port);
    builder.RegisterService(optimizer_.get());
    builder.RegisterService(coordinator_.get());
    server_ = builder.BuildAndStart();
    return port;
  }

  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
  }

  // What the server says the caller is, through the remote backend.
  absl::StatusOr<std::string> WhoAmI(const ConnectionFlags& flags) {
    absl::StatusOr<std::shared_ptr<const ServerConnection>> connection = Connect(flags);
    if (!connection.ok()) return connection.status();
    std::unique_ptr<OptimizerBackend> backend =
        CreateRemoteBackend(*connection, absl::Seconds(10));
    absl::StatusOr<v1::ListPassesResponse> passes = backend->ListPasses();
    if (!passes.ok()) return passes.status();
    if (passes->passes_size() != 1) return absl::InternalError("not the echo server");
    return passes->passes(0).description();
  }

  std::string acme_, admin_, tokens_;
  ServerSecurity security_;
  std::unique_ptr<AuthEchoOptimizer> optimizer_;
  std::unique_ptr<AuthEchoCoordinator> coordinator_;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(RemoteCredentialsTest, TheTokenAndTenantReachThePlaintextServer) {
  ServerSecurityFlags flags;
  flags.insecure = true;
  const std::string server = absl::StrCat("127.0.0.1:", Start(flags));
  EXPECT_EQ(WhoAmI({.server = server, .token = acme_}).value_or(""), "tenant acme (token 'ci')");
  EXPECT_EQ(WhoAmI({.server = server, .token = admin_, .tenant = "globex"}).value_or(""),
            "admin (token 'ops') for tenant globex");

  absl::StatusOr<std::string> refused = WhoAmI({.server = server});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(refused.status().message(), HasSubstr("server " + server + ": "));
  refused = WhoAmI({.server = server, .token = acme_, .tenant = "globex"});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied);

  // The coordinator client: ListWorkers needs an admin; Run carries the token too.
  absl::StatusOr<std::shared_ptr<const ServerConnection>> tenant =
      Connect({.server = server, .token = acme_});
  absl::StatusOr<std::shared_ptr<const ServerConnection>> admin =
      Connect({.server = server, .token = admin_});
  ASSERT_TRUE(tenant.ok() && admin.ok());
  absl::StatusOr<v1::ListWorkersResponse> workers = RemoteListWorkers(**tenant, absl::Seconds(10));
  EXPECT_EQ(workers.status().code(), absl::StatusCode::kPermissionDenied);
  workers = RemoteListWorkers(**admin, absl::Seconds(10));
  ASSERT_TRUE(workers.ok()) << workers.status();
  EXPECT_EQ(workers->workers(0).health(), "admin");
  absl::StatusOr<v1::RunResponse> run = RemoteRun(**tenant, absl::Seconds(10), v1::RunRequest());
  EXPECT_THAT(run.status().message(), HasSubstr("authenticated as tenant acme (token 'ci')"));
}

TEST_F(RemoteCredentialsTest, TlsWhenACaIsGiven) {
  absl::StatusOr<test_certs::DevCerts> certs = test_certs::MakeDevCerts("client_tls");
  if (certs.status().code() == absl::StatusCode::kFailedPrecondition) {
    GTEST_SKIP() << certs.status();
  }
  ASSERT_TRUE(certs.ok()) << certs.status();
  ServerSecurityFlags flags;
  flags.tls_cert = certs->server_cert;
  flags.tls_key = certs->server_key;
  flags.tls_ca = certs->ca;
  const int port = Start(flags);
  const std::string server = absl::StrCat("127.0.0.1:", port);
  EXPECT_EQ(WhoAmI({.server = server, .token = acme_, .tls_ca = certs->ca}).value_or(""),
            "tenant acme (token 'ci')");
  // By name, with a client certificate, and with an explicit server name.
  EXPECT_EQ(WhoAmI({.server = absl::StrCat("localhost:", port),
                    .token = acme_,
                    .tls_ca = certs->ca,
                    .tls_cert = certs->client_cert,
                    .tls_key = certs->client_key,
                    .tls_server_name = "graphopt-server"})
                .value_or(""),
            "tenant acme (token 'ci')");
  // Plaintext to a TLS server, or the wrong name: the transport fails.
  EXPECT_EQ(WhoAmI({.server = server, .token = acme_}).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(WhoAmI({.server = server,
                    .token = acme_,
                    .tls_ca = certs->ca,
                    .tls_server_name = "graphopt-worker"})
                .status()
                .code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace graphopt
