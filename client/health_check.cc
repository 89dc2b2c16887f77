#include "client/health_check.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "server/grpc_status.h"

namespace graphopt {
namespace {

constexpr char kCheckMethod[] = "/grpc.health.v1.Health/Check";

// Wire types of the protobuf encoding.
constexpr uint32_t kVarint = 0;
constexpr uint32_t kFixed64 = 1;
constexpr uint32_t kLengthDelimited = 2;
constexpr uint32_t kFixed32 = 5;

void AppendVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

// Reads a varint at *pos, advancing it; false when the bytes end first or it runs past 10 bytes.
bool ReadVarint(absl::string_view bytes, size_t* pos, uint64_t* value) {
  *value = 0;
  for (int shift = 0; shift < 64 && *pos < bytes.size(); shift += 7) {
    const uint8_t byte = static_cast<uint8_t>(bytes[(*pos)++]);
    *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

absl::Status Malformed(absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("malformed grpc.health.v1.HealthCheckResponse: ", what));
}

}  // namespace

std::string ServingStatusName(ServingStatus status) {
  switch (status) {
    case ServingStatus::kServing:
      return "SERVING";
    case ServingStatus::kNotServing:
      return "NOT_SERVING";
    case ServingStatus::kServiceUnknown:
      return "SERVICE_UNKNOWN";
    case ServingStatus::kUnknown:
      break;
  }
  return "UNKNOWN";
}

std::string EncodeHealthCheckRequest(absl::string_view service) {
  std::string out;
  if (service.empty()) return out;  // proto3 leaves default values off the wire
  out.push_back(static_cast<char>((1 << 3) | kLengthDelimited));
  AppendVarint(service.size(), &out);
  out.append(service.data(), service.size());
  return out;
}

absl::StatusOr<ServingStatus> DecodeHealthCheckResponse(absl::string_view bytes) {
  ServingStatus status = ServingStatus::kUnknown;
  size_t pos = 0;
  while (pos < bytes.size()) {
    uint64_t key = 0;
    if (!ReadVarint(bytes, &pos, &key)) return Malformed("truncated field key");
    const uint64_t field = key >> 3;
    if (field == 0) return Malformed("field number 0");
    uint64_t value = 0;
    switch (key & 7) {
      case kVarint:
        if (!ReadVarint(bytes, &pos, &value)) return Malformed("truncated varint");
        if (field == 1) {
          status = value <= 3 ? static_cast<ServingStatus>(value) : ServingStatus::kUnknown;
        }
        break;
      case kFixed64:
      case kFixed32: {
        const size_t width = (key & 7) == kFixed64 ? 8 : 4;
        if (bytes.size() - pos < width) return Malformed("truncated fixed-width field");
        pos += width;
        break;
      }
      case kLengthDelimited:
        if (!ReadVarint(bytes, &pos, &value)) return Malformed("truncated length");
        if (value > bytes.size() - pos) return Malformed("length past the end");
        pos += value;
        break;
      default:
        return Malformed(absl::StrCat("wire type ", key & 7));
    }
  }
  return status;
}

absl::StatusOr<ServingStatus> CheckHealth(const ServerConnection& connection,
                                          absl::string_view service, absl::Duration timeout) {
  grpc::GenericStub stub(connection.channel());
  grpc::ClientContext context;
  connection.PrepareCall(&context, timeout);
  grpc::Slice slice(EncodeHealthCheckRequest(service));
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::CompletionQueue queue;
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> call =
      stub.PrepareUnaryCall(&context, kCheckMethod, request, &queue);
  call->StartCall();
  grpc::Status status;
  int finish_tag = 0;
  call->Finish(&response, &status, &finish_tag);
  void* tag = nullptr;
  bool ok = false;
  // The only tag on this queue is Finish's, which always comes back (at the deadline at last).
  queue.Next(&tag, &ok);
  queue.Shutdown();
  while (queue.Next(&tag, &ok)) {
  }
  if (!status.ok()) {
    absl::Status s = FromGrpcStatus(status);
    return absl::Status(s.code(), absl::StrCat("health check of ", connection.address(), ": ",
                                               s.message()));
  }
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) return Malformed("unreadable response");
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return DecodeHealthCheckResponse(bytes);
}

}  // namespace graphopt
