#include "rules/interpreter.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "rules/bytecode.h"
#include "rules/machine.h"

namespace graphopt {
namespace rules {
namespace {

class Interpreter : public Machine {
 public:
  Interpreter(const Program& p, const RuleLimits& limits, const InferenceContext& ctx)
      : Machine(p, limits, ctx, /*bc=*/nullptr) {}

  // The statements in order; false (with Status() set) when the rule fails.
  bool RunStatements(Results* results);

 private:
  // Charges one step and evaluates node `id`.
  Val Run(int32_t id) {
    const Insn& n = code_[id];
    if (++steps_ > max_steps_) return BudgetExceeded(n.pos);
    return Eval(n);
  }
  // Child k of `n`.
  Val Kid(const Insn& n, int k) { return Run(kids_[n.first_kid + k]); }
  // The values of children [from, n.num_kids) of `n`, in order; false when one failed.
  bool Kids(const Insn& n, int from, absl::InlinedVector<Val, 8>* out) {
    for (int k = from; k < n.num_kids; ++k) {
      out->push_back(Kid(n, k));
      if (out->back().failed()) return false;
    }
    return true;
  }
  // The values of the expressions `ids`, in order; false when one failed.
  bool Values(const std::vector<int32_t>& ids, absl::InlinedVector<Val, 8>* out) {
    for (int32_t id : ids) {
      out->push_back(Run(id));
      if (out->back().failed()) return false;
    }
    return true;
  }

