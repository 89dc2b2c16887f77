#include "client/cli_errors.h"

#include <cstdio>

namespace graphopt {

int ReportError(const absl::Status& status) {
  std::fprintf(stderr, "error: %s: %s\n", absl::StatusCodeToString(status.code()).c_str(),
               std::string(status.message()).c_str());
  return kExitFailure;
}

int UsageError(const std::string& message) {
  std::fprintf(stderr, "usage error: %s\nRun with --help for more information.\n",
               message.c_str());
  return kExitUsage;
}

}  // namespace graphopt
