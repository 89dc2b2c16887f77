#include "rules/parser.h"

#include <algorithm>
#include <initializer_list>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace graphopt {
namespace rules {
namespace {

bool IsComparison(Tok t) {
  return t == Tok::kEq || t == Tok::kNe || t == Tok::kLt || t == Tok::kLe || t == Tok::kGt ||
         t == Tok::kGe;
}

Op BinaryOp(Tok t) {
  switch (t) {
    case Tok::kEq:
      return Op::kEq;
    case Tok::kNe:
      return Op::kNe;
    case Tok::kLt:
      return Op::kLt;
    case Tok::kLe:
      return Op::kLe;
    case Tok::kGt:
      return Op::kGt;
    case Tok::kGe:
      return Op::kGe;
    case Tok::kPlus:
      return Op::kAdd;
    case Tok::kMinus:
      return Op::kSub;
    case Tok::kStar:
      return Op::kMul;
    case Tok::kSlashSlash:
      return Op::kFloorDiv;
    case Tok::kPercent:
      return Op::kMod;
    case Tok::kPlusPlus:
      return Op::kConcat;
    case Tok::kPipe:
      return Op::kCoalesce;
    case Tok::kAnd:
      return Op::kAnd;
    case Tok::kOr:
      return Op::kOr;
    default:
      return Op::kUnknown;
  }
}

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, const Diag& diag, const RuleLimits& limits,
         Program* program)
      : toks_(tokens), diag_(diag), limits_(limits), p_(program) {}

