#include "rules/parser.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rules/lexer.h"

namespace graphopt {
namespace rules {
namespace {

const char* OpName(Op op) {
  switch (op) {
    case Op::kNeg:
      return "neg";
    case Op::kNot:
      return "not";
    case Op::kAdd:
      return "+";
    case Op::kSub:
      return "-";
    case Op::kMul:
      return "*";
    case Op::kFloorDiv:
      return "//";
    case Op::kMod:
      return "%";
    case Op::kEq:
      return "==";
    case Op::kNe:
      return "!=";
    case Op::kLt:
      return "<";
    case Op::kLe:
      return "<=";
    case Op::kGt:
      return ">";
    case Op::kGe:
      return ">=";
    case Op::kAnd:
      return "and";
    case Op::kOr:
      return "or";
    case Op::kConcat:
      return "++";
    case Op::kCoalesce:
      return "|";
    case Op::kIn:
      return "in";
    case Op::kIf:
      return "if";
    case Op::kList:
      return "list";
    case Op::kIndex:
      return "index";
    case Op::kSlice:
      return "slice";
    case Op::kComprehension:
      return "for";
    default:
      return "?";
  }
}

// The tree under `id` as an S-expression.
std::string Sexp(const Program& p, int32_t id) {
  const Node& n = p.nodes[id];
  switch (n.op) {
    case Op::kInt:
      return absl::StrCat(n.imm);
    case Op::kBool:
      return n.imm ? "true" : "false";
    case Op::kString:
      return absl::StrCat("\"", n.text, "\"");
    case Op::kUnknown:
      return "unknown";
    case Op::kName:
      return n.text;
    default:
      break;
  }
  std::string head = n.op == Op::kCallName   ? n.text
                     : n.op == Op::kAttrName ? absl::StrCat("attr.", n.text)
                     : n.op == Op::kComprehension
                         ? absl::StrCat("for ", n.text)
                         : n.op == Op::kSlice ? absl::StrCat("slice", n.imm)
                                              : OpName(n.op);
  std::string out = absl::StrCat("(", head);
  for (int k = 0; k < n.num_kids; ++k) absl::StrAppend(&out, " ", Sexp(p, p.kid(n, k)));
  return out + ")";
}

absl::Status ParseText(const std::string& text, Program* p, RuleLimits limits = RuleLimits()) {
  p->source = text;
  Diag diag("op 'X' shape_rule", p->source);
  absl::StatusOr<std::vector<Token>> t = Lex(p->source, diag, limits);
  if (!t.ok()) return t.status();
  return Parse(*t, diag, limits, p);
}

// The expression of `output[0] = <expr>;` as an S-expression.
std::string E(const std::string& expr) {
  Program p;
  absl::Status s = ParseText(absl::StrCat("output[0] = ", expr, ";"), &p);
  if (!s.ok()) return std::string(s.message());
  return Sexp(p, p.stmts[0].expr);
}

std::string ParseError(const std::string& text, RuleLimits limits = RuleLimits()) {
  Program p;
  absl::Status s = ParseText(text, &p, limits);
  EXPECT_FALSE(s.ok());
  return std::string(s.message());
}

TEST(ParserTest, Precedence) {
  EXPECT_EQ(E("1 + 2 * 3"), "(+ 1 (* 2 3))");
  EXPECT_EQ(E("1 - 2 - 3"), "(- (- 1 2) 3)");
  EXPECT_EQ(E("a // b % c"), "(% (// a b) c)");
  EXPECT_EQ(E("-a * b"), "(* (neg a) b)");
  EXPECT_EQ(E("-3"), "-3");
  EXPECT_EQ(E("- -3"), "3");
  EXPECT_EQ(E("a ++ b + c"), "(++ a (+ b c))");
  EXPECT_EQ(E("a | b ++ c"), "(| a (++ b c))");
  EXPECT_EQ(E("a + 1 == b or not c and d"), "(or (== (+ a 1) b) (and (not c) d))");
  EXPECT_EQ(E("x in {1, 2}"), "(in x 1 2)");
  EXPECT_EQ(E("if a then b else if c then d else e"), "(if a b (if c d e))");
  EXPECT_EQ(E("(1 + 2) * 3"), "(* (+ 1 2) 3)");
}

TEST(ParserTest, ListsCallsAndPostfix) {
  EXPECT_EQ(E("[]"), "(list)");
  EXPECT_EQ(E("[1, 2, 3,]"), "(list 1 2 3)");
  EXPECT_EQ(E("[i * 2 for i in range(n) if i > 0]"),
            "(for i (range n) (* i 2) (> i 0))");
  EXPECT_EQ(E("[d for d in shape(X)]"), "(for d (shape X) d)");
  EXPECT_EQ(E("l[0][-1]"), "(index (index l 0) -1)");
  EXPECT_EQ(E("l[1:]"), "(slice1 l 1)");
  EXPECT_EQ(E("l[:2]"), "(slice2 l 2)");
  EXPECT_EQ(E("l[1:-1]"), "(slice3 l 1 -1)");
  EXPECT_EQ(E("l[:]"), "(slice0 l)");
  EXPECT_EQ(E("f()"), "(f)");
  EXPECT_EQ(E("max(a, b, 3)"), "(max a b 3)");
  EXPECT_EQ(E("attr.axis"), "(attr.axis)");
  EXPECT_EQ(E("attr.if"), "(attr.if)");
  EXPECT_EQ(E("attr(\"axis\", 1)"), "(attr.axis 1)");
  EXPECT_EQ(E("shape(Xs[k])"), "(shape (index Xs k))");
  EXPECT_EQ(E("\"s\""), "\"s\"");
  EXPECT_EQ(E("unknown"), "unknown");
}

TEST(ParserTest, Statements) {
  Program p;
  ASSERT_TRUE(ParseText("let a = 1;\nassert a > 0, \"a is \", a;\noutput[0] = [a];\n"
                        "output[Y].value = [a];\noutput[*] = [[a]];\nT in {float32, int64};",
                        &p)
                  .ok());
  ASSERT_EQ(p.stmts.size(), 6u);
  EXPECT_EQ(p.stmts[0].kind, StmtKind::kLet);
  EXPECT_EQ(p.stmts[0].name, "a");
  EXPECT_EQ(p.stmts[1].kind, StmtKind::kAssert);
  EXPECT_EQ(p.stmts[1].parts.size(), 2u);
  EXPECT_EQ(p.source.substr(p.stmts[1].text_begin, p.stmts[1].text_end - p.stmts[1].text_begin),
            "a > 0");
  EXPECT_EQ(p.stmts[2].kind, StmtKind::kOutput);
  EXPECT_EQ(p.stmts[2].output, 0);
  EXPECT_EQ(p.stmts[3].kind, StmtKind::kOutputValue);
  EXPECT_EQ(p.stmts[3].name, "Y");
  EXPECT_EQ(p.stmts[4].kind, StmtKind::kOutputAll);
  EXPECT_EQ(p.stmts[5].kind, StmtKind::kConstraint);
  EXPECT_EQ(p.stmts[5].parts.size(), 2u);
  // A cost rule's final expression needs no semicolon.
  Program c;
  ASSERT_TRUE(ParseText("let n = 2;\nn * 3", &c).ok());
  EXPECT_EQ(c.stmts[1].kind, StmtKind::kResult);
}

TEST(ParserTest, SyntaxErrors) {
  EXPECT_EQ(ParseError("let a = 1"),
            "op 'X' shape_rule 1:10: expected ';' at the end of the statement, found end of rule");
  EXPECT_EQ(ParseError("let = 1;"),
            "op 'X' shape_rule 1:5: expected a name after 'let', found '='");
  EXPECT_EQ(ParseError("output[0] = 1 +;"),
            "op 'X' shape_rule 1:16: expected an expression, found ';'");
  EXPECT_EQ(ParseError("output[0] = a < b < c;"),
            "op 'X' shape_rule 1:19: comparisons do not chain; combine them with 'and'");
  EXPECT_EQ(ParseError("output[0] = if a then b;"),
            "op 'X' shape_rule 1:24: expected 'else' in 'if ... then ... else ...', found ';'");
  EXPECT_EQ(ParseError("output[0] = [1, 2;"),
            "op 'X' shape_rule 1:18: expected ']' to close the list, found ';'");
  EXPECT_EQ(ParseError("output[x + 1] = [];"),
            "op 'X' shape_rule 1:10: expected ']' to close output[...], found '+'");
  EXPECT_EQ(ParseError("output[0].shape = [];"),
            "op 'X' shape_rule 1:11: expected 'value' after 'output[I].' (output[I].value = ...)");
  EXPECT_EQ(ParseError("output[0] = attr(axis);"),
            "op 'X' shape_rule 1:18: attr(...) takes the attribute name as a string literal, "
            "found identifier 'axis'");
  EXPECT_EQ(ParseError("output[0] = [x for 1 in y];"),
            "op 'X' shape_rule 1:20: expected a variable name after 'for', found integer 1");
  EXPECT_EQ(ParseError("output[0] = f(1, 2;"),
            "op 'X' shape_rule 1:19: expected ')' to close the argument list, found ';'");
}

TEST(ParserTest, NestingIsBounded) {
  // Far deeper than the limit: a clear error, no stack overflow. (The text limit would stop
  // such texts first; lift it to reach the parser.)
  RuleLimits big_text;
  big_text.max_text_bytes = 1 << 24;
  for (const std::string& open : {std::string("("), std::string("["), std::string("f("),
                                  std::string("not "), std::string("-"),
                                  std::string("if a then b else ")}) {
    std::string text = "output[0] = ";
    for (int i = 0; i < 100000; ++i) text += open;
    text += "1";
    const std::string error = ParseError(text, big_text);
    EXPECT_NE(error.find("expression nests too deeply (more than 256 levels)"),
              std::string::npos)
        << open << ": " << error;
  }
  // Long operator chains build deep trees too.
  std::string chain = "output[0] = 1";
  for (int i = 0; i < 1000; ++i) chain += " + 1";
  EXPECT_NE(ParseError(chain + ";", big_text).find("nests too deeply"), std::string::npos);
  // Within the limit it parses.
  std::string ok = "output[0] = ";
  for (int i = 0; i < 200; ++i) ok += "(";
  ok += "1";
  for (int i = 0; i < 200; ++i) ok += ")";
  Program p;
  EXPECT_TRUE(ParseText(ok + ";", &p).ok());
  RuleLimits shallow;
  shallow.max_depth = 3;
  EXPECT_EQ(ParseError("output[0] = [[[[1]]]];", shallow),
            "op 'X' shape_rule 1:16: expression nests too deeply (more than 3 levels)");
}

}  // namespace
}  // namespace rules
}  // namespace graphopt
