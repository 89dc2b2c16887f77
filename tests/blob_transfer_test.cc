// Content-addressed weight upload end to end: a real GraphOptimizer server on a loopback port
// with a BlobStore, reached through a real channel by client/blob_upload. Covers a 150 MiB blob
// in 1 MiB chunks (throughput and the server's extra memory are measured and printed), HasBlobs
// before and after, re-uploads that send nothing, malformed chunk sequences (the server must
// store nothing partial and keep serving), the store's budget and concurrent uploads.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "client/blob_upload.h"
#include "gmock/gmock.h"
#include "graph/op_registry.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "ops/builtin_ops.h"
#include "passes/builtin_passes.h"
#include "passes/pass.h"
#include "proto/optimizer.grpc.pb.h"
#include "server/optimizer_service.h"
#include "service/blob_store.h"
#include "service/digest.h"
#include "service/optimizer.h"
#include "spdlog/logger.h"
#include "spdlog/sinks/ostream_sink.h"

namespace graphopt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr int64_t kMiB = int64_t{1} << 20;

// Sanitizer allocators keep freed memory in quarantine, which RSS then counts.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kRssIsMeaningful = false;
#else
constexpr bool kRssIsMeaningful = true;
#endif
constexpr int kMaxMessageBytes = 64 * 1024 * 1024;

// Deterministic incompressible bytes (xorshift64*), written 8 at a time.
std::string RandomBytes(int64_t size, uint64_t seed) {
  std::string bytes(static_cast<size_t>(size), '\0');
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    const uint64_t word = x * 0x2545F4914F6CDD1Dull;
    std::memcpy(&bytes[i], &word, 8);
  }
  for (; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 131);
  return bytes;
}

