#ifndef GRAPHOPT_RULES_MACHINE_H_
#define GRAPHOPT_RULES_MACHINE_H_

// The state of one rule evaluation and the operations on its values: arithmetic over known and
// symbolic ints, comparisons, lists, the builtins, the effects of statements and the writing of
// results. The VM (vm.h) runs a program's bytecode on it; the reference interpreter
// (interpreter.h, tests only) evaluates the same program node by node on it, so that the two
// share every operation and differ only in how they walk the program. Internal to //rules.

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "graph/inference.h"
#include "rules/bytecode.h"
#include "rules/poly.h"
#include "rules/program.h"
#include "rules/value.h"

namespace graphopt {
namespace rules {

// a op b into *r for kAdd, kSub and kMul; true when it overflows int64 or `op` is another one.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool AddSubMulOverflows(Arith op, int64_t a, int64_t b,
                                                            int64_t* r) {
  switch (op) {
    case Arith::kAdd:
      return __builtin_add_overflow(a, b, r);
    case Arith::kSub:
      return __builtin_sub_overflow(a, b, r);
    case Arith::kMul:
      return __builtin_mul_overflow(a, b, r);
    default:
      return true;
  }
}

class Machine {
 public:
  // The values of the statements that produce results (outputs, the cost), in order.
  using Results = absl::InlinedVector<std::pair<const Stmt*, Val>, 4>;

  // `num_regs` registers, the slots first; the bytecode's constants (when given) are copied in.
  Machine(const Program& p, const RuleLimits& limits, const InferenceContext& ctx,
          const Bytecode* bc);
  Machine(const Machine&) = delete;
  Machine& operator=(const Machine&) = delete;

  // The error of a failed run: INVALID_ARGUMENT "<node label>: <rule name> L:C: <message>".
  absl::Status Status() const {
    const auto [line, col] = Diag::LineCol(p_.source, err_pos_);
    return absl::InvalidArgumentError(
        absl::StrCat(ctx_.NodeLabel(), ": ", p_.rule_name, " ", line, ":", col, ": ", err_));
  }

  // The results of a successful run, written to the node (shape and type rules) or returned.
  absl::Status WriteShapes(const Results& results, InferenceContext& ctx);
  absl::Status WriteTypes(const Results& results, InferenceContext& ctx);
  absl::StatusOr<std::optional<int64_t>> Cost(const Results& results) const;

 protected:
  // --- Errors ---------------------------------------------------------------------------------
  ABSL_ATTRIBUTE_NOINLINE Val Fail(int32_t pos, std::string message) {
    err_pos_ = pos;
    err_ = std::move(message);
    return Val::Error();
  }
  ABSL_ATTRIBUTE_NOINLINE Val BudgetExceeded(int32_t pos) {
    return Fail(pos, absl::StrCat("evaluation exceeded the budget of ", limits_.max_steps,
                                  " steps"));
  }

  // --- Values ---------------------------------------------------------------------------------
  const Val& HeapAt(const Val& list, int64_t k) const { return heap_[list.i + k]; }
  // False (with the error set) when the budget is exceeded.
  bool Charge(int32_t pos, int64_t steps) {
    steps_ += steps;
    if (ABSL_PREDICT_FALSE(steps_ > max_steps_)) {
      BudgetExceeded(pos);
      return false;
    }
    return true;
  }
  bool CheckLength(int32_t pos, int64_t n) {
    if (n > limits_.max_list_length) {
      Fail(pos, absl::StrCat("a list of ", n, " elements exceeds the limit of ",
                             limits_.max_list_length));
      return false;
    }
    return Charge(pos, n);
  }
  // Moves scratch_[base..] into a new heap list.
  Val ListFromScratch(size_t base) {
    const size_t n = scratch_.size() - base;
    const size_t off = heap_.AppendUninitialized(n);
    for (size_t k = 0; k < n; ++k) heap_[off + k] = scratch_[base + k];
    scratch_.truncate(base);
    return Val::List(off, n);
  }

