#include "server/optimizer_service.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "server/grpc_status.h"
#include "service/blob_store.h"
#include "service/digest.h"

namespace graphopt {
namespace {

double MiBPerSecond(int64_t bytes, double milliseconds) {
  return milliseconds > 0 ? static_cast<double>(bytes) / (1 << 20) / (milliseconds / 1000) : 0;
}

// A request's digest for a message: quoted, escaped and cut to a sensible length.
std::string QuotedDigest(absl::string_view digest) {
  constexpr size_t kMaxShown = 100;
  return absl::StrCat("'", absl::CHexEscape(digest.substr(0, kMaxShown)),
                      digest.size() > kMaxShown ? "...'" : "'");
}

// " cache=hit" / " cache=miss" for the call's log line; nothing when the cache was not used.
const char* CacheLogField(v1::CacheResult cache) {
  switch (cache) {
    case v1::CACHE_RESULT_HIT:
      return " cache=hit";
    case v1::CACHE_RESULT_MISS:
      return " cache=miss";
    default:
      return "";
  }
}

constexpr char kNoBlobStore[] = "this server keeps no blob store (--blob_store_mb=0)";

// The state machine of one PutBlobs stream, without gRPC: chunks in, blobs committed into the
// tenant's namespace as they complete.
class BlobStreamReceiver {
 public:
  BlobStreamReceiver(BlobStore* blobs, std::string tenant, const BlobRpcLimits& limits,
                     spdlog::logger& logger, std::string peer, v1::PutBlobsResponse* response)
      : blobs_(blobs),
        tenant_(std::move(tenant)),
        limits_(limits),
        logger_(logger),
        peer_(std::move(peer)),
        response_(response) {}

  absl::Status Consume(const v1::BlobChunk& chunk) {
    ++chunk_index_;
    if (writer_ == nullptr) {
      if (chunk.digest().empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "chunk ", chunk_index_, ": a blob's first chunk must carry its digest and total_size",
            response_->stored_size() > 0
                ? absl::StrCat(" (blob ", response_->stored(response_->stored_size() - 1),
                               " was already complete)")
                : ""));
      }
      if (!IsBlobDigest(chunk.digest())) {
        return absl::InvalidArgumentError(
            absl::StrCat("chunk ", chunk_index_, ": ", QuotedDigest(chunk.digest()),
                         " is not a blob digest (expected sha256:<64 lowercase hex digits>)"));
      }
      if (chunk.total_size() < 0) {
        return absl::InvalidArgumentError(absl::StrCat("blob ", chunk.digest(),
                                                       ": negative total_size ",
                                                       chunk.total_size()));
      }
      if (blobs_started_ == limits_.max_blobs_per_upload) {
        return absl::InvalidArgumentError(
            absl::StrCat("blob ", chunk.digest(), ": more than ", limits_.max_blobs_per_upload,
                         " blobs in one PutBlobs call"));
      }
      absl::StatusOr<std::unique_ptr<BlobWriter>> started =
          blobs_->StartWrite(tenant_, chunk.digest(), chunk.total_size());
      if (!started.ok()) return started.status();
      writer_ = *std::move(started);
      blob_start_ = absl::Now();
      ++blobs_started_;
    } else {
      if (!chunk.digest().empty() && chunk.digest() != writer_->digest()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "blob ", writer_->digest(), ": blob ", QuotedDigest(chunk.digest()),
            " started at byte ", writer_->received(), " of ", writer_->total_size(), " (chunk ",
            chunk_index_, "); a blob must be complete before the next one starts"));
      }
      if (chunk.total_size() != 0 && chunk.total_size() != writer_->total_size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "blob ", writer_->digest(), ": chunk ", chunk_index_, " at byte ",
            writer_->received(), " says total_size ", chunk.total_size(),
            ", the blob's first chunk said ", writer_->total_size()));
      }
    }
    if (absl::Status status = writer_->Append(chunk.data()); !status.ok()) {
      return absl::Status(status.code(),
                          absl::StrCat(status.message(), " in chunk ", chunk_index_));
    }
    response_->set_bytes_received(response_->bytes_received() +
                                  static_cast<int64_t>(chunk.data().size()));
    if (!writer_->complete()) return absl::OkStatus();
    const bool skipped = writer_->skipping();
    if (absl::Status status = writer_->Commit(); !status.ok()) return status;
    const double ms = absl::ToDoubleMilliseconds(absl::Now() - blob_start_);
    logger_.info("PutBlobs peer={} tenant={} blob={} bytes={} {} duration_ms={:.1f} "
                 "mib_per_s={:.1f}",
                 peer_, tenant_, writer_->digest(), writer_->total_size(),
                 skipped ? "already_present" : "stored", ms,
                 MiBPerSecond(writer_->total_size(), ms));
    response_->add_stored(writer_->digest());
    writer_.reset();
    return absl::OkStatus();
  }

  // The stream ended: by the client (`cancelled` false) or not.
  absl::Status End(bool cancelled) {
    if (cancelled) {
      return absl::CancelledError(
          writer_ == nullptr
              ? "the client cancelled the upload"
              : absl::StrCat("blob ", writer_->digest(),
                             ": the client cancelled the upload after ", writer_->received(),
                             " of ", writer_->total_size(), " bytes"));
    }
    if (writer_ != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("blob ", writer_->digest(),
                                                     ": the stream ended after ",
                                                     writer_->received(), " of ",
                                                     writer_->total_size(), " bytes"));
    }
    return absl::OkStatus();
  }

  // Drops an incomplete blob (its reservation goes back to the store).
  void Abandon() { writer_.reset(); }

 private:
  BlobStore* blobs_;
  const std::string tenant_;
  const BlobRpcLimits& limits_;
  spdlog::logger& logger_;
  const std::string peer_;
  v1::PutBlobsResponse* response_;
  // The blob being received; null between blobs.
  std::unique_ptr<BlobWriter> writer_;
  absl::Time blob_start_;
  int blobs_started_ = 0;
  int64_t chunk_index_ = -1;
};

}  // namespace

