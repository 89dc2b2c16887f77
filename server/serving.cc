#include "server/serving.h"

#include <pthread.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "spdlog/logger.h"
#include "util/file_util.h"

namespace graphopt {

std::optional<spdlog::level::level_enum> ParseLogLevel(absl::string_view name) {
  static constexpr std::pair<absl::string_view, spdlog::level::level_enum> kLevels[] = {
      {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug},
      {"info", spdlog::level::info},   {"warn", spdlog::level::warn},
      {"error", spdlog::level::err},   {"critical", spdlog::level::critical},
      {"off", spdlog::level::off},
  };
  for (const auto& [level_name, level] : kLevels) {
    if (name == level_name) return level;
  }
  return std::nullopt;
}

std::string ResolvedAddress(const std::string& listen, int port) {
  if (absl::StartsWith(listen, "unix:") || absl::StartsWith(listen, "unix-abstract:")) {
    return listen;
  }
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return listen;
  return absl::StrCat(listen.substr(0, colon + 1), port);
}

absl::Status WritePortFile(const std::string& path, int port) {
  return WriteFileAtomically(path, absl::StrCat(port, "\n"));
}

absl::Status BlockShutdownSignals(sigset_t* signals) {
  sigemptyset(signals);
  sigaddset(signals, SIGTERM);
  sigaddset(signals, SIGINT);
  if (const int rc = pthread_sigmask(SIG_BLOCK, signals, nullptr); rc != 0) {
    return absl::ErrnoToStatus(rc, "pthread_sigmask");
  }
  return absl::OkStatus();
}

std::string WaitForShutdownSignal(const sigset_t& signals, spdlog::logger& logger) {
  int signal_number = 0;
  while (true) {
    const int rc = sigwait(&signals, &signal_number);
    if (rc == 0) break;
    if (rc != EINTR) {
      logger.error("sigwait failed: {}; shutting down", std::strerror(rc));
      return "sigwait failure";
    }
  }
  switch (signal_number) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    default:
      return absl::StrCat("signal ", signal_number);
  }
}

}  // namespace graphopt