  // `v` as coef * atom when it is one (a kMono, or a kSymRef naming an atom); false otherwise.
  bool AsMono(const Val& v, int64_t* coef, uint32_t* atom) {
    if (v.tag() == Tag::kMono) {
      *coef = v.i;
      *atom = v.len();
      return true;
    }
    if (v.tag() != Tag::kSymRef || !IsAtomName(*v.s)) return false;
    *coef = 1;
    *atom = Intern(v.s);
    return true;
  }
  // The index of the atom named `*s` (an atom name) in the atom table, added when new.
  uint32_t Intern(const std::string* s) {
    for (size_t k = 0; k < atoms_.size(); ++k) {
      if (atoms_[k] == s) return static_cast<uint32_t>(k);
    }
    for (size_t k = 0; k < atoms_.size(); ++k) {
      if (*atoms_[k] == *s) return static_cast<uint32_t>(k);
    }
    atoms_.push_back(s);
    return static_cast<uint32_t>(atoms_.size() - 1);
  }
  // A symbol string of the node: 1 * atom for an atom name (the common "batch"), else kept as
  // the string (read as a polynomial when arithmetic needs it).
  Val SymbolVal(const std::string* s) {
    // The atoms are atom names: a string equal to one is one.
    for (size_t k = 0; k < atoms_.size(); ++k) {
      if (atoms_[k] == s || *atoms_[k] == *s) return Mono(1, static_cast<uint32_t>(k));
    }
    if (!IsAtomName(*s)) return Val::SymRef(s);
    atoms_.push_back(s);
    return Mono(1, static_cast<uint32_t>(atoms_.size() - 1));
  }
  static Val Mono(int64_t coef, uint32_t atom) {
    if (coef == 0) return Val::Int(0);
    return Val::Make(Tag::kMono, atom, coef);
  }
  // Exact results of `a op b` where a and b are ints or coef * atom, computed without
  // polynomials. Returns false when the general path must decide; *out is an error value when
  // the operation failed.
  bool MonoOp(Arith op, int32_t pos, const Val& a, const Val& b, Val* out);

  // The polynomial of a symbolic or known int. Reading a symbol string parses it once per
  // evaluation; call Materialize on every operand before taking pointers (the table grows).
  void Materialize(const Val& v) {
    if (v.tag() != Tag::kSymRef) return;
    for (const auto& entry : parsed_) {
      if (entry.first == v.s) return;
    }
    polys_.push_back(Poly::FromSymbol(*v.s));
    parsed_.emplace_back(v.s, static_cast<int>(polys_.size() - 1));
  }
  const Poly* PolyOf(const Val& v, Poly* tmp) const {
    switch (v.tag()) {
      case Tag::kInt:
        *tmp = Poly::Constant(v.i);
        return tmp;
      case Tag::kSym:
        return &polys_[v.i];
      case Tag::kMono:
        *tmp = Poly::Constant(v.i);
        if (Poly::Mul(*tmp, Poly::Atom(*atoms_[v.len()]), tmp) != PolyStatus::kOk) return nullptr;
        return tmp;
      case Tag::kSymRef:
        for (const auto& [s, index] : parsed_) {
          if (s == v.s) return &polys_[index];
        }
        return nullptr;
      default:
        return nullptr;
    }
  }
  Val FromPoly(Poly p) {
    if (p.is_constant()) return Val::Int(p.constant_term());
    const Val v = Val::Make(Tag::kSym, 0, static_cast<int64_t>(polys_.size()));
    polys_.push_back(std::move(p));
    return v;
  }

  // Known ints without overflow inline; everything else in IntOpSlow.
  ABSL_ATTRIBUTE_ALWAYS_INLINE Val IntOp(Arith op, int32_t pos, const Val& a, const Val& b) {
    if (a.tag() == Tag::kInt && b.tag() == Tag::kInt) {
      int64_t r;
      if (ABSL_PREDICT_TRUE(!AddSubMulOverflows(op, a.i, b.i, &r))) return Val::Int(r);
    } else if (op == Arith::kMul && (a.tag() == Tag::kMono) != (b.tag() == Tag::kMono) &&
               (a.tag() == Tag::kInt || b.tag() == Tag::kInt)) {
      // c * (k * s), the common product of a symbolic size and known ones.
      const Val& m = a.tag() == Tag::kMono ? a : b;
      const Val& k = a.tag() == Tag::kMono ? b : a;
      int64_t c;
      if (!__builtin_mul_overflow(m.i, k.i, &c)) return Mono(c, m.len());
    } else if ((op == Arith::kAdd || op == Arith::kSub) && a.tag() == Tag::kMono &&
               b.tag() == Tag::kMono && a.len() == b.len()) {
      // c1 * s +- c2 * s.
      int64_t c;
      if (!(op == Arith::kAdd ? __builtin_add_overflow(a.i, b.i, &c)
                              : __builtin_sub_overflow(a.i, b.i, &c))) {
        return Mono(c, a.len());
      }
    }
    return IntOpSlow(op, pos, a, b);
  }
  ABSL_ATTRIBUTE_NOINLINE Val IntOpSlow(Arith op, int32_t pos, const Val& a, const Val& b);
  ABSL_ATTRIBUTE_NOINLINE Tri CompareInts(Op op, const Val& a, const Val& b);
  ABSL_ATTRIBUTE_NOINLINE Tri Equal(const Val& a, const Val& b);
  // Exact min (want_max false) or max; unknown when not determined.
  Val MinMax(bool want_max, const Val& a, const Val& b);