// One PutBlobs stream: admitted like a unary call (ServeUnary's steps), then each chunk is
// consumed on the upload queue before the next is read, so a stream has at most one chunk in
// memory and gRPC's threads never hash.
class OptimizerService::BlobUpload final : public grpc::ServerReadReactor<grpc::ByteBuffer> {
 public:
  BlobUpload(OptimizerService* service, grpc::CallbackServerContext* context,
             grpc::ByteBuffer* out)
      : service_(service),
        live_calls_(service->env_->live_calls()),
        context_(context),
        out_(out),
        response_(&answer_),
        start_(absl::Now()) {
    tracked_ = live_calls_->Track(&state_.stop());
  }

  void Start() {
    if (!tracked_) return Complete(absl::UnavailableError("the server is shutting down"));
    absl::Duration retry_after = absl::ZeroDuration();
    absl::Status status = AdmitCall(*service_->env_, context_, service_->put_blobs_policy_,
                                    state_, admission_, &retry_after);
    if (status.ok() && service_->blobs_ == nullptr) status = absl::UnimplementedError(kNoBlobStore);
    if (status.ok()) {
      if (service_->uploads_.fetch_add(1) >= service_->blob_limits_.max_uploads) {
        service_->uploads_.fetch_sub(1);
        retry_after = absl::Seconds(1);
        status = absl::ResourceExhaustedError(absl::StrCat(
            "server busy: ", service_->blob_limits_.max_uploads,
            " PutBlobs uploads are in progress, the most this server takes at once"));
      } else {
        counted_ = true;
      }
    }
    if (!status.ok()) {
      if (status.code() == absl::StatusCode::kResourceExhausted) AddRetryHint(context_, retry_after);
      return Complete(status);
    }
    receiver_ = std::make_unique<BlobStreamReceiver>(service_->blobs_, state_.tenant(),
                                                     service_->blob_limits_,
                                                     service_->env_->logger(), context_->peer(),
                                                     response_);
    StartRead(&chunk_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      // The client finished sending, or the call is over (cancelled, deadline).
      const bool stopped = state_.stop().ShouldStop();
      absl::Status status = stopped ? state_.stop().Check("PutBlobs") : receiver_->End(false);
      if (stopped && status.code() == absl::StatusCode::kCancelled) status = receiver_->End(true);
      return Complete(status);
    }
    if (!service_->queues_.upload->TrySubmit([this] { Consume(); })) {
      // Uploads are counted (max_uploads), each with at most one chunk queued: the queue is
      // sized for that, so this is a shutdown.
      Complete(absl::UnavailableError("the server is shutting down"));
    }
  }

  void OnCancel() override { state_.stop().Cancel("the client cancelled the upload"); }

