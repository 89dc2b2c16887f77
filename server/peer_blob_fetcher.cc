#include "server/peer_blob_fetcher.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/grpc_status.h"

namespace graphopt {
namespace {

// Channels kept at once: one per replica in practice; dropped wholesale past this.
constexpr size_t kMaxChannels = 256;

}  // namespace

PeerBlobFetcher::PeerBlobFetcher(EtcdBlobHolders* holders, PeerFetchOptions options,
                                 std::shared_ptr<spdlog::logger> logger)
    : holders_(holders), options_(std::move(options)), logger_(std::move(logger)) {}

PeerBlobFetcher::~PeerBlobFetcher() = default;

std::shared_ptr<grpc::Channel> PeerBlobFetcher::ChannelTo(const std::string& address) {
  absl::MutexLock lock(&mu_);
  auto it = channels_.find(address);
  if (it != channels_.end()) return it->second;
  if (channels_.size() >= kMaxChannels) channels_.clear();
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options_.max_message_bytes);
  // A replica that comes back is reconnected to within a second.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  std::shared_ptr<grpc::Channel> channel = options_.security.CreateChannel(address, args);
  channels_.emplace(address, channel);
  return channel;
}

bool PeerBlobFetcher::IsDown(const std::string& address) {
  absl::MutexLock lock(&mu_);
  auto it = down_until_.find(address);
  if (it == down_until_.end()) return false;
  if (absl::Now() < it->second) return true;
  down_until_.erase(it);
  return false;
}

void PeerBlobFetcher::MarkDown(const std::string& address) {
  absl::MutexLock lock(&mu_);
  if (down_until_.size() >= kMaxChannels) down_until_.clear();
  down_until_[address] = absl::Now() + options_.down_for;
}

void PeerBlobFetcher::Fetch(BlobStore& store, const std::string& tenant,
                            const std::vector<std::string>& digests) {
  std::vector<std::shared_ptr<Flight>> others;
  int looked_for = 0;
  bool etcd_failed = false;
  for (const std::string& digest : digests) {
    if (etcd_failed || looked_for++ == options_.max_blobs_per_fetch) break;
    const std::string key = absl::StrCat(tenant, "/", digest);
    std::shared_ptr<Flight> flight;
    {
      absl::MutexLock lock(&mu_);
      auto [it, inserted] = flights_.try_emplace(key, nullptr);
      if (!inserted) {
        others.push_back(it->second);
        continue;
      }
      it->second = flight = std::make_shared<Flight>();
    }
    // Another caller may have completed it between our Missing and the flight's start.
    if (!store.Contains(tenant, digest)) {
      absl::Status status = FetchOne(store, tenant, digest, &etcd_failed);
      // No holder is the common case of a first upload: not worth a line at info.
      if (status.code() == absl::StatusCode::kNotFound) {
        logger_->debug("blob fetch: tenant {} blob {}: {}", tenant, digest, status.ToString());
      } else if (!status.ok()) {
        logger_->info("blob fetch: tenant {} blob {} stays missing (the client uploads it): {}",
                      tenant, digest, status.ToString());
      }
    }
    {
      absl::MutexLock lock(&mu_);
      flights_.erase(key);
    }
    flight->done.Notify();
  }
  // Bounded: each flight's owner gives up within its holders' call deadlines.
  for (const std::shared_ptr<Flight>& flight : others) flight->done.WaitForNotification();
}

