#include "rules/lowering.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rules/bytecode.h"
#include "rules/value.h"

namespace graphopt {
namespace rules {
namespace {

uint8_t HandlerOf(const Program& p, const Node& n) {
  switch (n.op) {
    case Op::kName:
    case Op::kCallName:
    case Op::kAttrName:
      return kHInvalid;
    case Op::kInt:
      return kHInt;
    case Op::kBool:
      return kHBool;
    case Op::kString:
      return kHString;
    case Op::kDType:
      return kHDType;
    case Op::kUnknown:
      return kHUnknown;
    case Op::kSlot:
      return kHSlot;
    case Op::kAttr:
      return kHAttr;
    case Op::kNeg:
      return kHNeg;
    case Op::kNot:
      return kHNot;
    case Op::kAdd:
      return kHAdd;
    case Op::kSub:
      return kHSub;
    case Op::kMul:
      return kHMul;
    case Op::kFloorDiv:
      return kHFloorDiv;
    case Op::kMod:
      return kHMod;
    case Op::kEq:
      return kHEq;
    case Op::kNe:
      return kHNe;
    case Op::kLt:
      return kHLt;
    case Op::kLe:
      return kHLe;
    case Op::kGt:
      return kHGt;
    case Op::kGe:
      return kHGe;
    case Op::kAnd:
      return kHAnd;
    case Op::kOr:
      return kHOr;
    case Op::kConcat:
      return kHConcat;
    case Op::kCoalesce:
      return kHCoalesce;
    case Op::kIn:
      return kHIn;
    case Op::kIf:
      return kHIf;
    case Op::kList:
      return kHList;
    case Op::kIndex:
      return kHIndex;
    case Op::kSlice:
      return kHSlice;
    case Op::kComprehension: {
      const Node& it = p.nodes[p.kid(n, 0)];
      return it.op == Op::kCall && it.fn == Fn::kRange && it.num_kids == 1
                 ? kHComprehensionRange
                 : kHComprehension;
    }
    case Op::kCall:
      return static_cast<uint8_t>(kHFn + static_cast<int>(n.fn));
  }
  return kHInvalid;
}

// Builtins computed from the argument values, which the lowered code computes first, in order
// (Machine::Apply).
bool AppliesToArguments(Fn fn) {
  switch (fn) {
    case Fn::kBroadcast:
    case Fn::kNormalizeAxis:
    case Fn::kMerge:
    case Fn::kMin:
    case Fn::kMax:
    case Fn::kAbs:
    case Fn::kCdiv:
    case Fn::kSum:
    case Fn::kProd:
    case Fn::kRange:
    case Fn::kAll:
    case Fn::kAnyOf:
    case Fn::kFlatten:
    case Fn::kDistinct:
    case Fn::kDTypeSize:
      return true;
    default:
      return false;
  }
}

// Aborts on a bug in the lowering (never on a rule's text or data).
void Invariant(bool holds, const char* what) {
  if (holds) return;
  std::fprintf(stderr, "rules: internal error in the lowering: %s\n", what);
  std::abort();
}

// Lowers a program's statements into a Bytecode (see VOp).
class Lowerer {
 public:
  Lowerer(const Program& p, Bytecode* bc) : p_(p), bc_(bc) {}

  absl::Status Run() {
    AssignConstants();
    if (first_temp_ > kMaxRegs) return TooManyRegisters(first_temp_);
    for (size_t i = 0; i < p_.stmts.size(); ++i) LowerStatement(static_cast<int32_t>(i));
    Emit(VOp::kRet, -1);
    if (unresolved_) {
      return absl::InternalError(absl::StrCat(p_.op_label, " ", p_.rule_name,
                                              ": an expression was not through the checker"));
    }
    bc_->num_regs = first_temp_ + max_temps_;
    if (bc_->num_regs > kMaxRegs) return TooManyRegisters(bc_->num_regs);
    return absl::OkStatus();
  }

 private:
  static constexpr int kMaxRegs = kNoReg;  // registers 0 .. kNoReg - 1
  static constexpr size_t kMaxCharge = 0xffff;

