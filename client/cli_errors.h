#ifndef GRAPHOPT_CLIENT_CLI_ERRORS_H_
#define GRAPHOPT_CLIENT_CLI_ERRORS_H_

// The CLI's exit statuses and the two forms its subcommands print errors in.

#include <string>

#include "absl/status/status.h"

namespace graphopt {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// Prints "error: CODE: message" and returns kExitFailure: a request that failed.
int ReportError(const absl::Status& status);
// Prints "usage error: message" and the hint to --help, and returns kExitUsage.
int UsageError(const std::string& message);

}  // namespace graphopt

#endif  // GRAPHOPT_CLIENT_CLI_ERRORS_H_