// A field of /proc/self/status in KiB ("VmRSS", "VmHWM"); -1 when unreadable.
int64_t ProcStatusKiB(absl::string_view field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const std::string prefix = absl::StrCat(field, ":");
  while (std::getline(status, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    std::istringstream rest(line.substr(prefix.size()));
    int64_t kib = -1;
    rest >> kib;
    return kib;
  }
  return -1;
}

// Resets VmHWM to the current RSS (Linux: "5" to clear_refs). False when not supported.
bool ResetPeakRss() {
  std::ofstream clear_refs("/proc/self/clear_refs");
  clear_refs << "5";
  clear_refs.flush();
  return clear_refs.good();
}

v1::BlobChunk Chunk(absl::string_view digest, int64_t total_size, absl::string_view data) {
  v1::BlobChunk chunk;
  chunk.set_digest(std::string(digest));
  chunk.set_total_size(total_size);
  chunk.set_data(std::string(data));
  return chunk;
}

v1::BlobChunk Data(absl::string_view data) { return Chunk("", 0, data); }

class BlobTransferTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinOps(&ops_).ok());
    ASSERT_TRUE(RegisterBuiltinPasses(&passes_).ok());
    optimizer_ = std::make_unique<Optimizer>(&ops_, &passes_);
    logger_ = std::make_shared<spdlog::logger>(
        "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log_));
  }

  void StartServer(int64_t budget_bytes, BlobRpcLimits limits = BlobRpcLimits()) {
    store_ = std::make_unique<BlobStore>(budget_bytes);
    service_ = std::make_unique<OptimizerService>(optimizer_.get(), logger_, store_.get(),
                                                  limits);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(service_.get());
    builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
    builder.SetMaxSendMessageSize(kMaxMessageBytes);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(port_, 0);
    address_ = absl::StrCat("127.0.0.1:", port_);
    grpc::ChannelArguments arguments;
    arguments.SetMaxReceiveMessageSize(kMaxMessageBytes);
    arguments.SetMaxSendMessageSize(kMaxMessageBytes);
    stub_ = v1::GraphOptimizer::NewStub(
        grpc::CreateCustomChannel(address_, grpc::InsecureChannelCredentials(), arguments));
  }

  void TearDown() override { StopServer(); }

  // Stops the server and drops it, its service and its store (in that order).
  void StopServer() {
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
    stub_.reset();
    server_.reset();
    service_.reset();
    store_.reset();
  }

  UploadOptions Options() const {
    UploadOptions options;
    options.context = absl::StrCat("server ", address_);
    options.timeout = absl::Seconds(120);
    return options;
  }

  absl::StatusOr<UploadStats> Upload(const std::vector<BlobRef>& blobs) {
    return UploadBlobs(*stub_, blobs, Options());
  }

  grpc::Status HasBlobs(const std::vector<std::string>& digests, v1::HasBlobsResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::HasBlobsRequest request;
    for (const std::string& digest : digests) request.add_digests(digest);
    return stub_->HasBlobs(&context, request, response);
  }

  std::vector<std::string> Missing(const std::vector<std::string>& digests) {
    v1::HasBlobsResponse response;
    grpc::Status status = HasBlobs(digests, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return {response.missing().begin(), response.missing().end()};
  }

  // Sends `chunks` as one PutBlobs stream exactly as given (the server may end the call
  // early; later writes then fail and are ignored).
  grpc::Status PutRaw(const std::vector<v1::BlobChunk>& chunks,
                      v1::PutBlobsResponse* response = nullptr) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::PutBlobsResponse ignored;
    std::unique_ptr<grpc::ClientWriter<v1::BlobChunk>> writer =
        stub_->PutBlobs(&context, response != nullptr ? response : &ignored);
    for (const v1::BlobChunk& chunk : chunks) {
      if (!writer->Write(chunk)) break;
    }
    writer->WritesDone();
    return writer->Finish();
  }

  // PutRaw fails with INVALID_ARGUMENT mentioning each of `parts`; nothing is left reserved.
  void ExpectInvalid(const std::vector<v1::BlobChunk>& chunks,
                     const std::vector<std::string>& parts) {
    grpc::Status status = PutRaw(chunks);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
    for (const std::string& part : parts) {
      EXPECT_THAT(status.error_message(), HasSubstr(part));
    }
    EXPECT_EQ(store_->stats().bytes_reserved, 0);
  }

  // The server still answers: ListPasses and a small upload.
  void ExpectServerStillServes() {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::ListPassesResponse passes;
    grpc::Status status = stub_->ListPasses(&context, v1::ListPassesRequest(), &passes);
    EXPECT_TRUE(status.ok()) << status.error_message();
    const std::string data = absl::StrCat("still serving ", ++probe_);
    absl::StatusOr<UploadStats> stats = Upload({BlobRef{Sha256Digest(data), data}});
    ASSERT_TRUE(stats.ok()) << stats.status();
    EXPECT_EQ(stats->blobs_sent, 1);
  }

  OpRegistry ops_;
  PassRegistry passes_;
  std::unique_ptr<Optimizer> optimizer_;
  std::ostringstream log_;
  std::shared_ptr<spdlog::logger> logger_;
  std::unique_ptr<BlobStore> store_;
  std::unique_ptr<OptimizerService> service_;
  int port_ = 0;
  std::string address_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::GraphOptimizer::Stub> stub_;
  int probe_ = 0;
};