  absl::Status TooManyRegisters(int64_t need) const {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", p_.op_label, "' ", p_.rule_name, ": the rule needs ", need,
                     " registers (variables, distinct literals and intermediate values); the "
                     "evaluator has ",
                     kMaxRegs));
  }

  // Constants: one register per distinct literal, after the slots.
  void AssignConstants() {
    std::map<std::pair<int, std::pair<int64_t, std::string>>, int> index;
    const_reg_.assign(p_.nodes.size(), -1);
    for (size_t id = 0; id < p_.nodes.size(); ++id) {
      const Node& n = p_.nodes[id];
      Val v;
      switch (n.op) {
        case Op::kInt:
          v = Val::Int(n.imm);
          break;
        case Op::kBool:
          v = Val::Bool(n.imm != 0);
          break;
        case Op::kDType:
          v = Val::DType(n.imm);
          break;
        case Op::kUnknown:
        case Op::kString:
          break;
        default:
          continue;
      }
      const auto key = std::make_pair(static_cast<int>(n.op),
                                      std::make_pair(n.op == Op::kString ? 0 : n.imm,
                                                     n.op == Op::kString ? n.text : ""));
      auto [it, added] = index.try_emplace(key, static_cast<int>(bc_->constants.size()));
      if (added) {
        if (n.op == Op::kString) {
          bc_->strings.push_back(n.text);
          v = Val::Str(&bc_->strings.back());
        }
        bc_->constants.push_back(v);
      }
      const_reg_[id] = it->second;
    }
    bc_->first_const = p_.num_slots;
    first_temp_ = p_.num_slots + static_cast<int>(bc_->constants.size());
    for (int& c : const_reg_) {
      if (c >= 0) c += bc_->first_const;
    }
  }

  // Statement `i`. A let's value goes straight to its slot; an output or result finishes with
  // kStmt; an assert's message parts are evaluated only when it fails.
  void LowerStatement(int32_t i) {
    const Stmt& st = p_.stmts[i];
    switch (st.kind) {
      case StmtKind::kLet:
        MoveTo(st.slot, Lower(st.expr, st.slot));
        return;
      case StmtKind::kAssert: {
        const int r = Lower(st.expr);
        const int test = Emit(VOp::kAssert, st.expr, 0, r);
        bc_->code[test].target2 = i;
        Release(r);
        const int parts = LowerArgs(st.parts.data(), static_cast<int>(st.parts.size()));
        bc_->code[Emit(VOp::kAssertFail, st.expr, 0, parts, static_cast<int>(st.parts.size()))]
            .target2 = i;
        ReleaseArgs(parts, static_cast<int>(st.parts.size()));
        bc_->code[test].target = Label();
        return;
      }
      case StmtKind::kConstraint: {
        const int parts = LowerArgs(st.parts.data(), static_cast<int>(st.parts.size()));
        bc_->code[Emit(VOp::kConstraint, -1, 0, parts, static_cast<int>(st.parts.size()))]
            .target2 = i;
        ReleaseArgs(parts, static_cast<int>(st.parts.size()));
        return;
      }
      case StmtKind::kOutput:
      case StmtKind::kOutputValue:
      case StmtKind::kOutputAll:
      case StmtKind::kResult: {
        const int r = Lower(st.expr);
        bc_->code[Emit(VOp::kStmt, st.expr, 0, r)].target2 = i;
        Release(r);
        return;
      }
    }
  }

