#ifndef GRAPHOPT_CLIENT_COORDINATOR_CLIENT_H_
#define GRAPHOPT_CLIENT_COORDINATOR_CLIENT_H_

// The CLI's calls to a server's coordinator: `graphopt run --server` and `graphopt workers`.

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/credentials.h"
#include "proto/coordinator.pb.h"

namespace graphopt {

// Calls Coordinator.Run over `connection` (its channel and metadata: token, tenant) with
// `timeout` as the deadline. Errors carry the server's code and message; those of the
// transport (UNAVAILABLE, DEADLINE_EXCEEDED, ...) and refusals (UNAUTHENTICATED,
// PERMISSION_DENIED) get the address prefixed.
absl::StatusOr<v1::RunResponse> RemoteRun(const ServerConnection& connection,
                                          absl::Duration timeout, const v1::RunRequest& request);
// Calls Coordinator.ListWorkers (an admin operation); errors as RemoteRun's.
absl::StatusOr<v1::ListWorkersResponse> RemoteListWorkers(const ServerConnection& connection,
                                                          absl::Duration timeout);

// The workers as a table, one row per worker in the response's order: address, id, health,
// source, devices, runs in flight (busy), executions, plans loaded, plan cache MiB, time since
// the last probe answered, times marked down; then the last error of each worker that has one.
std::string FormatWorkers(const v1::ListWorkersResponse& response);

}  // namespace graphopt

#endif  // GRAPHOPT_CLIENT_COORDINATOR_CLIENT_H_