  // May run after the service is gone (see UnaryCall::OnDone).
  void OnDone() override {
    live_calls_->Untrack(&state_.stop());
    delete this;
  }

 private:
  void Consume() {
    absl::Status status = state_.stop().Check("PutBlobs");
    v1::BlobChunk chunk;
    if (status.ok() &&
        !grpc::SerializationTraits<v1::BlobChunk>::Deserialize(&chunk_, &chunk).ok()) {
      status = UnparsableRequest(v1::BlobChunk::descriptor()->full_name());
    }
    if (status.ok()) {
      status = RunGuarded("PutBlobs", [this, &chunk] { return receiver_->Consume(chunk); });
    }
    chunk_.Clear();
    if (!status.ok()) return Complete(status);
    StartRead(&chunk_);
  }

  void Complete(const absl::Status& status) {
    if (receiver_ != nullptr) receiver_->Abandon();
    admission_.Release();
    if (counted_) service_->uploads_.fetch_sub(1);
    counted_ = false;
    const absl::Duration elapsed = absl::Now() - start_;
    const double ms = absl::ToDoubleMilliseconds(elapsed);
    RecordCall(*service_->env_, "PutBlobs", state_.tenant(), status, elapsed);
    spdlog::logger& logger = service_->env_->logger();
    if (status.ok()) {
      logger.info("PutBlobs peer={} tenant={} blobs={} bytes={} duration_ms={:.1f} "
                  "mib_per_s={:.1f} status=OK",
                  context_->peer(), state_.tenant(), response_->stored_size(),
                  response_->bytes_received(), ms, MiBPerSecond(response_->bytes_received(), ms));
    } else {
      logger.warn("PutBlobs peer={} tenant={} blobs_stored={} bytes={} duration_ms={:.1f} "
                  "status={}",
                  context_->peer(), state_.tenant(), response_->stored_size(),
                  response_->bytes_received(), ms, StatusText(status));
    }
    if (status.ok()) {
      bool own_buffer = false;
      grpc::SerializationTraits<v1::PutBlobsResponse>::Serialize(answer_, out_, &own_buffer);
    }
    AddAnswerTrailers(*service_->env_, context_, status);
    Finish(ToGrpcStatus(status));
  }

  OptimizerService* const service_;
  const std::shared_ptr<RpcEnvironment::LiveCalls> live_calls_;
  grpc::CallbackServerContext* const context_;
  grpc::ByteBuffer* const out_;
  v1::PutBlobsResponse answer_;
  v1::PutBlobsResponse* const response_;
  const absl::Time start_;
  CallState state_;
  TenantLimiter::Admission admission_;
  std::unique_ptr<BlobStreamReceiver> receiver_;
  grpc::ByteBuffer chunk_;
  bool tracked_ = false;
  bool counted_ = false;
};

OptimizerService::OptimizerService(const Optimizer* optimizer, RpcEnvironment* env,
                                   BlobStore* blobs, BlobRpcLimits blob_limits,
                                   OptimizerQueues queues)
    : optimizer_(optimizer), env_(env), blobs_(blobs), blob_limits_(blob_limits), queues_(queues) {
  if (queues_.optimize == nullptr) {
    owned_optimize_ = std::make_unique<WorkQueue>(WorkQueue::Options{"optimize", 2, 64});
    queues_.optimize = owned_optimize_.get();
  }
  if (queues_.control == nullptr) {
    owned_control_ = std::make_unique<WorkQueue>(WorkQueue::Options{"control", 1, 64});
    queues_.control = owned_control_.get();
  }
  if (queues_.upload == nullptr) {
    owned_upload_ = std::make_unique<WorkQueue>(
        WorkQueue::Options{"upload", 2, std::max(1, blob_limits_.max_uploads)});
    queues_.upload = owned_upload_.get();
  }
  if (queues_.fetch == nullptr && blobs_ != nullptr && blobs_->has_fetcher()) {
    owned_fetch_ = std::make_unique<WorkQueue>(WorkQueue::Options{"fetch", 2, 64});
    queues_.fetch = owned_fetch_.get();
  }
  MakePolicies();
}

OptimizerService::OptimizerService(const Optimizer* optimizer,
                                   std::shared_ptr<spdlog::logger> logger, BlobStore* blobs,
                                   BlobRpcLimits blob_limits)
    : OptimizerService(optimizer,
                       /*env=*/nullptr, blobs, blob_limits, OptimizerQueues()) {
  owned_env_ = std::make_unique<RpcEnvironment>(InsecureHeaderAuthenticator, nullptr,
                                                std::move(logger), absl::InfiniteDuration());
  env_ = owned_env_.get();
}

