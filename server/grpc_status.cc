#include "server/grpc_status.h"

#include <string>

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

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const int code = static_cast<int>(status.code());
  return grpc::Status(
      IsSharedCode(code) ? static_cast<grpc::StatusCode>(code) : grpc::StatusCode::UNKNOWN,
      std::string(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  const int code = static_cast<int>(status.error_code());
  return absl::Status(
      IsSharedCode(code) ? static_cast<absl::StatusCode>(code) : absl::StatusCode::kUnknown,
      status.error_message());
}

}  // namespace graphopt
