// graphopt.v1.Peer over TLS as graphopt-server serves it: only another replica (a client
// certificate naming graphopt-server, dialled as the fetcher dials) may fetch blobs; workers'
// and clients' certificates, and callers without one, are refused. Blobs are streamed in
// chunks of the configured size, unheld ones left out.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/peer.grpc.pb.h"
#include "server/peer_service.h"
#include "server/security.h"
#include "server/test_certs.h"
#include "server/tls.h"
#include "service/blob_store.h"
#include "service/digest.h"
#include "spdlog/sinks/null_sink.h"
#include "util/file_util.h"

namespace graphopt {
namespace {

using ::testing::HasSubstr;

std::shared_ptr<spdlog::logger> NullLogger() {
  return std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>());
}

// The chunks FetchBlobs streams for `digests` of tenant t1.
grpc::Status Fetch(const std::shared_ptr<grpc::Channel>& channel,
                   const std::vector<std::string>& digests, std::vector<v1::BlobChunk>* chunks) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::FetchBlobsRequest request;
  request.set_tenant("t1");
  for (const std::string& d : digests) request.add_digests(d);
  auto reader = v1::Peer::NewStub(channel)->FetchBlobs(&context, request);
  v1::BlobChunk chunk;
  while (reader->Read(&chunk)) chunks->push_back(chunk);
  return reader->Finish();
}

class PeerServiceTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<test_certs::DevCerts> certs = test_certs::MakeDevCerts("peer_certs");
    if (certs.status().code() == absl::StatusCode::kFailedPrecondition) {
      GTEST_SKIP() << certs.status();
    }
    ASSERT_TRUE(certs.ok()) << certs.status();
    certs_ = *std::move(certs);
    const std::string tokens = absl::StrCat(test_certs::TestTempDir(), "/peer_tokens");
    ASSERT_TRUE(WriteFileAtomically(tokens, "").ok());
    ServerSecurityFlags flags;
    flags.tls_cert = certs_.server_cert;
    flags.tls_key = certs_.server_key;
    flags.tls_ca = certs_.ca;
    flags.tokens_file = tokens;
    absl::StatusOr<ServerSecurity> security = MakeServerSecurity(flags);
    ASSERT_TRUE(security.ok()) << security.status();
    security_ = *std::move(security);

    store_ = std::make_unique<BlobStore>(1 << 20);
    blob_ = std::string(2500, 'b');
    ASSERT_TRUE(store_->Put("t1", blob_).ok());
    env_ = std::make_unique<RpcEnvironment>(PeerCallAuthenticator(security_.auth), nullptr,
                                            NullLogger(), absl::Seconds(30));
    PeerServiceLimits limits;
    limits.chunk_bytes = 1000;
    service_ = std::make_unique<PeerService>(store_.get(), env_.get(), limits);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", security_.listener, &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    address_ = absl::StrCat("127.0.0.1:", port);
  }

  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
  }

  std::shared_ptr<grpc::Channel> Channel(const ChannelSecurity& security) {
    grpc::ChannelArguments arguments;
    arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    return security.CreateChannel(address_, arguments);
  }

  ChannelSecurity Client(const std::string& cert, const std::string& key) {
    ChannelTlsOptions options;
    options.ca.path = certs_.ca;
    options.cert.path = cert;
    options.key.path = key;
    options.server_name = kServerIdentity;
    absl::StatusOr<ChannelSecurity> security = MakeChannelCredentials(options);
    EXPECT_TRUE(security.ok()) << security.status();
    return security.value_or(ChannelSecurity());
  }

  test_certs::DevCerts certs_;
  ServerSecurity security_;
  std::unique_ptr<BlobStore> store_;
  std::string blob_;
  std::unique_ptr<RpcEnvironment> env_;
  std::unique_ptr<PeerService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

TEST_F(PeerServiceTlsTest, AnotherReplicaFetchesInChunks) {
  // As graphopt-server dials its peers: its own certificate, the peer's checked as
  // graphopt-server.
  const ChannelSecurity replica(security_.to_workers.credentials(), kServerIdentity);
  std::vector<v1::BlobChunk> chunks;
  const std::string held = Sha256Digest(blob_);
  grpc::Status s = Fetch(Channel(replica), {Sha256Digest("not held"), held}, &chunks);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0].digest(), held);
  EXPECT_EQ(chunks[0].total_size(), 2500);
  EXPECT_EQ(chunks[0].data().size(), 1000u);
  EXPECT_TRUE(chunks[1].digest().empty());
  EXPECT_EQ(chunks[2].data().size(), 500u);
  EXPECT_EQ(chunks[0].data() + chunks[1].data() + chunks[2].data(), blob_);
  EXPECT_EQ(service_->blobs_served(), 1);
}

TEST_F(PeerServiceTlsTest, OtherIdentitiesAreRefused) {
  std::vector<v1::BlobChunk> chunks;
  const std::string held = Sha256Digest(blob_);
  grpc::Status s = Fetch(Channel(Client(certs_.worker_cert, certs_.worker_key)), {held}, &chunks);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("names graphopt-worker"));
  s = Fetch(Channel(Client(certs_.client_cert, certs_.client_key)), {held}, &chunks);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  s = Fetch(Channel(Client("", "")), {held}, &chunks);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("no client certificate"));
  EXPECT_TRUE(chunks.empty());
  EXPECT_EQ(service_->blobs_served(), 0);
}

}  // namespace
}  // namespace graphopt