  // Emits an instruction for `node` carrying the nodes reached since the last one; returns
  // its index.
  int Emit(VOp op, int32_t node, int dst = 0, int a = 0, int b = 0, int c = 0) {
    // Chains of nodes reached without an instruction are at most as long as the nesting; one
    // longer than a charge holds (limits far above the defaults) is charged by kNops first.
    while (pending_.size() > kMaxCharge) {
      VInsn nop;
      nop.op = VOp::kNop;
      nop.charge = static_cast<uint16_t>(kMaxCharge);
      bc_->charge_first.push_back(static_cast<int32_t>(bc_->charged.size()));
      bc_->charged.insert(bc_->charged.end(), pending_.begin(), pending_.begin() + kMaxCharge);
      pending_.erase(pending_.begin(), pending_.begin() + kMaxCharge);
      bc_->code.push_back(nop);
    }
    VInsn x;
    x.op = op;
    x.node = node;
    x.pos = node >= 0 ? p_.nodes[node].pos : 0;
    x.dst = static_cast<uint16_t>(dst);
    x.a = static_cast<uint16_t>(a);
    x.b = static_cast<uint16_t>(b);
    x.c = static_cast<uint16_t>(c);
    x.charge = static_cast<uint16_t>(pending_.size());
    bc_->charge_first.push_back(static_cast<int32_t>(bc_->charged.size()));
    bc_->charged.insert(bc_->charged.end(), pending_.begin(), pending_.end());
    pending_.clear();
    bc_->code.push_back(x);
    return static_cast<int>(bc_->code.size() - 1);
  }
  int Here() const { return static_cast<int>(bc_->code.size()); }
  // A jump target: nothing may be pending there (every path reaching it charged its nodes).
  int Label() const {
    Invariant(pending_.empty(), "nodes reached but not charged at a jump target");
    return Here();
  }

  // Registers past kMaxRegs are counted (Run reports them) but not named: every instruction
  // that would name one is dropped with the bytecode.
  int Temp() {
    const int r = first_temp_ + num_temps_++;
    max_temps_ = std::max(max_temps_, num_temps_);
    return r;
  }
  // Temporaries are released in the reverse order of their allocation; slots and constants are
  // not temporaries.
  void Release(int r) {
    if (r < first_temp_) return;
    Invariant(r == first_temp_ + num_temps_ - 1, "temporaries released out of order");
    --num_temps_;
  }
  int Kid(const Node& n, int k) const { return p_.kid(n, k); }

  // Evaluates the expressions ids[0..count) in order into consecutive temporaries; returns the
  // first (0 when count is 0).
  int LowerArgs(const int32_t* ids, int count) {
    if (count == 0) return 0;
    const int first = Temp();
    for (int k = 1; k < count; ++k) Temp();
    for (int k = 0; k < count; ++k) MoveTo(first + k, Lower(ids[k], first + k));
    return first;
  }
  void ReleaseArgs(int first, int count) {
    for (int k = count - 1; k >= 0; --k) Release(first + k);
  }

  // Emits the code of node `id` (reached now); returns the register holding its value: `want`
  // (when given) for a node that computes, else a new temporary; a slot or constant's own
  // register for a leaf.
  int Lower(int32_t id, int want = -1) {
    const Node& n = p_.nodes[id];
    pending_.push_back(id);
    switch (n.op) {
      case Op::kName:
      case Op::kCallName:
      case Op::kAttrName:
        unresolved_ = true;
        return 0;
      case Op::kSlot:
        return static_cast<int>(n.imm);
      case Op::kInt:
      case Op::kBool:
      case Op::kString:
      case Op::kDType:
      case Op::kUnknown:
        return const_reg_[id];
      case Op::kAttr:
        return Attr(id, want);
      case Op::kNeg:
        return Unary(id, VOp::kNeg, want);
      case Op::kNot:
        return Unary(id, VOp::kNot, want);
      case Op::kAdd:
        return Binary(id, VOp::kArith, want, Arith::kAdd);
      case Op::kSub:
        return Binary(id, VOp::kArith, want, Arith::kSub);
      case Op::kMul:
        return Binary(id, VOp::kArith, want, Arith::kMul);
      case Op::kFloorDiv:
        return Binary(id, VOp::kArith, want, Arith::kFloorDiv);
      case Op::kMod:
        return Binary(id, VOp::kArith, want, Arith::kMod);
      case Op::kEq:
        return Binary(id, VOp::kEq, want);
      case Op::kNe:
        return Binary(id, VOp::kNe, want);
      case Op::kLt:
        return Binary(id, VOp::kLt, want);
      case Op::kLe:
        return Binary(id, VOp::kLe, want);
      case Op::kGt:
        return Binary(id, VOp::kGt, want);
      case Op::kGe:
        return Binary(id, VOp::kGe, want);
      case Op::kIndex:
        return Binary(id, VOp::kIndex, want);
      case Op::kConcat:
        return Binary(id, VOp::kConcat, want);
      case Op::kAnd:
      case Op::kOr:
        return AndOr(id, want);
      case Op::kCoalesce:
        return Coalesce(id, want);
      case Op::kIn:
        return In(id, want);
      case Op::kIf:
        return If(id, want);
      case Op::kList:
        return List(id, want);
      case Op::kSlice:
        return Slice(id, want);
      case Op::kComprehension:
        return Comprehension(id, want);
      case Op::kCall:
        return Call(id, want);
    }
    unresolved_ = true;
    return 0;
  }

