#ifndef GRAPHOPT_UTIL_LOG_FORMAT_H_
#define GRAPHOPT_UTIL_LOG_FORMAT_H_

// Log line formats (--log_format=text|json) and the request a thread is working for, so that
// every line logged while serving a call names it (trace_id, request_id) without each log call
// passing them.
//
// The context is thread-local on purpose: a call's work runs on one thread at a time (its
// queue's), and passing a context argument through every library that logs would couple them
// all to the RPC layer. ScopedLogContext installs it for a scope and restores the previous one.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "spdlog/formatter.h"
#include "spdlog/logger.h"

namespace graphopt {

// The gRPC metadata key carrying a trace id from a client to the server and from the server
// to its workers.
inline constexpr char kTraceIdMetadataKey[] = "graphopt-trace-id";

struct LogContext {
  // Names one client request across processes: the caller's, or one made by the server.
  std::string trace_id;
  // The request's own id (RunRequest.request_id), when it has one.
  std::string request_id;
};

// The context installed on this thread, or null.
const LogContext* CurrentLogContext();

class ScopedLogContext {
 public:
  // `context` (may be null) must outlive the scope.
  explicit ScopedLogContext(const LogContext* context);
  ~ScopedLogContext();
  ScopedLogContext(const ScopedLogContext&) = delete;
  ScopedLogContext& operator=(const ScopedLogContext&) = delete;

 private:
  const LogContext* previous_;
};

// A fresh random trace id: 32 lowercase hex digits.
std::string NewTraceId();
// A trace id a client may choose: 1..64 characters of [A-Za-z0-9._-]. Anything else is
// replaced by a fresh one (ids go into logs and headers; they must not smuggle text in).
bool IsValidTraceId(absl::string_view id);

enum class LogFormat { kText, kJson };
// "text" or "json"; INVALID_ARGUMENT naming --log_format otherwise.
absl::StatusOr<LogFormat> ParseLogFormat(absl::string_view name);

// One JSON object per line: {"ts":"2026-12-07T15:04:30.123456Z","level":"info",
// "logger":"graphopt-server","msg":"...","trace_id":"...","request_id":"..."}, the last two
// when the thread has a context naming them. Strings are JSON-escaped; bytes that are not
// UTF-8 become U+FFFD, so every line parses.
std::unique_ptr<spdlog::formatter> NewJsonLogFormatter();

// Sets `logger`'s sinks to `format` (text keeps spdlog's default pattern).
void ApplyLogFormat(spdlog::logger& logger, LogFormat format);

// `s` as a JSON string body (without quotes), as the formatter writes it.
void AppendJsonEscaped(absl::string_view s, std::string& out);

}  // namespace graphopt

#endif  // GRAPHOPT_UTIL_LOG_FORMAT_H_
