// Weight blobs across server replicas, with a real etcd (Debian's etcd-server): two replicas in
// one process, each with its own BlobStore, OptimizerService, Coordinator and Peer service on
// its own loopback port, sharing one etcd and one worker. A blob uploaded through A is present
// through B (fetched from A by digest, verified, under B's quota), usable by Optimize and Run
// through B; tenants stay apart; a lying peer is refused; a holder that is gone costs a
// re-upload; concurrent fetches of one blob make one transfer; an eviction deletes the record.

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/blob_upload.h"
#include "etcd/blob_holders.h"
#include "etcd/etcd_client.h"
#include "etcd/etcd_test_util.h"
#include "etcd/keys.h"
#include "etcd/replica_presence.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/op_registry.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "ops/builtin_ops.h"
#include "passes/builtin_passes.h"
#include "passes/pass.h"
#include "proto/coordinator.grpc.pb.h"
#include "proto/optimizer.grpc.pb.h"
#include "proto/peer.grpc.pb.h"
#include "runtime/kernels/cpu_kernels.h"
#include "server/auth.h"
#include "server/coordinator_service.h"
#include "server/grpc_worker_client.h"
#include "server/optimizer_service.h"
#include "server/peer_blob_fetcher.h"
#include "server/peer_service.h"
#include "server/rpc_call.h"
#include "service/blob_store.h"
#include "service/coordinator.h"
#include "service/digest.h"
#include "service/optimizer.h"
#include "service/quota.h"
#include "service/tenant.h"
#include "spdlog/sinks/ostream_sink.h"
#include "worker/worker_service.h"

namespace graphopt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

constexpr char kPrefix[] = "/blobtest/";
constexpr int64_t kMiB = int64_t{1} << 20;

// y = x + w, with w a blob of 3 floats.
constexpr char kPlan[] = R"pb(
  inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 3 } } } }
  initializers { name: "w" dtype: DT_FLOAT32 dims: 3 }
  nodes { name: "add" op_type: "Add" inputs: "x" inputs: "w" outputs: "y" }
  outputs { name: "y" }
)pb";

std::string Floats(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

// Deterministic bytes that differ per seed.
std::string Bytes(int64_t size, uint64_t seed) {
  std::string bytes(static_cast<size_t>(size), '\0');
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < bytes.size(); ++i) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    bytes[i] = static_cast<char>((x * 0x2545F4914F6CDD1Dull) >> 56);
  }
  return bytes;
}


std::unique_ptr<grpc::Server> Serve(const std::vector<grpc::Service*>& services,
                                    std::string* address) {
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  for (grpc::Service* s : services) builder.RegisterService(s);
  builder.SetMaxReceiveMessageSize(64 * kMiB);
  builder.SetMaxSendMessageSize(64 * kMiB);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  *address = absl::StrCat("127.0.0.1:", port);
  return server;
}

// A lying replica: answers every FetchBlobs with other bytes of the right size.
class LyingPeer final : public v1::Peer::Service {
 public:
  explicit LyingPeer(int64_t size) : size_(size) {}
  grpc::Status FetchBlobs(grpc::ServerContext*, const v1::FetchBlobsRequest* request,
                          grpc::ServerWriter<v1::BlobChunk>* writer) override {
    for (const std::string& digest : request->digests()) {
      v1::BlobChunk chunk;
      chunk.set_digest(digest);
      chunk.set_total_size(size_);
      chunk.set_data(std::string(static_cast<size_t>(size_), 'L'));
      writer->Write(chunk);
    }
    return grpc::Status::OK;
  }

 private:
  const int64_t size_;
};

struct ReplicaOptions {
  int64_t budget = 64 * kMiB;
  // Every tenant's blob quota; 0: the budget.
  int64_t tenant_blob_bytes = 0;
};

