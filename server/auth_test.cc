// Authentication over real gRPC calls on loopback: bearer tokens on a plaintext listener and on
// TLS, cluster identities over mTLS (a server-style listener that verifies a client
// certificate when offered, a worker-style one that requires it), certificates from a foreign
// CA, certificate rotation, and the checks of files and flags done before anything starts.

#include "server/auth.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/optimizer.grpc.pb.h"
#include "server/auth_echo_service.h"
#include "server/grpc_status.h"
#include "server/security.h"
#include "server/test_certs.h"
#include "server/tls.h"
#include "server/token_store.h"
#include "util/file_util.h"

namespace graphopt {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using test_certs::DevCerts;

struct Running {
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::string address() const { return absl::StrCat("127.0.0.1:", port); }
  ~Running() {
    if (server != nullptr) server->Shutdown(std::chrono::system_clock::now());
  }
};

std::unique_ptr<Running> Serve(std::shared_ptr<grpc::ServerCredentials> credentials,
                               const std::vector<grpc::Service*>& services) {
  auto running = std::make_unique<Running>();
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", std::move(credentials), &running->port);
  for (grpc::Service* service : services) builder.RegisterService(service);
  running->server = builder.BuildAndStart();
  EXPECT_NE(running->server, nullptr);
  EXPECT_NE(running->port, 0);
  return running;
}

// A channel of its own: no connection shared with earlier channels (gRPC's global subchannel
// pool would otherwise reuse one across channels with equal arguments).
std::shared_ptr<grpc::Channel> Channel(const ChannelSecurity& security,
                                       const std::string& address) {
  grpc::ChannelArguments arguments;
  arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return security.CreateChannel(address, arguments);
}

struct Call {
  std::string token;                    // sent as "Bearer <token>" when not empty
  std::vector<std::string> tenants;     // graphopt-tenant values
  std::vector<std::string> authorization;  // raw authorization values, added as given
};

void Prepare(grpc::ClientContext* context, const Call& call) {
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  if (!call.token.empty()) context->AddMetadata("authorization", "Bearer " + call.token);
  for (const std::string& value : call.authorization) context->AddMetadata("authorization", value);
  for (const std::string& tenant : call.tenants) context->AddMetadata("graphopt-tenant", tenant);
}

// ListPasses of AuthEchoOptimizer: the principal as the server computed it.
grpc::Status WhoAmI(const std::shared_ptr<grpc::Channel>& channel, const Call& call,
                    std::map<std::string, std::string>* principal) {
  grpc::ClientContext context;
  Prepare(&context, call);
  v1::ListPassesResponse response;
  grpc::Status status =
      v1::GraphOptimizer::NewStub(channel)->ListPasses(&context, v1::ListPassesRequest(), &response);
  if (status.ok() && principal != nullptr) {
    principal->clear();
    if (response.passes_size() == 1) {
      principal->insert(response.passes(0).options().begin(), response.passes(0).options().end());
      (*principal)["describe"] = response.passes(0).description();
    }
  }
  return status;
}

// ListOps of AuthEchoOptimizer: the cluster identity ClusterPeer found.
grpc::Status PeerIdentity(const std::shared_ptr<grpc::Channel>& channel, std::string* identity) {
  grpc::ClientContext context;
  Prepare(&context, Call());
  v1::ListOpsResponse response;
  grpc::Status status =
      v1::GraphOptimizer::NewStub(channel)->ListOps(&context, v1::ListOpsRequest(), &response);
  if (status.ok()) *identity = response.tenant();
  return status;
}

std::string NewToken() { return GenerateToken().value(); }

std::string TokenLine(TokenRole role, const std::string& tenant, const std::string& token,
                      const std::string& label) {
  return TokensFileLine(role, tenant, TokenHash(token), label).value() + "\n";
}

// ---------------------------------------------------------------------------------------------
// Bearer tokens on a plaintext listener.

class TokenAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = absl::StrCat(test_certs::TestTempDir(), "/tokens_",
                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    acme_ = NewToken();
    admin_ = NewToken();
    ASSERT_TRUE(WriteFileAtomically(path_, TokenLine(TokenRole::kTenant, "acme", acme_, "ci") +
                                               TokenLine(TokenRole::kAdmin, "-", admin_, "ops"))
                    .ok());
    TokenStoreOptions options;
    options.check_interval = absl::ZeroDuration();
    absl::StatusOr<std::unique_ptr<TokenStore>> store = TokenStore::Open(path_, options);
    ASSERT_TRUE(store.ok()) << store.status();
    auth_ = std::make_unique<Authenticator>(TransportSecurity::kInsecure,
                                            std::shared_ptr<TokenStore>(std::move(*store)));
    optimizer_ = std::make_unique<AuthEchoOptimizer>(auth_.get(),
                                                     std::vector<std::string>{kWorkerIdentity});
    coordinator_ = std::make_unique<AuthEchoCoordinator>(auth_.get());
    running_ = Serve(grpc::InsecureServerCredentials(), {optimizer_.get(), coordinator_.get()});
    channel_ = Channel(ChannelSecurity(), running_->address());
  }

