#include "server/optimizer_service.h"

#include <chrono>
#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/grpc_status.h"
#include "service/blob_store.h"
#include "service/digest.h"
#include "service/tenant.h"

namespace graphopt {
namespace {

using Clock = std::chrono::steady_clock;

double MillisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// "OK" or "INVALID_ARGUMENT: node 'n3' (Add): ...".
std::string StatusText(const absl::Status& status) {
  if (status.ok()) return "OK";
  return absl::StatusCodeToString(status.code()) + ": " + std::string(status.message());
}

double MiBPerSecond(int64_t bytes, double milliseconds) {
  return milliseconds > 0 ? static_cast<double>(bytes) / (1 << 20) / (milliseconds / 1000) : 0;
}

// A request's digest for a message: quoted, escaped and cut to a sensible length.
std::string QuotedDigest(absl::string_view digest) {
  constexpr size_t kMaxShown = 100;
  return absl::StrCat("'", absl::CHexEscape(digest.substr(0, kMaxShown)),
                      digest.size() > kMaxShown ? "...'" : "'");
}

constexpr char kNoBlobStore[] = "this server keeps no blob store (--blob_store_mb=0)";

// The tenant for a log line: the metadata value as sent (escaped, cut), or "default".
std::string TenantForLog(const grpc::ServerContext& context) {
  auto [begin, end] = context.client_metadata().equal_range(kTenantMetadataKey);
  if (begin == end) return kDefaultTenant;
  constexpr size_t kMaxShown = 80;
  const absl::string_view value(begin->second.data(), begin->second.size());
  return absl::StrCat("'", absl::CHexEscape(value.substr(0, kMaxShown)),
                      value.size() > kMaxShown ? "...'" : "'");
}

}  // namespace

absl::StatusOr<std::string> TenantOf(const grpc::ServerContext& context) {
  auto [begin, end] = context.client_metadata().equal_range(kTenantMetadataKey);
  if (begin == end) return std::string(kDefaultTenant);
  if (std::next(begin) != end) {
    return absl::InvalidArgumentError(absl::StrCat("metadata \"", kTenantMetadataKey,
                                                   "\" is given more than once"));
  }
  std::string tenant(begin->second.data(), begin->second.size());
  if (absl::Status s = ValidateTenantName(tenant); !s.ok()) return s;
  return tenant;
}

OptimizerService::OptimizerService(const Optimizer* optimizer,
                                   std::shared_ptr<spdlog::logger> logger, BlobStore* blobs,
                                   BlobRpcLimits blob_limits)
    : optimizer_(optimizer),
      logger_(std::move(logger)),
      blobs_(blobs),
      blob_limits_(blob_limits) {}

grpc::Status OptimizerService::Optimize(grpc::ServerContext* context,
                                        const v1::OptimizeRequest* request,
                                        v1::OptimizeResponse* response) {
  const Clock::time_point start = Clock::now();
  const bool onnx_in = !request->onnx_model().empty();
  const char* format = onnx_in ? "onnx" : "graph";
  // Node counts of an ONNX request are only known once imported: taken from the reports.
  int nodes_in = onnx_in ? -1 : request->graph().nodes_size();
  const int request_ops = request->ops_size();
  absl::StatusOr<std::string> tenant = TenantOf(*context);
  // gRPC's synchronous handler owns `*request` (a non-const object it destroys after this
  // method returns without reading it again), so moving the graph out instead of copying it
  // is safe and halves the peak memory of a large request.
  absl::StatusOr<v1::OptimizeResponse> result =
      tenant.ok() ? optimizer_->Optimize(std::move(*const_cast<v1::OptimizeRequest*>(request)),
                                         *tenant)
                  : absl::StatusOr<v1::OptimizeResponse>(tenant.status());
  const absl::Status status = result.status();
  int nodes_out = -1;
  if (result.ok()) {
    *response = *std::move(result);
    if (response->reports_size() > 0) {
      nodes_in = static_cast<int>(response->reports(0).nodes_before());
      nodes_out = static_cast<int>(response->reports(response->reports_size() - 1).nodes_after());
    } else {
      nodes_out = response->onnx_model().empty() ? response->graph().nodes_size() : nodes_in;
    }
  }
  const double ms = MillisecondsSince(start);
  if (status.ok()) {
    logger_->info(
        "Optimize peer={} tenant={} format={} request_ops={} nodes={}->{} passes={} "
        "duration_ms={:.1f} status=OK",
        context->peer(), *tenant, format, request_ops, nodes_in, nodes_out,
        response->reports_size(), ms);
  } else {
    logger_->warn(
        "Optimize peer={} tenant={} format={} request_ops={} nodes_in={} duration_ms={:.1f} "
        "status={}",
        context->peer(), TenantForLog(*context), format, request_ops, nodes_in, ms,
        StatusText(status));
  }
  return ToGrpcStatus(status);
}

grpc::Status OptimizerService::ListPasses(grpc::ServerContext* context,
                                          const v1::ListPassesRequest* /*request*/,
                                          v1::ListPassesResponse* response) {
  const Clock::time_point start = Clock::now();
  absl::StatusOr<std::string> tenant = TenantOf(*context);
  if (!tenant.ok()) {
    logger_->warn("ListPasses peer={} tenant={} status={}", context->peer(),
                  TenantForLog(*context), StatusText(tenant.status()));
    return ToGrpcStatus(tenant.status());
  }
  *response = optimizer_->ListPasses();
  logger_->info("ListPasses peer={} tenant={} passes={} duration_ms={:.1f} status=OK",
                context->peer(), *tenant, response->passes_size(), MillisecondsSince(start));
  return grpc::Status::OK;
}

grpc::Status OptimizerService::ListOps(grpc::ServerContext* context,
                                       const v1::ListOpsRequest* request,
                                       v1::ListOpsResponse* response) {
  const Clock::time_point start = Clock::now();
  absl::StatusOr<std::string> tenant = TenantOf(*context);
  if (!tenant.ok()) {
    logger_->warn("ListOps peer={} tenant={} status={}", context->peer(), TenantForLog(*context),
                  StatusText(tenant.status()));
    return ToGrpcStatus(tenant.status());
  }
  *response = optimizer_->ListOps(*request, *tenant);
  logger_->info(
      "ListOps peer={} tenant={} domain='{}' name='{}' registered_only={} ops={} "
      "duration_ms={:.1f} status=OK",
      context->peer(), *tenant, absl::CHexEscape(request->domain()),
      absl::CHexEscape(request->name()), request->registered_only(), response->ops_size(),
      MillisecondsSince(start));
  return grpc::Status::OK;
}

grpc::Status OptimizerService::RegisterOps(grpc::ServerContext* context,
                                           const v1::RegisterOpsRequest* request,
                                           v1::RegisterOpsResponse* response) {
  const Clock::time_point start = Clock::now();
  absl::StatusOr<std::string> tenant = TenantOf(*context);
  absl::StatusOr<v1::RegisterOpsResponse> result =
      tenant.ok() ? optimizer_->RegisterOps(*request, *tenant)
                  : absl::StatusOr<v1::RegisterOpsResponse>(tenant.status());
  const double ms = MillisecondsSince(start);
  if (result.ok()) {
    *response = *std::move(result);
    // One line per registered or changed op, so the log tells who registered what.
    for (const std::string& line : response->results()) {
      if (!absl::StartsWith(line, "unchanged")) {
        logger_->info("RegisterOps peer={} tenant={} {}", context->peer(), *tenant, line);
      }
    }
    logger_->info(
        "RegisterOps peer={} tenant={} ops={} validate_only={} duration_ms={:.1f} status=OK",
        context->peer(), *tenant, request->ops_size(), request->validate_only(), ms);
  } else {
    logger_->warn(
        "RegisterOps peer={} tenant={} ops={} validate_only={} duration_ms={:.1f} status={}",
        context->peer(), TenantForLog(*context), request->ops_size(), request->validate_only(),
        ms, StatusText(result.status()));
  }
  return ToGrpcStatus(result.status());
}

grpc::Status OptimizerService::UnregisterOps(grpc::ServerContext* context,
                                             const v1::UnregisterOpsRequest* request,
                                             v1::UnregisterOpsResponse* response) {
  const Clock::time_point start = Clock::now();
  absl::StatusOr<std::string> tenant = TenantOf(*context);
  absl::StatusOr<v1::UnregisterOpsResponse> result =
      tenant.ok() ? optimizer_->UnregisterOps(*request, *tenant)
                  : absl::StatusOr<v1::UnregisterOpsResponse>(tenant.status());
  const double ms = MillisecondsSince(start);
  if (result.ok()) {
    *response = *std::move(result);
    for (const std::string& line : response->unregistered()) {
      logger_->info("UnregisterOps peer={} tenant={} {}", context->peer(), *tenant, line);
    }
    logger_->info("UnregisterOps peer={} tenant={} ops={} duration_ms={:.1f} status=OK",
                  context->peer(), *tenant, request->ops_size(), ms);
  } else {
    logger_->warn("UnregisterOps peer={} tenant={} ops={} duration_ms={:.1f} status={}",
                  context->peer(), TenantForLog(*context), request->ops_size(), ms,
                  StatusText(result.status()));
  }
  return ToGrpcStatus(result.status());
}

grpc::Status OptimizerService::HasBlobs(grpc::ServerContext* context,
                                        const v1::HasBlobsRequest* request,
                                        v1::HasBlobsResponse* response) {
  const Clock::time_point start = Clock::now();
  absl::StatusOr<std::string> tenant = TenantOf(*context);
  absl::Status status = tenant.status();
  if (!status.ok()) {
    // Refused before anything else.
  } else if (blobs_ == nullptr) {
    status = absl::UnimplementedError(kNoBlobStore);
  } else if (request->digests_size() > blob_limits_.max_digests_per_request) {
    status = absl::InvalidArgumentError(absl::StrCat(
        "HasBlobs names ", request->digests_size(), " digests; at most ",
        blob_limits_.max_digests_per_request, " per request"));
  } else {
    for (int i = 0; i < request->digests_size(); ++i) {
      if (!IsBlobDigest(request->digests(i))) {
        status = absl::InvalidArgumentError(absl::StrCat(
            "digests[", i, "]: ", QuotedDigest(request->digests(i)),
            " is not a blob digest (expected sha256:<64 lowercase hex digits>)"));
        break;
      }
    }
  }
  if (status.ok()) {
    const std::vector<absl::string_view> digests(request->digests().begin(),
                                                 request->digests().end());
    std::vector<std::string> missing = blobs_->Missing(digests);
    response->mutable_missing()->Reserve(static_cast<int>(missing.size()));
    for (std::string& digest : missing) response->add_missing(std::move(digest));
    response->set_free_bytes(blobs_->free_bytes());
    logger_->info("HasBlobs peer={} tenant={} digests={} missing={} free_mib={:.1f} "
                  "duration_ms={:.1f} status=OK",
                  context->peer(), *tenant, request->digests_size(), response->missing_size(),
                  static_cast<double>(response->free_bytes()) / (1 << 20),
                  MillisecondsSince(start));
  } else {
    logger_->warn("HasBlobs peer={} tenant={} digests={} duration_ms={:.1f} status={}",
                  context->peer(), TenantForLog(*context), request->digests_size(),
                  MillisecondsSince(start), StatusText(status));
  }
  return ToGrpcStatus(status);
}

grpc::Status OptimizerService::PutBlobs(grpc::ServerContext* context,
                                        grpc::ServerReader<v1::BlobChunk>* reader,
                                        v1::PutBlobsResponse* response) {
  const Clock::time_point start = Clock::now();
  absl::StatusOr<std::string> tenant = TenantOf(*context);
  absl::Status status = !tenant.ok()         ? tenant.status()
                        : blobs_ == nullptr ? absl::UnimplementedError(kNoBlobStore)
                                            : ReceiveBlobs(*context, *reader, *response);
  const double ms = MillisecondsSince(start);
  if (status.ok()) {
    logger_->info("PutBlobs peer={} tenant={} blobs={} bytes={} duration_ms={:.1f} "
                  "mib_per_s={:.1f} status=OK",
                  context->peer(), *tenant, response->stored_size(), response->bytes_received(), ms,
                  MiBPerSecond(response->bytes_received(), ms));
  } else {
    logger_->warn("PutBlobs peer={} tenant={} blobs_stored={} bytes={} duration_ms={:.1f} "
                  "status={}",
                  context->peer(), TenantForLog(*context), response->stored_size(),
                  response->bytes_received(), ms, StatusText(status));
  }
  return ToGrpcStatus(status);
}

absl::Status OptimizerService::ReceiveBlobs(grpc::ServerContext& context,
                                            grpc::ServerReader<v1::BlobChunk>& reader,
                                            v1::PutBlobsResponse& response) {
  // The blob being received; null between blobs.
  std::unique_ptr<BlobWriter> writer;
  Clock::time_point blob_start;
  int blobs_started = 0;
  int64_t chunk_index = -1;
  v1::BlobChunk chunk;
  while (reader.Read(&chunk)) {
    ++chunk_index;
    if (writer == nullptr) {
      if (chunk.digest().empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "chunk ", chunk_index, ": a blob's first chunk must carry its digest and total_size",
            response.stored_size() > 0
                ? absl::StrCat(" (blob ", response.stored(response.stored_size() - 1),
                               " was already complete)")
                : ""));
      }
      if (!IsBlobDigest(chunk.digest())) {
        return absl::InvalidArgumentError(
            absl::StrCat("chunk ", chunk_index, ": ", QuotedDigest(chunk.digest()),
                         " is not a blob digest (expected sha256:<64 lowercase hex digits>)"));
      }
      if (chunk.total_size() < 0) {
        return absl::InvalidArgumentError(absl::StrCat("blob ", chunk.digest(),
                                                       ": negative total_size ",
                                                       chunk.total_size()));
      }
      if (blobs_started == blob_limits_.max_blobs_per_upload) {
        return absl::InvalidArgumentError(
            absl::StrCat("blob ", chunk.digest(), ": more than ",
                         blob_limits_.max_blobs_per_upload, " blobs in one PutBlobs call"));
      }
      absl::StatusOr<std::unique_ptr<BlobWriter>> started =
          blobs_->StartWrite(chunk.digest(), chunk.total_size());
      if (!started.ok()) return started.status();
      writer = *std::move(started);
      blob_start = Clock::now();
      ++blobs_started;
    } else {
      if (!chunk.digest().empty() && chunk.digest() != writer->digest()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "blob ", writer->digest(), ": blob ", QuotedDigest(chunk.digest()),
            " started at byte ", writer->received(), " of ", writer->total_size(),
            " (chunk ", chunk_index, "); a blob must be complete before the next one starts"));
      }
      if (chunk.total_size() != 0 && chunk.total_size() != writer->total_size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "blob ", writer->digest(), ": chunk ", chunk_index, " at byte ", writer->received(),
            " says total_size ", chunk.total_size(), ", the blob's first chunk said ",
            writer->total_size()));
      }
    }
    if (absl::Status status = writer->Append(chunk.data()); !status.ok()) {
      return absl::Status(status.code(),
                          absl::StrCat(status.message(), " in chunk ", chunk_index));
    }
    response.set_bytes_received(response.bytes_received() +
                                static_cast<int64_t>(chunk.data().size()));
    if (!writer->complete()) continue;
    const bool skipped = writer->skipping();
    if (absl::Status status = writer->Commit(); !status.ok()) return status;
    const double ms = MillisecondsSince(blob_start);
    logger_->info("PutBlobs peer={} blob={} bytes={} {} duration_ms={:.1f} mib_per_s={:.1f}",
                  context.peer(), writer->digest(), writer->total_size(),
                  skipped ? "already_present" : "stored", ms,
                  MiBPerSecond(writer->total_size(), ms));
    response.add_stored(writer->digest());
    writer.reset();
  }
  if (context.IsCancelled()) {
    return absl::CancelledError(
        writer == nullptr
            ? "the client cancelled the upload"
            : absl::StrCat("blob ", writer->digest(), ": the client cancelled the upload after ",
                           writer->received(), " of ", writer->total_size(), " bytes"));
  }
  if (writer != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("blob ", writer->digest(),
                                                   ": the stream ended after ",
                                                   writer->received(), " of ",
                                                   writer->total_size(), " bytes"));
  }
  return absl::OkStatus();
}

}  // namespace graphopt
