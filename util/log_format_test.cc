#include "util/log_format.h"

#include <memory>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "spdlog/sinks/ostream_sink.h"

namespace graphopt {
namespace {

std::string Escaped(absl::string_view s) {
  std::string out;
  AppendJsonEscaped(s, out);
  return out;
}

TEST(LogFormatTest, Escaping) {
  EXPECT_EQ(Escaped("plain"), "plain");
  EXPECT_EQ(Escaped("a\"b\\c\nd\te\r"), "a\\\"b\\\\c\\nd\\te\\r");
  EXPECT_EQ(Escaped(std::string("\x01\x1f\x7f", 3)), "\\u0001\\u001f\\u007f");
  EXPECT_EQ(Escaped(std::string("nul\0x", 5)), "nul\\u0000x");
  EXPECT_EQ(Escaped("caf\xc3\xa9 \xe2\x82\xac"), "caf\xc3\xa9 \xe2\x82\xac");  // valid UTF-8 kept
  EXPECT_EQ(Escaped("bad \xff \xc3"), "bad \\ufffd \\ufffd");
  EXPECT_EQ(Escaped("\xc0\xaf"), "\\ufffd\\ufffd");          // overlong
  EXPECT_EQ(Escaped("\xed\xa0\x80"), "\\ufffd\\ufffd\\ufffd");  // surrogate
}

TEST(LogFormatTest, ParseLogFormat) {
  EXPECT_EQ(*ParseLogFormat("text"), LogFormat::kText);
  EXPECT_EQ(*ParseLogFormat("json"), LogFormat::kJson);
  EXPECT_EQ(ParseLogFormat("xml").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(LogFormatTest, TraceIds) {
  const std::string a = NewTraceId();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_TRUE(IsValidTraceId(a));
  EXPECT_NE(a, NewTraceId());
  EXPECT_TRUE(IsValidTraceId("abc-DEF_1.2"));
  EXPECT_FALSE(IsValidTraceId(""));
  EXPECT_FALSE(IsValidTraceId(std::string(65, 'a')));
  EXPECT_FALSE(IsValidTraceId("a b"));
  EXPECT_FALSE(IsValidTraceId("a\"b"));
}

TEST(LogFormatTest, JsonLinesCarryTheThreadsContext) {
  std::ostringstream out;
  auto logger = std::make_shared<spdlog::logger>(
      "graphopt-test", std::make_shared<spdlog::sinks::ostream_sink_st>(out));
  ApplyLogFormat(*logger, LogFormat::kJson);
  logger->info("hello \"{}\"", "world");
  LogContext context{"trace-1", "req\n2"};
  {
    ScopedLogContext scope(&context);
    logger->warn("inside");
    // Another thread has no context.
    std::thread([&] { logger->error("elsewhere"); }).join();
  }
  logger->info("after");
  std::vector<std::string> lines = absl::StrSplit(out.str(), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 4u) << out.str();
  EXPECT_TRUE(absl::StartsWith(lines[0], "{\"ts\":\"")) << lines[0];
  EXPECT_TRUE(absl::EndsWith(lines[0],
                             "Z\",\"level\":\"info\",\"logger\":\"graphopt-test\","
                             "\"msg\":\"hello \\\"world\\\"\"}"))
      << lines[0];
  EXPECT_TRUE(absl::EndsWith(lines[1], "\"msg\":\"inside\",\"trace_id\":\"trace-1\","
                                       "\"request_id\":\"req\\n2\"}"))
      << lines[1];
  EXPECT_TRUE(absl::StrContains(lines[1], "\"level\":\"warning\"")) << lines[1];
  EXPECT_FALSE(absl::StrContains(lines[2], "trace_id")) << lines[2];
  EXPECT_FALSE(absl::StrContains(lines[3], "trace_id")) << lines[3];
}

TEST(LogFormatTest, ScopesNest) {
  LogContext outer{"o", ""};
  LogContext inner{"i", ""};
  EXPECT_EQ(CurrentLogContext(), nullptr);
  {
    ScopedLogContext a(&outer);
    {
      ScopedLogContext b(&inner);
      EXPECT_EQ(CurrentLogContext(), &inner);
    }
    EXPECT_EQ(CurrentLogContext(), &outer);
  }
  EXPECT_EQ(CurrentLogContext(), nullptr);
}

}  // namespace
}  // namespace graphopt