  std::string Format(const Val& v, Type t);
  // The canonical string of a kMono (as Poly::ToString).
  std::optional<std::string> MonoString(const Val& v) const {
    const std::string& atom = *atoms_[v.len()];
    if (v.i == 1) return atom;
    Poly p;
    if (Poly::Mul(Poly::Constant(v.i), Poly::Atom(atom), &p) != PolyStatus::kOk) {
      return std::nullopt;
    }
    return p.ToString();
  }
  // The values `vals[0..n)` of the expressions `ids[0..n)`, formatted by their static types
  // and joined (assert and fail messages).
  std::string FormatParts(const int32_t* ids, const Val* vals, size_t n);
  std::string InputLabel(int i) const {
    const int declared = static_cast<int>(p_.input_names.size());
    if (p_.variadic_input >= 0 && i >= p_.variadic_input) {
      return absl::StrCat(p_.input_names[p_.variadic_input], "[", i - p_.variadic_input, "]");
    }
    return i < declared ? p_.input_names[i] : absl::StrCat("#", i);
  }

  // --- Operators on values (shared by the VM and the interpreter) ------------------------------
  static Val NotOf(const Val& a) { return a.unknown() ? a : Val::Bool(a.i == 0); }
  template <bool kNe>
  ABSL_ATTRIBUTE_ALWAYS_INLINE Val EqualityOf(const Val& a, const Val& b) {
    Tri t;
    if (a.meta == b.meta && a.i == b.i && a.tag() != Tag::kUnknown && a.tag() != Tag::kList) {
      // The same representation: equal ints, or the same symbol, polynomial or c * atom
      // (`v == v`).
      t = kTrue;
    } else if (a.tag() == Tag::kInt && b.tag() == Tag::kInt) {
      t = kFalse;
    } else {
      t = Equal(a, b);
    }
    if (kNe && t != kMaybe) t = t == kTrue ? kFalse : kTrue;
    return FromTri(t);
  }
  template <Op kOp>
  ABSL_ATTRIBUTE_ALWAYS_INLINE Val OrderOf(const Val& a, const Val& b) {
    if (a.tag() == Tag::kInt && b.tag() == Tag::kInt) {
      switch (kOp) {
        case Op::kLt:
          return Val::Bool(a.i < b.i);
        case Op::kLe:
          return Val::Bool(a.i <= b.i);
        case Op::kGt:
          return Val::Bool(a.i > b.i);
        default:
          return Val::Bool(a.i >= b.i);
      }
    }
    return FromTri(CompareInts(kOp, a, b));
  }
  // Kleene and/or: whether the left operand alone decides, and the result when it does not.
  template <bool kAnd>
  static bool Decides(const Val& a) {
    return !a.unknown() && (a.i != 0) != kAnd;
  }
  template <bool kAnd>
  static Val AndOrRest(const Val& a, const Val& b) {
    if (Decides<kAnd>(b)) return b;
    if (a.unknown() || b.unknown()) return Val();
    return Val::Bool(kAnd);
  }
  // `x in {m...}` one member at a time: true when x equals m, unknown when that is not decided.
  Tri MemberOf(const Val& x, const Val& m) { return Equal(x, m); }
  ABSL_ATTRIBUTE_ALWAYS_INLINE Val IndexOf(const Insn& n, const Val& l, const Val& k) {
    if (l.unknown() || k.tag() != Tag::kInt) return Val();
    const int64_t j = k.i < 0 ? k.i + l.len() : k.i;
    if (ABSL_PREDICT_FALSE(j < 0 || j >= l.len())) return IndexError(n, l, k.i);
    return HeapAt(l, j);
  }
  ABSL_ATTRIBUTE_NOINLINE Val IndexError(const Insn& n, const Val& list, int64_t index);
  // l[start:end] for slice node `n` (its bounds' values; those it does not have are ignored).
  Val SliceOf(const Insn& n, const Val& l, const Val& start, const Val& end) {
    // Bounds given (imm bit 1: start, bit 2: end) must be known ints.
    if (((n.imm & 1) && start.tag() != Tag::kInt) || ((n.imm & 2) && end.tag() != Tag::kInt)) {
      return Val();
    }
    if (l.unknown()) return Val();
    const int64_t len = l.len();
    auto clamp = [len](int64_t x) {
      if (x < 0) x = x < -len ? 0 : x + len;
      return std::min(x, len);
    };
    const int64_t from = (n.imm & 1) ? clamp(start.i) : 0;
    const int64_t to = (n.imm & 2) ? clamp(end.i) : len;
    return Val::List(static_cast<size_t>(l.i + from),
                     static_cast<size_t>(std::max<int64_t>(0, to - from)));
  }
  Val ConcatOf(int32_t pos, const Val& a, const Val& b) {
    if (a.unknown() || b.unknown()) return Val();
    const int64_t len = static_cast<int64_t>(a.len()) + b.len();
    if (!CheckLength(pos, len)) return Val::Error();
    const size_t off = heap_.AppendUninitialized(static_cast<size_t>(len));
    for (uint32_t k = 0; k < a.len(); ++k) heap_[off + k] = HeapAt(a, k);
    for (uint32_t k = 0; k < b.len(); ++k) heap_[off + a.len() + k] = HeapAt(b, k);
    return Val::List(off, static_cast<size_t>(len));
  }
  // A list literal of `n` elements: checks and charges its length; returns where it starts in
  // the scratch buffer (the elements are appended there, then ListFromScratch).
  bool BeginList(int32_t pos, int64_t n, size_t* base) {
    if (!CheckLength(pos, n)) return false;
    *base = scratch_.size();
    return true;
  }

