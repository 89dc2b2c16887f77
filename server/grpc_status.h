#ifndef GRAPHOPT_SERVER_GRPC_STATUS_H_
#define GRAPHOPT_SERVER_GRPC_STATUS_H_

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace graphopt {

// Converts an absl::Status to the gRPC status with the same code number and message. The two
// code spaces agree on 0..16; any other absl code becomes UNKNOWN (with the message kept).
// Status payloads are not carried over. A message over 2 KiB is cut there (marked with how much
// was left out), so that it fits the trailing metadata every client accepts.
grpc::Status ToGrpcStatus(const absl::Status& status);

// The inverse, for clients: same code number (UNKNOWN outside 0..16) and message.
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace graphopt

#endif  // GRAPHOPT_SERVER_GRPC_STATUS_H_
