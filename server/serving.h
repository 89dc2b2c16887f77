#ifndef GRAPHOPT_SERVER_SERVING_H_
#define GRAPHOPT_SERVER_SERVING_H_

// What every graphopt gRPC binary (graphopt-server, graphopt-worker) does around its service:
// log levels from flags, the port file, and waiting for SIGTERM/SIGINT.

#include <signal.h>

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "spdlog/spdlog.h"

namespace graphopt {

// trace, debug, info, warn, error, critical or off; nullopt for anything else.
std::optional<spdlog::level::level_enum> ParseLogLevel(absl::string_view name);

// `listen` with its port replaced by `port` ("127.0.0.1:0" -> "127.0.0.1:43121"). Addresses
// without a trailing ":port" (unix sockets) are returned unchanged.
std::string ResolvedAddress(const std::string& listen, int port);

// Writes "<port>\n" to `path` through `path`.tmp and a rename, so a reader never sees a
// partial file.
absl::Status WritePortFile(const std::string& path, int port);

// Blocks SIGTERM and SIGINT in the calling thread (call it first in main, before any thread
// starts, so that every thread inherits the mask) and returns them as a set for
// WaitForShutdownSignal. Non-OK when the mask cannot be set.
absl::Status BlockShutdownSignals(sigset_t* signals);

// Waits on the calling thread for one of `signals`; returns its name ("SIGTERM", "SIGINT").
std::string WaitForShutdownSignal(const sigset_t& signals, spdlog::logger& logger);

}  // namespace graphopt

#endif  // GRAPHOPT_SERVER_SERVING_H_