  Val Eval(const Insn& n);
  Val Binary(const Insn& n);
  Val AndOr(const Insn& n, bool is_and);
  Val In(const Insn& n);
  Val List(const Insn& n);
  Val Slice(const Insn& n);
  Val Comprehension(const Insn& n);
  Val RangeComprehension(const Insn& n);
  Val Call(const Insn& n);
};

Val Interpreter::Eval(const Insn& n) {
  switch (n.handler) {
    case kHSlot:
      return slots_[n.imm];
    case kHInt:
      return Val::Int(n.imm);
    case kHBool:
      return Val::Bool(n.imm != 0);
    case kHString:
      return Val::Str(&p_.nodes[&n - code_].text);
    case kHDType:
      return Val::DType(n.imm);
    case kHUnknown:
      return Val();
    case kHAttr: {
      bool absent = false;
      const Val v = EvalAttr(n, &absent);
      return absent ? Kid(n, 0) : v;
    }
    case kHNeg: {
      const Val a = Kid(n, 0);
      if (a.failed()) return a;
      return IntOp(Arith::kSub, n.pos, Val::Int(0), a);
    }
    case kHNot: {
      const Val a = Kid(n, 0);
      if (a.failed()) return a;
      return NotOf(a);
    }
    case kHAnd:
    case kHOr:
      return AndOr(n, n.handler == kHAnd);
    case kHCoalesce: {
      const Val a = Kid(n, 0);
      if (!a.unknown()) return a;  // a value, or an error
      return Kid(n, 1);
    }
    case kHIn:
      return In(n);
    case kHIf: {
      const Val c = Kid(n, 0);
      if (c.failed() || c.unknown()) return c;
      return c.i != 0 ? Kid(n, 1) : Kid(n, 2);
    }
    case kHList:
      return List(n);
    case kHSlice:
      return Slice(n);
    case kHComprehension:
      return Comprehension(n);
    case kHComprehensionRange:
      return RangeComprehension(n);
    case kHInvalid:
      return Fail(n.pos, "internal: unresolved expression");
    default:
      return n.handler >= kHFn ? Call(n) : Binary(n);
  }
}

// The operators of two operands, evaluated in order.
Val Interpreter::Binary(const Insn& n) {
  const Val a = Kid(n, 0);
  if (a.failed()) return a;
  const Val b = Kid(n, 1);
  if (b.failed()) return b;
  switch (n.handler) {
    case kHAdd:
      return IntOp(Arith::kAdd, n.pos, a, b);
    case kHSub:
      return IntOp(Arith::kSub, n.pos, a, b);
    case kHMul:
      return IntOp(Arith::kMul, n.pos, a, b);
    case kHFloorDiv:
      return IntOp(Arith::kFloorDiv, n.pos, a, b);
    case kHMod:
      return IntOp(Arith::kMod, n.pos, a, b);
    case kHEq:
      return EqualityOf<false>(a, b);
    case kHNe:
      return EqualityOf<true>(a, b);
    case kHLt:
      return OrderOf<Op::kLt>(a, b);
    case kHLe:
      return OrderOf<Op::kLe>(a, b);
    case kHGt:
      return OrderOf<Op::kGt>(a, b);
    case kHGe:
      return OrderOf<Op::kGe>(a, b);
    case kHConcat:
      return ConcatOf(n.pos, a, b);
    case kHIndex:
      return IndexOf(n, a, b);
    default:
      return Fail(n.pos, "internal: not a binary operator");
  }
}

Val Interpreter::AndOr(const Insn& n, bool is_and) {
  const Val a = Kid(n, 0);
  if (a.failed() || (is_and ? Decides<true>(a) : Decides<false>(a))) return a;
  const Val b = Kid(n, 1);
  if (b.failed()) return b;
  return is_and ? AndOrRest<true>(a, b) : AndOrRest<false>(a, b);
}

Val Interpreter::In(const Insn& n) {
  const Val x = Kid(n, 0);
  if (x.failed()) return x;
  bool maybe = false;
  for (int k = 1; k < n.num_kids; ++k) {
    const Val m = Kid(n, k);
    if (m.failed()) return m;
    const Tri t = MemberOf(x, m);
    if (t == kTrue) return Val::Bool(true);
    maybe |= t == kMaybe;
  }
  return maybe ? Val() : Val::Bool(false);
}

Val Interpreter::List(const Insn& n) {
  size_t base;
  if (!BeginList(n.pos, n.num_kids, &base)) return Val::Error();
  for (int k = 0; k < n.num_kids; ++k) {
    const Val e = Kid(n, k);
    if (e.failed()) return e;
    scratch_.push_back(e);
  }
  return ListFromScratch(base);
}

Val Interpreter::Slice(const Insn& n) {
  const Val l = Kid(n, 0);
  if (l.failed()) return l;
  Val bounds[2];
  int kid = 1;
  for (int b = 0; b < 2; ++b) {
    if ((n.imm & (1 << b)) == 0) continue;
    bounds[b] = Kid(n, kid++);
    if (bounds[b].failed()) return bounds[b];
    if (bounds[b].tag() != Tag::kInt) return Val();
  }
  return SliceOf(n, l, bounds[0], bounds[1]);
}

Val Interpreter::Comprehension(const Insn& n) {
  const Val iter = Kid(n, 0);
  if (iter.failed() || iter.unknown()) return iter;
  const size_t base = scratch_.size();
  const bool filtered = n.num_kids > 2;
  for (uint32_t k = 0; k < iter.len(); ++k) {
    slots_[n.imm] = HeapAt(iter, k);
    if (filtered) {
      const Val keep = Kid(n, 2);
      if (keep.failed()) return keep;
      if (keep.unknown()) {  // the length is not known
        scratch_.truncate(base);
        return Val();
      }
      if (keep.i == 0) continue;
    }
    const Val e = Kid(n, 1);
    if (e.failed()) return e;
    scratch_.push_back(e);
  }
  return ListFromScratch(base);
}

// [E for i in range(N) (if C)]: kid 0 is the range(N) call, read without evaluating it as a
// node (the language charges it as a range of N elements, not as a list built first).
Val Interpreter::RangeComprehension(const Insn& n) {
  const Insn& it = code_[n.kid0];
  const Val count = Kid(it, 0);
  if (count.failed()) return count;
  if (count.tag() != Tag::kInt) return Val();
  if (count.i > limits_.max_list_length) {
    return Fail(it.pos, absl::StrCat("range() of ", count.i, " elements exceeds the limit of ",
                                     limits_.max_list_length));
  }
  if (!Charge(it.pos, std::max<int64_t>(count.i, 0))) return Val::Error();
  const size_t base = scratch_.size();
  const bool filtered = n.num_kids > 2;
  for (int64_t k = 0; k < count.i; ++k) {
    slots_[n.imm] = Val::Int(k);
    if (filtered) {
      const Val keep = Kid(n, 2);
      if (keep.failed()) return keep;
      if (keep.unknown()) {
        scratch_.truncate(base);
        return Val();
      }
      if (keep.i == 0) continue;
    }
    const Val e = Kid(n, 1);
    if (e.failed()) return e;
    scratch_.push_back(e);
  }
  return ListFromScratch(base);
}

Val Interpreter::Call(const Insn& n) {
  const Fn fn = FnOf(n);
  switch (fn) {
    case Fn::kRank:
    case Fn::kShape:
    case Fn::kValue:
    case Fn::kDim:
    case Fn::kHas:
    case Fn::kDTypeOf:
    case Fn::kCount:
    case Fn::kShapes:
    case Fn::kHasAttr:
    case Fn::kAttrDType:
    case Fn::kOpset:
    case Fn::kNumInputs:
    case Fn::kNumOutputs: {
      int input = static_cast<int>(n.imm);
      if (n.ref == Ref::kVariadicItem) {
        const Val k = Kid(n, 0);
        if (k.failed()) return k;
        if (fn == Fn::kHas) return HasItem(n, k);
        if (!VariadicIndex(n, k, &input)) return Val::Error();
        if (input < 0) return Val();
      }
      if (fn != Fn::kDim) return kNodeBuiltins[static_cast<int>(fn)](*this, n, input);
      const Val s = kNodeBuiltins[static_cast<int>(Fn::kShape)](*this, n, input);
      if (s.failed()) return s;
      const Val axis = Kid(n, n.ref == Ref::kVariadicItem ? 1 : 0);
      if (axis.failed()) return axis;
      return DimAt(n, input, s, axis);
    }
    case Fn::kFail: {
      absl::InlinedVector<Val, 8> parts;
      if (!Kids(n, 0, &parts)) return parts.back();
      return FailWith(n, parts.data());
    }
    default: {
      absl::InlinedVector<Val, 8> args;
      if (!Kids(n, 0, &args)) return args.back();
      if (fn == Fn::kKnown) return KnownOf(args[0]);
      if (fn == Fn::kLen) return LenOf(args[0]);
      return ApplyNode(n, args.data(), n.num_kids);
    }
  }
}

bool Interpreter::RunStatements(Results* results) {
  for (const Stmt& st : p_.stmts) {
    absl::InlinedVector<Val, 8> parts;
    switch (st.kind) {
      case StmtKind::kLet: {
        const Val v = Run(st.expr);
        if (v.failed()) return false;
        slots_[st.slot] = v;
        break;
      }
      case StmtKind::kAssert: {
        const Val v = Run(st.expr);
        if (v.failed()) return false;
        if (v.unknown() || v.i != 0) break;
        if (Values(st.parts, &parts)) AssertFailed(st, parts.data());
        return false;
      }
      case StmtKind::kConstraint:
        if (!Values(st.parts, &parts) || !CheckConstraint(st, parts.data())) return false;
        break;
      case StmtKind::kOutput:
      case StmtKind::kOutputValue:
      case StmtKind::kOutputAll:
      case StmtKind::kResult: {
        const Val v = Run(st.expr);
        if (v.failed()) return false;
        Record(st, v, results);
        break;
      }
    }
  }
  return true;
}

}  // namespace

absl::Status InterpretShape(const Program& program, const RuleLimits& limits,
                            InferenceContext& ctx) {
  Interpreter in(program, limits, ctx);
  Interpreter::Results results;
  if (!in.RunStatements(&results)) return in.Status();
  return in.WriteShapes(results, ctx);
}

absl::Status InterpretType(const Program& program, const RuleLimits& limits,
                           InferenceContext& ctx) {
  Interpreter in(program, limits, ctx);
  Interpreter::Results results;
  if (!in.RunStatements(&results)) return in.Status();
  return in.WriteTypes(results, ctx);
}

absl::StatusOr<std::optional<int64_t>> InterpretCost(const Program& program,
                                                     const RuleLimits& limits,
                                                     const InferenceContext& ctx) {
  Interpreter in(program, limits, ctx);
  Interpreter::Results results;
  if (!in.RunStatements(&results)) return in.Status();
  return in.Cost(results);
}

}  // namespace rules
}  // namespace graphopt
