#include "util/log_format.h"

#include <cstdint>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace graphopt {
namespace {

thread_local const LogContext* current_context = nullptr;

// The length of the valid UTF-8 sequence at the start of `s` (non-empty), or 0.
size_t Utf8Length(absl::string_view s) {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  size_t n = 0;
  uint32_t cp = 0;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
    cp = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    cp = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (s.size() < n) return 0;
  for (size_t i = 1; i < n; ++i) {
    if ((b(i) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b(i) & 0x3f);
  }
  // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
      (cp >= 0xd800 && cp <= 0xdfff)) {
    return 0;
  }
  return n;
}

class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    std::string line = "{\"ts\":\"";
    absl::StrAppend(&line, absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::FromChrono(msg.time),
                                            absl::UTCTimeZone()),
                    "\",\"level\":\"");
    const auto level = spdlog::level::to_string_view(msg.level);
    AppendJsonEscaped(absl::string_view(level.data(), level.size()), line);
    line += "\",\"logger\":\"";
    AppendJsonEscaped(absl::string_view(msg.logger_name.data(), msg.logger_name.size()), line);
    line += "\",\"msg\":\"";
    AppendJsonEscaped(absl::string_view(msg.payload.data(), msg.payload.size()), line);
    line += '"';
    if (const LogContext* context = CurrentLogContext()) {
      if (!context->trace_id.empty()) {
        line += ",\"trace_id\":\"";
        AppendJsonEscaped(context->trace_id, line);
        line += '"';
      }
      if (!context->request_id.empty()) {
        line += ",\"request_id\":\"";
        AppendJsonEscaped(context->request_id, line);
        line += '"';
      }
    }
    line += "}\n";
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

}  // namespace

const LogContext* CurrentLogContext() { return current_context; }

ScopedLogContext::ScopedLogContext(const LogContext* context) : previous_(current_context) {
  current_context = context;
}

ScopedLogContext::~ScopedLogContext() { current_context = previous_; }

std::string NewTraceId() {
  thread_local std::mt19937_64 bits(std::random_device{}());
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(32, '0');
  for (int half = 0; half < 2; ++half) {
    uint64_t v = bits();
    for (int i = 0; i < 16; ++i, v >>= 4) id[half * 16 + i] = kHex[v & 0xf];
  }
  return id;
}

bool IsValidTraceId(absl::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

absl::StatusOr<LogFormat> ParseLogFormat(absl::string_view name) {
  if (name == "text") return LogFormat::kText;
  if (name == "json") return LogFormat::kJson;
  return absl::InvalidArgumentError(
      absl::StrCat("--log_format must be text or json, got '", name, "'"));
}

std::unique_ptr<spdlog::formatter> NewJsonLogFormatter() {
  return std::make_unique<JsonFormatter>();
}

void ApplyLogFormat(spdlog::logger& logger, LogFormat format) {
  if (format == LogFormat::kJson) logger.set_formatter(NewJsonLogFormatter());
}

void AppendJsonEscaped(absl::string_view s, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  while (!s.empty()) {
    const unsigned char c = static_cast<unsigned char>(s[0]);
    if (c >= 0x80) {
      const size_t n = Utf8Length(s);
      if (n == 0) {
        out += "\\ufffd";
        s.remove_prefix(1);
      } else {
        out.append(s.data(), n);
        s.remove_prefix(n);
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xf];
        } else {
          out += static_cast<char>(c);
        }
    }
    s.remove_prefix(1);
  }
}

}  // namespace graphopt