  // --- Builtins (builtins.cc) ------------------------------------------------------------------
  // Builtins computed from the node alone, for input `input` where the function reads one
  // (rank, shape, value, dtype, has of a declared input; dtype(T); count, shapes, has_attr,
  // attr_dtype, opset, num_inputs, num_outputs). One instantiation per function, so that each
  // call pays only for its own.
  template <Fn kFn>
  Val NodeBuiltin(const Insn& n, int input);
  using NodeBuiltinFn = Val (*)(Machine&, const Insn&, int);
  // NodeBuiltin<fn>, indexed by Fn (null for the functions of argument values).
  static const NodeBuiltinFn kNodeBuiltins[static_cast<int>(Fn::kDistinct) + 1];
  // The input Xs[k] names for a builtin of Ref::kVariadicItem; *index = -1 when k is not a
  // known int. False (with the error set) when k is out of range.
  bool VariadicIndex(const Insn& n, const Val& k, int* index);
  // dim(X, k) from X's shape `s` (X is input `input`).
  Val DimAt(const Insn& n, int input, const Val& s, const Val& k);
  // has(Xs[k]).
  Val HasItem(const Insn& n, const Val& k);
  // attr.NAME / attr("NAME"[, fallback]), read from the node the first time. *absent: the
  // node does not set it and the fallback (the node's kid) gives the value.
  Val EvalAttr(const Insn& n, bool* absent) {
    const size_t index = static_cast<size_t>(n.imm);
    if (index < kCached && (attr_cached_ >> index & 1) != 0) {
      return AttrCache(static_cast<int>(index));
    }
    return ReadAttr(n, absent);
  }
  ABSL_ATTRIBUTE_NOINLINE Val ReadAttr(const Insn& n, bool* absent);
  // Builtins of argument values, evaluated first and in order (Fn::kBroadcast, kMin, ...).
  template <Fn kFn>
  Val Apply(const Insn& n, const Val* args, int count);
  // Apply for the builtin of call node `n`.
  Val ApplyNode(const Insn& n, const Val* args, int count);
  static Val KnownOf(const Val& v) {
    return v.unknown() ? Val::Bool(false) : Val::Bool(!v.symbolic());
  }
  static Val LenOf(const Val& l) { return l.unknown() ? l : Val::Int(l.len()); }
  // fail(parts...) of call node `n`: always an error value.
  Val FailWith(const Insn& n, const Val* parts) {
    return Fail(n.pos, FormatParts(p_.kids.data() + n.first_kid, parts, n.num_kids));
  }
  // Input i's shape, read from the node the first time (charging its length).
  Val InputShape(int i, int32_t pos) {
    if (ABSL_PREDICT_TRUE(static_cast<unsigned>(i) < kCached && (shape_cached_ >> i & 1) != 0)) {
      return ShapeCache(i);  // present: only a present input's shape is cached
    }
    return ReadInputShape(i, pos);
  }
  ABSL_ATTRIBUTE_NOINLINE Val ReadInputShape(int i, int32_t pos);
  Val InputValue(int i, int32_t pos);
  // ctx_.has_input without the virtual node() call.
  bool HasInput(int i) const { return i >= 0 && i < num_inputs_ && node_.inputs[i].valid(); }
  ABSL_ATTRIBUTE_NOINLINE Val Absent(int i, int32_t pos) {
    return Fail(pos, absl::StrCat("input '", InputLabel(i), "' is absent",
                                  i < static_cast<int>(p_.input_names.size()) &&
                                          p_.variadic_input != i
                                      ? absl::StrCat(" (test has(", p_.input_names[i], ") first)")
                                      : ""));
  }
  Val DimVal(const Dim& d) {
    if (d.is_known()) return Val::Int(d.size());
    if (d.is_symbol()) return SymbolVal(&d.symbol());
    return Val();
  }
  Val Broadcast(const Insn& n, const Val* args, int count);
  // merge(a, b); an error value when they differ.
  Val Merge(int32_t pos, const Val& a, const Val& b);