OptimizerService::~OptimizerService() {
  // The queues' threads may still run work that refers to the service: stop them first.
  for (auto* q : {owned_optimize_.get(), owned_control_.get(), owned_upload_.get(),
                 owned_fetch_.get()}) {
    if (q != nullptr) q->Shutdown();
  }
  owned_optimize_.reset();
  owned_control_.reset();
  owned_upload_.reset();
  owned_fetch_.reset();
}

void OptimizerService::MakePolicies() {
  optimize_policy_ = {"Optimize", Access::kTenant, queues_.optimize, true};
  list_passes_policy_ = {"ListPasses", Access::kTenant, nullptr, false};
  list_ops_policy_ = {"ListOps", Access::kTenant, nullptr, false};
  register_policy_ = {"RegisterOps", Access::kTenant, queues_.control, true};
  unregister_policy_ = {"UnregisterOps", Access::kTenant, queues_.control, true};
  // With a fetcher, HasBlobs may copy blobs from another replica: not on gRPC's thread then.
  const bool fetches = blobs_ != nullptr && blobs_->has_fetcher();
  has_blobs_policy_ = {"HasBlobs", Access::kTenant, fetches ? queues_.fetch : nullptr, fetches};
  put_blobs_policy_ = {"PutBlobs", Access::kTenant, nullptr, true};
}

grpc::ServerUnaryReactor* OptimizerService::Optimize(grpc::CallbackServerContext* context,
                                                     const grpc::ByteBuffer* in,
                                                     grpc::ByteBuffer* out) {
  return ServeRaw<v1::OptimizeRequest, v1::OptimizeResponse>(
      *env_, context, optimize_policy_, in, out,
      [this](CallState& call, v1::OptimizeRequest& request, v1::OptimizeResponse& response) {
        const bool onnx_in = !request.onnx_model().empty();
        // Node counts of an ONNX request are only known once imported: taken from the reports.
        int64_t nodes_in = onnx_in ? -1 : request.graph().nodes_size();
        const int request_ops = request.ops_size();
        const bool verify = request.options().verify().enabled();
        // Moving the graph out instead of copying it halves the peak memory of a large request.
        absl::StatusOr<v1::OptimizeResponse> result =
            optimizer_->Optimize(std::move(request), call.tenant(), &call.stop());
        int64_t nodes_out = -1;
        if (result.ok()) {
          response = *std::move(result);
          if (response.reports_size() > 0) {
            nodes_in = response.reports(0).nodes_before();
            nodes_out = response.reports(response.reports_size() - 1).nodes_after();
          } else {
            nodes_out = response.onnx_model().empty() ? response.graph().nodes_size() : nodes_in;
          }
        }
        call.log_fields() = absl::StrCat("format=", onnx_in ? "onnx" : "graph",
                                         " request_ops=", request_ops, " nodes=", nodes_in, "->",
                                         nodes_out, " passes=", response.reports_size(),
                                         CacheLogField(response.cache()));
        if (verify && result.ok()) absl::StrAppend(&call.log_fields(), " verify=passed");
        if (verify && absl::StartsWith(result.status().message(), "verification failed")) {
          absl::StrAppend(&call.log_fields(), " verify=failed");
        }
        return result.status();
      });
}

