#include "server/peer_service.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/grpc_status.h"
#include "service/digest.h"
#include "service/tenant.h"

namespace graphopt {

CallAuthenticator PeerCallAuthenticator(std::shared_ptr<Authenticator> auth) {
  return [auth = std::move(auth), allowed = std::vector<std::string>{kServerIdentity}](
             const grpc::CallbackServerContext& context,
             Access access) -> absl::StatusOr<Caller> {
    if (access != Access::kClusterPeer) {
      return absl::PermissionDeniedError("the Peer service serves cluster peers only");
    }
    absl::StatusOr<std::string> peer = auth->ClusterPeer(context, allowed);
    if (!peer.ok()) return peer.status();
    Caller caller;
    caller.tenant = kDefaultTenant;
    caller.credential = *peer == kInsecurePeer ? *peer : absl::StrCat("cert ", *peer);
    return caller;
  };
}

// One FetchBlobs stream: blobs are looked up one at a time (each pinned while it is sent) and
// written one chunk at a time, the next chunk made when the previous one left.
class PeerService::Stream final : public grpc::ServerWriteReactor<v1::BlobChunk> {
 public:
  Stream(PeerService* service, grpc::CallbackServerContext* context,
         const v1::FetchBlobsRequest* request)
      : service_(service),
        live_calls_(service->env_->live_calls()),
        context_(context),
        request_(request),
        start_(absl::Now()) {
    tracked_ = live_calls_->Track(&state_.stop());
  }

  void Start() {
    if (!tracked_) return Complete(absl::UnavailableError("the server is shutting down"));
    absl::Duration retry_after = absl::ZeroDuration();
    absl::Status status =
        AdmitCall(*service_->env_, context_, service_->policy_, state_, admission_, &retry_after);
    if (status.ok()) status = CheckRequest();
    if (status.ok()) {
      if (service_->streams_.fetch_add(1) >= service_->limits_.max_streams) {
        service_->streams_.fetch_sub(1);
        AddRetryHint(context_, absl::Seconds(1));
        status = absl::ResourceExhaustedError(
            absl::StrCat("server busy: ", service_->limits_.max_streams,
                         " FetchBlobs streams are open, the most this replica serves at once"));
      } else {
        counted_ = true;
      }
    }
    if (!status.ok()) return Complete(status);
    Next();
  }

  void OnWriteDone(bool ok) override {
    if (!ok) return Complete(absl::CancelledError("the peer went away"));
    Next();
  }

  void OnCancel() override { state_.stop().Cancel("the peer cancelled the fetch"); }

  // May run after the service is gone (see UnaryCall::OnDone).
  void OnDone() override {
    live_calls_->Untrack(&state_.stop());
    delete this;
  }

 private:
  absl::Status CheckRequest() const {
    if (absl::Status s = ValidateTenantName(request_->tenant()); !s.ok()) return s;
    if (request_->digests_size() > service_->limits_.max_digests_per_call) {
      return absl::InvalidArgumentError(
          absl::StrCat("FetchBlobs names ", request_->digests_size(), " digests; at most ",
                       service_->limits_.max_digests_per_call, " per call"));
    }
    for (int i = 0; i < request_->digests_size(); ++i) {
      if (!IsBlobDigest(request_->digests(i))) {
        return absl::InvalidArgumentError(absl::StrCat(
            "digests[", i, "]: '", absl::CHexEscape(request_->digests(i).substr(0, 100)),
            "' is not a blob digest (expected sha256:<64 lowercase hex digits>)"));
      }
    }
    return absl::OkStatus();
  }

  // Writes the next chunk, or finishes.
  void Next() {
    if (absl::Status stopped = state_.stop().Check("FetchBlobs"); !stopped.ok()) {
      return Complete(stopped);
    }
    // Between blobs: find the next one held (the ones not held are left out).
    while (blob_ == nullptr) {
      if (next_digest_ == request_->digests_size()) return Complete(absl::OkStatus());
      const std::string& digest = request_->digests(next_digest_++);
      blob_ = service_->blobs_->Lookup(request_->tenant(), digest);
      offset_ = 0;
      first_ = true;
      digest_ = digest;
    }
    chunk_.Clear();
    if (first_) {
      chunk_.set_digest(digest_);
      chunk_.set_total_size(static_cast<int64_t>(blob_->size()));
      first_ = false;
    }
    const size_t n = std::min<size_t>(blob_->size() - offset_,
                                      static_cast<size_t>(service_->limits_.chunk_bytes));
    chunk_.set_data(blob_->data() + offset_, n);
    offset_ += n;
    bytes_ += static_cast<int64_t>(n);
    if (offset_ == blob_->size()) {
      blob_.reset();
      ++blobs_sent_;
      service_->blobs_served_.fetch_add(1);
    }
    StartWrite(&chunk_);
  }

  void Complete(const absl::Status& status) {
    blob_.reset();
    admission_.Release();
    if (counted_) service_->streams_.fetch_sub(1);
    counted_ = false;
    const double ms = absl::ToDoubleMilliseconds(absl::Now() - start_);
    spdlog::logger& logger = service_->env_->logger();
    if (status.ok()) {
      logger.info("FetchBlobs peer={} caller={} tenant={} asked={} sent={} bytes={} "
                  "duration_ms={:.1f} status=OK",
                  context_->peer(), state_.caller().credential, request_->tenant(),
                  request_->digests_size(), blobs_sent_, bytes_, ms);
    } else {
      logger.warn("FetchBlobs peer={} caller={} tenant={} asked={} sent={} bytes={} "
                  "duration_ms={:.1f} status={}",
                  context_->peer(), state_.caller().credential, request_->tenant(),
                  request_->digests_size(), blobs_sent_, bytes_, ms, StatusText(status));
    }
    AddAnswerTrailers(*service_->env_, context_, status);
    Finish(ToGrpcStatus(status));
  }

  PeerService* const service_;
  const std::shared_ptr<RpcEnvironment::LiveCalls> live_calls_;
  grpc::CallbackServerContext* const context_;
  const v1::FetchBlobsRequest* const request_;
  const absl::Time start_;
  CallState state_;
  TenantLimiter::Admission admission_;
  bool tracked_ = false;
  bool counted_ = false;
  int next_digest_ = 0;
  // The blob being sent (pinned against eviction); null between blobs.
  std::shared_ptr<const std::string> blob_;
  std::string digest_;
  size_t offset_ = 0;
  bool first_ = false;
  v1::BlobChunk chunk_;
  int blobs_sent_ = 0;
  int64_t bytes_ = 0;
};

PeerService::PeerService(BlobStore* blobs, RpcEnvironment* env, PeerServiceLimits limits)
    : blobs_(blobs), env_(env), limits_(limits) {
  policy_ = {"FetchBlobs", Access::kClusterPeer, nullptr, false};
}

grpc::ServerWriteReactor<v1::BlobChunk>* PeerService::FetchBlobs(
    grpc::CallbackServerContext* context, const v1::FetchBlobsRequest* request) {
  auto* stream = new Stream(this, context, request);
  stream->Start();
  return stream;
}

}  // namespace graphopt
