#include "client/blob_upload.h"

#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/optimizer.grpc.pb.h"
#include "service/digest.h"

namespace graphopt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

struct SeenChunk {
  std::string digest;
  int64_t total_size;
  std::string data;
  bool operator==(const SeenChunk& other) const {
    return digest == other.digest && total_size == other.total_size && data == other.data;
  }
};

std::ostream& operator<<(std::ostream& os, const SeenChunk& chunk) {
  return os << "{" << chunk.digest.substr(0, 12) << ", " << chunk.total_size << ", '"
            << chunk.data << "'}";
}

// A blob service that records what it is sent. Blobs are reassembled without checks.
class FakeBlobService final : public v1::GraphOptimizer::Service {
 public:
  grpc::Status HasBlobs(grpc::ServerContext*, const v1::HasBlobsRequest* request,
                        v1::HasBlobsResponse* response) override {
    absl::MutexLock lock(&mu);
    has_requests.emplace_back(request->digests().begin(), request->digests().end());
    if (!has_error.ok()) return has_error;
    if (has_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(has_delay_ms));
    for (const std::string& digest : request->digests()) {
      if (!stored.contains(digest)) response->add_missing(digest);
    }
    return grpc::Status::OK;
  }

  grpc::Status PutBlobs(grpc::ServerContext*, grpc::ServerReader<v1::BlobChunk>* reader,
                        v1::PutBlobsResponse* response) override {
    absl::MutexLock lock(&mu);
    ++put_calls;
    v1::BlobChunk chunk;
    std::string current;
    while (reader->Read(&chunk)) {
      chunks.push_back({chunk.digest(), chunk.total_size(), chunk.data()});
      if (!put_error.ok()) return put_error;
      if (!chunk.digest().empty()) {
        current = chunk.digest();
        totals[current] = chunk.total_size();
        stored[current].clear();
      }
      std::string& data = stored[current];
      data += chunk.data();
      if (static_cast<int64_t>(data.size()) == totals[current]) response->add_stored(current);
    }
    return grpc::Status::OK;
  }

  absl::Mutex mu;
  absl::flat_hash_map<std::string, std::string> stored;
  absl::flat_hash_map<std::string, int64_t> totals;
  std::vector<std::vector<std::string>> has_requests;
  std::vector<SeenChunk> chunks;
  int put_calls = 0;
  int has_delay_ms = 0;
  grpc::Status has_error;
  grpc::Status put_error;
};

class BlobUploadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = v1::GraphOptimizer::NewStub(server_->InProcessChannel(grpc::ChannelArguments()));
  }
  void TearDown() override { server_->Shutdown(std::chrono::system_clock::now()); }

  static BlobRef Ref(const std::string& data) { return BlobRef{Sha256Digest(data), data}; }

  FakeBlobService service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::GraphOptimizer::Stub> stub_;
};

TEST_F(BlobUploadTest, SendsOnlyMissingBlobsOnceInChunks) {
  const std::string a = "already there", b = "0123456789", empty;
  service_.stored[Sha256Digest(a)] = a;
  std::vector<std::pair<int64_t, int64_t>> progress;
  UploadOptions options;
  options.chunk_bytes = 4;
  options.progress = [&](int64_t sent, int64_t total) { progress.emplace_back(sent, total); };
  const std::vector<BlobRef> blobs = {Ref(a), Ref(b), Ref(empty), Ref(b)};
  absl::StatusOr<UploadStats> stats = UploadBlobs(*stub_, blobs, options);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->blobs_total, 3);
  EXPECT_EQ(stats->blobs_sent, 2);
  EXPECT_EQ(stats->bytes_total, static_cast<int64_t>(a.size() + b.size()));
  EXPECT_EQ(stats->bytes_sent, 10);
  EXPECT_GE(stats->seconds, 0);
  ASSERT_EQ(service_.has_requests.size(), 1u);
  EXPECT_THAT(service_.has_requests[0],
              ElementsAre(Sha256Digest(a), Sha256Digest(b), Sha256Digest(empty)));
  EXPECT_EQ(service_.put_calls, 1);
  EXPECT_THAT(service_.chunks, ElementsAre(SeenChunk{Sha256Digest(b), 10, "0123"},
                                           SeenChunk{"", 0, "4567"}, SeenChunk{"", 0, "89"},
                                           SeenChunk{Sha256Digest(empty), 0, ""}));
  EXPECT_EQ(service_.stored[Sha256Digest(b)], b);
  EXPECT_THAT(progress, ElementsAre(Pair(0, 10), Pair(4, 10), Pair(8, 10), Pair(10, 10),
                                    Pair(10, 10)));
}