  // --- Statements (results.cc) ----------------------------------------------------------------
  // An output or result statement `st` whose expression gave `v`.
  static void Record(const Stmt& st, const Val& v, Results* results) {
    results->emplace_back(&st, v);
  }
  // Assert statement `st` failed; `parts` are the values of its message parts. Sets the error.
  void AssertFailed(const Stmt& st, const Val* parts);
  // Type constraint statement `st` with the values of its dtype expressions; false (with the
  // error set) when an input's dtype is not among them.
  bool CheckConstraint(const Stmt& st, const Val* dtypes);
  // False (with the error set) when the list value `v`, output `output`'s shape, holds a
  // negative known dim.
  bool CheckDims(const Val& v, int32_t pos, int output);
  // A list value as dims (a shape, or the contents of a shape tensor); nullopt for unknown.
  std::optional<Dims> ToDims(const Val& v);

  static constexpr int kInlineRegs = 256;
  // Per-evaluation caches of input shapes and attributes, for the first kCached of each.
  static constexpr int kCached = 32;

  const Program& p_;
  const RuleLimits& limits_;
  const InferenceContext& ctx_;
  const ::graphopt::Node& node_;
  const Insn* const code_;
  const int32_t* const kids_;
  const int64_t max_steps_;
  const int num_inputs_;
  int64_t steps_ = 0;
  // The registers (slots first).
  Val* slots_;
  alignas(Val) unsigned char regs_inline_[kInlineRegs * sizeof(Val)];
  std::unique_ptr<unsigned char[]> regs_heap_;
  ValBuffer<128> heap_;
  ValBuffer<32> scratch_;
  absl::InlinedVector<Poly, 2> polys_;
  absl::InlinedVector<std::pair<const std::string*, int>, 4> parsed_;
  // Atoms of kMono values: symbol strings of the node's inputs or attributes.
  absl::InlinedVector<const std::string*, 4> atoms_;
  // Bit i set: entry i of the cache beside it holds input i's shape / attribute i's value /
  // whether the node sets attribute i.
  uint32_t shape_cached_ = 0;
  uint32_t attr_cached_ = 0;
  uint32_t has_attr_cached_ = 0;
  uint32_t has_attr_ = 0;
  alignas(Val) unsigned char shape_cache_[kCached * sizeof(Val)];
  alignas(Val) unsigned char attr_cache_[kCached * sizeof(Val)];
  Val& ShapeCache(int i) { return reinterpret_cast<Val*>(shape_cache_)[i]; }
  Val& AttrCache(int i) { return reinterpret_cast<Val*>(attr_cache_)[i]; }
  int64_t opset_ = -1;  // ctx_.opset_version(), read once
  int32_t err_pos_ = 0;
  std::string err_;
};

}  // namespace rules
}  // namespace graphopt

#endif  // GRAPHOPT_RULES_MACHINE_H_
