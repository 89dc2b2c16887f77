#ifndef GRAPHOPT_RULES_LEXER_H_
#define GRAPHOPT_RULES_LEXER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rules/program.h"

namespace graphopt {
namespace rules {

enum class Tok : uint8_t {
  kEnd,
  kInt,
  kString,
  kIdent,
  kLParen,
  kRParen,
  kLBracket,
  kRBracket,
  kLBrace,
  kRBrace,
  kComma,
  kSemicolon,
  kColon,
  kDot,
  kAssign,  // =
  kEq,      // ==
  kNe,      // !=
  kLt,
  kLe,
  kGt,
  kGe,
  kPlus,
  kPlusPlus,
  kMinus,
  kStar,
  kSlashSlash,
  kPercent,
  kPipe,
  // Keywords.
  kLet,
  kAssert,
  kOutput,
  kIf,
  kThen,
  kElse,
  kFor,
  kIn,
  kAnd,
  kOr,
  kNot,
  kTrue,
  kFalse,
  kUnknown,
  kAttr,
};

struct Token {
  Tok kind = Tok::kEnd;
  int32_t pos = 0;
  int32_t end = 0;
  int64_t int_value = 0;  // kInt
  std::string text;       // kIdent and keywords: the word; kString: the unescaped contents
};

// "'let'", "identifier", "';'", ... for error messages.
std::string TokName(Tok kind);

// Splits `source` into tokens, ending with a kEnd token. INVALID_ARGUMENT (through `diag`) for
// an unexpected character, an unterminated string, an integer literal outside int64, or text
// longer than limits.max_text_bytes.
absl::StatusOr<std::vector<Token>> Lex(absl::string_view source, const Diag& diag,
                                       const RuleLimits& limits);

}  // namespace rules
}  // namespace graphopt

#endif  // GRAPHOPT_RULES_LEXER_H_