// One server replica as graphopt-server wires it with --etcd_endpoints.
class Replica {
 public:
  Replica(const std::string& name, const std::vector<std::string>& endpoints,
          const OpRegistry* ops, const PassRegistry* passes, const std::string& worker,
          ReplicaOptions options) {
    logger_ = std::make_shared<spdlog::logger>(
        name, std::make_shared<spdlog::sinks::ostream_sink_mt>(log_));
    EtcdOptions etcd_options;
    etcd_options.endpoints = endpoints;
    etcd_ = *EtcdClient::Create(etcd_options);
    presence_ = std::make_unique<ReplicaPresence>(etcd_.get(), kPrefix, absl::Seconds(10));
    EXPECT_TRUE(presence_->Start().ok());
    TenantQuota quota;
    if (options.tenant_blob_bytes > 0) quota.blob_bytes = options.tenant_blob_bytes;
    quotas_ = std::make_unique<QuotaBook>(QuotaTable(quota));
    blobs_ = std::make_unique<BlobStore>(options.budget, quotas_.get());
    holders_ = std::make_unique<EtcdBlobHolders>(etcd_.get(), kPrefix, presence_.get(),
                                                 blobs_.get(), logger_);
    PeerFetchOptions fetch;
    fetch.connect_timeout = absl::Milliseconds(500);
    fetch.call_timeout = absl::Seconds(20);
    fetcher_ = std::make_unique<PeerBlobFetcher>(holders_.get(), fetch, logger_);
    blobs_->set_observer(holders_.get());
    blobs_->set_fetcher(fetcher_.get());
    optimizer_ = std::make_unique<Optimizer>(ops, passes, blobs_.get());
    service_ = std::make_unique<OptimizerService>(optimizer_.get(), logger_, blobs_.get());
    CoordinatorOptions coordinator_options;
    coordinator_options.probe_interval = absl::Milliseconds(50);
    coordinator_ = std::make_unique<Coordinator>(coordinator_options, GrpcWorkerClientFactory({}),
                                                 optimizer_.get(), blobs_.get(), logger_);
    coordinator_service_ = std::make_unique<CoordinatorService>(coordinator_.get(), logger_);
    if (!worker.empty()) {
      EXPECT_TRUE(coordinator_->AddWorker(worker, "flag").ok());
      coordinator_->Start();
      coordinator_->ProbeNow();
    }
    // As an --insecure graphopt-server: any peer may fetch (server/peer_service_test.cc covers
    // TLS, where only the server identity may).
    peer_env_ = std::make_unique<RpcEnvironment>(
        PeerCallAuthenticator(std::make_shared<Authenticator>(TransportSecurity::kInsecure,
                                                              nullptr)),
        nullptr, logger_, absl::InfiniteDuration());
    peer_ = std::make_unique<PeerService>(blobs_.get(), peer_env_.get());
    server_ = Serve({service_.get(), coordinator_service_.get(), peer_.get()}, &address_);
    EXPECT_TRUE(presence_->Announce(address_).ok());
    holders_->Announce(address_);
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 * kMiB);
    args.SetMaxSendMessageSize(64 * kMiB);
    channel_ = grpc::CreateCustomChannel(address_, grpc::InsecureChannelCredentials(), args);
  }

  ~Replica() {
    StopServing();
    blobs_->set_fetcher(nullptr);
    blobs_->set_observer(nullptr);
    fetcher_.reset();
    holders_.reset();
    presence_.reset();
  }

  // Stops answering (as a crashed or partitioned replica does) but keeps its lease, so its
  // records stay in etcd until the lease would expire.
  void StopServing() {
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
    server_.reset();
    coordinator_service_.reset();
    if (coordinator_ != nullptr) coordinator_->CancelAll();
    coordinator_.reset();
    service_.reset();
    peer_.reset();
  }

  // A clean stop: the lease is revoked and the records go with it.
  void Leave() {
    StopServing();
    blobs_->set_observer(nullptr);
    holders_.reset();
    presence_.reset();
  }

  absl::StatusOr<UploadStats> Upload(const std::string& tenant, const std::string& data) {
    auto stub = v1::GraphOptimizer::NewStub(channel_);
    UploadOptions options;
    options.tenant = tenant;
    options.timeout = absl::Seconds(30);
    const BlobRef ref{Sha256Digest(data), data};
    return UploadBlobs(*stub, {ref}, options);
  }

  grpc::Status HasBlobs(const std::string& tenant, const std::vector<std::string>& digests,
                        v1::HasBlobsResponse* response) {
    auto stub = v1::GraphOptimizer::NewStub(channel_);
    grpc::ClientContext context;
    context.AddMetadata(kTenantMetadataKey, tenant);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::HasBlobsRequest request;
    for (const std::string& d : digests) request.add_digests(d);
    return stub->HasBlobs(&context, request, response);
  }

  std::vector<std::string> Missing(const std::string& tenant, const std::string& digest) {
    v1::HasBlobsResponse response;
    grpc::Status s = HasBlobs(tenant, {digest}, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return {response.missing().begin(), response.missing().end()};
  }

  grpc::Status Optimize(const std::string& tenant, const v1::Graph& graph) {
    auto stub = v1::GraphOptimizer::NewStub(channel_);
    grpc::ClientContext context;
    context.AddMetadata(kTenantMetadataKey, tenant);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::OptimizeRequest request;
    *request.mutable_graph() = graph;
    v1::OptimizeResponse response;
    return stub->Optimize(&context, request, &response);
  }

  grpc::Status Run(const std::string& tenant, const v1::Graph& graph,
                   const std::vector<float>& x, v1::RunResponse* response) {
    auto stub = v1::Coordinator::NewStub(channel_);
    grpc::ClientContext context;
    context.AddMetadata(kTenantMetadataKey, tenant);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::RunRequest request;
    *request.mutable_graph() = graph;
    v1::NamedTensor* in = request.add_inputs();
    in->set_name("x");
    in->mutable_tensor()->set_dtype(v1::DT_FLOAT32);
    in->mutable_tensor()->add_dims(static_cast<int64_t>(x.size()));
    in->mutable_tensor()->set_raw_data(Floats(x));
    return stub->Run(&context, request, response);
  }

  const std::string& address() const { return address_; }
  BlobStore& blobs() { return *blobs_; }
  EtcdBlobHolders& holders() { return *holders_; }
  PeerBlobFetcher& fetcher() { return *fetcher_; }
  PeerService& peer() { return *peer_; }
  std::string log() const { return log_.str(); }

 private:
  std::ostringstream log_;
  std::shared_ptr<spdlog::logger> logger_;
  std::unique_ptr<EtcdClient> etcd_;
  std::unique_ptr<ReplicaPresence> presence_;
  std::unique_ptr<QuotaBook> quotas_;
  std::unique_ptr<BlobStore> blobs_;
  std::unique_ptr<EtcdBlobHolders> holders_;
  std::unique_ptr<PeerBlobFetcher> fetcher_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<OptimizerService> service_;
  std::unique_ptr<Coordinator> coordinator_;
  std::unique_ptr<CoordinatorService> coordinator_service_;
  std::unique_ptr<RpcEnvironment> peer_env_;
  std::unique_ptr<PeerService> peer_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::shared_ptr<grpc::Channel> channel_;
};

class BlobReplicasTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (EtcdBinary().empty()) return;
    const std::string dir = ::testing::TempDir() + "/blob_replicas_etcd";
    ASSERT_EQ(std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()), 0);
    auto started = EtcdTestCluster::Start(dir, 1);
    ASSERT_TRUE(started.ok()) << started.status();
    cluster_ = started->release();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  void SetUp() override {
    if (cluster_ == nullptr) GTEST_SKIP() << "no etcd binary (install etcd-server)";
    ASSERT_TRUE(RegisterBuiltinOps(&ops_).ok());
    ASSERT_TRUE(RegisterBuiltinPasses(&passes_).ok());
    ASSERT_TRUE(runtime::RegisterCpuKernels(kernels_).ok());
    etcd_ = cluster_->Client();
    // Each test starts from an empty prefix.
    ASSERT_TRUE(etcd_->DeletePrefix(kPrefix).ok());
  }

  void TearDown() override {
    b_.reset();
    a_.reset();
    if (worker_server_ != nullptr) worker_server_->Shutdown(std::chrono::system_clock::now());
  }

  std::string StartWorker() {
    WorkerOptions options;
    options.worker_id = "w1";
    worker_core_ = std::make_unique<WorkerCore>(&kernels_, options);
    worker_service_ = std::make_unique<WorkerService>(worker_core_.get(), logger_);
    std::string address;
    worker_server_ = Serve({worker_service_.get()}, &address);
    return address;
  }

  std::unique_ptr<Replica> StartReplica(const std::string& name, ReplicaOptions options = {},
                                        const std::string& worker = "") {
    return std::make_unique<Replica>(name, cluster_->endpoints(), &ops_, &passes_, worker,
                                     options);
  }

  // The holders' addresses recorded for the tenant's blob.
  std::vector<std::string> Recorded(const std::string& tenant, const std::string& digest) {
    const std::string base = etcd_keys::Blobs(kPrefix, tenant, digest);
    absl::StatusOr<EtcdRange> range = etcd_->GetPrefix(base);
    EXPECT_TRUE(range.ok()) << range.status();
    std::vector<std::string> out;
    if (range.ok()) {
      for (const EtcdKeyValue& kv : range->kvs) out.push_back(kv.key.substr(base.size()));
    }
    return out;
  }

  static v1::Graph PlanWithBlob(const std::string& digest) {
    v1::Graph graph;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(kPlan, &graph));
    graph.mutable_initializers(0)->set_blob(digest);
    return graph;
  }

  static EtcdTestCluster* cluster_;
  OpRegistry ops_;
  PassRegistry passes_;
  runtime::KernelRegistry kernels_;
  std::shared_ptr<spdlog::logger> logger_ = std::make_shared<spdlog::logger>(
      "worker", std::make_shared<spdlog::sinks::ostream_sink_mt>(worker_log_));
  std::ostringstream worker_log_;
  std::unique_ptr<EtcdClient> etcd_;
  std::unique_ptr<WorkerCore> worker_core_;
  std::unique_ptr<WorkerService> worker_service_;
  std::unique_ptr<grpc::Server> worker_server_;
  std::unique_ptr<Replica> a_, b_;
};
EtcdTestCluster* BlobReplicasTest::cluster_ = nullptr;