  absl::Status ParseRule() {
    while (Peek().kind != Tok::kEnd) {
      if (absl::Status s = ParseStatement(); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

 private:
  // Keeps parser recursion bounded by limits.max_depth.
  class Nest {
   public:
    explicit Nest(Parser* p) : p_(p) { ++p_->nesting_; }
    ~Nest() { --p_->nesting_; }
    bool too_deep() const { return p_->nesting_ > p_->limits_.max_depth; }

   private:
    Parser* p_;
  };

  const Token& Peek(int k = 0) const {
    const size_t i = std::min(pos_ + k, toks_.size() - 1);
    return toks_[i];
  }
  const Token& Next() {
    const Token& t = toks_[pos_];
    prev_end_ = t.end;
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  bool Accept(Tok kind) {
    if (Peek().kind != kind) return false;
    Next();
    return true;
  }
  absl::Status Expect(Tok kind, absl::string_view context) {
    if (Accept(kind)) return absl::OkStatus();
    return diag_.Error(Peek().pos, absl::StrCat("expected ", TokName(kind), " ", context,
                                                ", found ", Describe(Peek())));
  }
  static std::string Describe(const Token& t) {
    switch (t.kind) {
      case Tok::kIdent:
        return absl::StrCat("identifier '", t.text, "'");
      case Tok::kInt:
        return absl::StrCat("integer ", t.int_value);
      case Tok::kString:
        return "a string";
      default:
        return TokName(t.kind);
    }
  }
  absl::Status TooDeep() const {
    return diag_.Error(Peek().pos, absl::StrCat("expression nests too deeply (more than ",
                                                limits_.max_depth, " levels)"));
  }

  // Adds a node whose children are `kids`; fails when the tree gets deeper than allowed.
  absl::StatusOr<int32_t> Make(Op op, int32_t pos, std::initializer_list<int32_t> kids,
                               std::string text = "", int64_t imm = 0) {
    return MakeV(op, pos, std::vector<int32_t>(kids), std::move(text), imm);
  }
  absl::StatusOr<int32_t> MakeV(Op op, int32_t pos, const std::vector<int32_t>& kids,
                                std::string text = "", int64_t imm = 0) {
    int depth = 1;
    for (int32_t k : kids) depth = std::max(depth, depth_[k] + 1);
    if (depth > limits_.max_depth) {
      return diag_.Error(pos, absl::StrCat("expression nests too deeply (more than ",
                                           limits_.max_depth, " levels)"));
    }
    Node n;
    n.op = op;
    n.pos = pos;
    n.end = prev_end_;
    n.first_kid = static_cast<int32_t>(p_->kids.size());
    n.num_kids = static_cast<int32_t>(kids.size());
    n.imm = imm;
    n.text = std::move(text);
    p_->kids.insert(p_->kids.end(), kids.begin(), kids.end());
    p_->nodes.push_back(std::move(n));
    depth_.push_back(depth);
    return static_cast<int32_t>(p_->nodes.size() - 1);
  }

  absl::Status ParseStatement() {
    const Token& first = Peek();
    Stmt st;
    st.pos = first.pos;
    switch (first.kind) {
      case Tok::kLet: {
        Next();
        if (Peek().kind != Tok::kIdent) {
          return diag_.Error(Peek().pos, absl::StrCat("expected a name after 'let', found ",
                                                      Describe(Peek())));
        }
        st.kind = StmtKind::kLet;
        st.pos = Peek().pos;
        st.name = Next().text;
        if (absl::Status s = Expect(Tok::kAssign, absl::StrCat("after 'let ", st.name, "'"));
            !s.ok()) {
          return s;
        }
        if (absl::Status s = ParseInto(&st.expr); !s.ok()) return s;
        break;
      }
      case Tok::kAssert: {
        Next();
        st.kind = StmtKind::kAssert;
        st.text_begin = Peek().pos;
        if (absl::Status s = ParseInto(&st.expr); !s.ok()) return s;
        st.text_end = prev_end_;
        while (Accept(Tok::kComma)) {
          int32_t part;
          if (absl::Status s = ParseInto(&part); !s.ok()) return s;
          st.parts.push_back(part);
        }
        break;
      }
      case Tok::kOutput: {
        Next();
        if (absl::Status s = Expect(Tok::kLBracket, "after 'output'"); !s.ok()) return s;
        st.kind = StmtKind::kOutput;
        if (Peek().kind == Tok::kInt) {
          st.output = static_cast<int32_t>(std::min<int64_t>(Next().int_value, 1 << 30));
        } else if (Peek().kind == Tok::kIdent) {
          st.name = Next().text;
        } else if (Accept(Tok::kStar)) {
          st.kind = StmtKind::kOutputAll;
        } else {
          return diag_.Error(Peek().pos,
                             absl::StrCat("expected an output index, an output name or '*' in "
                                          "output[...], found ",
                                          Describe(Peek())));
        }
        if (absl::Status s = Expect(Tok::kRBracket, "to close output[...]"); !s.ok()) return s;
        if (Accept(Tok::kDot)) {
          if (Peek().kind != Tok::kIdent || Peek().text != "value" ||
              st.kind == StmtKind::kOutputAll) {
            return diag_.Error(Peek().pos,
                               "expected 'value' after 'output[I].' (output[I].value = ...)");
          }
          Next();
          st.kind = StmtKind::kOutputValue;
        }
        if (absl::Status s = Expect(Tok::kAssign, "after output[...]"); !s.ok()) return s;
        if (absl::Status s = ParseInto(&st.expr); !s.ok()) return s;
        break;
      }
      default: {
        if (first.kind == Tok::kIdent && Peek(1).kind == Tok::kIn &&
            Peek(2).kind == Tok::kLBrace) {
          st.kind = StmtKind::kConstraint;
          st.name = Next().text;
          Next();  // in
          Next();  // {
          do {
            int32_t part;
            if (absl::Status s = ParseInto(&part); !s.ok()) return s;
            st.parts.push_back(part);
          } while (Accept(Tok::kComma));
          if (absl::Status s = Expect(Tok::kRBrace, "to close the set of types"); !s.ok()) {
            return s;
          }
          break;
        }
        // An expression: the result of a cost rule (the checker allows it only there).
        st.kind = StmtKind::kResult;
        st.text_begin = first.pos;
        if (absl::Status s = ParseInto(&st.expr); !s.ok()) return s;
        st.text_end = prev_end_;
        if (Peek().kind == Tok::kEnd) {
          p_->stmts.push_back(std::move(st));
          return absl::OkStatus();
        }
        break;
      }
    }
    if (absl::Status s = Expect(Tok::kSemicolon, "at the end of the statement"); !s.ok()) {
      return s;
    }
    p_->stmts.push_back(std::move(st));
    return absl::OkStatus();
  }

  absl::Status ParseInto(int32_t* out) {
    absl::StatusOr<int32_t> e = ParseExpr();
    if (!e.ok()) return e.status();
    *out = *e;
    return absl::OkStatus();
  }

  absl::StatusOr<int32_t> ParseExpr() {
    Nest nest(this);
    if (nest.too_deep()) return TooDeep();
    if (Peek().kind != Tok::kIf) return ParseOr();
    const int32_t pos = Next().pos;
    absl::StatusOr<int32_t> c = ParseExpr();
    if (!c.ok()) return c;
    if (absl::Status s = Expect(Tok::kThen, "after the condition of 'if'"); !s.ok()) return s;
    absl::StatusOr<int32_t> a = ParseExpr();
    if (!a.ok()) return a;
    if (absl::Status s = Expect(Tok::kElse, "in 'if ... then ... else ...'"); !s.ok()) return s;
    absl::StatusOr<int32_t> b = ParseExpr();
    if (!b.ok()) return b;
    return Make(Op::kIf, pos, {*c, *a, *b});
  }

  // A left-associative level: operand (op operand)*.
  template <typename Sub>
  absl::StatusOr<int32_t> LeftAssoc(std::initializer_list<Tok> ops, Sub sub) {
    absl::StatusOr<int32_t> l = (this->*sub)();
    if (!l.ok()) return l;
    while (std::find(ops.begin(), ops.end(), Peek().kind) != ops.end()) {
      const Token& op = Next();
      const Op kind = BinaryOp(op.kind);
      const int32_t pos = op.pos;
      absl::StatusOr<int32_t> r = (this->*sub)();
      if (!r.ok()) return r;
      l = Make(kind, pos, {*l, *r});
      if (!l.ok()) return l;
    }
    return l;
  }

  absl::StatusOr<int32_t> ParseOr() { return LeftAssoc({Tok::kOr}, &Parser::ParseAnd); }
  absl::StatusOr<int32_t> ParseAnd() { return LeftAssoc({Tok::kAnd}, &Parser::ParseNot); }

  absl::StatusOr<int32_t> ParseNot() {
    if (Peek().kind != Tok::kNot) return ParseComparison();
    Nest nest(this);
    if (nest.too_deep()) return TooDeep();
    const int32_t pos = Next().pos;
    absl::StatusOr<int32_t> x = ParseNot();
    if (!x.ok()) return x;
    return Make(Op::kNot, pos, {*x});
  }

  absl::StatusOr<int32_t> ParseComparison() {
    absl::StatusOr<int32_t> l = ParseCoalesce();
    if (!l.ok()) return l;
    if (IsComparison(Peek().kind)) {
      const Token& op = Next();
      const Op kind = BinaryOp(op.kind);
      const int32_t pos = op.pos;
      absl::StatusOr<int32_t> r = ParseCoalesce();
      if (!r.ok()) return r;
      l = Make(kind, pos, {*l, *r});
      if (!l.ok()) return l;
    } else if (Peek().kind == Tok::kIn) {
      const int32_t pos = Next().pos;
      if (absl::Status s = Expect(Tok::kLBrace, "after 'in' (x in {a, b, ...})"); !s.ok()) {
        return s;
      }
      std::vector<int32_t> kids = {*l};
      do {
        absl::StatusOr<int32_t> m = ParseExpr();
        if (!m.ok()) return m;
        kids.push_back(*m);
      } while (Accept(Tok::kComma));
      if (absl::Status s = Expect(Tok::kRBrace, "to close the set"); !s.ok()) return s;
      l = MakeV(Op::kIn, pos, kids);
      if (!l.ok()) return l;
    } else {
      return l;
    }
    if (IsComparison(Peek().kind) || Peek().kind == Tok::kIn) {
      return diag_.Error(Peek().pos, "comparisons do not chain; combine them with 'and'");
    }
    return l;
  }

  absl::StatusOr<int32_t> ParseCoalesce() {
    return LeftAssoc({Tok::kPipe}, &Parser::ParseConcat);
  }
  absl::StatusOr<int32_t> ParseConcat() {
    return LeftAssoc({Tok::kPlusPlus}, &Parser::ParseAdditive);
  }
  absl::StatusOr<int32_t> ParseAdditive() {
    return LeftAssoc({Tok::kPlus, Tok::kMinus}, &Parser::ParseMultiplicative);
  }
  absl::StatusOr<int32_t> ParseMultiplicative() {
    return LeftAssoc({Tok::kStar, Tok::kSlashSlash, Tok::kPercent}, &Parser::ParseUnary);
  }

  absl::StatusOr<int32_t> ParseUnary() {
    if (Peek().kind != Tok::kMinus) return ParsePostfix();
    Nest nest(this);
    if (nest.too_deep()) return TooDeep();
    const int32_t pos = Next().pos;
    absl::StatusOr<int32_t> x = ParseUnary();
    if (!x.ok()) return x;
    Node& n = p_->nodes[*x];
    if (n.op == Op::kInt) {  // fold -literal (literals are >= 0, so no overflow)
      n.imm = -n.imm;
      n.pos = pos;
      return x;
    }
    return Make(Op::kNeg, pos, {*x});
  }

  absl::StatusOr<int32_t> ParsePostfix() {
    absl::StatusOr<int32_t> base = ParsePrimary();
    if (!base.ok()) return base;
    while (Peek().kind == Tok::kLBracket) {
      const int32_t pos = Next().pos;
      std::vector<int32_t> kids = {*base};
      int64_t given = 0;
      bool slice = false;
      if (Peek().kind != Tok::kColon) {
        absl::StatusOr<int32_t> i = ParseExpr();
        if (!i.ok()) return i;
        kids.push_back(*i);
        given |= 1;
      }
      if (Accept(Tok::kColon)) {
        slice = true;
        if (Peek().kind != Tok::kRBracket) {
          absl::StatusOr<int32_t> e = ParseExpr();
          if (!e.ok()) return e;
          kids.push_back(*e);
          given |= 2;
        }
      }
      if (absl::Status s = Expect(Tok::kRBracket, slice ? "to close the slice" : "to close the index");
          !s.ok()) {
        return s;
      }
      base = slice ? MakeV(Op::kSlice, pos, kids, "", given) : MakeV(Op::kIndex, pos, kids);
      if (!base.ok()) return base;
    }
    return base;
  }

  absl::StatusOr<std::vector<int32_t>> ParseArgs() {
    std::vector<int32_t> args;
    if (Accept(Tok::kRParen)) return args;
    do {
      absl::StatusOr<int32_t> a = ParseExpr();
      if (!a.ok()) return a.status();
      args.push_back(*a);
    } while (Accept(Tok::kComma));
    if (absl::Status s = Expect(Tok::kRParen, "to close the argument list"); !s.ok()) return s;
    return args;
  }

  absl::StatusOr<int32_t> ParsePrimary() {
    const Token& t = Peek();
    switch (t.kind) {
      case Tok::kInt: {
        Next();
        return Make(Op::kInt, t.pos, {}, "", t.int_value);
      }
      case Tok::kString: {
        Next();
        return Make(Op::kString, t.pos, {}, t.text);
      }
      case Tok::kTrue:
      case Tok::kFalse: {
        Next();
        return Make(Op::kBool, t.pos, {}, "", t.kind == Tok::kTrue ? 1 : 0);
      }
      case Tok::kUnknown: {
        Next();
        return Make(Op::kUnknown, t.pos, {});
      }
      case Tok::kIdent: {
        Next();
        if (Peek().kind != Tok::kLParen) return Make(Op::kName, t.pos, {}, t.text);
        Next();
        absl::StatusOr<std::vector<int32_t>> args = ParseArgs();
        if (!args.ok()) return args.status();
        return MakeV(Op::kCallName, t.pos, *args, t.text);
      }
      case Tok::kAttr: {
        const int32_t pos = Next().pos;
        if (Accept(Tok::kDot)) {
          const Token& name = Peek();
          if (name.text.empty()) {
            return diag_.Error(name.pos, absl::StrCat("expected an attribute name after "
                                                      "'attr.', found ",
                                                      Describe(name)));
          }
          Next();
          return Make(Op::kAttrName, pos, {}, name.text);
        }
        if (Accept(Tok::kLParen)) {
          if (Peek().kind != Tok::kString) {
            return diag_.Error(Peek().pos, absl::StrCat("attr(...) takes the attribute name as "
                                                        "a string literal, found ",
                                                        Describe(Peek())));
          }
          const std::string name = Next().text;
          std::vector<int32_t> kids;
          if (Accept(Tok::kComma)) {
            absl::StatusOr<int32_t> fallback = ParseExpr();
            if (!fallback.ok()) return fallback;
            kids.push_back(*fallback);
          }
          if (absl::Status s = Expect(Tok::kRParen, "to close attr(...)"); !s.ok()) return s;
          return MakeV(Op::kAttrName, pos, kids, name);
        }
        return diag_.Error(Peek().pos, "expected '.' or '(' after 'attr'");
      }
      case Tok::kLParen: {
        Next();
        absl::StatusOr<int32_t> e = ParseExpr();
        if (!e.ok()) return e;
        if (absl::Status s = Expect(Tok::kRParen, "to close '('"); !s.ok()) return s;
        p_->nodes[*e].end = prev_end_;
        return e;
      }
      case Tok::kLBracket: {
        const int32_t pos = Next().pos;
        if (Accept(Tok::kRBracket)) return Make(Op::kList, pos, {});
        absl::StatusOr<int32_t> first = ParseExpr();
        if (!first.ok()) return first;
        if (Accept(Tok::kFor)) {
          if (Peek().kind != Tok::kIdent) {
            return diag_.Error(Peek().pos, absl::StrCat("expected a variable name after 'for', "
                                                        "found ",
                                                        Describe(Peek())));
          }
          const std::string var = Next().text;
          if (absl::Status s = Expect(Tok::kIn, absl::StrCat("after 'for ", var, "'"));
              !s.ok()) {
            return s;
          }
          std::vector<int32_t> kids;
          absl::StatusOr<int32_t> iter = ParseOr();
          if (!iter.ok()) return iter;
          kids = {*iter, *first};
          if (Accept(Tok::kIf)) {
            absl::StatusOr<int32_t> cond = ParseOr();
            if (!cond.ok()) return cond;
            kids.push_back(*cond);
          }
          if (absl::Status s = Expect(Tok::kRBracket, "to close the comprehension"); !s.ok()) {
            return s;
          }
          return MakeV(Op::kComprehension, pos, kids, var);
        }
        std::vector<int32_t> elems = {*first};
        while (Accept(Tok::kComma)) {
          if (Peek().kind == Tok::kRBracket) break;
          absl::StatusOr<int32_t> e = ParseExpr();
          if (!e.ok()) return e;
          elems.push_back(*e);
        }
        if (absl::Status s = Expect(Tok::kRBracket, "to close the list"); !s.ok()) return s;
        return MakeV(Op::kList, pos, elems);
      }
      default:
        return diag_.Error(t.pos, absl::StrCat("expected an expression, found ", Describe(t)));
    }
  }

  const std::vector<Token>& toks_;
  const Diag& diag_;
  const RuleLimits& limits_;
  Program* p_;
  size_t pos_ = 0;
  int32_t prev_end_ = 0;
  int nesting_ = 0;
  std::vector<int> depth_;  // tree depth of each node
};

}  // namespace

absl::Status Parse(const std::vector<Token>& tokens, const Diag& diag, const RuleLimits& limits,
                   Program* program) {
  Parser parser(tokens, diag, limits, program);
  return parser.ParseRule();
}

}  // namespace rules
}  // namespace graphopt
