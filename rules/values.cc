// The operations on runtime values: arithmetic over known and symbolic ints, comparisons,
// formatting.

#include "rules/machine.h"

#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/types.h"

namespace graphopt {
namespace rules {

Machine::Machine(const Program& p, const RuleLimits& limits, const InferenceContext& ctx,
                 const Bytecode* bc)
    : p_(p),
      limits_(limits),
      ctx_(ctx),
      node_(ctx.node()),
      code_(p.code.data()),
      kids_(p.kids.data()),
      max_steps_(limits.max_steps),
      num_inputs_(static_cast<int>(node_.inputs.size())) {
  // The registers: the slots first (written by let and comprehensions before they are read:
  // the checker resolves a name only after its definition), then the bytecode's constants and
  // temporaries.
  const int num_regs = bc != nullptr ? bc->num_regs : p.num_slots;
  if (num_regs > kInlineRegs) {
    regs_heap_.reset(new unsigned char[num_regs * sizeof(Val)]);
    slots_ = reinterpret_cast<Val*>(regs_heap_.get());
  } else {
    slots_ = reinterpret_cast<Val*>(regs_inline_);
  }
  if (bc != nullptr && !bc->constants.empty()) {
    std::memcpy(static_cast<void*>(slots_ + bc->first_const), bc->constants.data(),
                bc->constants.size() * sizeof(Val));
  }
}

bool Machine::MonoOp(Arith op, int32_t pos, const Val& a, const Val& b, Val* out) {
  int64_t ca = 0, cb = 0;
  uint32_t sa = 0, sb = 0;
  const bool ma = AsMono(a, &ca, &sa);
  const bool mb = AsMono(b, &cb, &sb);
  if (!(ma || a.tag() == Tag::kInt) || !(mb || b.tag() == Tag::kInt)) return false;
  auto overflow = [&]() {
    *out = Fail(pos, absl::StrCat("integer overflow in ", Format(a, Type::Int()), " ",
                                  ArithSymbol(op), " ", Format(b, Type::Int())));
    return true;
  };
  int64_t c;
  switch (op) {
    case Arith::kAdd:
    case Arith::kSub:
      if (!(ma && mb && sa == sb)) return false;  // s + 1, s + t: polynomials
      if (op == Arith::kAdd ? __builtin_add_overflow(ca, cb, &c)
                            : __builtin_sub_overflow(ca, cb, &c)) {
        return overflow();
      }
      *out = Mono(c, sa);
      return true;
    case Arith::kMul:
      if (ma && mb) return false;  // s * t
      if (__builtin_mul_overflow(ma ? ca : a.i, mb ? cb : b.i, &c)) return overflow();
      *out = Mono(c, ma ? sa : sb);
      return true;
    case Arith::kFloorDiv:
    case Arith::kCeilDiv:
    case Arith::kMod: {
      // c1*s / k, c1*s / (c2*s) and k / (c2*s) (k != 0) are exact only when divisible.
      if (ma && !mb) {
        if (ca % b.i != 0 || (ca == INT64_MIN && b.i == -1)) {
          *out = Val();
        } else {
          *out = op == Arith::kMod ? Val::Int(0) : Mono(ca / b.i, sa);
        }
        return true;
      }
      if (ma && mb) {
        if (sa != sb || ca % cb != 0 || (ca == INT64_MIN && cb == -1)) {
          *out = Val();
        } else {
          *out = Val::Int(op == Arith::kMod ? 0 : ca / cb);
        }
        return true;
      }
      // A known dividend over a symbolic divisor: only 0 is exact.
      *out = a.i == 0 ? Val::Int(0) : Val();
      return true;
    }
  }
  return false;
}

Val Machine::IntOpSlow(Arith op, int32_t pos, const Val& a, const Val& b) {
  const bool division = op == Arith::kFloorDiv || op == Arith::kMod || op == Arith::kCeilDiv;
  if (division && b.tag() == Tag::kInt && b.i == 0) {
    return Fail(pos, op == Arith::kMod ? "modulo by zero" : "division by zero");
  }
  if (a.tag() == Tag::kInt && b.tag() == Tag::kInt) {
    int64_t r = 0;
    bool overflow = false;
    switch (op) {
      case Arith::kAdd:
      case Arith::kSub:
      case Arith::kMul:
        overflow = AddSubMulOverflows(op, a.i, b.i, &r);
        break;
      case Arith::kFloorDiv:
      case Arith::kCeilDiv:
        overflow = a.i == kInt64Min && b.i == -1;
        if (!overflow) r = op == Arith::kFloorDiv ? FloorDivInt(a.i, b.i) : CeilDivInt(a.i, b.i);
        break;
      case Arith::kMod:
        r = b.i == -1 ? 0 : FloorModInt(a.i, b.i);
        break;
    }
    if (overflow) {
      return Fail(pos, op == Arith::kCeilDiv
                           ? absl::StrCat("integer overflow in cdiv(", a.i, ", ", b.i, ")")
                           : absl::StrCat("integer overflow in ", a.i, " ", ArithSymbol(op), " ",
                                          b.i));
    }
    return Val::Int(r);
  }
  // Zero times anything is zero.
  if (op == Arith::kMul &&
      ((a.tag() == Tag::kInt && a.i == 0) || (b.tag() == Tag::kInt && b.i == 0))) {
    return Val::Int(0);
  }
  if (a.unknown() || b.unknown()) return Val();
  Val mono;
  if (MonoOp(op, pos, a, b, &mono)) return mono;
  Materialize(a);
  Materialize(b);
  Poly ta, tb;
  const Poly* pa = PolyOf(a, &ta);
  const Poly* pb = PolyOf(b, &tb);
  Poly r;
  PolyStatus status = PolyStatus::kOk;
  bool exact = true;
  switch (op) {
    case Arith::kAdd:
      status = Poly::Add(*pa, *pb, &r);
      break;
    case Arith::kSub:
      status = Poly::Sub(*pa, *pb, &r);
      break;
    case Arith::kMul:
      status = Poly::Mul(*pa, *pb, &r);
      break;
    case Arith::kFloorDiv:
      exact = Poly::FloorDiv(*pa, *pb, &r);
      break;
    case Arith::kMod:
      exact = Poly::Mod(*pa, *pb, &r);
      break;
    case Arith::kCeilDiv:
      exact = Poly::CeilDiv(*pa, *pb, &r);
      break;
  }
  if (!Charge(pos, static_cast<int64_t>(pa->terms().size() * pb->terms().size() + 1))) {
    return Val::Error();
  }
  if (status == PolyStatus::kOverflow) {
    return Fail(pos, absl::StrCat("integer overflow in a coefficient of ",
                                  Format(a, Type::Int()), " ", ArithSymbol(op), " ",
                                  Format(b, Type::Int())));
  }
  if (status == PolyStatus::kTooLarge || !exact) return Val();
  return FromPoly(std::move(r));
}

Tri Machine::CompareInts(Op op, const Val& a, const Val& b) {
  int64_t diff_sign;  // sign of a - b
  if (a.tag() == Tag::kInt && b.tag() == Tag::kInt) {
    diff_sign = a.i < b.i ? -1 : (a.i > b.i ? 1 : 0);
  } else if (a.unknown() || b.unknown()) {
    return kMaybe;
  } else if (a.tag() == Tag::kSymRef && b.tag() == Tag::kSymRef && *a.s == *b.s) {
    diff_sign = 0;
  } else {
    int64_t ca = 0, cb = 0;
    uint32_t sa = 0, sb = 0;
    const bool ma = AsMono(a, &ca, &sa);
    const bool mb = AsMono(b, &cb, &sb);
    if ((ma || a.tag() == Tag::kInt) && (mb || b.tag() == Tag::kInt)) {
      // c1*s - c2*s is a constant only when it is zero; c*s - k and c1*s - c2*t never are.
      if (!(ma && mb && sa == sb && ca == cb)) return kMaybe;
      return op == Op::kEq || op == Op::kLe || op == Op::kGe ? kTrue : kFalse;
    }
    Materialize(a);
    Materialize(b);
    Poly ta, tb, d;
    const Poly* pa = PolyOf(a, &ta);
    const Poly* pb = PolyOf(b, &tb);
    if (pa == nullptr || pb == nullptr) return kMaybe;
    if (Poly::Sub(*pa, *pb, &d) != PolyStatus::kOk || !d.is_constant()) return kMaybe;
    const int64_t c = d.constant_term();
    diff_sign = c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  bool r = false;
  switch (op) {
    case Op::kEq:
      r = diff_sign == 0;
      break;
    case Op::kNe:
      r = diff_sign != 0;
      break;
    case Op::kLt:
      r = diff_sign < 0;
      break;
    case Op::kLe:
      r = diff_sign <= 0;
      break;
    case Op::kGt:
      r = diff_sign > 0;
      break;
    case Op::kGe:
      r = diff_sign >= 0;
      break;
    default:
      return kMaybe;
  }
  return r ? kTrue : kFalse;
}

Tri Machine::Equal(const Val& a, const Val& b) {
  if (a.unknown() || b.unknown()) return kMaybe;
  switch (a.tag()) {
    case Tag::kInt:
    case Tag::kSym:
    case Tag::kSymRef:
    case Tag::kMono:
      return CompareInts(Op::kEq, a, b);
    case Tag::kBool:
    case Tag::kDType:
      return a.i == b.i ? kTrue : kFalse;
    case Tag::kStr:
      return *a.s == *b.s ? kTrue : kFalse;
    case Tag::kList: {
      if (a.len() != b.len()) return kFalse;
      Tri r = kTrue;
      for (uint32_t k = 0; k < a.len(); ++k) {
        const Tri e = Equal(HeapAt(a, k), HeapAt(b, k));
        if (e == kFalse) return kFalse;
        if (e == kMaybe) r = kMaybe;
      }
      return r;
    }
    case Tag::kUnknown:
    case Tag::kError:
      break;
  }
  return kMaybe;
}

Val Machine::MinMax(bool want_max, const Val& a, const Val& b) {
  const Tri less = CompareInts(Op::kLt, a, b);
  if (less == kMaybe) {
    // Equal values are their own min and max.
    if (CompareInts(Op::kEq, a, b) == kTrue) return a;
    return Val();
  }
  return (less == kTrue) == want_max ? b : a;
}

std::string Machine::Format(const Val& v, Type t) {
  switch (v.tag()) {
    case Tag::kUnknown:
    case Tag::kError:
      return t.is_list() ? "[?..]" : "?";
    case Tag::kInt:
      return absl::StrCat(v.i);
    case Tag::kBool:
      return v.i ? "true" : "false";
    case Tag::kSym:
      return polys_[v.i].ToString().value_or("?");
    case Tag::kMono:
      return MonoString(v).value_or("?");
    case Tag::kSymRef:
    case Tag::kStr:
      return *v.s;
    case Tag::kDType:
      return DataTypeName(static_cast<v1::DataType>(v.i));
    case Tag::kList: {
      std::string out = "[";
      const Type elem = t.is_list() ? t.element() : Type::Any();
      for (uint32_t k = 0; k < v.len(); ++k) {
        if (k > 0) out.push_back(',');
        out += Format(HeapAt(v, k), elem);
      }
      out.push_back(']');
      return out;
    }
  }
  return "?";
}


std::string Machine::FormatParts(const int32_t* ids, const Val* vals, size_t n) {
  std::string out;
  for (size_t k = 0; k < n; ++k) out += Format(vals[k], p_.nodes[ids[k]].type);
  return out;
}

Val Machine::IndexError(const Insn& n, const Val& list, int64_t index) {
  return Fail(n.pos, absl::StrCat("index ", index, " is out of range for ",
                                  Format(list, p_.nodes[n.kid0].type), " (length ", list.len(),
                                  ")"));
}

}  // namespace rules
}  // namespace graphopt