absl::Status PeerBlobFetcher::FetchOne(BlobStore& store, const std::string& tenant,
                                       const std::string& digest, bool* etcd_failed) {
  {
    absl::MutexLock lock(&mu_);
    if (absl::Now() < etcd_down_until_) {
      *etcd_failed = true;
      return absl::UnavailableError("etcd did not answer moments ago; not asked again yet");
    }
  }
  absl::StatusOr<std::vector<EtcdBlobHolders::Holder>> holders =
      holders_->Holders(tenant, digest);
  if (!holders.ok()) {
    *etcd_failed = true;
    {
      absl::MutexLock lock(&mu_);
      etcd_down_until_ = absl::Now() + options_.etcd_retry_after;
    }
    return absl::Status(holders.status().code(),
                        absl::StrCat("cannot read its holders from etcd (the other blobs of this "
                                     "call are not looked for): ",
                                     holders.status().message()));
  }
  if (holders->empty()) return absl::NotFoundError("no other replica holds it");
  absl::Status last;
  int tried = 0;
  for (const EtcdBlobHolders::Holder& holder : *holders) {
    if (IsDown(holder.address)) {
      last = absl::UnavailableError(absl::StrCat(holder.address, " did not connect lately"));
      continue;
    }
    if (tried++ == options_.max_holders_tried) break;
    const absl::Time start = absl::Now();
    last = FetchFrom(store, holder.address, tenant, digest, holder.size);
    if (last.ok()) {
      ++fetched_;
      const double ms = absl::ToDoubleMilliseconds(absl::Now() - start);
      logger_->info("blob fetch: tenant {} blob {} bytes={} from {} duration_ms={:.1f} "
                    "mib_per_s={:.1f}",
                    tenant, digest, holder.size, holder.address, ms,
                    ms > 0 ? static_cast<double>(holder.size) / (1 << 20) / (ms / 1000) : 0.0);
      return last;
    }
    ++failures_;
    last = absl::Status(last.code(), absl::StrCat("from ", holder.address, ": ", last.message()));
    // The tenant's quota or the store's budget does not depend on the holder.
    if (last.code() == absl::StatusCode::kResourceExhausted) return last;
    logger_->warn("blob fetch: tenant {} blob {}: {}", tenant, digest, last.ToString());
  }
  return last;
}

absl::Status PeerBlobFetcher::FetchFrom(BlobStore& store, const std::string& address,
                                        const std::string& tenant, const std::string& digest,
                                        int64_t expected_size) {
  std::shared_ptr<grpc::Channel> channel = ChannelTo(address);
  if (!channel->WaitForConnected(absl::ToChronoTime(absl::Now() + options_.connect_timeout))) {
    MarkDown(address);
    return absl::UnavailableError(absl::StrCat("not connected within ",
                                               absl::FormatDuration(options_.connect_timeout)));
  }
  std::unique_ptr<v1::Peer::Stub> stub = v1::Peer::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + options_.call_timeout));
  v1::FetchBlobsRequest request;
  request.set_tenant(tenant);
  request.add_digests(digest);
  std::unique_ptr<grpc::ClientReader<v1::BlobChunk>> reader = stub->FetchBlobs(&context, request);
  v1::BlobChunk chunk;
  std::unique_ptr<BlobWriter> writer;
  absl::Status result = absl::NotFoundError("it does not hold the blob any more");
  bool done = false;
  while (!done && reader->Read(&chunk)) {
    if (writer == nullptr) {
      if (chunk.digest() != digest) {
        result = absl::DataLossError(absl::StrCat("sent blob '", chunk.digest().substr(0, 80),
                                                  "' when asked for ", digest));
        break;
      }
      if (chunk.total_size() != expected_size) {
        result = absl::DataLossError(absl::StrCat("sent ", chunk.total_size(),
                                                  " bytes; its record in etcd says ",
                                                  expected_size));
        break;
      }
      absl::StatusOr<std::unique_ptr<BlobWriter>> started =
          store.StartWrite(tenant, digest, chunk.total_size());
      if (!started.ok()) {
        result = started.status();
        break;
      }
      writer = *std::move(started);
    } else if (!chunk.digest().empty()) {
      result = absl::DataLossError(absl::StrCat("started blob '", chunk.digest().substr(0, 80),
                                                "' inside ", digest));
      break;
    }
    if (absl::Status appended = writer->Append(chunk.data()); !appended.ok()) {
      result = absl::DataLossError(appended.message());
      break;
    }
    if (writer->complete()) {
      // Verifies the SHA-256 of what arrived: a peer that lies is refused here.
      result = writer->Commit();
      if (!result.ok()) result = absl::DataLossError(result.message());
      done = true;
    }
  }
  // Only one blob was asked for: anything after it is not read.
  context.TryCancel();
  grpc::Status finished = reader->Finish();
  if (!done && result.code() == absl::StatusCode::kNotFound && !finished.ok()) {
    return FromGrpcStatus(finished);
  }
  if (!done && writer != nullptr && result.code() == absl::StatusCode::kNotFound) {
    return absl::DataLossError(absl::StrCat("the stream ended after ", writer->received(),
                                            " of ", writer->total_size(), " bytes"));
  }
  return result;
}

}  // namespace graphopt