TEST_F(BlobReplicasTest, UploadedThroughAIsUsableThroughB) {
  const std::string worker = StartWorker();
  a_ = StartReplica("a", {}, worker);
  b_ = StartReplica("b", {}, worker);
  const std::string w = Floats({10, 20, 30});
  const std::string digest = Sha256Digest(w);

  absl::StatusOr<UploadStats> up = a_->Upload("t1", w);
  ASSERT_TRUE(up.ok()) << up.status();
  EXPECT_EQ(up->blobs_sent, 1);
  // One record, put once, naming A, with the size.
  EXPECT_THAT(Recorded("t1", digest), ElementsAre(a_->address()));
  EXPECT_EQ(a_->holders().puts(), 1);
  auto kv = etcd_->Get(absl::StrCat(etcd_keys::Blobs(kPrefix, "t1", digest), a_->address()));
  ASSERT_TRUE(kv.ok() && kv->has_value());
  EXPECT_EQ((*kv)->value, "12");

  // B lacks it, finds A in etcd, fetches and verifies it, records itself, says present.
  EXPECT_FALSE(b_->blobs().Contains("t1", digest));
  EXPECT_THAT(b_->Missing("t1", digest), IsEmpty());
  EXPECT_TRUE(b_->blobs().Contains("t1", digest));
  EXPECT_EQ(b_->fetcher().fetched(), 1);
  EXPECT_EQ(a_->peer().blobs_served(), 1);
  EXPECT_THAT(Recorded("t1", digest), UnorderedElementsAre(a_->address(), b_->address()));
  // The client protocol through B sends nothing.
  absl::StatusOr<UploadStats> again = b_->Upload("t1", w);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->blobs_sent, 0);

  // Optimize and Run through a third path: a blob B never had, resolved while serving.
  const std::string w2 = Floats({1, 1, 1});
  const std::string digest2 = Sha256Digest(w2);
  ASSERT_TRUE(a_->Upload("t1", w2).ok());
  grpc::Status optimized = b_->Optimize("t1", PlanWithBlob(digest2));
  EXPECT_TRUE(optimized.ok()) << optimized.error_message();
  EXPECT_TRUE(b_->blobs().Contains("t1", digest2));

  const std::string w3 = Floats({100, 200, 300});
  ASSERT_TRUE(a_->Upload("t1", w3).ok());
  v1::RunResponse run;
  grpc::Status ran = b_->Run("t1", PlanWithBlob(Sha256Digest(w3)), {1, 2, 3}, &run);
  ASSERT_TRUE(ran.ok()) << ran.error_message();
  ASSERT_EQ(run.outputs_size(), 1);
  std::vector<float> y(3);
  ASSERT_EQ(run.outputs(0).tensor().raw_data().size(), 12u);
  std::memcpy(y.data(), run.outputs(0).tensor().raw_data().data(), 12);
  EXPECT_THAT(y, ElementsAre(101, 202, 303));
  EXPECT_EQ(b_->fetcher().fetched(), 3);
}

