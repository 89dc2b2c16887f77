#include "server/grpc_status.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace graphopt {
namespace {

// Highest code number defined by both absl::StatusCode and grpc::StatusCode
// (UNAUTHENTICATED).
constexpr int kMaxSharedCode = 16;

static_assert(static_cast<int>(absl::StatusCode::kUnauthenticated) == kMaxSharedCode);
static_assert(static_cast<int>(grpc::StatusCode::UNAUTHENTICATED) == kMaxSharedCode);
static_assert(static_cast<int>(absl::StatusCode::kInvalidArgument) ==
              static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
static_assert(static_cast<int>(absl::StatusCode::kNotFound) ==
              static_cast<int>(grpc::StatusCode::NOT_FOUND));
static_assert(static_cast<int>(absl::StatusCode::kDataLoss) ==
              static_cast<int>(grpc::StatusCode::DATA_LOSS));

bool IsSharedCode(int code) { return code >= 0 && code <= kMaxSharedCode; }

// The message travels in the trailing metadata ("grpc-message", percent-encoded), whose size
// clients cap (8 KiB by default): a longer one makes the client see RESOURCE_EXHAUSTED
// "received metadata size exceeds limit" instead of the status. Messages quote request text
// (names, rules), so their length is the request's to choose.
constexpr size_t kMaxMessageBytes = 2048;

std::string BoundedMessage(absl::string_view message) {
  if (message.size() <= kMaxMessageBytes) return std::string(message);
  size_t cut = kMaxMessageBytes;
  // Not inside a UTF-8 sequence.
  while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;
  return absl::StrCat(message.substr(0, cut), "... (", message.size() - cut, " more bytes)");
}

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const int code = static_cast<int>(status.code());
  return grpc::Status(
      IsSharedCode(code) ? static_cast<grpc::StatusCode>(code) : grpc::StatusCode::UNKNOWN,
      BoundedMessage(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  const int code = static_cast<int>(status.error_code());
  return absl::Status(
      IsSharedCode(code) ? static_cast<absl::StatusCode>(code) : absl::StatusCode::kUnknown,
      status.error_message());
}

}  // namespace graphopt