  // The destination of a node that computes: `want`, else a new temporary.
  int Dst(int want) { return want >= 0 ? want : Temp(); }
  // Makes register `dst` hold the value in `r` (a leaf's register, or dst itself), charging the
  // nodes reached since the last instruction.
  void MoveTo(int dst, int r) {
    if (r != dst || !pending_.empty()) Emit(VOp::kMov, -1, dst, r);
  }

  int Unary(int32_t id, VOp op, int want) {
    const int dst = Dst(want);
    const int a = Lower(Kid(p_.nodes[id], 0));
    Emit(op, id, dst, a);
    Release(a);
    return dst;
  }

  int Binary(int32_t id, VOp op, int want, Arith arith = Arith::kAdd) {
    const Node& n = p_.nodes[id];
    const int dst = Dst(want);
    const int a = Lower(Kid(n, 0));
    const int b = Lower(Kid(n, 1));
    Emit(op, id, dst, a, b, static_cast<int>(arith));
    Release(b);
    Release(a);
    return dst;
  }

  // The attribute; when the node does not set it, the fallback (if any) computes into dst.
  int Attr(int32_t id, int want) {
    const Node& n = p_.nodes[id];
    const int dst = Dst(want);
    const int read = Emit(VOp::kAttr, id, dst);
    if (n.num_kids == 1) MoveTo(dst, Lower(Kid(n, 0), dst));
    bc_->code[read].target = Label();
    return dst;
  }

  // Kleene and/or: the right operand only when the left one does not decide.
  int AndOr(int32_t id, int want) {
    const Node& n = p_.nodes[id];
    const bool is_and = n.op == Op::kAnd;
    const int dst = Dst(want);
    const int a = Lower(Kid(n, 0));
    const int shortcut = Emit(is_and ? VOp::kAndShort : VOp::kOrShort, id, dst, a);
    const int b = Lower(Kid(n, 1));
    Emit(is_and ? VOp::kAndRest : VOp::kOrRest, id, dst, a, b);
    Release(b);
    Release(a);
    bc_->code[shortcut].target = Label();
    return dst;
  }

  // The left operand is computed into dst (or is a leaf); the right one overwrites it.
  int Coalesce(int32_t id, int want) {
    const Node& n = p_.nodes[id];
    const int dst = Dst(want);
    const int a = Lower(Kid(n, 0), dst);
    const int shortcut = Emit(VOp::kCoalesceShort, id, dst, a);
    MoveTo(dst, Lower(Kid(n, 1), dst));
    bc_->code[shortcut].target = Label();
    return dst;
  }

  // x in {m...}: the members in order until one equals x.
  int In(int32_t id, int want) {
    const Node& n = p_.nodes[id];
    const int dst = Dst(want);
    const int x = Lower(Kid(n, 0));
    const int maybe = Temp();  // false, or unknown once a member may equal x
    Emit(VOp::kInBegin, id, 0, maybe);
    std::vector<int> tests;
    for (int k = 1; k < n.num_kids; ++k) {
      const int m = Lower(Kid(n, k));
      tests.push_back(Emit(VOp::kInTest, id, dst, x, m, maybe));
      Release(m);
    }
    Emit(VOp::kMov, -1, dst, maybe);
    const int end = Label();
    for (int t : tests) bc_->code[t].target = end;
    Release(maybe);
    Release(x);
    return dst;
  }