TEST_F(BlobReplicasTest, TenantsStayApart) {
  a_ = StartReplica("a");
  b_ = StartReplica("b");
  const std::string w = Bytes(1000, 1);
  const std::string digest = Sha256Digest(w);
  ASSERT_TRUE(a_->Upload("t1", w).ok());
  // t2 asks B for t1's digest: no record under t2, so nothing is fetched.
  EXPECT_THAT(b_->Missing("t2", digest), ElementsAre(digest));
  EXPECT_FALSE(b_->blobs().Contains("t2", digest));
  EXPECT_EQ(a_->peer().blobs_served(), 0);
  grpc::Status optimized = b_->Optimize("t2", PlanWithBlob(digest));
  EXPECT_EQ(optimized.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(optimized.error_message(), HasSubstr("does not hold"));
  // Even asked directly, A serves only the named tenant's namespace.
  auto peer = v1::Peer::NewStub(
      grpc::CreateChannel(a_->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  v1::FetchBlobsRequest request;
  request.set_tenant("t2");
  request.add_digests(digest);
  auto reader = peer->FetchBlobs(&context, request);
  v1::BlobChunk chunk;
  EXPECT_FALSE(reader->Read(&chunk));
  EXPECT_TRUE(reader->Finish().ok());
  // t1 through B works.
  EXPECT_THAT(b_->Missing("t1", digest), IsEmpty());
}

TEST_F(BlobReplicasTest, FetchBlobsRefusesBadRequests) {
  a_ = StartReplica("a");
  auto peer = v1::Peer::NewStub(
      grpc::CreateChannel(a_->address(), grpc::InsecureChannelCredentials()));
  struct Case {
    std::string tenant;
    std::vector<std::string> digests;
    std::string message;
  };
  std::vector<Case> cases = {
      {"Bad Tenant", {}, "tenant"},
      {"t1", {"sha256:12"}, "digests[0]: 'sha256:12' is not a blob digest"},
      {"t1", std::vector<std::string>(65, Sha256Digest("x")), "at most 64 per call"},
  };
  for (const Case& c : cases) {
    grpc::ClientContext context;
    v1::FetchBlobsRequest request;
    request.set_tenant(c.tenant);
    for (const std::string& d : c.digests) request.add_digests(d);
    auto reader = peer->FetchBlobs(&context, request);
    v1::BlobChunk chunk;
    EXPECT_FALSE(reader->Read(&chunk));
    grpc::Status s = reader->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.message;
    EXPECT_THAT(s.error_message(), HasSubstr(c.message));
  }
}

TEST_F(BlobReplicasTest, LyingPeerIsRefused) {
  b_ = StartReplica("b");
  const std::string w = Bytes(5000, 2);
  const std::string digest = Sha256Digest(w);
  LyingPeer liar(static_cast<int64_t>(w.size()));
  std::string liar_address;
  std::unique_ptr<grpc::Server> liar_server = Serve({&liar}, &liar_address);
  ASSERT_TRUE(etcd_
                  ->Put(absl::StrCat(etcd_keys::Blobs(kPrefix, "t1", digest), liar_address),
                        absl::StrCat(w.size()))
                  .ok());
  EXPECT_THAT(b_->Missing("t1", digest), ElementsAre(digest));
  EXPECT_FALSE(b_->blobs().Contains("t1", digest));
  EXPECT_EQ(b_->fetcher().failures(), 1);
  EXPECT_THAT(b_->log(), HasSubstr("received data hashes to"));
  // Nothing of it stays reserved, and B did not record itself.
  EXPECT_EQ(b_->blobs().stats().bytes_reserved, 0);
  EXPECT_THAT(Recorded("t1", digest), ElementsAre(liar_address));
  // The client then uploads it, as it would anyway.
  absl::StatusOr<UploadStats> up = b_->Upload("t1", w);
  ASSERT_TRUE(up.ok()) << up.status();
  EXPECT_EQ(up->blobs_sent, 1);
  liar_server->Shutdown(std::chrono::system_clock::now());
}

TEST_F(BlobReplicasTest, HolderGoneCostsAReupload) {
  a_ = StartReplica("a");
  b_ = StartReplica("b");
  const std::string w1 = Bytes(3 * kMiB + 7, 3);
  const std::string w2 = Bytes(1000, 4);
  ASSERT_TRUE(a_->Upload("t1", w1).ok());
  ASSERT_TRUE(a_->Upload("t1", w2).ok());

  // A stops answering but its records stay (a crash or partition within the lease TTL):
  // B tries A, gives up within the connect timeout, and reports the blob missing.
  a_->StopServing();
  const absl::Time start = absl::Now();
  EXPECT_THAT(b_->Missing("t1", Sha256Digest(w1)), ElementsAre(Sha256Digest(w1)));
  const absl::Duration took = absl::Now() - start;
  std::printf("[ measured ] HasBlobs through B with the holder unreachable: %.0f ms\n",
              absl::ToDoubleMilliseconds(took));
  EXPECT_LT(took, absl::Seconds(5));
  // A is remembered as down: its other blobs cost no second connect timeout.
  const absl::Time start2 = absl::Now();
  EXPECT_THAT(b_->Missing("t1", Sha256Digest(w2)), ElementsAre(Sha256Digest(w2)));
  EXPECT_LT(absl::Now() - start2, absl::Milliseconds(400));
  absl::StatusOr<UploadStats> up = b_->Upload("t1", w1);
  ASSERT_TRUE(up.ok()) << up.status();
  EXPECT_EQ(up->blobs_sent, 1);
  EXPECT_THAT(b_->Missing("t1", Sha256Digest(w1)), IsEmpty());

  // A leaves cleanly: its lease is revoked and its records with it; B does not even try.
  a_->Leave();
  EXPECT_THAT(Recorded("t1", Sha256Digest(w2)), IsEmpty());
  const int64_t failures = b_->fetcher().failures();
  EXPECT_THAT(b_->Missing("t1", Sha256Digest(w2)), ElementsAre(Sha256Digest(w2)));
  EXPECT_EQ(b_->fetcher().failures(), failures);
}

TEST_F(BlobReplicasTest, EtcdOutOfReachLeavesEachReplicaOnItsOwn) {
  a_ = StartReplica("a");
  b_ = StartReplica("b");
  const std::string w1 = Bytes(2000, 9), w2 = Bytes(2000, 10);
  ASSERT_TRUE(a_->Upload("t1", w1).ok());
  ASSERT_TRUE(a_->Upload("t1", w2).ok());
  cluster_->Kill(0);
  // B cannot learn the holders: both reported missing, after one failed lookup.
  const absl::Time start = absl::Now();
  v1::HasBlobsResponse response;
  grpc::Status s = b_->HasBlobs("t1", {Sha256Digest(w1), Sha256Digest(w2)}, &response);
  const absl::Duration took = absl::Now() - start;
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(response.missing_size(), 2);
  std::printf("[ measured ] HasBlobs of 2 blobs through B with etcd down: %.0f ms\n",
              absl::ToDoubleMilliseconds(took));
  EXPECT_LT(took, absl::Seconds(8));
  EXPECT_THAT(b_->log(), HasSubstr("the other blobs of this call are not looked for"));
  // Asked again at once, B does not wait for etcd again.
  const absl::Time again = absl::Now();
  EXPECT_THAT(b_->Missing("t1", Sha256Digest(w1)), ElementsAre(Sha256Digest(w1)));
  EXPECT_LT(absl::Now() - again, absl::Milliseconds(500));
  // Uploads still work; the holder record is what waits. The first upload waits once for
  // etcd's timeout, the next ones not at all.
  absl::StatusOr<UploadStats> up = b_->Upload("t1", w1);
  ASSERT_TRUE(up.ok()) << up.status();
  EXPECT_EQ(up->blobs_sent, 1);
  EXPECT_THAT(b_->log(), HasSubstr("cannot record tenant t1 blob"));
  const std::string w3 = Bytes(2000, 11);
  const absl::Time upload3 = absl::Now();
  ASSERT_TRUE(b_->Upload("t1", w3).ok());
  EXPECT_LT(absl::Now() - upload3, absl::Milliseconds(500));
  ASSERT_TRUE(cluster_->Restart(0).ok());
  ASSERT_TRUE(etcd_->WaitReady(absl::Seconds(10)).ok());
  // Back: B finds w2 at A again, and publishes what it took while etcd was away.
  EXPECT_TRUE(Eventually([&] { return b_->Missing("t1", Sha256Digest(w2)).empty(); }));
  EXPECT_TRUE(Eventually([&] {
    return Recorded("t1", Sha256Digest(w3)) == std::vector<std::string>{b_->address()};
  }));
}

TEST_F(BlobReplicasTest, BsQuotaIsRespected) {
  a_ = StartReplica("a");
  ReplicaOptions small;
  small.tenant_blob_bytes = 64 * 1024;
  b_ = StartReplica("b", small);
  const std::string w = Bytes(100 * 1024, 5);
  const std::string digest = Sha256Digest(w);
  ASSERT_TRUE(a_->Upload("t1", w).ok());
  // The fetch would go over t1's quota on B: reported missing, nothing held or reserved.
  EXPECT_THAT(b_->Missing("t1", digest), ElementsAre(digest));
  EXPECT_EQ(b_->blobs().stats("t1").bytes_held, 0);
  EXPECT_EQ(b_->blobs().stats().bytes_reserved, 0);
  EXPECT_THAT(b_->log(), HasSubstr("quota blob_bytes"));
  // The client's upload then gets the quota's error.
  absl::StatusOr<UploadStats> up = b_->Upload("t1", w);
  ASSERT_FALSE(up.ok());
  EXPECT_EQ(up.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(up.status().message(), HasSubstr("quota blob_bytes"));
  // And a Run or Optimize through B names the blob as not held.
  EXPECT_EQ(b_->Optimize("t1", PlanWithBlob(digest)).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
}

TEST_F(BlobReplicasTest, ConcurrentFetchesOfOneBlobMakeOneTransfer) {
  a_ = StartReplica("a");
  b_ = StartReplica("b");
  const std::string w = Bytes(16 * kMiB, 6);
  const std::string digest = Sha256Digest(w);
  ASSERT_TRUE(a_->Upload("t1", w).ok());
  std::vector<std::thread> threads;
  std::atomic<int> present{0};
  const absl::Time start = absl::Now();
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&] {
      if (b_->Missing("t1", digest).empty()) ++present;
    });
  }
  for (std::thread& t : threads) t.join();
  const double ms = absl::ToDoubleMilliseconds(absl::Now() - start);
  std::printf("[ measured ] 16 MiB fetched between replicas for 6 concurrent HasBlobs: %.0f ms "
              "(%.0f MiB/s)\n",
              ms, 16.0 / (ms / 1000));
  EXPECT_EQ(present.load(), 6);
  EXPECT_EQ(a_->peer().blobs_served(), 1);
  EXPECT_EQ(b_->fetcher().fetched(), 1);
  std::shared_ptr<const std::string> held = b_->blobs().Lookup("t1", digest);
  ASSERT_NE(held, nullptr);
  EXPECT_TRUE(*held == w);
}

TEST_F(BlobReplicasTest, EvictionDeletesTheRecord) {
  ReplicaOptions small;
  small.budget = 2 * kMiB;
  a_ = StartReplica("a", small);
  const std::string w1 = Bytes(kMiB + 1, 7);
  const std::string w2 = Bytes(kMiB + 1, 8);
  ASSERT_TRUE(a_->Upload("t1", w1).ok());
  EXPECT_THAT(Recorded("t1", Sha256Digest(w1)), ElementsAre(a_->address()));
  ASSERT_TRUE(a_->Upload("t1", w2).ok());  // evicts w1
  EXPECT_FALSE(a_->blobs().Contains("t1", Sha256Digest(w1)));
  EXPECT_THAT(Recorded("t1", Sha256Digest(w1)), IsEmpty());
  EXPECT_THAT(Recorded("t1", Sha256Digest(w2)), ElementsAre(a_->address()));
  EXPECT_EQ(a_->holders().puts(), 2);
  EXPECT_EQ(a_->holders().deletes(), 1);
}

}  // namespace
}  // namespace graphopt