TEST_F(BlobTransferTest, Uploads150MiBOnceAndHoldsItOnce) {
  StartServer(512 * kMiB);
  constexpr int64_t kSize = 150 * kMiB;
  const std::string data = RandomBytes(kSize, 1);
  auto hash_start = std::chrono::steady_clock::now();
  const std::string digest = Sha256Digest(data);
  const double hash_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - hash_start).count();

  v1::HasBlobsResponse before;
  ASSERT_TRUE(HasBlobs({digest}, &before).ok());
  EXPECT_THAT(before.missing(), ElementsAre(digest));
  EXPECT_EQ(before.free_bytes(), 512 * kMiB);

  // Peak memory of the whole process (client data already allocated) during the upload.
  const bool peak_reset = ResetPeakRss();
  const int64_t rss_before_kib = ProcStatusKiB("VmRSS");
  int64_t progress_calls = 0, last_sent = -1, last_total = -1;
  UploadOptions options = Options();
  options.progress = [&](int64_t sent, int64_t total) {
    ++progress_calls;
    last_sent = sent;
    last_total = total;
  };
  absl::StatusOr<UploadStats> stats = UploadBlobs(*stub_, {BlobRef{digest, data}}, options);
  const int64_t hwm_after_kib = ProcStatusKiB("VmHWM");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->blobs_total, 1);
  EXPECT_EQ(stats->blobs_sent, 1);
  EXPECT_EQ(stats->bytes_total, kSize);
  EXPECT_EQ(stats->bytes_sent, kSize);
  EXPECT_EQ(progress_calls, 151);  // once before, then per 1 MiB chunk
  EXPECT_EQ(last_sent, kSize);
  EXPECT_EQ(last_total, kSize);

  const BlobStoreStats store_stats = store_->stats();
  EXPECT_EQ(store_stats.bytes_held, kSize);
  EXPECT_EQ(store_stats.blob_count, 1);
  EXPECT_EQ(store_stats.bytes_reserved, 0);
  EXPECT_EQ(store_stats.peak_bytes, kSize);

  const double mib_per_s = static_cast<double>(kSize) / kMiB / stats->seconds;
  std::printf("[ measured ] SHA-256 alone: %.0f MiB/s\n", kSize / kMiB / hash_s);
  std::printf("[ measured ] upload of 150 MiB in 1 MiB chunks: %.2f s, %.0f MiB/s "
              "(HasBlobs + PutBlobs, server hashing included)\n",
              stats->seconds, mib_per_s);
  if (peak_reset && rss_before_kib > 0 && hwm_after_kib > 0) {
    const double extra_mib = static_cast<double>(hwm_after_kib - rss_before_kib) / 1024;
    std::printf("[ measured ] peak extra process memory during the upload: %.1f MiB "
                "(blob 150 MiB; store peak %.1f MiB)\n",
                extra_mib, static_cast<double>(store_stats.peak_bytes) / kMiB);
    // Held once: the blob plus transport buffers, never a second copy.
    if (kRssIsMeaningful) {
      EXPECT_LT(extra_mib, 150 + 50);
    }
  } else {
    std::printf("[ measured ] peak memory not measurable here (no clear_refs)\n");
  }

  EXPECT_THAT(Missing({digest}), IsEmpty());
  std::shared_ptr<const std::string> stored = store_->Lookup(kDefaultTenant, digest);
  ASSERT_NE(stored, nullptr);
  ASSERT_EQ(stored->size(), data.size());
  EXPECT_EQ(std::memcmp(stored->data(), data.data(), data.size()), 0);
  stored.reset();
  EXPECT_THAT(log_.str(), HasSubstr(absl::StrCat("blob=", digest, " bytes=", kSize, " stored")));

  // Sent once: a second upload asks and sends nothing.
  absl::StatusOr<UploadStats> again = Upload({BlobRef{digest, data}, BlobRef{digest, data}});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->blobs_total, 1);
  EXPECT_EQ(again->blobs_sent, 0);
  EXPECT_EQ(again->bytes_sent, 0);
  EXPECT_EQ(again->bytes_total, kSize);
  std::printf("[ measured ] re-upload of the same blob: %.4f s, 0 bytes sent\n", again->seconds);
  EXPECT_EQ(store_->stats().commits, 1);
}

TEST_F(BlobTransferTest, ThroughputByChunkSize) {
  StartServer(256 * kMiB);
  constexpr int64_t kSize = 64 * kMiB;
  const std::string data = RandomBytes(kSize, 8);
  const std::string digest = Sha256Digest(data);
  for (int64_t chunk : {256 * 1024, 1024 * 1024, 4 * 1024 * 1024}) {
    UploadOptions options = Options();
    options.chunk_bytes = chunk;
    absl::StatusOr<UploadStats> stats = UploadBlobs(*stub_, {BlobRef{digest, data}}, options);
    ASSERT_TRUE(stats.ok()) << stats.status();
    EXPECT_EQ(stats->bytes_sent, kSize);
    std::printf("[ measured ] 64 MiB in %4lld KiB chunks: %.0f MiB/s\n",
                static_cast<long long>(chunk / 1024), kSize / kMiB / stats->seconds);
    // A fresh server and store, so that the next round sends the blob again.
    StopServer();
    StartServer(256 * kMiB);
  }
}