  int If(int32_t id, int want) {
    const Node& n = p_.nodes[id];
    const int dst = Dst(want);
    const int c = Lower(Kid(n, 0));
    const int test = Emit(VOp::kIfTest, id, dst, c);
    Release(c);
    MoveTo(dst, Lower(Kid(n, 1), dst));
    const int jump = Emit(VOp::kJmp, id);
    bc_->code[test].target2 = Label();
    MoveTo(dst, Lower(Kid(n, 2), dst));
    const int end = Label();
    bc_->code[test].target = end;
    bc_->code[jump].target = end;
    return dst;
  }

  // [e...]: the length is checked (and charged) before the elements are evaluated.
  int List(int32_t id, int want) {
    const Node& n = p_.nodes[id];
    const int dst = Dst(want);
    const int base = Temp();
    Emit(VOp::kListBegin, id, 0, base);
    for (int k = 0; k < n.num_kids; ++k) {
      const int e = Lower(Kid(n, k));
      Emit(VOp::kListPush, id, 0, e);
      Release(e);
    }
    Emit(VOp::kListEnd, id, dst, base);
    Release(base);
    return dst;
  }

  // The list, then the bounds given in order; a first bound that is not a known int makes the
  // slice unknown before the second is evaluated.
  int Slice(int32_t id, int want) {
    const Node& n = p_.nodes[id];
    const int dst = Dst(want);
    const int l = Lower(Kid(n, 0));
    int bounds[2] = {0, 0};
    int kid = 1;
    int check = -1;
    for (int b = 0; b < 2; ++b) {
      if ((n.imm & (1 << b)) == 0) continue;
      if (kid == 2) check = Emit(VOp::kSliceCheck, id, dst, bounds[0]);
      bounds[b] = Lower(Kid(n, kid++));
    }
    const int slice = Emit(VOp::kSlice, id, dst, l, bounds[0], bounds[1]);
    if (n.imm & 2) Release(bounds[1]);
    if (n.imm & 1) Release(bounds[0]);
    Release(l);
    if (check >= 0) bc_->code[check].target = slice + 1;
    return dst;
  }

  // A builtin call. Those of argument values compute them first; those that read the node
  // resolve a variadic item first (an unknown index makes the call unknown), and dim() reads
  // the shape before its axis.
  int Call(int32_t id, int want) {
    const Node& n = p_.nodes[id];
    const int dst = Dst(want);
    if (n.fn == Fn::kKnown || n.fn == Fn::kLen) {
      const int a = Lower(Kid(n, 0));
      Emit(n.fn == Fn::kKnown ? VOp::kKnown : VOp::kLen, id, dst, a);
      Release(a);
      return dst;
    }
    if (AppliesToArguments(n.fn) || n.fn == Fn::kFail) {
      if (n.fn != Fn::kFail && (n.num_kids == 1 || n.num_kids == 2)) {
        const int a = Lower(Kid(n, 0));
        const int b = n.num_kids == 2 ? Lower(Kid(n, 1)) : 0;
        Emit(n.num_kids == 2 ? VOp::kApply2 : VOp::kApply1, id, dst, a, b);
        if (n.num_kids == 2) Release(b);
        Release(a);
        return dst;
      }
      const int args = LowerArgs(p_.kids.data() + n.first_kid, n.num_kids);
      Emit(n.fn == Fn::kFail ? VOp::kFail : VOp::kApplyN, id, dst, args, n.num_kids);
      ReleaseArgs(args, n.num_kids);
      return dst;
    }
    if (n.ref != Ref::kVariadicItem) {
      NodeBuiltin(id, dst, kNoReg, 0);
      return dst;
    }
    const int item = Lower(Kid(n, 0));
    if (n.fn == Fn::kHas) {  // has(Xs[k]) is false for k out of range
      Emit(VOp::kHasItem, id, dst, item);
      Release(item);
      return dst;
    }
    const int input = Temp();
    const int resolve = Emit(VOp::kVariadicIndex, id, dst, item, input);
    NodeBuiltin(id, dst, input, 1);
    bc_->code[resolve].target = Label();
    Release(input);
    Release(item);
    return dst;
  }

