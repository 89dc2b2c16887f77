#ifndef GRAPHOPT_CLIENT_HEALTH_CHECK_H_
#define GRAPHOPT_CLIENT_HEALTH_CHECK_H_

// `graphopt health`: one grpc.health.v1.Health/Check call, for container health checks and
// scripts that wait for a server. The two messages are encoded by hand (each has a single
// field) so the CLI needs no copy of health.proto: gRPC's own library already carries one, and
// two registrations of the same .proto abort at start-up.

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/credentials.h"

namespace graphopt {

// grpc.health.v1.HealthCheckResponse.ServingStatus, by its wire numbers.
enum class ServingStatus { kUnknown = 0, kServing = 1, kNotServing = 2, kServiceUnknown = 3 };

// "SERVING", "NOT_SERVING", ... as health.proto names them; "UNKNOWN" for unknown.
std::string ServingStatusName(ServingStatus status);

// HealthCheckRequest{service}: empty for "" (the server as a whole).
std::string EncodeHealthCheckRequest(absl::string_view service);

// HealthCheckResponse's status. Unknown fields are skipped, as proto3 readers do; a status
// number outside the enum is UNKNOWN. INVALID_ARGUMENT for bytes that are not a message.
absl::StatusOr<ServingStatus> DecodeHealthCheckResponse(absl::string_view bytes);

// Calls Check on `connection` for `service` with its call metadata and `timeout`. The call's
// own status when it fails (UNAVAILABLE for a server that is not there, NOT_FOUND for an
// unknown service name, DEADLINE_EXCEEDED).
absl::StatusOr<ServingStatus> CheckHealth(const ServerConnection& connection,
                                          absl::string_view service, absl::Duration timeout);

}  // namespace graphopt

#endif  // GRAPHOPT_CLIENT_HEALTH_CHECK_H_