TEST_F(BlobUploadTest, NothingMissingMeansNoPutBlobs) {
  const std::string a = "aaa";
  service_.stored[Sha256Digest(a)] = a;
  bool progress_called = false;
  UploadOptions options;
  options.progress = [&](int64_t, int64_t) { progress_called = true; };
  const std::vector<BlobRef> blobs = {Ref(a)};
  absl::StatusOr<UploadStats> stats = UploadBlobs(*stub_, blobs, options);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->blobs_sent, 0);
  EXPECT_EQ(stats->bytes_sent, 0);
  EXPECT_EQ(stats->bytes_total, 3);
  EXPECT_EQ(service_.put_calls, 0);
  EXPECT_FALSE(progress_called);
}

TEST_F(BlobUploadTest, NoBlobsNoCalls) {
  absl::StatusOr<UploadStats> stats = UploadBlobs(*stub_, {}, UploadOptions());
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->blobs_total, 0);
  EXPECT_TRUE(service_.has_requests.empty());
}

TEST_F(BlobUploadTest, AsksInBatches) {
  std::vector<std::string> data;
  for (int i = 0; i < 5; ++i) data.push_back(absl::StrCat("blob ", i));
  std::vector<BlobRef> blobs;
  for (const std::string& d : data) blobs.push_back(Ref(d));
  UploadOptions options;
  options.max_digests_per_request = 2;
  absl::StatusOr<UploadStats> stats = UploadBlobs(*stub_, blobs, options);
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(service_.has_requests.size(), 3u);
  EXPECT_EQ(service_.has_requests[2].size(), 1u);
  EXPECT_EQ(stats->blobs_sent, 5);
  EXPECT_EQ(service_.put_calls, 1);
}

TEST_F(BlobUploadTest, RejectsBadInputBeforeCallingTheServer) {
  const std::string data = "x";
  std::vector<BlobRef> bad_digest = {BlobRef{"sha256:nothex", data}};
  absl::StatusOr<UploadStats> stats = UploadBlobs(*stub_, bad_digest, UploadOptions());
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(stats.status().message(), HasSubstr("'sha256:nothex' is not a blob digest"));

  std::vector<BlobRef> two_sizes = {BlobRef{Sha256Digest("x"), "x"},
                                    BlobRef{Sha256Digest("x"), "xy"}};
  stats = UploadBlobs(*stub_, two_sizes, UploadOptions());
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(stats.status().message(), HasSubstr("different sizes (1 and 2 bytes)"));

  UploadOptions zero_chunk;
  zero_chunk.chunk_bytes = 0;
  stats = UploadBlobs(*stub_, {Ref(data)}, zero_chunk);
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(service_.has_requests.empty());
}

TEST_F(BlobUploadTest, ServerErrorsKeepTheirCodeWithContext) {
  service_.has_error = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "bad digest");
  UploadOptions options;
  options.context = "server 1.2.3.4:5";
  const std::string data = "payload";
  absl::StatusOr<UploadStats> stats = UploadBlobs(*stub_, {Ref(data)}, options);
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(stats.status().message(), "server 1.2.3.4:5: HasBlobs: bad digest");

  service_.has_error = grpc::Status::OK;
  service_.put_error = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "store full");
  options.chunk_bytes = 1;
  stats = UploadBlobs(*stub_, {Ref(data)}, options);
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(stats.status().message(), "server 1.2.3.4:5: PutBlobs: store full");
}

TEST_F(BlobUploadTest, Deadline) {
  service_.has_delay_ms = 500;
  UploadOptions options;
  options.timeout = absl::Milliseconds(50);
  const std::string data = "payload";
  absl::StatusOr<UploadStats> stats = UploadBlobs(*stub_, {Ref(data)}, options);
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(stats.status().message(), HasSubstr("HasBlobs: "));
}

TEST(BlobUploadUnreachableTest, UnavailableNamesTheContext) {
  // Port 1 on loopback: nothing listens there.
  auto stub = v1::GraphOptimizer::NewStub(
      grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials()));
  UploadOptions options;
  options.context = "server 127.0.0.1:1";
  options.timeout = absl::Seconds(5);
  const std::string data = "payload";
  absl::StatusOr<UploadStats> stats =
      UploadBlobs(*stub, {BlobRef{Sha256Digest(data), data}}, options);
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(stats.status().message(), HasSubstr("server 127.0.0.1:1: HasBlobs: "));
}

}  // namespace
}  // namespace graphopt
