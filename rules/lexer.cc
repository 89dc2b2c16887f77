#include "rules/lexer.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace graphopt {
namespace rules {
namespace {

struct Keyword {
  const char* word;
  Tok kind;
};

constexpr Keyword kKeywords[] = {
    {"let", Tok::kLet},     {"assert", Tok::kAssert}, {"output", Tok::kOutput},
    {"if", Tok::kIf},       {"then", Tok::kThen},     {"else", Tok::kElse},
    {"for", Tok::kFor},     {"in", Tok::kIn},         {"and", Tok::kAnd},
    {"or", Tok::kOr},       {"not", Tok::kNot},       {"true", Tok::kTrue},
    {"false", Tok::kFalse}, {"unknown", Tok::kUnknown}, {"attr", Tok::kAttr},
};

bool IsIdentStart(char c) { return absl::ascii_isalpha(c) || c == '_'; }
bool IsIdentChar(char c) { return absl::ascii_isalnum(c) || c == '_'; }

std::string Printable(char c) {
  const unsigned char u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string(1, c);
  return absl::StrFormat("\\x%02x", u);
}

}  // namespace

std::string TokName(Tok kind) {
  switch (kind) {
    case Tok::kEnd:
      return "end of rule";
    case Tok::kInt:
      return "integer";
    case Tok::kString:
      return "string";
    case Tok::kIdent:
      return "identifier";
    case Tok::kLParen:
      return "'('";
    case Tok::kRParen:
      return "')'";
    case Tok::kLBracket:
      return "'['";
    case Tok::kRBracket:
      return "']'";
    case Tok::kLBrace:
      return "'{'";
    case Tok::kRBrace:
      return "'}'";
    case Tok::kComma:
      return "','";
    case Tok::kSemicolon:
      return "';'";
    case Tok::kColon:
      return "':'";
    case Tok::kDot:
      return "'.'";
    case Tok::kAssign:
      return "'='";
    case Tok::kEq:
      return "'=='";
    case Tok::kNe:
      return "'!='";
    case Tok::kLt:
      return "'<'";
    case Tok::kLe:
      return "'<='";
    case Tok::kGt:
      return "'>'";
    case Tok::kGe:
      return "'>='";
    case Tok::kPlus:
      return "'+'";
    case Tok::kPlusPlus:
      return "'++'";
    case Tok::kMinus:
      return "'-'";
    case Tok::kStar:
      return "'*'";
    case Tok::kSlashSlash:
      return "'//'";
    case Tok::kPercent:
      return "'%'";
    case Tok::kPipe:
      return "'|'";
    default:
      break;
  }
  for (const Keyword& k : kKeywords) {
    if (k.kind == kind) return absl::StrCat("'", k.word, "'");
  }
  return "token";
}

absl::StatusOr<std::vector<Token>> Lex(absl::string_view src, const Diag& diag,
                                       const RuleLimits& limits) {
  if (static_cast<int64_t>(src.size()) > limits.max_text_bytes) {
    return diag.Error(0, absl::StrCat("rule text is ", src.size(), " bytes; the limit is ",
                                      limits.max_text_bytes));
  }
  std::vector<Token> out;
  const int32_t n = static_cast<int32_t>(src.size());
  int32_t i = 0;
  auto simple = [&](Tok kind, int32_t len) {
    Token t;
    t.kind = kind;
    t.pos = i;
    t.end = i + len;
    out.push_back(std::move(t));
    i += len;
  };
  while (i < n) {
    const char c = src[i];
    const char next = i + 1 < n ? src[i + 1] : '\0';
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++i;
      continue;
    }
    if (c == '#') {
      while (i < n && src[i] != '\n') ++i;
      continue;
    }
    if (absl::ascii_isdigit(c)) {
      Token t;
      t.kind = Tok::kInt;
      t.pos = i;
      uint64_t v = 0;
      bool overflow = false;
      while (i < n && absl::ascii_isdigit(src[i])) {
        const uint64_t d = static_cast<uint64_t>(src[i] - '0');
        if (v > (static_cast<uint64_t>(INT64_MAX) - d) / 10) overflow = true;
        if (!overflow) v = v * 10 + d;
        ++i;
      }
      if (i < n && IsIdentChar(src[i])) {
        while (i < n && IsIdentChar(src[i])) ++i;
        return diag.Error(t.pos, absl::StrCat("malformed number '",
                                              src.substr(t.pos, i - t.pos), "'"));
      }
      if (overflow) {
        return diag.Error(t.pos, absl::StrCat("integer literal ", src.substr(t.pos, i - t.pos),
                                              " does not fit in int64"));
      }
      t.int_value = static_cast<int64_t>(v);
      t.end = i;
      out.push_back(std::move(t));
      continue;
    }
    if (IsIdentStart(c)) {
      Token t;
      t.kind = Tok::kIdent;
      t.pos = i;
      while (i < n && IsIdentChar(src[i])) ++i;
      t.end = i;
      t.text = std::string(src.substr(t.pos, i - t.pos));
      for (const Keyword& k : kKeywords) {
        if (t.text == k.word) t.kind = k.kind;
      }
      out.push_back(std::move(t));
      continue;
    }
    if (c == '"') {
      Token t;
      t.kind = Tok::kString;
      t.pos = i;
      ++i;
      bool closed = false;
      while (i < n) {
        const char s = src[i];
        if (s == '"') {
          closed = true;
          ++i;
          break;
        }
        if (s == '\n') break;
        if (s == '\\') {
          if (i + 1 >= n) break;
          const char e = src[i + 1];
          switch (e) {
            case '"':
              t.text.push_back('"');
              break;
            case '\\':
              t.text.push_back('\\');
              break;
            case 'n':
              t.text.push_back('\n');
              break;
            case 't':
              t.text.push_back('\t');
              break;
            default:
              return diag.Error(i, absl::StrCat("unknown escape '\\", Printable(e),
                                                "' in string (use \\\" \\\\ \\n \\t)"));
          }
          i += 2;
          continue;
        }
        t.text.push_back(s);
        ++i;
      }
      if (!closed) return diag.Error(t.pos, "unterminated string literal");
      t.end = i;
      out.push_back(std::move(t));
      continue;
    }
    switch (c) {
      case '(':
        simple(Tok::kLParen, 1);
        continue;
      case ')':
        simple(Tok::kRParen, 1);
        continue;
      case '[':
        simple(Tok::kLBracket, 1);
        continue;
      case ']':
        simple(Tok::kRBracket, 1);
        continue;
      case '{':
        simple(Tok::kLBrace, 1);
        continue;
      case '}':
        simple(Tok::kRBrace, 1);
        continue;
      case ',':
        simple(Tok::kComma, 1);
        continue;
      case ';':
        simple(Tok::kSemicolon, 1);
        continue;
      case ':':
        simple(Tok::kColon, 1);
        continue;
      case '.':
        simple(Tok::kDot, 1);
        continue;
      case '*':
        simple(Tok::kStar, 1);
        continue;
      case '%':
        simple(Tok::kPercent, 1);
        continue;
      case '|':
        simple(Tok::kPipe, 1);
        continue;
      case '-':
        simple(Tok::kMinus, 1);
        continue;
      case '+':
        if (next == '+') {
          simple(Tok::kPlusPlus, 2);
        } else {
          simple(Tok::kPlus, 1);
        }
        continue;
      case '=':
        if (next == '=') {
          simple(Tok::kEq, 2);
        } else {
          simple(Tok::kAssign, 1);
        }
        continue;
      case '<':
        if (next == '=') {
          simple(Tok::kLe, 2);
        } else {
          simple(Tok::kLt, 1);
        }
        continue;
      case '>':
        if (next == '=') {
          simple(Tok::kGe, 2);
        } else {
          simple(Tok::kGt, 1);
        }
        continue;
      case '!':
        if (next == '=') {
          simple(Tok::kNe, 2);
          continue;
        }
        return diag.Error(i, "unexpected '!' (negation is 'not')");
      case '/':
        if (next == '/') {
          simple(Tok::kSlashSlash, 2);
          continue;
        }
        return diag.Error(i, "unexpected '/' (integer division is '//', ceiling division "
                             "cdiv(a, b))");
      case '&':
        return diag.Error(i, "unexpected '&' (conjunction is 'and')");
      default:
        return diag.Error(i, absl::StrCat("unexpected character '", Printable(c), "'"));
    }
  }
  Token end;
  end.kind = Tok::kEnd;
  end.pos = n;
  end.end = n;
  out.push_back(std::move(end));
  return out;
}

}  // namespace rules
}  // namespace graphopt
