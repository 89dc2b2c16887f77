#include "rules/lexer.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace graphopt {
namespace rules {
namespace {

std::vector<Tok> Kinds(const std::string& text) {
  Diag diag("r", text);
  absl::StatusOr<std::vector<Token>> t = Lex(text, diag, RuleLimits());
  EXPECT_TRUE(t.ok()) << t.status();
  std::vector<Tok> out;
  if (t.ok()) {
    for (const Token& x : *t) out.push_back(x.kind);
  }
  return out;
}

std::string LexError(const std::string& text, RuleLimits limits = RuleLimits()) {
  Diag diag("op 'X' shape_rule", text);
  absl::StatusOr<std::vector<Token>> t = Lex(text, diag, limits);
  EXPECT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(t.status().message());
}

TEST(LexerTest, TokensAndKeywords) {
  EXPECT_EQ(Kinds("let x = a ++ [1, 2]; # comment\n"),
            (std::vector<Tok>{Tok::kLet, Tok::kIdent, Tok::kAssign, Tok::kIdent, Tok::kPlusPlus,
                              Tok::kLBracket, Tok::kInt, Tok::kComma, Tok::kInt, Tok::kRBracket,
                              Tok::kSemicolon, Tok::kEnd}));
  EXPECT_EQ(Kinds("a // b % c == d != e <= f >= g < h > i | j"),
            (std::vector<Tok>{Tok::kIdent, Tok::kSlashSlash, Tok::kIdent, Tok::kPercent,
                              Tok::kIdent, Tok::kEq, Tok::kIdent, Tok::kNe, Tok::kIdent, Tok::kLe,
                              Tok::kIdent, Tok::kGe, Tok::kIdent, Tok::kLt, Tok::kIdent, Tok::kGt,
                              Tok::kIdent, Tok::kPipe, Tok::kIdent, Tok::kEnd}));
  EXPECT_EQ(Kinds("if then else for in and or not true false unknown attr output assert"),
            (std::vector<Tok>{Tok::kIf, Tok::kThen, Tok::kElse, Tok::kFor, Tok::kIn, Tok::kAnd,
                              Tok::kOr, Tok::kNot, Tok::kTrue, Tok::kFalse, Tok::kUnknown,
                              Tok::kAttr, Tok::kOutput, Tok::kAssert, Tok::kEnd}));
  EXPECT_EQ(Kinds(""), (std::vector<Tok>{Tok::kEnd}));
  EXPECT_EQ(Kinds("# only a comment"), (std::vector<Tok>{Tok::kEnd}));
}

TEST(LexerTest, LiteralsAndPositions) {
  const std::string text = "x\n  9223372036854775807 \"a\\\"b\\n\"";
  Diag diag("r", text);
  absl::StatusOr<std::vector<Token>> t = Lex(text, diag, RuleLimits());
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 4u);
  EXPECT_EQ((*t)[1].int_value, INT64_MAX);
  EXPECT_EQ((*t)[1].pos, 4);
  EXPECT_EQ(Diag::LineCol(text, (*t)[1].pos), std::make_pair(2, 3));
  EXPECT_EQ((*t)[2].text, "a\"b\n");
}

TEST(LexerTest, Errors) {
  EXPECT_EQ(LexError("a $ b"), "op 'X' shape_rule 1:3: unexpected character '$'");
  EXPECT_EQ(LexError("a\n / b"),
            "op 'X' shape_rule 2:2: unexpected '/' (integer division is '//', ceiling "
            "division cdiv(a, b))");
  EXPECT_EQ(LexError("!a"), "op 'X' shape_rule 1:1: unexpected '!' (negation is 'not')");
  EXPECT_EQ(LexError("a && b"), "op 'X' shape_rule 1:3: unexpected '&' (conjunction is 'and')");
  EXPECT_EQ(LexError("x = \"abc"), "op 'X' shape_rule 1:5: unterminated string literal");
  EXPECT_EQ(LexError("\"ab\ncd\""), "op 'X' shape_rule 1:1: unterminated string literal");
  EXPECT_EQ(LexError("\"\\q\""),
            "op 'X' shape_rule 1:2: unknown escape '\\q' in string (use \\\" \\\\ \\n \\t)");
  EXPECT_EQ(LexError("12abc"), "op 'X' shape_rule 1:1: malformed number '12abc'");
  EXPECT_EQ(LexError("9223372036854775808"),
            "op 'X' shape_rule 1:1: integer literal 9223372036854775808 does not fit in int64");
  EXPECT_EQ(LexError("\x01"), "op 'X' shape_rule 1:1: unexpected character '\\x01'");
  RuleLimits small;
  small.max_text_bytes = 4;
  EXPECT_EQ(LexError("12345", small), "op 'X' shape_rule 1:1: rule text is 5 bytes; the limit is 4");
}

}  // namespace
}  // namespace rules
}  // namespace graphopt