  std::string path_, acme_, admin_;
  std::unique_ptr<Authenticator> auth_;
  std::unique_ptr<AuthEchoOptimizer> optimizer_;
  std::unique_ptr<AuthEchoCoordinator> coordinator_;
  std::unique_ptr<Running> running_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(TokenAuthTest, NoTokenIsUnauthenticatedAndSaysHowToSendOne) {
  grpc::Status status = WhoAmI(channel_, Call(), nullptr);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(status.error_message(), HasSubstr("authorization: Bearer <token>"));
  EXPECT_THAT(status.error_message(), HasSubstr("--token"));
  EXPECT_THAT(status.error_message(), HasSubstr("GRAPHOPT_TOKEN"));
}

TEST_F(TokenAuthTest, BadCredentialsAreUnauthenticatedAndNeverEchoed) {
  const std::string unknown = NewToken();
  grpc::Status status = WhoAmI(channel_, {.token = unknown}, nullptr);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(status.error_message(), HasSubstr("not valid"));
  EXPECT_THAT(status.error_message(), Not(HasSubstr(unknown.substr(kTokenPrefix.size()))));

  const std::string ill_formed = "gopt_tooshort-secret";
  status = WhoAmI(channel_, {.token = ill_formed}, nullptr);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(status.error_message(), HasSubstr("ill-formed"));
  EXPECT_THAT(status.error_message(), Not(HasSubstr("tooshort-secret")));

  status = WhoAmI(channel_, {.authorization = {"Basic " + acme_}}, nullptr);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(status.error_message(), HasSubstr("'Bearer <token>'"));
  EXPECT_THAT(status.error_message(), Not(HasSubstr(acme_)));

  // The hash from the tokens file is not a credential.
  status = WhoAmI(channel_, {.token = TokenHash(acme_)}, nullptr);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);

  status = WhoAmI(channel_, {.token = acme_, .authorization = {"Bearer " + admin_}}, nullptr);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(status.error_message(), HasSubstr("more than one"));
}

TEST_F(TokenAuthTest, ATenantTokenActsForItsTenantOnly) {
  std::map<std::string, std::string> principal;
  ASSERT_TRUE(WhoAmI(channel_, {.token = acme_}, &principal).ok());
  EXPECT_EQ(principal["role"], "tenant");
  EXPECT_EQ(principal["tenant"], "acme");
  EXPECT_EQ(principal["label"], "ci");
  EXPECT_EQ(principal["describe"], "tenant acme (token 'ci')");

  // "bearer" in any case; naming its own tenant is fine.
  ASSERT_TRUE(WhoAmI(channel_, {.tenants = {"acme"}, .authorization = {"bearer " + acme_}},
                     &principal)
                  .ok());
  EXPECT_EQ(principal["tenant"], "acme");

  grpc::Status status = WhoAmI(channel_, {.token = acme_, .tenants = {"globex"}}, nullptr);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(), HasSubstr("tenant 'acme'"));
  EXPECT_THAT(status.error_message(), HasSubstr("tenant 'globex'"));

  status = WhoAmI(channel_, {.token = acme_, .tenants = {"Not/A/Tenant"}}, nullptr);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("graphopt-tenant"));
}

TEST_F(TokenAuthTest, AnAdminTokenActsForTheTenantTheCallNames) {
  std::map<std::string, std::string> principal;
  ASSERT_TRUE(WhoAmI(channel_, {.token = admin_}, &principal).ok());
  EXPECT_EQ(principal["role"], "admin");
  EXPECT_EQ(principal["tenant"], "default");
  ASSERT_TRUE(WhoAmI(channel_, {.token = admin_, .tenants = {"globex"}}, &principal).ok());
  EXPECT_EQ(principal["tenant"], "globex");
  EXPECT_EQ(principal["describe"], "admin (token 'ops') for tenant globex");
}