grpc::ServerUnaryReactor* OptimizerService::ListPasses(grpc::CallbackServerContext* context,
                                                       const grpc::ByteBuffer* in,
                                                       grpc::ByteBuffer* out) {
  return ServeRaw<v1::ListPassesRequest, v1::ListPassesResponse>(
      *env_, context, list_passes_policy_, in, out,
      [this](CallState& call, v1::ListPassesRequest&, v1::ListPassesResponse& response) {
        response = optimizer_->ListPasses();
        call.log_fields() = absl::StrCat("passes=", response.passes_size());
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* OptimizerService::ListOps(grpc::CallbackServerContext* context,
                                                    const grpc::ByteBuffer* in,
                                                    grpc::ByteBuffer* out) {
  return ServeRaw<v1::ListOpsRequest, v1::ListOpsResponse>(
      *env_, context, list_ops_policy_, in, out,
      [this](CallState& call, v1::ListOpsRequest& request, v1::ListOpsResponse& response) {
        response = optimizer_->ListOps(request, call.tenant());
        call.log_fields() = absl::StrCat(
            "domain='", absl::CHexEscape(request.domain().substr(0, 100)), "' name='",
            absl::CHexEscape(request.name().substr(0, 100)),
            "' registered_only=", request.registered_only(), " ops=", response.ops_size());
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* OptimizerService::RegisterOps(grpc::CallbackServerContext* context,
                                                        const grpc::ByteBuffer* in,
                                                        grpc::ByteBuffer* out) {
  return ServeRaw<v1::RegisterOpsRequest, v1::RegisterOpsResponse>(
      *env_, context, register_policy_, in, out,
      [this, context](CallState& call, v1::RegisterOpsRequest& request,
                      v1::RegisterOpsResponse& response) {
        absl::StatusOr<v1::RegisterOpsResponse> result =
            optimizer_->RegisterOps(request, call.tenant());
        call.log_fields() = absl::StrCat("ops=", request.ops_size(),
                                         " validate_only=", request.validate_only());
        if (!result.ok()) return result.status();
        response = *std::move(result);
        // One line per registered or changed op, so the log tells who registered what.
        for (const std::string& line : response.results()) {
          if (!absl::StartsWith(line, "unchanged")) {
            env_->logger().info("RegisterOps peer={} tenant={} {}", context->peer(),
                                call.tenant(), line);
          }
        }
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* OptimizerService::UnregisterOps(grpc::CallbackServerContext* context,
                                                          const grpc::ByteBuffer* in,
                                                          grpc::ByteBuffer* out) {
  return ServeRaw<v1::UnregisterOpsRequest, v1::UnregisterOpsResponse>(
      *env_, context, unregister_policy_, in, out,
      [this, context](CallState& call, v1::UnregisterOpsRequest& request,
                      v1::UnregisterOpsResponse& response) {
        absl::StatusOr<v1::UnregisterOpsResponse> result =
            optimizer_->UnregisterOps(request, call.tenant());
        call.log_fields() = absl::StrCat("ops=", request.ops_size());
        if (!result.ok()) return result.status();
        response = *std::move(result);
        for (const std::string& line : response.unregistered()) {
          env_->logger().info("UnregisterOps peer={} tenant={} {}", context->peer(),
                              call.tenant(), line);
        }
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* OptimizerService::HasBlobs(grpc::CallbackServerContext* context,
                                                     const grpc::ByteBuffer* in,
                                                     grpc::ByteBuffer* out) {
  return ServeRaw<v1::HasBlobsRequest, v1::HasBlobsResponse>(
      *env_, context, has_blobs_policy_, in, out,
      [this](CallState& call, v1::HasBlobsRequest& request, v1::HasBlobsResponse& response) {
        call.log_fields() = absl::StrCat("digests=", request.digests_size());
        if (blobs_ == nullptr) return absl::UnimplementedError(kNoBlobStore);
        if (request.digests_size() > blob_limits_.max_digests_per_request) {
          return absl::InvalidArgumentError(absl::StrCat(
              "HasBlobs names ", request.digests_size(), " digests; at most ",
              blob_limits_.max_digests_per_request, " per request"));
        }
        for (int i = 0; i < request.digests_size(); ++i) {
          if (!IsBlobDigest(request.digests(i))) {
            return absl::InvalidArgumentError(absl::StrCat(
                "digests[", i, "]: ", QuotedDigest(request.digests(i)),
                " is not a blob digest (expected sha256:<64 lowercase hex digits>)"));
          }
        }
        const std::vector<absl::string_view> digests(request.digests().begin(),
                                                     request.digests().end());
        std::vector<std::string> missing = blobs_->MissingAfterFetch(call.tenant(), digests);
        response.mutable_missing()->Reserve(static_cast<int>(missing.size()));
        for (std::string& digest : missing) response.add_missing(std::move(digest));
        response.set_free_bytes(blobs_->free_bytes(call.tenant()));
        absl::StrAppend(&call.log_fields(), " missing=", response.missing_size(),
                        absl::StrFormat(" free_mib=%.1f",
                                        static_cast<double>(response.free_bytes()) / (1 << 20)));
        return absl::OkStatus();
      });
}

grpc::ServerReadReactor<grpc::ByteBuffer>* OptimizerService::PutBlobs(
    grpc::CallbackServerContext* context, grpc::ByteBuffer* response) {
  auto* upload = new BlobUpload(this, context, response);
  upload->Start();
  return upload;
}

}  // namespace graphopt