TEST_F(BlobTransferTest, SeveralBlobsOddChunkSizes) {
  StartServer(64 * kMiB);
  const std::string a = RandomBytes(kMiB + 1, 2), b, c = "abc";
  const std::string d = RandomBytes(3 * kMiB - 7, 3);
  std::vector<BlobRef> blobs = {{Sha256Digest(a), a},
                                {Sha256Digest(b), b},
                                {Sha256Digest(c), c},
                                {Sha256Digest(d), d}};
  UploadOptions options = Options();
  options.chunk_bytes = 65536 + 3;
  absl::StatusOr<UploadStats> stats = UploadBlobs(*stub_, blobs, options);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->blobs_sent, 4);
  for (const BlobRef& blob : blobs) {
    std::shared_ptr<const std::string> stored = store_->Lookup(kDefaultTenant, blob.digest);
    ASSERT_NE(stored, nullptr) << blob.digest;
    EXPECT_TRUE(*stored == blob.data) << blob.digest;
  }
  EXPECT_EQ(store_->stats().bytes_held, static_cast<int64_t>(a.size() + c.size() + d.size()));
}

TEST_F(BlobTransferTest, MalformedSequencesAreRejectedAndNothingPartialIsStored) {
  StartServer(64 * kMiB);
  const std::string hello = "hello", world = "world";
  const std::string h = Sha256Digest(hello), w = Sha256Digest(world);

  // Data that hashes to another digest.
  ExpectInvalid({Chunk(w, 5, "hel"), Data("lo")},
                {absl::StrCat("blob ", w, ": received data hashes to ", h)});
  // The stream ends inside a blob.
  ExpectInvalid({Chunk(h, 5, "hel")},
                {absl::StrCat("blob ", h, ": the stream ended after 3 of 5 bytes")});
  ExpectInvalid({Chunk(h, 5, "")}, {"ended after 0 of 5 bytes"});
  // Data beyond total_size, in the first chunk and in a later one.
  ExpectInvalid({Chunk(h, 5, "hello!")},
                {h, "total_size of 5 bytes", "bytes 0..6", "chunk 0"});
  ExpectInvalid({Chunk(h, 5, "hel"), Data("lo!")}, {h, "bytes 3..6", "chunk 1"});
  // A zero-size blob carrying data.
  ExpectInvalid({Chunk(Sha256Digest(""), 0, "x")}, {"total_size of 0 bytes"});
  // A new blob before the previous one is complete.
  ExpectInvalid({Chunk(h, 5, "hel"), Chunk(w, 5, "world")},
                {absl::StrCat("blob ", h, ": blob '", w, "' started at byte 3 of 5 (chunk 1)")});
  // A continuation chunk changing total_size.
  ExpectInvalid({Chunk(h, 5, "hel"), Chunk(h, 6, "lo")},
                {"chunk 1 at byte 3 says total_size 6, the blob's first chunk said 5"});
  // A first chunk without digest, a malformed digest, a negative size.
  ExpectInvalid({Data("hello")}, {"chunk 0: a blob's first chunk must carry its digest"});
  ExpectInvalid({Chunk("sha256:1234", 5, "hello")},
                {"chunk 0: 'sha256:1234' is not a blob digest"});
  ExpectInvalid({Chunk(h, -1, "")}, {absl::StrCat("blob ", h, ": negative total_size -1")});

  EXPECT_THAT(Missing({h, w}), ElementsAre(h, w));
  EXPECT_EQ(store_->stats().blob_count, 0);
  ExpectServerStillServes();

  // A good blob, then data after it without a new digest: the good one stays stored.
  v1::PutBlobsResponse response;
  grpc::Status status = PutRaw({Chunk(h, 5, "hello"), Data("more")}, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr(absl::StrCat("chunk 1: a blob's first chunk must carry its digest and "
                                     "total_size (blob ",
                                     h, " was already complete)")));
  EXPECT_THAT(Missing({h, w}), ElementsAre(w));

  // An upload of a blob already held is accepted; its data is discarded, not stored again.
  const int64_t commits = store_->stats().commits;
  status = PutRaw({Chunk(h, 5, "he"), Data("llo"), Chunk(w, 5, "world")}, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_THAT(response.stored(), ElementsAre(h, w));
  EXPECT_EQ(response.bytes_received(), 10);
  EXPECT_EQ(store_->stats().commits, commits + 1);
  EXPECT_THAT(log_.str(), HasSubstr(absl::StrCat("blob=", h, " bytes=5 already_present")));
  ExpectServerStillServes();
}

TEST_F(BlobTransferTest, HasBlobsChecksDigestsAndItsLimit) {
  BlobRpcLimits limits;
  limits.max_digests_per_request = 3;
  StartServer(kMiB, limits);
  const std::string good = Sha256Digest("x");
  v1::HasBlobsResponse response;
  grpc::Status status = HasBlobs({good, "sha256:XYZ"}, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("digests[1]: 'sha256:XYZ' is not a blob digest"));
  status = HasBlobs({good, good, good, good}, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("4 digests; at most 3 per request"));
  // Duplicates are reported once.
  EXPECT_THAT(Missing({good, good}), ElementsAre(good));

  // The client splits its questions to fit the limit.
  std::vector<std::string> data;
  for (int i = 0; i < 7; ++i) data.push_back(absl::StrCat("blob ", i));
  std::vector<BlobRef> blobs;
  for (const std::string& d : data) blobs.push_back({Sha256Digest(d), d});
  UploadOptions options = Options();
  options.max_digests_per_request = 3;
  absl::StatusOr<UploadStats> stats = UploadBlobs(*stub_, blobs, options);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->blobs_sent, 7);
}