  // The builtin of call `id` that reads the node, for the input in register `input` (kNoReg:
  // the node's own); dim()'s axis is kid `axis_kid`.
  void NodeBuiltin(int32_t id, int dst, int input, int axis_kid) {
    const Node& n = p_.nodes[id];
    if (n.fn != Fn::kDim) {
      Emit(VOp::kInputBuiltin, id, dst, 0, input, static_cast<int>(n.fn));
      return;
    }
    const int shape = Temp();
    Emit(VOp::kInputBuiltin, id, shape, 0, input, static_cast<int>(Fn::kShape));
    const int axis = Lower(Kid(n, axis_kid));
    Emit(VOp::kDimAt, id, dst, shape, axis, input);
    Release(axis);
    Release(shape);
  }

  // [E for x in L (if C)]: L, then per element C and E. [E for x in range(N) (if C)] reads N
  // without evaluating the range call as a node (as EvalComprehensionRange).
  int Comprehension(int32_t id, int want) {
    const Node& n = p_.nodes[id];
    const Node& it = p_.nodes[Kid(n, 0)];
    const bool over_range = it.op == Op::kCall && it.fn == Fn::kRange && it.num_kids == 1;
    const int dst = Dst(want);
    const int source = Lower(over_range ? Kid(it, 0) : Kid(n, 0));
    const int state = Temp();  // the element index (and the count of a range)
    const int base = Temp();   // where the list starts in the scratch buffer
    const int begin = Emit(over_range ? VOp::kCompRangeBegin : VOp::kCompBegin,
                           over_range ? Kid(n, 0) : id, dst, source, state, base);
    const int loop = Label();
    const int next =
        Emit(over_range ? VOp::kCompRangeNext : VOp::kCompNext, id, dst, 0, state, base);
    bc_->code[next].d = static_cast<uint16_t>(n.imm);  // the variable's slot
    const int body = Label();
    int filter = -1;
    if (n.num_kids > 2) {
      const int keep = Lower(Kid(n, 2));
      filter = Emit(VOp::kCompFilter, id, dst, keep, state, base);
      bc_->code[filter].target2 = loop;
      Release(keep);
    }
    const int e = Lower(Kid(n, 1));
    const int push_next = Emit(over_range ? VOp::kCompRangePushNext : VOp::kCompPushNext, id,
                               dst, e, state, base);
    bc_->code[push_next].d = static_cast<uint16_t>(n.imm);
    bc_->code[push_next].target2 = body;
    Release(e);
    const int end = Label();
    bc_->code[begin].target = end;
    bc_->code[next].target = end;
    bc_->code[push_next].target = end;
    if (filter >= 0) bc_->code[filter].target = end;
    Release(base);
    Release(state);
    Release(source);
    return dst;
  }

  const Program& p_;
  Bytecode* bc_;
  std::vector<int> const_reg_;
  std::vector<int32_t> pending_;
  int first_temp_ = 0;
  int num_temps_ = 0;
  int max_temps_ = 0;
  bool unresolved_ = false;
};

}  // namespace

absl::Status LowerProgram(Program* p) {
  p->code.assign(p->nodes.size(), Insn());
  for (size_t id = 0; id < p->nodes.size(); ++id) {
    const Node& n = p->nodes[id];
    Insn& x = p->code[id];
    x.handler = HandlerOf(*p, n);
    x.ref = n.ref;
    x.pos = n.pos;
    x.first_kid = n.first_kid;
    x.num_kids = n.num_kids;
    x.kid0 = n.num_kids > 0 ? p->kid(n, 0) : -1;
    x.kid1 = n.num_kids > 1 ? p->kid(n, 1) : -1;
    x.imm = n.imm;
  }
  auto bc = std::make_shared<Bytecode>();
  if (absl::Status s = Lowerer(*p, bc.get()).Run(); !s.ok()) return s;
  p->bytecode = std::move(bc);
  return absl::OkStatus();
}

}  // namespace rules
}  // namespace graphopt
