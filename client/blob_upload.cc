#include "client/blob_upload.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "server/grpc_status.h"
#include "service/digest.h"
#include "service/tenant.h"

namespace graphopt {
namespace {

using Clock = std::chrono::steady_clock;

// "<context>: <rpc>: " (or "<rpc>: " without a context).
std::string Prefix(const UploadOptions& options, absl::string_view rpc) {
  return options.context.empty() ? absl::StrCat(rpc, ": ")
                                 : absl::StrCat(options.context, ": ", rpc, ": ");
}

// The server's (or transport's) status with the context and the RPC prefixed.
absl::Status RpcError(const UploadOptions& options, absl::string_view rpc,
                      const grpc::Status& status) {
  absl::Status converted = FromGrpcStatus(status);
  return absl::Status(converted.code(), absl::StrCat(Prefix(options, rpc), converted.message()));
}

}  // namespace

absl::StatusOr<UploadStats> UploadBlobs(v1::GraphOptimizer::StubInterface& stub,
                                        absl::Span<const BlobRef> blobs,
                                        const UploadOptions& options) {
  const Clock::time_point start = Clock::now();
  const std::chrono::system_clock::time_point deadline =
      absl::ToChronoTime(absl::Now() + options.timeout);
  if (options.chunk_bytes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("UploadBlobs: chunk_bytes must be positive, got ", options.chunk_bytes));
  }

  // Distinct blobs, in first-occurrence order.
  std::vector<const BlobRef*> unique;
  absl::flat_hash_map<absl::string_view, const BlobRef*> by_digest;
  UploadStats stats;
  for (const BlobRef& blob : blobs) {
    if (!IsBlobDigest(blob.digest)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "UploadBlobs: '", absl::CHexEscape(blob.digest.substr(0, 100)),
          "' is not a blob digest (expected sha256:<64 lowercase hex digits>)"));
    }
    auto [it, inserted] = by_digest.emplace(blob.digest, &blob);
    if (!inserted) {
      if (it->second->data.size() != blob.data.size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "UploadBlobs: blob ", blob.digest, " given twice with different sizes (",
            it->second->data.size(), " and ", blob.data.size(), " bytes)"));
      }
      continue;
    }
    unique.push_back(&blob);
    ++stats.blobs_total;
    stats.bytes_total += static_cast<int64_t>(blob.data.size());
  }

  // Which ones the server lacks.
  std::vector<const BlobRef*> to_send;
  const size_t batch = static_cast<size_t>(std::max(options.max_digests_per_request, 1));
  for (size_t first = 0; first < unique.size(); first += batch) {
    v1::HasBlobsRequest request;
    const size_t end = std::min(unique.size(), first + batch);
    for (size_t i = first; i < end; ++i) request.add_digests(unique[i]->digest);
    v1::HasBlobsResponse response;
    grpc::ClientContext context;
    context.set_deadline(deadline);
    if (!options.tenant.empty()) context.AddMetadata(kTenantMetadataKey, options.tenant);
    for (const auto& [key, value] : options.metadata) context.AddMetadata(key, value);
    grpc::Status status = stub.HasBlobs(&context, request, &response);
    if (!status.ok()) return RpcError(options, "HasBlobs", status);
    for (const std::string& digest : response.missing()) {
      auto it = by_digest.find(digest);
      if (it == by_digest.end()) {
        return absl::InternalError(absl::StrCat(
            Prefix(options, "HasBlobs"), "the server reports a digest that was not asked about: '",
            absl::CHexEscape(digest.substr(0, 100)), "'"));
      }
      if (it->second == nullptr) continue;  // reported twice
      to_send.push_back(it->second);
      stats.bytes_sent += static_cast<int64_t>(it->second->data.size());
      it->second = nullptr;
    }
  }
  stats.blobs_sent = static_cast<int64_t>(to_send.size());

  if (!to_send.empty()) {
    const int64_t bytes_to_send = stats.bytes_sent;
    int64_t bytes_sent = 0;
    if (options.progress) options.progress(0, bytes_to_send);
    grpc::ClientContext context;
    context.set_deadline(deadline);
    if (!options.tenant.empty()) context.AddMetadata(kTenantMetadataKey, options.tenant);
    for (const auto& [key, value] : options.metadata) context.AddMetadata(key, value);
    v1::PutBlobsResponse response;
    std::unique_ptr<grpc::ClientWriterInterface<v1::BlobChunk>> writer =
        stub.PutBlobs(&context, &response);
    v1::BlobChunk chunk;
    bool stream_ok = true;
    for (const BlobRef* blob : to_send) {
      const int64_t size = static_cast<int64_t>(blob->data.size());
      int64_t offset = 0;
      do {
        const int64_t piece = std::min(options.chunk_bytes, size - offset);
        if (offset == 0) {
          chunk.set_digest(blob->digest);
          chunk.set_total_size(size);
        } else {
          chunk.clear_digest();
          chunk.clear_total_size();
        }
        chunk.mutable_data()->assign(blob->data.data() + offset, static_cast<size_t>(piece));
        // A failed write means the server has ended the call; Finish says why.
        if (!writer->Write(chunk)) {
          stream_ok = false;
          break;
        }
        offset += piece;
        bytes_sent += piece;
        if (options.progress) options.progress(bytes_sent, bytes_to_send);
      } while (offset < size);
      if (!stream_ok) break;
    }
    if (stream_ok) writer->WritesDone();
    grpc::Status status = writer->Finish();
    if (!status.ok()) return RpcError(options, "PutBlobs", status);
    if (!stream_ok) {
      return absl::UnknownError(absl::StrCat(
          Prefix(options, "PutBlobs"), "the stream broke but the server reported success"));
    }
    if (response.stored_size() != static_cast<int>(to_send.size())) {
      return absl::InternalError(absl::StrCat(Prefix(options, "PutBlobs"), "the server stored ",
                                              response.stored_size(), " of ", to_send.size(),
                                              " blobs"));
    }
  }
  stats.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return stats;
}

}  // namespace graphopt