TEST_F(BlobTransferTest, StoreBudget) {
  StartServer(16 * kMiB);
  const std::string big = RandomBytes(17 * kMiB, 4);
  absl::StatusOr<UploadStats> stats = Upload({{Sha256Digest(big), big}});
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(stats.status().message(),
              HasSubstr(absl::StrCat("server ", address_, ": PutBlobs: blob ", Sha256Digest(big),
                                     " of 17825792 bytes (17.0 MiB) is larger than the blob "
                                     "store's whole budget of 16777216 bytes")));

  const std::string a = RandomBytes(10 * kMiB, 5), b = RandomBytes(10 * kMiB, 6);
  ASSERT_TRUE(Upload({{Sha256Digest(a), a}}).ok());
  {
    // An Optimize using blob a (a Lookup result) pins it: b cannot fit beside it.
    std::shared_ptr<const std::string> in_use = store_->Lookup(kDefaultTenant, Sha256Digest(a));
    v1::HasBlobsResponse response;
    ASSERT_TRUE(HasBlobs({Sha256Digest(b)}, &response).ok());
    EXPECT_EQ(response.free_bytes(), 6 * kMiB);
    stats = Upload({{Sha256Digest(b), b}});
    EXPECT_EQ(stats.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(stats.status().message(), HasSubstr(absl::StrCat("blob ", Sha256Digest(b))));
    EXPECT_THAT(stats.status().message(), HasSubstr("does not fit in the server's blob store"));
    EXPECT_THAT(stats.status().message(), HasSubstr("10485760 bytes (10.0 MiB) held by blobs in use"));
  }
  // Once a is not in use any more it is evicted to make room.
  stats = Upload({{Sha256Digest(b), b}});
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_THAT(Missing({Sha256Digest(a), Sha256Digest(b)}), ElementsAre(Sha256Digest(a)));
  EXPECT_EQ(store_->stats().evictions, 1);
  EXPECT_EQ(store_->stats().bytes_reserved, 0);
  ExpectServerStillServes();
}

TEST_F(BlobTransferTest, ConcurrentUploadsOfTheSameBlob) {
  StartServer(128 * kMiB);
  const std::string data = RandomBytes(8 * kMiB, 7);
  const std::string digest = Sha256Digest(data);
  std::vector<absl::Status> results(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      absl::StatusOr<UploadStats> stats = UploadBlobs(*stub_, {BlobRef{digest, data}}, Options());
      results[t] = stats.status();
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const absl::Status& status : results) EXPECT_TRUE(status.ok()) << status;
  const BlobStoreStats stats = store_->stats();
  EXPECT_EQ(stats.blob_count, 1);
  EXPECT_EQ(stats.commits, 1);
  EXPECT_EQ(stats.bytes_held, 8 * kMiB);
  EXPECT_EQ(stats.bytes_reserved, 0);
}

}  // namespace
}  // namespace graphopt