TEST_F(TokenAuthTest, AdminOperationsNeedAnAdminToken) {
  auto list_workers = [&](const std::string& token, v1::ListWorkersResponse* response) {
    grpc::ClientContext context;
    Prepare(&context, {.token = token});
    return v1::Coordinator::NewStub(channel_)->ListWorkers(&context, v1::ListWorkersRequest(),
                                                           response);
  };
  v1::ListWorkersResponse response;
  grpc::Status status = list_workers(acme_, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(), HasSubstr("ListWorkers needs an admin token"));
  EXPECT_THAT(status.error_message(), HasSubstr("tenant acme"));
  ASSERT_TRUE(list_workers(admin_, &response).ok());
  EXPECT_EQ(response.workers(0).health(), "admin");
}

TEST_F(TokenAuthTest, ARevokedTokenStopsWorkingWithoutARestart) {
  ASSERT_TRUE(WhoAmI(channel_, {.token = acme_}, nullptr).ok());
  const std::string globex = NewToken();
  ASSERT_TRUE(WriteFileAtomically(path_, TokenLine(TokenRole::kTenant, "globex", globex, "") +
                                             TokenLine(TokenRole::kAdmin, "-", admin_, "ops"))
                  .ok());
  EXPECT_EQ(WhoAmI(channel_, {.token = acme_}, nullptr).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  std::map<std::string, std::string> principal;
  ASSERT_TRUE(WhoAmI(channel_, {.token = globex}, &principal).ok());
  EXPECT_EQ(principal["tenant"], "globex");
}

TEST_F(TokenAuthTest, ClusterPeerAllowsAnyoneOnAPlaintextListener) {
  std::string identity;
  ASSERT_TRUE(PeerIdentity(channel_, &identity).ok());
  EXPECT_EQ(identity, kInsecurePeer);
}

// The same rules through the callback API (CallbackServerContext).
class CallbackEcho final : public v1::GraphOptimizer::CallbackService {
 public:
  explicit CallbackEcho(const Authenticator* auth) : auth_(auth) {}
  grpc::ServerUnaryReactor* ListPasses(grpc::CallbackServerContext* context,
                                       const v1::ListPassesRequest*,
                                       v1::ListPassesResponse* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    absl::StatusOr<Principal> principal = auth_->Authenticate(*context);
    if (!principal.ok()) {
      reactor->Finish(ToGrpcStatus(principal.status()));
      return reactor;
    }
    v1::PassInfo* pass = response->add_passes();
    pass->set_description(principal->Describe());
    (*pass->mutable_options())["tenant"] = principal->tenant;
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  const Authenticator* auth_;
};

TEST_F(TokenAuthTest, WorksWithTheCallbackApi) {
  CallbackEcho echo(auth_.get());
  std::unique_ptr<Running> running = Serve(grpc::InsecureServerCredentials(), {&echo});
  std::shared_ptr<grpc::Channel> channel = Channel(ChannelSecurity(), running->address());
  std::map<std::string, std::string> principal;
  ASSERT_TRUE(WhoAmI(channel, {.token = acme_}, &principal).ok());
  EXPECT_EQ(principal["tenant"], "acme");
  EXPECT_EQ(WhoAmI(channel, Call(), nullptr).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(WhoAmI(channel, {.token = acme_, .tenants = {"globex"}}, nullptr).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
}

TEST(AnonymousDevTest, WithoutTokensTheHeaderNamesTheTenantAndEveryoneIsAdmin) {
  Authenticator auth(TransportSecurity::kInsecure, nullptr);
  AuthEchoOptimizer optimizer(&auth, {kWorkerIdentity});
  AuthEchoCoordinator coordinator(&auth);
  std::unique_ptr<Running> running =
      Serve(grpc::InsecureServerCredentials(), {&optimizer, &coordinator});
  std::shared_ptr<grpc::Channel> channel = Channel(ChannelSecurity(), running->address());
  std::map<std::string, std::string> principal;
  ASSERT_TRUE(WhoAmI(channel, Call(), &principal).ok());
  EXPECT_EQ(principal["role"], "anonymous-dev");
  EXPECT_EQ(principal["tenant"], "default");
  // A token is not looked at.
  ASSERT_TRUE(WhoAmI(channel, {.token = "whatever", .tenants = {"team-b"}}, &principal).ok());
  EXPECT_EQ(principal["tenant"], "team-b");
  EXPECT_EQ(WhoAmI(channel, {.tenants = {"a", "b"}}, nullptr).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(WhoAmI(channel, {.tenants = {"A B"}}, nullptr).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  v1::ListWorkersResponse workers;
  grpc::ClientContext context;
  Prepare(&context, Call());
  EXPECT_TRUE(v1::Coordinator::NewStub(channel)
                  ->ListWorkers(&context, v1::ListWorkersRequest(), &workers)
                  .ok());
}

TEST(RequireAdminTest, NamesTheOperationAndThePrincipal) {
  EXPECT_TRUE(RequireAdmin({PrincipalRole::kAdmin, "x", ""}, "ListWorkers").ok());
  EXPECT_TRUE(RequireAdmin({PrincipalRole::kAnonymousDev, "default", ""}, "ListWorkers").ok());
  absl::Status status = RequireAdmin({PrincipalRole::kTenant, "acme", "ci"}, "ListWorkers");
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(status.message(),
            "ListWorkers needs an admin token; the call's is tenant acme (token 'ci')");
}

// ---------------------------------------------------------------------------------------------
// TLS and mTLS with certificates from scripts/make_dev_certs.sh.

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<DevCerts> cluster = test_certs::MakeDevCerts("cluster");
    absl::StatusOr<DevCerts> foreign = test_certs::MakeDevCerts("foreign");
    if (!cluster.ok() || !foreign.ok()) {
      setup_error_ = new absl::Status(!cluster.ok() ? cluster.status() : foreign.status());
      return;
    }
    cluster_ = new DevCerts(*std::move(cluster));
    foreign_ = new DevCerts(*std::move(foreign));
  }

  void SetUp() override {
    if (setup_error_ != nullptr) {
      if (setup_error_->code() == absl::StatusCode::kFailedPrecondition) {
        GTEST_SKIP() << "no TLS test certificates: " << *setup_error_;
      }
      FAIL() << *setup_error_;
    }
    tokens_path_ = absl::StrCat(test_certs::TestTempDir(), "/tls_tokens");
    acme_ = NewToken();
    ASSERT_TRUE(
        WriteFileAtomically(tokens_path_, TokenLine(TokenRole::kTenant, "acme", acme_, "")).ok());
  }

  static ServerSecurityFlags ServerFlags() {
    ServerSecurityFlags flags;
    flags.tls_cert = cluster_->server_cert;
    flags.tls_key = cluster_->server_key;
    flags.tls_ca = cluster_->ca;
    return flags;
  }

  static WorkerSecurityFlags WorkerFlags() {
    WorkerSecurityFlags flags;
    flags.tls_cert = cluster_->worker_cert;
    flags.tls_key = cluster_->worker_key;
    flags.tls_ca = cluster_->ca;
    return flags;
  }

  // A client channel's security: trusting `ca`, presenting cert/key when given.
  static ChannelSecurity Client(const std::string& ca, const std::string& cert = "",
                                const std::string& key = "",
                                const std::string& server_name = "") {
    ChannelTlsOptions options;
    options.ca.path = ca;
    options.cert.path = cert;
    options.key.path = key;
    options.server_name = server_name;
    absl::StatusOr<ChannelSecurity> security = MakeChannelCredentials(options);
    EXPECT_TRUE(security.ok()) << security.status();
    return security.value_or(ChannelSecurity());
  }

  // A graphopt-server-style listener: TLS, tokens, client certificates verified when offered,
  // ClusterPeer({graphopt-worker}) for ListOps (as RegisterWorker).
  struct ServerUnderTest {
    ServerSecurity security;
    std::unique_ptr<AuthEchoOptimizer> echo;
    std::unique_ptr<Running> running;
  };
  ServerUnderTest StartServer() {
    ServerSecurityFlags flags = ServerFlags();
    flags.tokens_file = tokens_path_;
    absl::StatusOr<ServerSecurity> security = MakeServerSecurity(flags);
    EXPECT_TRUE(security.ok()) << security.status();
    ServerUnderTest server;
    server.security = *std::move(security);
    server.echo = std::make_unique<AuthEchoOptimizer>(server.security.auth.get(),
                                                      server.security.worker_identities);
    server.running = Serve(server.security.listener, {server.echo.get()});
    return server;
  }

  // A graphopt-worker-style listener: mTLS required, ClusterPeer(allowed_peers) for ListOps.
  struct WorkerUnderTest {
    WorkerSecurity security;
    std::unique_ptr<AuthEchoOptimizer> echo;
    std::unique_ptr<Running> running;
  };
  WorkerUnderTest StartWorker() {
    absl::StatusOr<WorkerSecurity> security = MakeWorkerSecurity(WorkerFlags());
    EXPECT_TRUE(security.ok()) << security.status();
    WorkerUnderTest worker;
    worker.security = *std::move(security);
    worker.echo = std::make_unique<AuthEchoOptimizer>(worker.security.auth.get(),
                                                      worker.security.allowed_peers);
    worker.running = Serve(worker.security.listener, {worker.echo.get()});
    return worker;
  }

  static DevCerts* cluster_;
  static DevCerts* foreign_;
  static absl::Status* setup_error_;
  std::string tokens_path_, acme_;
};

DevCerts* TlsTest::cluster_ = nullptr;
DevCerts* TlsTest::foreign_ = nullptr;
absl::Status* TlsTest::setup_error_ = nullptr;

TEST_F(TlsTest, AClientTrustingTheCaConnectsAndSendsItsToken) {
  ServerUnderTest server = StartServer();
  const ChannelSecurity client = Client(cluster_->ca);
  for (const char* host : {"127.0.0.1", "localhost"}) {
    std::shared_ptr<grpc::Channel> channel =
        Channel(client, absl::StrCat(host, ":", server.running->port));
    std::map<std::string, std::string> principal;
    grpc::Status status = WhoAmI(channel, {.token = acme_}, &principal);
    ASSERT_TRUE(status.ok()) << host << ": " << status.error_message();
    EXPECT_EQ(principal["tenant"], "acme");
    EXPECT_EQ(WhoAmI(channel, Call(), nullptr).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
}

TEST_F(TlsTest, AClientTrustingAForeignCaOrAnotherNameCannotConnect) {
  ServerUnderTest server = StartServer();
  grpc::Status status =
      WhoAmI(Channel(Client(foreign_->ca), server.running->address()), {.token = acme_}, nullptr);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  // The right CA, but the server's certificate does not name graphopt-worker.
  status = WhoAmI(
      Channel(Client(cluster_->ca, "", "", kWorkerIdentity), server.running->address()),
      {.token = acme_}, nullptr);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  // A plaintext client gets nowhere either.
  status = WhoAmI(Channel(ChannelSecurity(), server.running->address()), {.token = acme_}, nullptr);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
}

TEST_F(TlsTest, TheServerListenerVerifiesAClientCertificateWhenOffered) {
  ServerUnderTest server = StartServer();
  const std::string address = server.running->address();
  // An end client without a certificate: tokens work, cluster calls do not.
  std::shared_ptr<grpc::Channel> plain = Channel(Client(cluster_->ca), address);
  EXPECT_TRUE(WhoAmI(plain, {.token = acme_}, nullptr).ok());
  std::string identity;
  grpc::Status status = PeerIdentity(plain, &identity);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(status.error_message(), HasSubstr("no client certificate"));
  EXPECT_THAT(status.error_message(), HasSubstr("graphopt-worker"));

  // A worker registering: its own channel security, as MakeWorkerSecurity builds it.
  absl::StatusOr<WorkerSecurity> worker = MakeWorkerSecurity(WorkerFlags());
  ASSERT_TRUE(worker.ok()) << worker.status();
  status = PeerIdentity(Channel(worker->to_server, address), &identity);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(identity, kWorkerIdentity);

  // Another server's certificate is not a worker's.
  status = PeerIdentity(
      Channel(Client(cluster_->ca, cluster_->server_cert, cluster_->server_key), address),
      &identity);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(), HasSubstr("names graphopt-server"));
  EXPECT_THAT(status.error_message(), HasSubstr("only for graphopt-worker"));

  // A certificate from another CA fails the handshake.
  status = WhoAmI(
      Channel(Client(cluster_->ca, foreign_->worker_cert, foreign_->worker_key), address),
      {.token = acme_}, nullptr);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
}

TEST_F(TlsTest, AWorkerServesOnlyTheClustersServers) {
  WorkerUnderTest worker = StartWorker();
  const std::string address = worker.running->address();

  // The coordinator's channel, as MakeServerSecurity builds it (dialled by IP, checked as
  // graphopt-worker).
  ServerSecurityFlags flags = ServerFlags();
  flags.tokens_file = tokens_path_;
  absl::StatusOr<ServerSecurity> server = MakeServerSecurity(flags);
  ASSERT_TRUE(server.ok()) << server.status();
  std::string identity;
  grpc::Status status = PeerIdentity(Channel(server->to_workers, address), &identity);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(identity, kServerIdentity);

  // No client certificate: the connection is made (so that a plain TLS health probe works),
  // every call is refused naming what is missing. One from a foreign CA: no connection.
  status = PeerIdentity(Channel(Client(cluster_->ca, "", "", kWorkerIdentity), address), &identity);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("no client certificate"));
  status = PeerIdentity(Channel(Client(cluster_->ca, foreign_->server_cert, foreign_->server_key,
                                       kWorkerIdentity),
                                address),
                        &identity);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();

  // The cluster's certificates of other roles connect but are refused.
  for (const auto& [cert, key, name] :
       {std::tuple(cluster_->worker_cert, cluster_->worker_key, "graphopt-worker"),
        std::tuple(cluster_->client_cert, cluster_->client_key, "graphopt-client")}) {
    status = PeerIdentity(Channel(Client(cluster_->ca, cert, key, kWorkerIdentity), address),
                          &identity);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED) << name;
    EXPECT_THAT(status.error_message(), HasSubstr(absl::StrCat("names ", name)));
    EXPECT_THAT(status.error_message(), HasSubstr("only for graphopt-server"));
  }
}

TEST_F(TlsTest, AListenerWithoutTokensRefusesClientCalls) {
  absl::StatusOr<ServerTls> tls = MakeServerCredentials(
      {.cert = {cluster_->server_cert, "--tls_cert"}, .key = {cluster_->server_key, "--tls_key"}});
  ASSERT_TRUE(tls.ok()) << tls.status();
  Authenticator auth(TransportSecurity::kTls, nullptr);
  AuthEchoOptimizer echo(&auth, {kWorkerIdentity});
  std::unique_ptr<Running> running = Serve(tls->credentials, {&echo});
  grpc::Status status =
      WhoAmI(Channel(Client(cluster_->ca), running->address()), {.token = acme_}, nullptr);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(status.error_message(), HasSubstr("no tokens file"));
}

// Replacing the certificate and key files changes what new connections see, without a restart.
TEST_F(TlsTest, ReplacedCertificateFilesServeNewConnections) {
  const std::string dir = absl::StrCat(test_certs::TestTempDir(), "/rotate");
  ASSERT_EQ(std::system(absl::StrCat("rm -rf '", dir, "' && mkdir -p '", dir, "' && cp '",
                                     cluster_->server_cert, "' '", dir, "/cert.pem' && cp '",
                                     cluster_->server_key, "' '", dir, "/key.pem'")
                            .c_str()),
            0);
  ServerTlsOptions options;
  options.cert = {dir + "/cert.pem", "--tls_cert"};
  options.key = {dir + "/key.pem", "--tls_key"};
  options.refresh_interval = absl::Seconds(1);
  absl::StatusOr<ServerTls> tls = MakeServerCredentials(options);
  ASSERT_TRUE(tls.ok()) << tls.status();
  Authenticator auth(TransportSecurity::kInsecure, nullptr);  // the handshake is what counts
  AuthEchoOptimizer echo(&auth, {});
  std::unique_ptr<Running> running = Serve(tls->credentials, {&echo});
  const ChannelSecurity trusts_cluster = Client(cluster_->ca);
  const ChannelSecurity trusts_foreign = Client(foreign_->ca);
  ASSERT_TRUE(WhoAmI(Channel(trusts_cluster, running->address()), Call(), nullptr).ok());
  ASSERT_FALSE(WhoAmI(Channel(trusts_foreign, running->address()), Call(), nullptr).ok());

  // Rotate to the foreign CA's server certificate, each file by an atomic rename.
  ASSERT_EQ(std::system(absl::StrCat("cp '", foreign_->server_key, "' '", dir, "/key.tmp' && cp '",
                                     foreign_->server_cert, "' '", dir, "/cert.tmp' && mv '", dir,
                                     "/key.tmp' '", dir, "/key.pem' && mv '", dir, "/cert.tmp' '",
                                     dir, "/cert.pem'")
                            .c_str()),
            0);
  const absl::Time deadline = absl::Now() + absl::Seconds(15);
  bool rotated = false;
  while (!rotated && absl::Now() < deadline) {
    rotated = WhoAmI(Channel(trusts_foreign, running->address()), Call(), nullptr).ok();
    if (!rotated) absl::SleepFor(absl::Milliseconds(200));
  }
  EXPECT_TRUE(rotated) << "the new certificate was not served within 15 s";
  EXPECT_FALSE(WhoAmI(Channel(trusts_cluster, running->address()), Call(), nullptr).ok());
}

// What gRPC 1.51's file watcher does with a pair that does not load (a certificate replaced
// without its key, or junk): new handshakes fail until the files are fixed, then work again.
// Documented in server/tls.h; should a gRPC upgrade keep the old pair instead, this fails and
// the documentation is to be updated.
TEST_F(TlsTest, ABrokenPairStopsNewHandshakesUntilFixed) {
  const std::string dir = absl::StrCat(test_certs::TestTempDir(), "/broken");
  auto sh = [](const std::string& command) { return std::system(command.c_str()); };
  ASSERT_EQ(sh(absl::StrCat("rm -rf '", dir, "' && mkdir -p '", dir, "' && cp '",
                            cluster_->server_cert, "' '", dir, "/cert.pem' && cp '",
                            cluster_->server_key, "' '", dir, "/key.pem'")),
            0);
  ServerTlsOptions options;
  options.cert = {dir + "/cert.pem", "--tls_cert"};
  options.key = {dir + "/key.pem", "--tls_key"};
  options.refresh_interval = absl::Seconds(1);
  absl::StatusOr<ServerTls> tls = MakeServerCredentials(options);
  ASSERT_TRUE(tls.ok()) << tls.status();
  Authenticator auth(TransportSecurity::kInsecure, nullptr);
  AuthEchoOptimizer echo(&auth, {});
  std::unique_ptr<Running> running = Serve(tls->credentials, {&echo});
  const ChannelSecurity client = Client(cluster_->ca);
  auto connects = [&] { return WhoAmI(Channel(client, running->address()), Call(), nullptr).ok(); };
  ASSERT_TRUE(connects());

  // Only the certificate is replaced (by another CA's): it no longer matches the key.
  ASSERT_EQ(sh(absl::StrCat("cp '", foreign_->server_cert, "' '", dir, "/cert.tmp' && mv '", dir,
                            "/cert.tmp' '", dir, "/cert.pem'")),
            0);
  absl::SleepFor(absl::Seconds(3));
  EXPECT_FALSE(connects());

  // Fixed: new connections work again at the next refresh.
  ASSERT_EQ(sh(absl::StrCat("cp '", cluster_->server_cert, "' '", dir, "/cert.tmp' && mv '", dir,
                            "/cert.tmp' '", dir, "/cert.pem'")),
            0);
  const absl::Time deadline = absl::Now() + absl::Seconds(15);
  bool recovered = false;
  while (!recovered && absl::Now() < deadline) {
    recovered = connects();
    if (!recovered) absl::SleepFor(absl::Milliseconds(200));
  }
  EXPECT_TRUE(recovered);
}

// ---------------------------------------------------------------------------------------------
// File and flag checks before start.

TEST_F(TlsTest, ReadsTheCertificatesNames) {
  absl::StatusOr<CertificateInfo> info = ReadCertificateFile({cluster_->server_cert, "--x"});
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->names, (std::vector<std::string>{"graphopt-server", "localhost", "127.0.0.1",
                                                   "graphopt-server"}));
  EXPECT_THAT(info->subject, HasSubstr("CN = graphopt-server"));
  EXPECT_THAT(info->Describe(), HasSubstr("graphopt-server, localhost, 127.0.0.1"));
  EXPECT_THAT(info->Describe(), HasSubstr("valid until 20"));
  EXPECT_LT(info->not_before, absl::Now());
  EXPECT_GT(info->not_after, absl::Now() + absl::Hours(24 * 300));
}

TEST_F(TlsTest, BadFilesFailNamingTheFlagAndTheFile) {
  const std::string dir = test_certs::TestTempDir();
  const std::string junk = dir + "/junk.pem";
  ASSERT_TRUE(WriteFileAtomically(junk, "not a certificate\n").ok());
  const FlagFile cert{cluster_->server_cert, "--tls_cert"};
  const FlagFile key{cluster_->server_key, "--tls_key"};

  absl::StatusOr<CertificateInfo> result = CheckKeyPair({dir + "/missing.pem", "--tls_cert"}, key, "");
  EXPECT_EQ(result.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(result.status().message(), HasSubstr("--tls_cert '" + dir + "/missing.pem'"));

  result = CheckKeyPair({junk, "--tls_cert"}, key, "");
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("--tls_cert '" + junk + "': holds no PEM"));

  result = CheckKeyPair(cert, {junk, "--tls_key"}, "");
  EXPECT_THAT(result.status().message(), HasSubstr("--tls_key '" + junk + "': holds no"));
  // A certificate is not a key.
  result = CheckKeyPair(cert, {cluster_->server_cert, "--tls_key"}, "");
  EXPECT_THAT(result.status().message(), HasSubstr("private key"));

  result = CheckKeyPair(cert, {cluster_->worker_key, "--tls_key"}, "");
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("is not the key of the certificate in"));

  result = CheckKeyPair({cluster_->worker_cert, "--tls_cert"},
                        {cluster_->worker_key, "--tls_key"}, kServerIdentity);
  EXPECT_THAT(result.status().message(), HasSubstr("not this process's cluster identity "
                                                   "'graphopt-server'"));
  EXPECT_TRUE(CheckKeyPair(cert, key, kServerIdentity).ok());

  result = CheckKeyPair(cert, key, "", absl::Now() + absl::Hours(24 * 365 * 100));
  EXPECT_THAT(result.status().message(), HasSubstr("the certificate is valid only from"));

  EXPECT_THAT(CheckCaFile({cluster_->server_key, "--tls_ca"}).status().message(),
              HasSubstr("--tls_ca '" + cluster_->server_key + "': holds no PEM CA certificate"));
  EXPECT_EQ(CheckCaFile({cluster_->ca, "--tls_ca"}).value_or(0), 1);

  ChannelTlsOptions channel;
  channel.ca = {cluster_->ca, "--tls-ca"};
  channel.cert = {cluster_->client_cert, "--tls-cert"};
  channel.key.flag = "--tls-key";
  EXPECT_THAT(MakeChannelCredentials(channel).status().message(),
              HasSubstr("--tls-cert and --tls-key go together"));
  channel.ca.path.clear();
  channel.cert.path.clear();
  EXPECT_THAT(MakeChannelCredentials(channel).status().message(),
              HasSubstr("--tls-ca is needed"));

  ServerTlsOptions server;
  server.cert = cert;
  server.key = key;
  server.client_certs = ClientCertMode::kRequire;
  EXPECT_THAT(MakeServerCredentials(server).status().message(),
              HasSubstr("--tls_ca is needed to verify client certificates"));
}

TEST_F(TlsTest, ServerSecurityFlags) {
  ServerSecurityFlags flags;
  absl::StatusOr<ServerSecurity> security = MakeServerSecurity(flags);
  EXPECT_EQ(security.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(security.status().message(),
              HasSubstr("missing --tls_cert, --tls_key, --tls_ca, --tokens_file"));
  EXPECT_THAT(security.status().message(), HasSubstr("--insecure"));

  flags = ServerFlags();
  security = MakeServerSecurity(flags);
  EXPECT_THAT(security.status().message(), HasSubstr("missing --tokens_file"));

  flags.tokens_file = test_certs::TestTempDir() + "/no-tokens";
  security = MakeServerSecurity(flags);
  EXPECT_THAT(security.status().message(), HasSubstr("--tokens_file: "));
  EXPECT_THAT(security.status().message(), HasSubstr("no-tokens"));

  flags.tokens_file = tokens_path_;
  flags.tls_cert = cluster_->worker_cert;
  flags.tls_key = cluster_->worker_key;
  security = MakeServerSecurity(flags);
  EXPECT_THAT(security.status().message(), HasSubstr("'graphopt-server'"));

  flags = ServerFlags();
  flags.insecure = true;
  flags.tls_ca.clear();
  security = MakeServerSecurity(flags);
  EXPECT_THAT(security.status().message(),
              HasSubstr("--insecure excludes --tls_cert, --tls_key: choose plaintext or TLS"));

  flags = ServerFlags();
  flags.tokens_file = tokens_path_;
  security = MakeServerSecurity(flags);
  ASSERT_TRUE(security.ok()) << security.status();
  EXPECT_THAT(security->description, HasSubstr("TLS, certificate graphopt-server"));
  EXPECT_THAT(security->description, HasSubstr("1 tenant and 0 admin tokens"));
  EXPECT_TRUE(security->to_workers.is_tls());
  EXPECT_EQ(security->to_workers.server_name(), kWorkerIdentity);

  ServerSecurityFlags insecure;
  insecure.insecure = true;
  security = MakeServerSecurity(insecure);
  ASSERT_TRUE(security.ok()) << security.status();
  EXPECT_THAT(security->description, HasSubstr("INSECURE"));
  EXPECT_FALSE(security->to_workers.is_tls());
}

TEST_F(TlsTest, WorkerSecurityFlags) {
  WorkerSecurityFlags flags;
  absl::StatusOr<WorkerSecurity> security = MakeWorkerSecurity(flags);
  EXPECT_THAT(security.status().message(), HasSubstr("missing --tls_cert, --tls_key, --tls_ca"));
  flags = WorkerFlags();
  flags.allowed_peers.clear();
  security = MakeWorkerSecurity(flags);
  EXPECT_THAT(security.status().message(), HasSubstr("--allowed_peers must name"));
  flags = WorkerFlags();
  flags.tls_cert = cluster_->server_cert;
  flags.tls_key = cluster_->server_key;
  security = MakeWorkerSecurity(flags);
  EXPECT_THAT(security.status().message(), HasSubstr("'graphopt-worker'"));
  security = MakeWorkerSecurity(WorkerFlags());
  ASSERT_TRUE(security.ok()) << security.status();
  EXPECT_THAT(security->description, HasSubstr("mTLS, certificate graphopt-worker"));
  EXPECT_EQ(security->to_server.server_name(), kServerIdentity);
  WorkerSecurityFlags insecure;
  insecure.insecure = true;
  EXPECT_TRUE(MakeWorkerSecurity(insecure).ok());
}

}  // namespace
}  // namespace graphopt
