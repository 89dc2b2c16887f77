#include "rules/evaluator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "graph/types.h"
#include "rules/poly.h"

namespace graphopt {
namespace rules {
namespace {

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

// A runtime value: 16 bytes, passed and returned in registers. Lists live in the evaluation's
// heap (offset `i`, length `len`) and are immutable, so slices share storage. Symbolic ints
// are `coef * atom` (kMono: coefficient `i`, atom `len` in the evaluation's atom table; an
// input's "batch" is kMono 1 * batch, and "12*batch" is computed without allocating), a symbol
// string read from the node that is not an atom name (kSymRef: "2*seq", "N x"; kept verbatim
// when passed through), or any other polynomial (kSym: index into the polynomial table). None
// is ever a constant, which is a kInt. kError is no value: the evaluation failed, and the
// evaluator holds the message.
enum class Tag : uint8_t {
  kUnknown,
  kInt,
  kBool,
  kSym,
  kSymRef,
  kMono,
  kStr,
  kDType,
  kList,
  kError
};

struct Val {
  // The tag in the low byte, the length (or atom) in the high 32 bits: one word, so that a
  // value moves as two registers.
  uint64_t meta = 0;
  union {
    int64_t i;
    const std::string* s;
  };
  Val() : i(0) {}

  Tag tag() const { return static_cast<Tag>(meta & 0xff); }
  uint32_t len() const { return static_cast<uint32_t>(meta >> 32); }

  static Val Make(Tag tag, uint32_t len, int64_t i) {
    Val x;
    x.meta = static_cast<uint64_t>(tag) | static_cast<uint64_t>(len) << 32;
    x.i = i;
    return x;
  }
  static Val Int(int64_t v) { return Make(Tag::kInt, 0, v); }
  static Val Bool(bool b) { return Make(Tag::kBool, 0, b ? 1 : 0); }
  static Val Str(const std::string* s) {
    Val x = Make(Tag::kStr, 0, 0);
    x.s = s;
    return x;
  }
  static Val DType(int64_t dt) { return Make(Tag::kDType, 0, dt); }
  static Val SymRef(const std::string* s) {
    Val x = Make(Tag::kSymRef, 0, 0);
    x.s = s;
    return x;
  }
  static Val List(size_t offset, size_t len) {
    return Make(Tag::kList, static_cast<uint32_t>(len), static_cast<int64_t>(offset));
  }
  static Val Error() { return Make(Tag::kError, 0, 0); }
  bool unknown() const { return tag() == Tag::kUnknown; }
  bool failed() const { return tag() == Tag::kError; }
  bool symbolic() const {
    const Tag t = tag();
    return t == Tag::kSym || t == Tag::kSymRef || t == Tag::kMono;
  }
};

static_assert(sizeof(Val) == 16, "Val is returned in two registers");
static_assert(std::is_trivially_copyable<Val>::value, "Val must be trivially copyable");
static_assert(std::is_trivially_destructible<Val>::value, "Val must be trivially destructible");

// A growable array of values that starts in an inline buffer. Cheaper than InlinedVector on
// the hot path (one branch per push); values are only ever appended or truncated.
template <size_t kInline>
class ValBuffer {
 public:
  ValBuffer() : data_(reinterpret_cast<Val*>(inline_)), cap_(kInline) {}
  ValBuffer(const ValBuffer&) = delete;
  ValBuffer& operator=(const ValBuffer&) = delete;

  size_t size() const { return size_; }
  Val& operator[](size_t i) { return data_[i]; }
  const Val& operator[](size_t i) const { return data_[i]; }
  void push_back(const Val& v) {
    if (ABSL_PREDICT_FALSE(size_ == cap_)) Grow(size_ + 1);
    new (&data_[size_++]) Val(v);
  }
  // Appends n copies of `fill`; returns the offset of the first.
  size_t Append(size_t n, const Val& fill = Val()) {
    if (ABSL_PREDICT_FALSE(size_ + n > cap_)) Grow(size_ + n);
    const size_t off = size_;
    for (size_t k = 0; k < n; ++k) new (&data_[off + k]) Val(fill);
    size_ += n;
    return off;
  }
  // Appends n values left for the caller to write; returns the offset of the first.
  size_t AppendUninitialized(size_t n) {
    if (ABSL_PREDICT_FALSE(size_ + n > cap_)) Grow(size_ + n);
    const size_t off = size_;
    size_ += n;
    return off;
  }
  void truncate(size_t n) { size_ = n; }

 private:
  ABSL_ATTRIBUTE_NOINLINE void Grow(size_t need) {
    size_t cap = cap_ * 2;
    while (cap < need) cap *= 2;
    auto bigger = std::make_unique<Val[]>(cap);
    std::copy(data_, data_ + size_, bigger.get());
    owned_ = std::move(bigger);
    data_ = owned_.get();
    cap_ = cap;
  }

  // Uninitialised: values are constructed as they are appended (Val is trivially copyable
  // and destructible).
  alignas(Val) unsigned char inline_[kInline * sizeof(Val)];
  Val* data_;
  size_t size_ = 0;
  size_t cap_;
  std::unique_ptr<Val[]> owned_;
};

// Three-valued logic.
enum Tri : uint8_t { kFalse = 0, kTrue = 1, kMaybe = 2 };

Val FromTri(Tri t) { return t == kMaybe ? Val() : Val::Bool(t == kTrue); }

enum class Arith : uint8_t { kAdd, kSub, kMul, kFloorDiv, kMod, kCeilDiv };

const char* ArithSymbol(Arith op) {
  switch (op) {
    case Arith::kAdd:
      return "+";
    case Arith::kSub:
      return "-";
    case Arith::kMul:
      return "*";
    case Arith::kFloorDiv:
      return "//";
    case Arith::kMod:
      return "%";
    case Arith::kCeilDiv:
      return "cdiv";
  }
  return "?";
}

// Insn::handler values: one handler per operation (and per builtin function), so that each
// node pays only for what its operation needs. Slots and int literals, the commonest leaves,
// are read in place by the parent (Evaluator::Run) without a call.
enum H : uint8_t {
  kHSlot,
  kHInt,
  kHBool,
  kHString,
  kHDType,
  kHUnknown,
  kHAttr,
  kHNeg,
  kHNot,
  kHAdd,
  kHSub,
  kHMul,
  kHFloorDiv,
  kHMod,
  kHEq,
  kHNe,
  kHLt,
  kHLe,
  kHGt,
  kHGe,
  kHAnd,
  kHOr,
  kHConcat,
  kHCoalesce,
  kHIn,
  kHIf,
  kHList,
  kHIndex,
  kHSlice,
  kHComprehension,
  kHComprehensionRange,  // [E for x in range(N) (if C)]: iterates without building the range
  kHInvalid,
  kHFn,  // kHFn + Fn: a builtin call
  kNumHandlers = kHFn + static_cast<int>(Fn::kDistinct) + 1,
};

// --- The linear code ---------------------------------------------------------------------------
//
// PrepareProgram lowers each statement's expression once into register instructions: slots and
// literals are registers, so reading them costs nothing, and every node of the kinds below
// (arithmetic, comparisons, logic, if, index, ++, known, len, comprehensions and the builtins
// that evaluate their arguments first) is one instruction. Any other node is a kNode
// instruction that runs the node's handler, which evaluates its subtree a node at a time.
//
// The steps charged are exactly those of evaluating node by node: one per node, in the same
// order (the order nodes are reached, parents first). The nodes reached between two
// instructions (a parent, its first child, ... down to a leaf) are charged with the next
// instruction; when that exceeds the budget, the error names the node at which it ran out.
enum class VOp : uint8_t {
  kRet,   // the end of the statements
  kStmt,    // statement target2 (an output, result or constraint) finishes with value R[a]
  kAssert,  // assert statement target2 with condition R[a]
  kMov,   // R[dst] = R[a]
  kJmp,   // goto target
  kNode,  // R[dst] = the node's handler
  kNeg,
  kNot,
  kArith,  // R[dst] = R[a] op R[b], op the Arith in c
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kAndShort,       // R[a] decides `and`: R[dst] = R[a], goto target
  kOrShort,        // R[a] decides `or`: R[dst] = R[a], goto target
  kAndRest,        // R[dst] = R[a] and R[b], R[a] not deciding
  kOrRest,         // R[dst] = R[a] or R[b], R[a] not deciding
  kCoalesceShort,  // R[a] not unknown: R[dst] = R[a], goto target
  kIfTest,         // R[a] unknown: R[dst] = unknown, goto target; false: goto target2
  kIndex,
  kConcat,
  kKnown,
  kLen,
  kApply1,          // R[dst] = the node's builtin of R[a]
  kApply2,          // R[dst] = the node's builtin of R[a], R[b]
  // Comprehensions keep their state in R[b] (next index, count) and R[c] (where the list
  // starts in the scratch buffer, where the elements are in the heap); R[d] is the variable.
  kCompBegin,       // for x in R[a]: unknown: R[dst] = unknown, goto target
  kCompNext,        // R[d] = the next element; after the last: R[dst] = the list, goto target
  kCompRangeBegin,  // for x in range(R[a]) (pos: the range call's)
  kCompRangeNext,
  kCompFilter,    // R[a] unknown: R[dst] = unknown, goto target; false: goto target2 (next)
  kCompPushNext,  // appends R[a], then as kCompNext but continuing at target2 (the body)
  kCompRangePushNext,
  kSlice,       // R[dst] = R[a][R[b]:R[c]] (the node's bounds; R[b] or R[c] unused when absent)
  kSliceCheck,  // R[a] (a slice's first bound) not an int: R[dst] = unknown, goto target
};

struct VInsn {
  VOp op = VOp::kRet;
  // The nodes reached since the previous instruction, charged first (the nodes themselves:
  // Bytecode::charged from Bytecode::charge_first[pc]).
  uint16_t charge = 0;
  uint16_t dst = 0;
  uint16_t a = 0;
  uint16_t b = 0;
  uint16_t c = 0;
  uint16_t d = 0;  // a comprehension's variable
  int32_t node = -1;  // the node it evaluates (handler, builtin, error messages)
  int32_t pos = 0;
  int32_t target = -1;
  int32_t target2 = -1;
};
static_assert(sizeof(VInsn) == 32, "VInsn is meant to fill half a cache line");

}  // namespace

struct Bytecode {
  std::vector<VInsn> code;
  std::vector<int32_t> charged;
  std::vector<int32_t> charge_first;  // per instruction
  // Registers: slots [0, num_slots), constants [first_const, first_temp), temporaries up to
  // num_regs.
  std::vector<Val> constants;
  std::deque<std::string> strings;  // the string constants' text
  int32_t first_const = 0;
  int32_t num_regs = 0;
};

namespace {

class Evaluator {
 public:
  using Results = absl::InlinedVector<std::pair<const Stmt*, Val>, 4>;

  Evaluator(const Program& p, const RuleLimits& limits, const InferenceContext& ctx)
      : p_(p),
        limits_(limits),
        ctx_(ctx),
        node_(ctx.node()),
        code_(p.code.data()),
        kids_(p.kids.data()),
        max_steps_(limits.max_steps),
        num_inputs_(static_cast<int>(node_.inputs.size())),
        bc_(p.bytecode.get()) {
    // The registers: the slots first (written by let and comprehensions before they are read:
    // the checker resolves a name only after its definition), then the linear code's constants
    // and temporaries.
    const int num_regs = bc_ != nullptr ? bc_->num_regs : p.num_slots;
    if (num_regs > kInlineRegs) {
      regs_heap_.reset(new unsigned char[num_regs * sizeof(Val)]);
      slots_ = reinterpret_cast<Val*>(regs_heap_.get());
    } else {
      slots_ = reinterpret_cast<Val*>(regs_inline_);
    }
    if (bc_ != nullptr && !bc_->constants.empty()) {
      std::memcpy(static_cast<void*>(slots_ + bc_->first_const), bc_->constants.data(),
                  bc_->constants.size() * sizeof(Val));
    }
  }

  absl::Status RunShape(InferenceContext& out);
  absl::Status RunType(InferenceContext& out);
  absl::StatusOr<std::optional<int64_t>> RunCost();

 private:
  // --- Errors ---------------------------------------------------------------------------------
  ABSL_ATTRIBUTE_NOINLINE Val Fail(int32_t pos, std::string message) {
    err_pos_ = pos;
    err_ = std::move(message);
    return Val::Error();
  }
  absl::Status Status() const {
    const auto [line, col] = Diag::LineCol(p_.source, err_pos_);
    return absl::InvalidArgumentError(
        absl::StrCat(ctx_.NodeLabel(), ": ", p_.rule_name, " ", line, ":", col, ": ", err_));
  }

  // --- Values ---------------------------------------------------------------------------------
  const Val& HeapAt(const Val& list, int64_t k) const { return heap_[list.i + k]; }
  // False (with the error set) when the budget is exceeded.
  bool Charge(int32_t pos, int64_t steps) {
    steps_ += steps;
    if (ABSL_PREDICT_FALSE(steps_ > max_steps_)) {
      Fail(pos, absl::StrCat("evaluation exceeded the budget of ", limits_.max_steps, " steps"));
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
      bool overflow = true;
      switch (op) {
        case Arith::kAdd:
          overflow = __builtin_add_overflow(a.i, b.i, &r);
          break;
        case Arith::kSub:
          overflow = __builtin_sub_overflow(a.i, b.i, &r);
          break;
        case Arith::kMul:
          overflow = __builtin_mul_overflow(a.i, b.i, &r);
          break;
        default:
          break;
      }
      if (ABSL_PREDICT_TRUE(!overflow)) return Val::Int(r);
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
  // Evaluates and formats the expressions `ids[0..n)` (assert and fail messages).
  std::string FormatParts(const int32_t* ids, size_t n, bool* ok);
  std::string InputLabel(int i) const {
    const int declared = static_cast<int>(p_.input_names.size());
    if (p_.variadic_input >= 0 && i >= p_.variadic_input) {
      return absl::StrCat(p_.input_names[p_.variadic_input], "[", i - p_.variadic_input, "]");
    }
    return i < declared ? p_.input_names[i] : absl::StrCat("#", i);
  }

  // --- Evaluation -----------------------------------------------------------------------------
  // Runs the statements' linear code; false (with the error set) when the rule fails.
  bool Exec(Results* results);
  ABSL_ATTRIBUTE_NOINLINE void CodeBudgetExceeded(const VInsn& x);
  // Charges one step and evaluates node `id`. Slots and int literals are read in place; every
  // other node goes straight to its handler.
  ABSL_ATTRIBUTE_ALWAYS_INLINE Val Run(int32_t id) {
    const Insn& x = code_[id];
    if (ABSL_PREDICT_FALSE(++steps_ > max_steps_)) return BudgetExceeded(x);
    if (x.handler == kHSlot) return slots_[x.imm];
    if (x.handler == kHInt) return Val::Int(x.imm);
    return kHandlers[x.handler](*this, x);
  }
  // Child k of `n`.
  ABSL_ATTRIBUTE_ALWAYS_INLINE Val Kid(const Insn& n, int k) {
    return Run(k == 0 ? n.kid0 : k == 1 ? n.kid1 : kids_[n.first_kid + k]);
  }
  // The checker's node behind `n` (types, text), for the rare paths that need more.
  const Node& NodeOf(const Insn& n) const { return p_.nodes[&n - code_]; }

  using Handler = Val (*)(Evaluator&, const Insn&);
  static const Handler kHandlers[kNumHandlers];
  static Val HBool(Evaluator& e, const Insn& n) { return Val::Bool(n.imm != 0); }
  static Val HString(Evaluator& e, const Insn& n) { return Val::Str(&e.NodeOf(n).text); }
  static Val HDType(Evaluator& e, const Insn& n) { return Val::DType(n.imm); }
  static Val HUnknown(Evaluator& e, const Insn& n) { return Val(); }
  static Val HSlotOrInt(Evaluator& e, const Insn& n) {
    return n.handler == kHSlot ? e.slots_[n.imm] : Val::Int(n.imm);
  }
  static Val HAttr(Evaluator& e, const Insn& n) { return e.EvalAttr(n); }
  static Val HNeg(Evaluator& e, const Insn& n);
  static Val HNot(Evaluator& e, const Insn& n);
  // A node computing from its two operands' values (evaluated in order) with kApply.
  template <Val (Evaluator::*kApply)(const Insn&, const Val&, const Val&)>
  static Val HBinary(Evaluator& e, const Insn& n) {
    const Val a = e.Kid(n, 0);
    if (a.failed()) return a;
    const Val b = e.Kid(n, 1);
    if (b.failed()) return b;
    return (e.*kApply)(n, a, b);
  }
  template <Arith kOp>
  Val ArithNode(const Insn& n, const Val& a, const Val& b) {
    return IntOp(kOp, n.pos, a, b);
  }
  template <bool kNe>
  Val EqualityNode(const Insn& n, const Val& a, const Val& b) {
    return EqualityOf<kNe>(a, b);
  }
  template <Op kOp>
  Val OrderNode(const Insn& n, const Val& a, const Val& b) {
    return OrderOf<kOp>(a, b);
  }
  Val ConcatNode(const Insn& n, const Val& a, const Val& b) { return ConcatOf(n.pos, a, b); }
  template <bool kAnd>
  static Val HAndOr(Evaluator& e, const Insn& n);
  static Val HCoalesce(Evaluator& e, const Insn& n);
  static Val HIf(Evaluator& e, const Insn& n);
  static Val HIn(Evaluator& e, const Insn& n) { return e.EvalIn(n); }
  static Val HList(Evaluator& e, const Insn& n) { return e.EvalList(n); }
  static Val HSlice(Evaluator& e, const Insn& n) { return e.EvalSlice(n); }
  static Val HComprehension(Evaluator& e, const Insn& n) { return e.EvalComprehension(n); }
  static Val HComprehensionRange(Evaluator& e, const Insn& n) {
    return e.EvalComprehensionRange(n);
  }
  static Val HInvalid(Evaluator& e, const Insn& n) {
    return e.Fail(n.pos, "internal: unresolved expression");
  }
  // One instantiation per builtin, so that each call pays only for its own.
  template <Fn kFn>
  Val EvalCall(const Insn& n);
  // Builtins that evaluate their arguments first, in order: the rest, from the argument values
  // (shared by the handlers and the linear code).
  template <Fn kFn>
  Val Apply(const Insn& n, const Val* args, int count);
  // Apply for the builtin of call node `n`.
  Val ApplyNode(const Insn& n, const Val* args, int count);
  static Val KnownOf(const Val& v) {
    return v.unknown() ? Val::Bool(false) : Val::Bool(!v.symbolic());
  }
  static Val LenOf(const Val& l) { return l.unknown() ? l : Val::Int(l.len()); }
  template <Fn kFn>
  static Val HFn(Evaluator& e, const Insn& n) {
    return e.EvalCall<kFn>(n);
  }

  // attr.NAME / attr("NAME"[, fallback]), read from the node the first time.
  Val EvalAttr(const Insn& n) {
    const size_t index = static_cast<size_t>(n.imm);
    if (index < kCached && (attr_cached_ >> index & 1) != 0) {
      return AttrCache(static_cast<int>(index));
    }
    return ReadAttr(n);
  }
  ABSL_ATTRIBUTE_NOINLINE Val ReadAttr(const Insn& n);
  Val EvalList(const Insn& n);
  Val EvalSlice(const Insn& n);
  Val EvalComprehension(const Insn& n);
  Val EvalComprehensionRange(const Insn& n);
  // The operations behind the handlers, on their operands' values (shared by the handlers
  // and the linear code).
  static Val NotOf(const Val& a) { return a.unknown() ? a : Val::Bool(a.i == 0); }
  template <bool kNe>
  ABSL_ATTRIBUTE_ALWAYS_INLINE Val EqualityOf(const Val& a, const Val& b);
  template <Op kOp>
  ABSL_ATTRIBUTE_ALWAYS_INLINE Val OrderOf(const Val& a, const Val& b);
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
  ABSL_ATTRIBUTE_ALWAYS_INLINE Val IndexOf(const Insn& n, const Val& l, const Val& k);
  // l[start:end] for slice node `n` (its bounds' values; those it does not have are ignored).
  Val SliceOf(const Insn& n, const Val& l, const Val& start, const Val& end);
  Val ConcatOf(int32_t pos, const Val& a, const Val& b);
  Val EvalIn(const Insn& n);
  ABSL_ATTRIBUTE_NOINLINE Val BudgetExceeded(const Insn& n);
  ABSL_ATTRIBUTE_NOINLINE Val IndexError(const Insn& n, const Val& list, int64_t index);
  // The node input a builtin's input argument names; *index = -1 when the variadic index is
  // not known. False (with the error set) when evaluating the index failed.
  bool InputIndex(const Insn& n, int* index) {
    if (ABSL_PREDICT_TRUE(n.ref == Ref::kInput)) {
      *index = static_cast<int>(n.imm);
      return true;
    }
    return VariadicIndex(n, index);
  }
  bool VariadicIndex(const Insn& n, int* index);
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
  bool HasInput(int i) const {
    return i >= 0 && i < num_inputs_ && node_.inputs[i].valid();
  }
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

  bool RunStatements(Results* results);
  // The effect of statement `st` whose expression gave `v` (none for a constraint).
  bool Finish(const Stmt& st, const Val& v, Results* results);
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
  const Bytecode* const bc_;
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

bool Evaluator::MonoOp(Arith op, int32_t pos, const Val& a, const Val& b, Val* out) {
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

Val Evaluator::IntOpSlow(Arith op, int32_t pos, const Val& a, const Val& b) {
  const bool division = op == Arith::kFloorDiv || op == Arith::kMod || op == Arith::kCeilDiv;
  if (division && b.tag() == Tag::kInt && b.i == 0) {
    return Fail(pos, op == Arith::kMod ? "modulo by zero" : "division by zero");
  }
  if (a.tag() == Tag::kInt && b.tag() == Tag::kInt) {
    int64_t r = 0;
    bool overflow = false;
    switch (op) {
      case Arith::kAdd:
        overflow = __builtin_add_overflow(a.i, b.i, &r);
        break;
      case Arith::kSub:
        overflow = __builtin_sub_overflow(a.i, b.i, &r);
        break;
      case Arith::kMul:
        overflow = __builtin_mul_overflow(a.i, b.i, &r);
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
  if (op == Arith::kMul && ((a.tag() == Tag::kInt && a.i == 0) || (b.tag() == Tag::kInt && b.i == 0))) {
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

Tri Evaluator::CompareInts(Op op, const Val& a, const Val& b) {
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

Tri Evaluator::Equal(const Val& a, const Val& b) {
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

Val Evaluator::MinMax(bool want_max, const Val& a, const Val& b) {
  const Tri less = CompareInts(Op::kLt, a, b);
  if (less == kMaybe) {
    // Equal values are their own min and max.
    if (CompareInts(Op::kEq, a, b) == kTrue) return a;
    return Val();
  }
  return (less == kTrue) == want_max ? b : a;
}

std::string Evaluator::Format(const Val& v, Type t) {
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

std::string Evaluator::FormatParts(const int32_t* ids, size_t n, bool* ok) {
  std::string out;
  *ok = true;
  for (size_t k = 0; k < n; ++k) {
    const Val v = Run(ids[k]);
    if (v.failed()) {
      *ok = false;
      return out;
    }
    out += Format(v, p_.nodes[ids[k]].type);
  }
  return out;
}

Val Evaluator::ReadInputShape(int i, int32_t pos) {
  if (ABSL_PREDICT_FALSE(!HasInput(i))) return Absent(i, pos);
  Val v;
  if (const std::optional<Dims>& shape = ctx_.input_shape(i)) {
    const size_t n = shape->size();
    const size_t off = heap_.AppendUninitialized(n);
    for (size_t k = 0; k < n; ++k) heap_[off + k] = DimVal((*shape)[k]);
    v = Val::List(off, n);
    if (!Charge(pos, static_cast<int64_t>(n))) return Val::Error();
  } else if (const v1::Tensor* t = ctx_.input_constant(i)) {
    const size_t off = heap_.size();
    for (int64_t d : t->dims()) heap_.push_back(Val::Int(d));
    v = Val::List(off, t->dims_size());
    if (!Charge(pos, t->dims_size())) return Val::Error();
  }
  if (i < kCached) {
    shape_cached_ |= 1u << i;
    ShapeCache(i) = v;
  }
  return v;
}

Val Evaluator::InputValue(int i, int32_t pos) {
  if (ABSL_PREDICT_FALSE(!HasInput(i))) return Absent(i, pos);
  if (const Dims* d = ctx_.input_dims_value(i)) {
    const size_t n = d->size();
    const size_t off = heap_.AppendUninitialized(n);
    for (size_t k = 0; k < n; ++k) heap_[off + k] = DimVal((*d)[k]);
    if (!Charge(pos, static_cast<int64_t>(n))) return Val::Error();
    return Val::List(off, n);
  }
  const v1::Tensor* t = ctx_.input_constant(i);
  if (t == nullptr || t->dims_size() > 1) return Val();
  absl::StatusOr<std::vector<int64_t>> ints = TensorToInts(*t, kMaxDimsValueElements);
  if (!ints.ok()) return Val();
  const size_t off = heap_.size();
  for (int64_t x : *ints) heap_.push_back(Val::Int(x));
  if (!Charge(pos, static_cast<int64_t>(ints->size()))) return Val::Error();
  return Val::List(off, ints->size());
}

bool Evaluator::VariadicIndex(const Insn& n, int* index) {
  // Ref::kVariadicItem: kid 0 is the index within the variadic group.
  const Val k = Kid(n, 0);
  if (k.failed()) return false;
  if (k.tag() != Tag::kInt) {
    *index = -1;
    return true;
  }
  const int64_t first = n.imm;
  const int64_t count = std::max<int64_t>(0, num_inputs_ - first);
  const int64_t j = k.i < 0 ? k.i + count : k.i;
  if (j < 0 || j >= count) {
    Fail(n.pos, absl::StrCat("index ", k.i, " is out of range for the ", count, " inputs of '",
                             p_.input_names[first], "'"));
    return false;
  }
  *index = static_cast<int>(first + j);
  return true;
}

Val Evaluator::ReadAttr(const Insn& n) {
  const size_t index = static_cast<size_t>(n.imm);
  const AttrRef& ref = p_.attrs[index];
  const v1::Attribute* a = ctx_.attr(ref.name);
  if (a == nullptr) {
    if (n.num_kids == 1) return Kid(n, 0);
    return Fail(n.pos, absl::StrCat("attribute '", ref.name, "' is not set and has no default "
                                    "(use attr(\"",
                                    ref.name, "\", fallback) or has_attr(\"", ref.name,
                                    "\"))"));
  }
  const v1::Attribute::ValueCase vc = a->value_case();
  auto mismatch = [&](const char* want) {
    return Fail(n.pos, absl::StrCat("attribute '", ref.name, "' must be ", want, ", got ",
                                    AttributeKindName(*a)));
  };
  Val v;
  switch (ref.type) {
    case v1::ATTR_INT:
      if (vc == v1::Attribute::kI) {
        v = Val::Int(a->i());
      } else if (vc == v1::Attribute::kDtype) {
        v = Val::Int(a->dtype());
      } else {
        return mismatch("an int");
      }
      break;
    case v1::ATTR_DTYPE:
      if (vc == v1::Attribute::kDtype) {
        v = Val::DType(a->dtype());
      } else if (vc == v1::Attribute::kI) {
        v = Val::DType(a->i());
      } else {
        return mismatch("a dtype");
      }
      break;
    case v1::ATTR_STRING:
      if (vc != v1::Attribute::kS) return mismatch("a string");
      v = Val::Str(&a->s());
      break;
    case v1::ATTR_INTS:
    case v1::ATTR_SHAPE: {
      const size_t off = heap_.size();
      if (vc == v1::Attribute::kInts) {
        for (int64_t x : a->ints().values()) heap_.push_back(Val::Int(x));
      } else if (vc == v1::Attribute::kShape && ref.type == v1::ATTR_SHAPE) {
        for (const v1::Dim& d : a->shape().dims()) {
          if (d.value_case() == v1::Dim::kSize) {
            heap_.push_back(Val::Int(d.size()));
          } else if (d.value_case() == v1::Dim::kSymbol) {
            heap_.push_back(SymbolVal(&d.symbol()));
          } else {
            heap_.push_back(Val());
          }
        }
      } else {
        return mismatch(ref.type == v1::ATTR_SHAPE ? "a shape" : "a list of ints");
      }
      const size_t len = heap_.size() - off;
      if (!CheckLength(n.pos, static_cast<int64_t>(len))) return Val::Error();
      v = Val::List(off, len);
      break;
    }
    case v1::ATTR_STRINGS: {
      if (vc != v1::Attribute::kStrings) return mismatch("a list of strings");
      const size_t off = heap_.size();
      for (const std::string& s : a->strings().values()) heap_.push_back(Val::Str(&s));
      const size_t len = heap_.size() - off;
      if (!CheckLength(n.pos, static_cast<int64_t>(len))) return Val::Error();
      v = Val::List(off, len);
      break;
    }
    default:
      return Fail(n.pos, absl::StrCat("attribute '", ref.name, "' cannot be read"));
  }
  if (index < kCached) {
    attr_cached_ |= 1u << index;
    AttrCache(static_cast<int>(index)) = v;
  }
  return v;
}

Val Evaluator::Merge(int32_t pos, const Val& a, const Val& b) {
  const Tri eq = CompareInts(Op::kEq, a, b);
  if (eq == kTrue) return a;
  if (eq == kFalse) {
    return Fail(pos, absl::StrCat("merge(): sizes ", Format(a, Type::Int()), " and ",
                                  Format(b, Type::Int()), " differ"));
  }
  if (a.tag() == Tag::kInt) return a;
  if (b.tag() == Tag::kInt) return b;
  if (a.symbolic() && b.symbolic()) return Val();
  return a.symbolic() ? a : b;
}

Val Evaluator::Broadcast(const Insn& n, const Val* args, int count) {
  // Several shapes, or a single list of shapes (imm 1).
  const Val* shapes = args;
  size_t num = static_cast<size_t>(count);
  if (n.imm == 1) {
    if (args[0].unknown()) return Val();
    shapes = &heap_[args[0].i];
    num = args[0].len();
  }
  uint32_t rank = 0;
  for (size_t i = 0; i < num; ++i) {
    if (shapes[i].unknown()) return Val();
    rank = std::max(rank, shapes[i].len());
  }
  if (!Charge(n.pos, static_cast<int64_t>(rank) * static_cast<int64_t>(num))) {
    return Val::Error();
  }
  const size_t off = heap_.Append(rank, Val::Int(1));
  absl::InlinedVector<int, 8> decided_by(rank, -1);
  for (size_t i = 0; i < num; ++i) {
    const Val s = shapes[i];
    const uint32_t shift = rank - s.len();
    for (uint32_t k = 0; k < s.len(); ++k) {
      const Val a = heap_[off + shift + k];
      const Val b = HeapAt(s, k);
      Val r;
      if (a.tag() == Tag::kInt && b.tag() == Tag::kInt) {
        if (a.i == b.i || b.i == 1) {
          r = a;
        } else if (a.i == 1) {
          r = b;
        } else {
          const int j = std::max(decided_by[shift + k], 0);
          return Fail(n.pos, absl::StrCat("cannot broadcast shapes ",
                                          Format(shapes[j], Type::ListOf(Type::Int())),
                                          " (operand ", j, ") and ",
                                          Format(s, Type::ListOf(Type::Int())), " (operand ", i,
                                          "): dim ", a.i, " vs ", b.i, " at output axis ",
                                          shift + k));
        }
      } else if (a.tag() == Tag::kInt) {
        r = a.i == 1 ? b : a;
      } else if (b.tag() == Tag::kInt) {
        r = b.i == 1 ? a : b;
      } else if (a.symbolic() && b.symbolic() && CompareInts(Op::kEq, a, b) == kTrue) {
        r = a;
      }  // else unknown
      if (b.tag() == Tag::kInt && b.i != 1) decided_by[shift + k] = static_cast<int>(i);
      heap_[off + shift + k] = r;
    }
  }
  return Val::List(off, rank);
}

template <Fn kFn>
Val Evaluator::EvalCall(const Insn& n) {
  switch (kFn) {
    case Fn::kRank:
    case Fn::kShape:
    case Fn::kDim:
    case Fn::kValue: {
      int i;
      if (!InputIndex(n, &i)) return Val::Error();
      if (i < 0) return Val();
      if (kFn == Fn::kValue) return InputValue(i, n.pos);
      const Val s = InputShape(i, n.pos);
      if (kFn == Fn::kShape || s.failed()) return s;
      if (kFn == Fn::kRank) return s.unknown() ? Val() : Val::Int(s.len());
      const Val k = Kid(n, n.ref == Ref::kVariadicItem ? 1 : 0);
      if (k.failed()) return k;
      if (s.unknown() || k.tag() != Tag::kInt) return Val();
      const int64_t j = k.i < 0 ? k.i + s.len() : k.i;
      if (j < 0 || j >= s.len()) {
        return Fail(n.pos, absl::StrCat("dim(): index ", k.i, " is out of range for input '",
                                        InputLabel(i), "' of rank ", s.len(), " (shape ",
                                        Format(s, Type::ListOf(Type::Int())), ")"));
      }
      return HeapAt(s, j);
    }
    case Fn::kHas: {
      if (n.ref == Ref::kInput) return Val::Bool(HasInput(static_cast<int>(n.imm)));
      const Val k = Kid(n, 0);
      if (k.failed()) return k;
      if (k.tag() != Tag::kInt) return Val();
      const int64_t count = std::max<int64_t>(0, num_inputs_ - n.imm);
      const int64_t j = k.i < 0 ? k.i + count : k.i;
      return Val::Bool(j >= 0 && j < count && HasInput(static_cast<int>(n.imm + j)));
    }
    case Fn::kDTypeOf: {
      if (n.ref == Ref::kConstraint) {
        for (int32_t d : p_.constraint_inputs[n.imm]) {
          const int last = d == p_.variadic_input ? num_inputs_ - 1 : d;
          for (int i = d; i <= last; ++i) {
            if (!HasInput(i)) continue;
            const v1::DataType dt = ctx_.input_type(i).dtype;
            if (dt != v1::DT_UNDEFINED) return Val::DType(dt);
          }
        }
        return Val();
      }
      int i;
      if (!InputIndex(n, &i)) return Val::Error();
      if (i < 0) return Val();
      if (ABSL_PREDICT_FALSE(!HasInput(i))) return Absent(i, n.pos);
      const v1::DataType dt = ctx_.input_type(i).dtype;
      return dt == v1::DT_UNDEFINED ? Val() : Val::DType(dt);
    }
    case Fn::kCount: {
      const int total = n.ref == Ref::kVariadicOutput ? ctx_.num_outputs() : num_inputs_;
      return Val::Int(std::max<int64_t>(0, total - n.imm));
    }
    case Fn::kShapes: {
      const int count = std::max(0, num_inputs_ - static_cast<int>(n.imm));
      if (!CheckLength(n.pos, count)) return Val::Error();
      const size_t base = scratch_.size();
      for (int i = static_cast<int>(n.imm); i < num_inputs_; ++i) {
        if (!HasInput(i)) continue;
        const Val s = InputShape(i, n.pos);
        if (s.failed()) return s;
        scratch_.push_back(s);
      }
      return ListFromScratch(base);
    }
    case Fn::kHasAttr: {
      const int64_t index = n.imm;
      if (index < kCached && (has_attr_cached_ >> index & 1) != 0) {
        return Val::Bool((has_attr_ >> index & 1) != 0);
      }
      const bool has = node_.attributes.contains(p_.attrs[index].name);
      if (index < kCached) {
        has_attr_cached_ |= 1u << index;
        if (has) has_attr_ |= 1u << index;
      }
      return Val::Bool(has);
    }
    case Fn::kAttrDType: {
      const std::string& name = p_.attrs[n.imm].name;
      const v1::Attribute* a = ctx_.attr(name);
      if (a == nullptr) return Val();
      int64_t dt;
      if (a->value_case() == v1::Attribute::kDtype) {
        dt = a->dtype();
      } else if (a->value_case() == v1::Attribute::kI) {
        dt = a->i();
      } else {
        return Fail(n.pos, absl::StrCat("attribute '", name, "' must be a dtype or an int, got ",
                                        AttributeKindName(*a)));
      }
      if (dt < std::numeric_limits<int>::min() || dt > std::numeric_limits<int>::max() ||
          !v1::DataType_IsValid(static_cast<int>(dt)) || dt == v1::DT_UNDEFINED) {
        return Fail(n.pos, absl::StrCat("attribute '", name, "' is not a data type: ", dt));
      }
      return Val::DType(dt);
    }
    case Fn::kOpset:
      if (opset_ < 0) opset_ = ctx_.opset_version();
      return Val::Int(opset_);
    case Fn::kNumInputs:
      return Val::Int(num_inputs_);
    case Fn::kNumOutputs:
      return Val::Int(ctx_.num_outputs());
    case Fn::kBroadcast:
    case Fn::kNormalizeAxis:
    case Fn::kMerge:
    case Fn::kMin:
    case Fn::kMax:
    case Fn::kAbs:
    case Fn::kCdiv:
    case Fn::kLen:
    case Fn::kSum:
    case Fn::kProd:
    case Fn::kRange:
    case Fn::kKnown:
    case Fn::kAll:
    case Fn::kAnyOf:
    case Fn::kFlatten:
    case Fn::kDistinct:
    case Fn::kDTypeSize: {
      // The arguments in order, then the function.
      if (n.num_kids <= 4) {
        Val args[4];
        for (int k = 0; k < n.num_kids; ++k) {
          args[k] = Kid(n, k);
          if (args[k].failed()) return args[k];
        }
        return Apply<kFn>(n, args, n.num_kids);
      }
      absl::InlinedVector<Val, 8> args;
      for (int k = 0; k < n.num_kids; ++k) {
        args.push_back(Kid(n, k));
        if (args.back().failed()) return args.back();
      }
      return Apply<kFn>(n, args.data(), n.num_kids);
    }
    case Fn::kFail: {
      bool ok;
      std::string message = FormatParts(kids_ + n.first_kid, n.num_kids, &ok);
      if (!ok) return Val::Error();
      return Fail(n.pos, std::move(message));
    }
  }
  return Fail(n.pos, "internal: unknown function");
}

template <Fn kFn>
Val Evaluator::Apply(const Insn& n, const Val* args, int count) {
  switch (kFn) {
    case Fn::kBroadcast:
      return Broadcast(n, args, count);
    case Fn::kNormalizeAxis: {
      const Val axis = args[0];
      const Val rank = args[1];
      if (axis.tag() != Tag::kInt || rank.tag() != Tag::kInt) return Val();
      if (rank.i < 0 || axis.i < -rank.i || axis.i >= rank.i) {
        return Fail(n.pos, absl::StrCat("axis ", axis.i, " is out of range for rank ", rank.i,
                                        " (expected [", -rank.i, ", ", rank.i - 1, "])"));
      }
      return Val::Int(axis.i < 0 ? axis.i + rank.i : axis.i);
    }
    case Fn::kMerge:
    case Fn::kMin:
    case Fn::kMax: {
      // int..., or a single list (imm 1).
      const Val* vals = args;
      size_t num = static_cast<size_t>(count);
      if (n.imm == 1) {
        const Val l = args[0];
        if (l.unknown()) return Val();
        vals = &heap_[l.i];
        num = l.len();
        if (!Charge(n.pos, l.len())) return Val::Error();
      }
      if (num == 0) {
        return Fail(n.pos, absl::StrCat(kFn == Fn::kMerge ? "merge" : kFn == Fn::kMin ? "min"
                                                                                        : "max",
                                        "() of an empty list"));
      }
      Val r = vals[0];
      for (size_t k = 1; k < num; ++k) {
        const Val v = vals[k];
        if (kFn == Fn::kMerge) {
          r = Merge(n.pos, r, v);
          if (r.failed()) return r;
        } else if (r.unknown() || v.unknown()) {
          r = Val();
        } else if (r.tag() == Tag::kInt && v.tag() == Tag::kInt) {
          if (kFn == Fn::kMax ? v.i > r.i : v.i < r.i) r = v;
        } else {
          r = MinMax(kFn == Fn::kMax, r, v);
        }
      }
      return r;
    }
    case Fn::kAbs: {
      const Val a = args[0];
      if (a.tag() != Tag::kInt) return Val();
      if (a.i == kInt64Min) return Fail(n.pos, "integer overflow in abs()");
      return Val::Int(a.i < 0 ? -a.i : a.i);
    }
    case Fn::kCdiv:
      return IntOp(Arith::kCeilDiv, n.pos, args[0], args[1]);
    case Fn::kLen:
      return LenOf(args[0]);
    case Fn::kKnown:
      return KnownOf(args[0]);
    case Fn::kSum:
    case Fn::kProd: {
      const Val l = args[0];
      if (l.unknown()) return l;
      Val r = Val::Int(kFn == Fn::kSum ? 0 : 1);
      for (uint32_t k = 0; k < l.len(); ++k) {
        r = IntOp(kFn == Fn::kSum ? Arith::kAdd : Arith::kMul, n.pos, r, HeapAt(l, k));
        if (r.failed()) return r;
      }
      if (!Charge(n.pos, l.len())) return Val::Error();
      return r;
    }
    case Fn::kRange: {
      for (int k = 0; k < count; ++k) {
        if (args[k].tag() != Tag::kInt) return Val();
      }
      const int64_t start = count == 1 ? 0 : args[0].i;
      const int64_t stop = count == 1 ? args[0].i : args[1].i;
      const int64_t step = count == 3 ? args[2].i : 1;
      if (step == 0) return Fail(n.pos, "range() step must not be zero");
      // Element count, computed in 128 bits so that no bound overflows.
      __int128 num = 0;
      const __int128 span = static_cast<__int128>(stop) - start;
      if ((step > 0 && span > 0) || (step < 0 && span < 0)) {
        const __int128 st = step;
        num = (span + (step > 0 ? st - 1 : st + 1)) / st;
      }
      if (num > limits_.max_list_length) {
        return Fail(n.pos, absl::StrCat("range() of ", static_cast<int64_t>(std::min<__int128>(
                                                           num, INT64_MAX)),
                                        " elements exceeds the limit of ",
                                        limits_.max_list_length));
      }
      if (!Charge(n.pos, static_cast<int64_t>(num))) return Val::Error();
      const size_t off = heap_.AppendUninitialized(static_cast<size_t>(num));
      for (int64_t k = 0; k < static_cast<int64_t>(num); ++k) {
        heap_[off + k] = Val::Int(start + k * step);
      }
      return Val::List(off, static_cast<size_t>(num));
    }
    case Fn::kAll:
    case Fn::kAnyOf: {
      const Val l = args[0];
      if (l.unknown()) return l;
      const bool all = kFn == Fn::kAll;
      bool maybe = false;
      for (uint32_t k = 0; k < l.len(); ++k) {
        const Val x = HeapAt(l, k);
        if (x.unknown()) {
          maybe = true;
        } else if ((x.i != 0) != all) {
          return Val::Bool(!all);
        }
      }
      if (!Charge(n.pos, l.len())) return Val::Error();
      return maybe ? Val() : Val::Bool(all);
    }
    case Fn::kFlatten: {
      const Val l = args[0];
      if (l.unknown()) return l;
      int64_t total = 0;
      for (uint32_t k = 0; k < l.len(); ++k) {
        const Val x = HeapAt(l, k);
        if (x.unknown()) return Val();
        total += x.len();
      }
      if (!CheckLength(n.pos, total)) return Val::Error();
      const size_t off = heap_.AppendUninitialized(static_cast<size_t>(total));
      size_t w = off;
      for (uint32_t k = 0; k < l.len(); ++k) {
        const Val x = HeapAt(l, k);
        for (uint32_t e = 0; e < x.len(); ++e) heap_[w++] = HeapAt(x, e);
      }
      return Val::List(off, static_cast<size_t>(total));
    }
    case Fn::kDistinct: {
      // Kleene: false when two elements are provably equal, true when every pair provably
      // differs, else unknown.
      const Val l = args[0];
      if (l.unknown()) return l;
      if (!Charge(n.pos, static_cast<int64_t>(l.len()) * l.len() / 2)) return Val::Error();
      bool maybe = false;
      for (uint32_t a = 0; a < l.len(); ++a) {
        const Val x = HeapAt(l, a);
        for (uint32_t b = a + 1; b < l.len(); ++b) {
          const Val y = HeapAt(l, b);
          const Tri eq = x.tag() == Tag::kInt && y.tag() == Tag::kInt
                             ? (x.i == y.i ? kTrue : kFalse)
                             : CompareInts(Op::kEq, x, y);
          if (eq == kTrue) return Val::Bool(false);
          maybe |= eq == kMaybe;
        }
      }
      return maybe ? Val() : Val::Bool(true);
    }
    case Fn::kDTypeSize: {
      const Val d = args[0];
      const int size =
          d.tag() == Tag::kDType ? DataTypeSize(static_cast<v1::DataType>(d.i)) : 0;
      return size > 0 ? Val::Int(size) : Val();
    }
    default:
      return Fail(n.pos, "internal: not an applied function");
  }
}

Val Evaluator::ApplyNode(const Insn& n, const Val* args, int count) {
  switch (static_cast<Fn>(n.handler - kHFn)) {
    case Fn::kBroadcast:
      return Apply<Fn::kBroadcast>(n, args, count);
    case Fn::kNormalizeAxis:
      return Apply<Fn::kNormalizeAxis>(n, args, count);
    case Fn::kMerge:
      return Apply<Fn::kMerge>(n, args, count);
    case Fn::kMin:
      return Apply<Fn::kMin>(n, args, count);
    case Fn::kMax:
      return Apply<Fn::kMax>(n, args, count);
    case Fn::kAbs:
      return Apply<Fn::kAbs>(n, args, count);
    case Fn::kCdiv:
      return Apply<Fn::kCdiv>(n, args, count);
    case Fn::kSum:
      return Apply<Fn::kSum>(n, args, count);
    case Fn::kProd:
      return Apply<Fn::kProd>(n, args, count);
    case Fn::kRange:
      return Apply<Fn::kRange>(n, args, count);
    case Fn::kAll:
      return Apply<Fn::kAll>(n, args, count);
    case Fn::kAnyOf:
      return Apply<Fn::kAnyOf>(n, args, count);
    case Fn::kFlatten:
      return Apply<Fn::kFlatten>(n, args, count);
    case Fn::kDistinct:
      return Apply<Fn::kDistinct>(n, args, count);
    case Fn::kDTypeSize:
      return Apply<Fn::kDTypeSize>(n, args, count);
    default:
      return Fail(n.pos, "internal: not an applied function");
  }
}

Val Evaluator::BudgetExceeded(const Insn& n) {
  return Fail(n.pos, absl::StrCat("evaluation exceeded the budget of ", limits_.max_steps,
                                  " steps"));
}

Val Evaluator::ConcatOf(int32_t pos, const Val& a, const Val& b) {
  if (a.unknown() || b.unknown()) return Val();
  const int64_t len = static_cast<int64_t>(a.len()) + b.len();
  if (!CheckLength(pos, len)) return Val::Error();
  const size_t off = heap_.AppendUninitialized(static_cast<size_t>(len));
  for (uint32_t k = 0; k < a.len(); ++k) heap_[off + k] = HeapAt(a, k);
  for (uint32_t k = 0; k < b.len(); ++k) heap_[off + a.len() + k] = HeapAt(b, k);
  return Val::List(off, static_cast<size_t>(len));
}

Val Evaluator::EvalIn(const Insn& n) {
  const Val x = Kid(n, 0);
  if (x.failed()) return x;
  bool maybe = false;
  for (int k = 1; k < n.num_kids; ++k) {
    const Val m = Kid(n, k);
    if (m.failed()) return m;
    const Tri t = Equal(x, m);
    if (t == kTrue) return Val::Bool(true);
    maybe |= t == kMaybe;
  }
  return maybe ? Val() : Val::Bool(false);
}

Val Evaluator::EvalList(const Insn& n) {
  if (!CheckLength(n.pos, n.num_kids)) return Val::Error();
  const size_t base = scratch_.size();
  for (int k = 0; k < n.num_kids; ++k) {
    const Val e = Kid(n, k);
    if (e.failed()) return e;
    scratch_.push_back(e);
  }
  return ListFromScratch(base);
}

Val Evaluator::EvalSlice(const Insn& n) {
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

Val Evaluator::SliceOf(const Insn& n, const Val& l, const Val& start, const Val& end) {
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

Val Evaluator::EvalComprehensionRange(const Insn& n) {
  // [E for i in range(N)]: kid 0 is the range(N) call, read without evaluating it as a node.
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
  Val* const var = &slots_[n.imm];
  for (int64_t k = 0; k < count.i; ++k) {
    *var = Val::Int(k);
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

Val Evaluator::EvalComprehension(const Insn& n) {
  const Val iter = Kid(n, 0);
  if (iter.failed() || iter.unknown()) return iter;
  const size_t base = scratch_.size();
  const bool filtered = n.num_kids > 2;
  Val* const var = &slots_[n.imm];
  for (uint32_t k = 0; k < iter.len(); ++k) {
    *var = HeapAt(iter, k);
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

Val Evaluator::IndexError(const Insn& n, const Val& list, int64_t index) {
  return Fail(n.pos, absl::StrCat("index ", index, " is out of range for ",
                                  Format(list, p_.nodes[n.kid0].type), " (length ", list.len(),
                                  ")"));
}

template <bool kNe>
inline Val Evaluator::EqualityOf(const Val& a, const Val& b) {
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
inline Val Evaluator::OrderOf(const Val& a, const Val& b) {
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

inline Val Evaluator::IndexOf(const Insn& n, const Val& l, const Val& k) {
  if (l.unknown() || k.tag() != Tag::kInt) return Val();
  const int64_t j = k.i < 0 ? k.i + l.len() : k.i;
  if (ABSL_PREDICT_FALSE(j < 0 || j >= l.len())) return IndexError(n, l, k.i);
  return HeapAt(l, j);
}

Val Evaluator::HNeg(Evaluator& e, const Insn& n) {
  const Val a = e.Kid(n, 0);
  if (a.failed()) return a;
  return e.IntOp(Arith::kSub, n.pos, Val::Int(0), a);
}

Val Evaluator::HNot(Evaluator& e, const Insn& n) {
  const Val a = e.Kid(n, 0);
  if (a.failed()) return a;
  return NotOf(a);
}

template <bool kAnd>
Val Evaluator::HAndOr(Evaluator& e, const Insn& n) {
  const Val a = e.Kid(n, 0);
  if (a.failed() || Decides<kAnd>(a)) return a;
  const Val b = e.Kid(n, 1);
  if (b.failed()) return b;
  return AndOrRest<kAnd>(a, b);
}

Val Evaluator::HCoalesce(Evaluator& e, const Insn& n) {
  const Val a = e.Kid(n, 0);
  if (!a.unknown()) return a;  // a value, or an error
  return e.Kid(n, 1);
}

Val Evaluator::HIf(Evaluator& e, const Insn& n) {
  const Val c = e.Kid(n, 0);
  if (c.failed() || c.unknown()) return c;
  return c.i != 0 ? e.Kid(n, 1) : e.Run(e.kids_[n.first_kid + 2]);
}

// Indexed by H.
const Evaluator::Handler Evaluator::kHandlers[kNumHandlers] = {
    &Evaluator::HSlotOrInt,                                        // kHSlot
    &Evaluator::HSlotOrInt,                                        // kHInt
    &Evaluator::HBool,                                             // kHBool
    &Evaluator::HString,                                           // kHString
    &Evaluator::HDType,                                            // kHDType
    &Evaluator::HUnknown,                                          // kHUnknown
    &Evaluator::HAttr,                                             // kHAttr
    &Evaluator::HNeg,                                              // kHNeg
    &Evaluator::HNot,                                              // kHNot
    &Evaluator::HBinary<&Evaluator::ArithNode<Arith::kAdd>>,       // kHAdd
    &Evaluator::HBinary<&Evaluator::ArithNode<Arith::kSub>>,       // kHSub
    &Evaluator::HBinary<&Evaluator::ArithNode<Arith::kMul>>,       // kHMul
    &Evaluator::HBinary<&Evaluator::ArithNode<Arith::kFloorDiv>>,  // kHFloorDiv
    &Evaluator::HBinary<&Evaluator::ArithNode<Arith::kMod>>,       // kHMod
    &Evaluator::HBinary<&Evaluator::EqualityNode<false>>,          // kHEq
    &Evaluator::HBinary<&Evaluator::EqualityNode<true>>,           // kHNe
    &Evaluator::HBinary<&Evaluator::OrderNode<Op::kLt>>,           // kHLt
    &Evaluator::HBinary<&Evaluator::OrderNode<Op::kLe>>,           // kHLe
    &Evaluator::HBinary<&Evaluator::OrderNode<Op::kGt>>,           // kHGt
    &Evaluator::HBinary<&Evaluator::OrderNode<Op::kGe>>,           // kHGe
    &Evaluator::HAndOr<true>,                                      // kHAnd
    &Evaluator::HAndOr<false>,                                     // kHOr
    &Evaluator::HBinary<&Evaluator::ConcatNode>,                   // kHConcat
    &Evaluator::HCoalesce,                                         // kHCoalesce
    &Evaluator::HIn,                                               // kHIn
    &Evaluator::HIf,                                               // kHIf
    &Evaluator::HList,                                             // kHList
    &Evaluator::HBinary<&Evaluator::IndexOf>,                      // kHIndex
    &Evaluator::HSlice,                                            // kHSlice
    &Evaluator::HComprehension,                                    // kHComprehension
    &Evaluator::HComprehensionRange,                               // kHComprehensionRange
    &Evaluator::HInvalid,                                          // kHInvalid
    // kHFn + Fn, in the order of Fn.
    &Evaluator::HFn<Fn::kRank>,
    &Evaluator::HFn<Fn::kShape>,
    &Evaluator::HFn<Fn::kDim>,
    &Evaluator::HFn<Fn::kHas>,
    &Evaluator::HFn<Fn::kValue>,
    &Evaluator::HFn<Fn::kDTypeOf>,
    &Evaluator::HFn<Fn::kCount>,
    &Evaluator::HFn<Fn::kShapes>,
    &Evaluator::HFn<Fn::kHasAttr>,
    &Evaluator::HFn<Fn::kAttrDType>,
    &Evaluator::HFn<Fn::kOpset>,
    &Evaluator::HFn<Fn::kNumInputs>,
    &Evaluator::HFn<Fn::kNumOutputs>,
    &Evaluator::HFn<Fn::kBroadcast>,
    &Evaluator::HFn<Fn::kNormalizeAxis>,
    &Evaluator::HFn<Fn::kMerge>,
    &Evaluator::HFn<Fn::kFail>,
    &Evaluator::HFn<Fn::kMin>,
    &Evaluator::HFn<Fn::kMax>,
    &Evaluator::HFn<Fn::kAbs>,
    &Evaluator::HFn<Fn::kCdiv>,
    &Evaluator::HFn<Fn::kLen>,
    &Evaluator::HFn<Fn::kSum>,
    &Evaluator::HFn<Fn::kProd>,
    &Evaluator::HFn<Fn::kRange>,
    &Evaluator::HFn<Fn::kKnown>,
    &Evaluator::HFn<Fn::kAll>,
    &Evaluator::HFn<Fn::kAnyOf>,
    &Evaluator::HFn<Fn::kFlatten>,
    &Evaluator::HFn<Fn::kDTypeSize>,
    &Evaluator::HFn<Fn::kDistinct>,
};

void Evaluator::CodeBudgetExceeded(const VInsn& x) {
  // The charged nodes in the order they were reached: the budget ran out at the first one
  // past it.
  const int64_t before = steps_ - x.charge;
  const int64_t k = max_steps_ - before;  // 0 <= k < charge
  const int32_t node = bc_->charged[bc_->charge_first[&x - bc_->code.data()] + k];
  Fail(code_[node].pos,
       absl::StrCat("evaluation exceeded the budget of ", limits_.max_steps, " steps"));
}

bool Evaluator::Exec(Results* results) {
  // Threaded dispatch: each instruction jumps straight to the next one's code (GCC's labels as
  // values), charging its steps first.
  // In the order of VOp.
  static const void* const kOps[] = {
      &&op_ret,
      &&op_stmt,
      &&op_assert,
      &&op_mov,
      &&op_jmp,
      &&op_node,
      &&op_neg,
      &&op_not,
      &&op_arith,
      &&op_eq,
      &&op_ne,
      &&op_lt,
      &&op_le,
      &&op_gt,
      &&op_ge,
      &&op_and_short,
      &&op_or_short,
      &&op_and_rest,
      &&op_or_rest,
      &&op_coal_short,
      &&op_if_test,
      &&op_index,
      &&op_concat,
      &&op_known,
      &&op_len,
      &&op_apply1,
      &&op_apply2,
      &&op_comp_begin,
      &&op_comp_next,
      &&op_crange_begin,
      &&op_crange_next,
      &&op_comp_filter,
      &&op_comp_push_next,
      &&op_crange_push_next,
      &&op_slice,
      &&op_slice_check,
  };
  static_assert(sizeof(kOps) / sizeof(kOps[0]) == static_cast<size_t>(VOp::kSliceCheck) + 1,
                "one label per VOp");
  const VInsn* const code = bc_->code.data();
  Val* const r = slots_;
  const int64_t max_steps = max_steps_;
  // The step count lives in a register here; steps_ holds it around the calls that charge
  // steps themselves (handlers, builtins, polynomial arithmetic, list building).
  int64_t steps = steps_;
  const VInsn* x = code;
  Val v;
#define GRAPHOPT_RULES_DISPATCH()                                    \
  do {                                                               \
    steps += x->charge;                                              \
    if (ABSL_PREDICT_FALSE(steps > max_steps)) goto budget_exceeded; \
    goto* kOps[static_cast<int>(x->op)];                             \
  } while (0)
#define GRAPHOPT_RULES_NEXT() \
  do {                        \
    ++x;                      \
    GRAPHOPT_RULES_DISPATCH(); \
  } while (0)
#define GRAPHOPT_RULES_JUMP(to) \
  do {                          \
    x = code + (to);            \
    GRAPHOPT_RULES_DISPATCH();  \
  } while (0)
  GRAPHOPT_RULES_DISPATCH();

op_ret:
  steps_ = steps;
  return true;
op_stmt:
  steps_ = steps;
  if (!Finish(p_.stmts[x->target2], r[x->a], results)) return false;
  steps = steps_;
  GRAPHOPT_RULES_NEXT();
op_assert:
  // Holds (or is unknown): on; else Finish fails with the assertion's message.
  if (r[x->a].unknown() || r[x->a].i != 0) GRAPHOPT_RULES_NEXT();
  steps_ = steps;
  Finish(p_.stmts[x->target2], r[x->a], results);
  return false;
op_mov:
  r[x->dst] = r[x->a];
  GRAPHOPT_RULES_NEXT();
op_jmp:
  GRAPHOPT_RULES_JUMP(x->target);
op_node: {
  const Insn& n = code_[x->node];
  steps_ = steps;
  v = kHandlers[n.handler](*this, n);
  steps = steps_;
  goto store;
}
op_neg:
  steps_ = steps;
  v = IntOp(Arith::kSub, x->pos, Val::Int(0), r[x->a]);
  steps = steps_;
  goto store;
op_not:
  r[x->dst] = NotOf(r[x->a]);
  GRAPHOPT_RULES_NEXT();
op_arith:
  steps_ = steps;
  v = IntOp(static_cast<Arith>(x->c), x->pos, r[x->a], r[x->b]);
  steps = steps_;
  goto store;
op_eq:
  r[x->dst] = EqualityOf<false>(r[x->a], r[x->b]);
  GRAPHOPT_RULES_NEXT();
op_ne:
  r[x->dst] = EqualityOf<true>(r[x->a], r[x->b]);
  GRAPHOPT_RULES_NEXT();
op_lt:
  r[x->dst] = OrderOf<Op::kLt>(r[x->a], r[x->b]);
  GRAPHOPT_RULES_NEXT();
op_le:
  r[x->dst] = OrderOf<Op::kLe>(r[x->a], r[x->b]);
  GRAPHOPT_RULES_NEXT();
op_gt:
  r[x->dst] = OrderOf<Op::kGt>(r[x->a], r[x->b]);
  GRAPHOPT_RULES_NEXT();
op_ge:
  r[x->dst] = OrderOf<Op::kGe>(r[x->a], r[x->b]);
  GRAPHOPT_RULES_NEXT();
op_and_short:
  if (Decides<true>(r[x->a])) {
    r[x->dst] = r[x->a];
    GRAPHOPT_RULES_JUMP(x->target);
  }
  GRAPHOPT_RULES_NEXT();
op_or_short:
  if (Decides<false>(r[x->a])) {
    r[x->dst] = r[x->a];
    GRAPHOPT_RULES_JUMP(x->target);
  }
  GRAPHOPT_RULES_NEXT();
op_and_rest:
  r[x->dst] = AndOrRest<true>(r[x->a], r[x->b]);
  GRAPHOPT_RULES_NEXT();
op_or_rest:
  r[x->dst] = AndOrRest<false>(r[x->a], r[x->b]);
  GRAPHOPT_RULES_NEXT();
op_coal_short:
  if (!r[x->a].unknown()) {
    r[x->dst] = r[x->a];
    GRAPHOPT_RULES_JUMP(x->target);
  }
  GRAPHOPT_RULES_NEXT();
op_if_test: {
  const Val c = r[x->a];
  if (c.unknown()) {
    r[x->dst] = c;
    GRAPHOPT_RULES_JUMP(x->target);
  }
  if (c.i == 0) GRAPHOPT_RULES_JUMP(x->target2);
  GRAPHOPT_RULES_NEXT();
}
op_index:
  v = IndexOf(code_[x->node], r[x->a], r[x->b]);
  goto store;
op_concat:
  steps_ = steps;
  v = ConcatOf(x->pos, r[x->a], r[x->b]);
  steps = steps_;
  goto store;
op_known:
  r[x->dst] = KnownOf(r[x->a]);
  GRAPHOPT_RULES_NEXT();
op_len:
  r[x->dst] = LenOf(r[x->a]);
  GRAPHOPT_RULES_NEXT();
op_apply1: {
  const Val arg = r[x->a];
  steps_ = steps;
  v = ApplyNode(code_[x->node], &arg, 1);
  steps = steps_;
  goto store;
}
op_apply2: {
  const Val args[2] = {r[x->a], r[x->b]};
  steps_ = steps;
  v = ApplyNode(code_[x->node], args, 2);
  steps = steps_;
  goto store;
}
op_comp_begin: {
  const Val it = r[x->a];
  if (it.unknown()) {
    r[x->dst] = it;
    GRAPHOPT_RULES_JUMP(x->target);
  }
  r[x->b].i = 0;                                      // the next element
  r[x->b].meta = it.len();                            // the count
  r[x->c].i = static_cast<int64_t>(scratch_.size());  // where the list starts
  r[x->c].meta = static_cast<uint64_t>(it.i);         // where the elements are
  GRAPHOPT_RULES_NEXT();
}
op_comp_push_next:
  scratch_.push_back(r[x->a]);
  // and on to the next element
op_comp_next: {
  const int64_t k = r[x->b].i;
  if (k >= static_cast<int64_t>(r[x->b].meta)) {
    r[x->dst] = ListFromScratch(static_cast<size_t>(r[x->c].i));
    GRAPHOPT_RULES_JUMP(x->target);
  }
  r[x->d] = heap_[r[x->c].meta + k];
  r[x->b].i = k + 1;
  if (x->op == VOp::kCompPushNext) GRAPHOPT_RULES_JUMP(x->target2);
  GRAPHOPT_RULES_NEXT();
}
op_crange_begin: {
  const Val count = r[x->a];
  if (count.tag() != Tag::kInt) {
    r[x->dst] = Val();
    GRAPHOPT_RULES_JUMP(x->target);
  }
  if (count.i > limits_.max_list_length) {
    Fail(x->pos, absl::StrCat("range() of ", count.i, " elements exceeds the limit of ",
                              limits_.max_list_length));
    return false;
  }
  steps_ = steps;
  if (!Charge(x->pos, std::max<int64_t>(count.i, 0))) return false;
  steps = steps_;
  r[x->b].i = 0;
  r[x->b].meta = static_cast<uint64_t>(std::max<int64_t>(count.i, 0));  // the count
  r[x->c].i = static_cast<int64_t>(scratch_.size());
  GRAPHOPT_RULES_NEXT();
}
op_crange_push_next:
  scratch_.push_back(r[x->a]);
  // and on to the next element
op_crange_next: {
  const int64_t k = r[x->b].i;
  if (k >= static_cast<int64_t>(r[x->b].meta)) {
    r[x->dst] = ListFromScratch(static_cast<size_t>(r[x->c].i));
    GRAPHOPT_RULES_JUMP(x->target);
  }
  r[x->d] = Val::Int(k);
  r[x->b].i = k + 1;
  if (x->op == VOp::kCompRangePushNext) GRAPHOPT_RULES_JUMP(x->target2);
  GRAPHOPT_RULES_NEXT();
}
op_comp_filter: {
  const Val keep = r[x->a];
  if (keep.unknown()) {  // the length is not known
    scratch_.truncate(static_cast<size_t>(r[x->c].i));
    r[x->dst] = keep;
    GRAPHOPT_RULES_JUMP(x->target);
  }
  if (keep.i == 0) GRAPHOPT_RULES_JUMP(x->target2);
  GRAPHOPT_RULES_NEXT();
}
op_slice_check:
  // A slice's first bound is not a known int: the slice is unknown (its second bound is not
  // evaluated).
  if (r[x->a].tag() != Tag::kInt) {
    r[x->dst] = Val();
    GRAPHOPT_RULES_JUMP(x->target);
  }
  GRAPHOPT_RULES_NEXT();
op_slice:
  r[x->dst] = SliceOf(code_[x->node], r[x->a], r[x->b], r[x->c]);
  GRAPHOPT_RULES_NEXT();

store:
  if (ABSL_PREDICT_FALSE(v.failed())) return false;
  r[x->dst] = v;
  GRAPHOPT_RULES_NEXT();

budget_exceeded:
  steps_ = steps;
  CodeBudgetExceeded(*x);
  return false;
#undef GRAPHOPT_RULES_JUMP
#undef GRAPHOPT_RULES_NEXT
#undef GRAPHOPT_RULES_DISPATCH
}

bool Evaluator::RunStatements(Results* results) {
  static_assert(sizeof(kHandlers) / sizeof(kHandlers[0]) == kNumHandlers, "one per handler");
  if (bc_ != nullptr) return Exec(results);
  for (size_t i = 0; i < p_.stmts.size(); ++i) {
    const Stmt& st = p_.stmts[i];
    Val v;
    if (st.kind != StmtKind::kConstraint) {
      v = Run(st.expr);
      if (v.failed()) return false;
    }
    if (st.kind == StmtKind::kLet) {
      slots_[st.slot] = v;
    } else if (!Finish(st, v, results)) {
      return false;
    }
  }
  return true;
}

bool Evaluator::Finish(const Stmt& st, const Val& v, Results* results) {
  switch (st.kind) {
    case StmtKind::kLet:
      slots_[st.slot] = v;
      return true;
    case StmtKind::kAssert: {
      if (v.unknown() || v.i != 0) return true;
      if (st.parts.empty()) {
        Fail(st.pos, absl::StrCat("assertion failed: ",
                                  p_.source.substr(st.text_begin, st.text_end - st.text_begin)));
        return false;
      }
      bool ok;
      std::string message = FormatParts(st.parts.data(), st.parts.size(), &ok);
      if (ok) Fail(st.pos, std::move(message));
      return false;
    }
    case StmtKind::kConstraint: {
      absl::InlinedVector<int64_t, 8> allowed;
      for (int32_t part : st.parts) {
        const Val d = Run(part);
        if (d.failed()) return false;
        if (d.tag() == Tag::kDType) allowed.push_back(d.i);
      }
      for (int32_t declared : st.inputs) {
        const int last = declared == p_.variadic_input ? num_inputs_ - 1 : declared;
        for (int i = declared; i <= last; ++i) {
          if (!HasInput(i)) continue;
          const v1::DataType dt = ctx_.input_type(i).dtype;
          if (dt == v1::DT_UNDEFINED) continue;
          if (std::find(allowed.begin(), allowed.end(), dt) != allowed.end()) continue;
          std::string set;
          for (int64_t a : allowed) {
            absl::StrAppend(&set, set.empty() ? "" : ", ",
                            DataTypeName(static_cast<v1::DataType>(a)));
          }
          Fail(st.pos, absl::StrCat("input '", InputLabel(i), "' has type ", DataTypeName(dt),
                                    ", which '", st.name, " in {...}' does not allow (allowed: ",
                                    set, ")"));
          return false;
        }
      }
      return true;
    }
    case StmtKind::kOutput:
    case StmtKind::kOutputValue:
    case StmtKind::kOutputAll:
    case StmtKind::kResult:
      results->emplace_back(&st, v);
      return true;
  }
  return true;
}

bool Evaluator::CheckDims(const Val& v, int32_t pos, int output) {
  for (uint32_t k = 0; k < v.len(); ++k) {
    const Val d = HeapAt(v, k);
    if (ABSL_PREDICT_FALSE(d.tag() == Tag::kInt && d.i < 0)) {
      Fail(pos, absl::StrCat("output[", output, "] has a negative dim ", d.i, " at index ", k,
                             ": ", Format(v, Type::ListOf(Type::Int()))));
      return false;
    }
  }
  return true;
}

std::optional<Dims> Evaluator::ToDims(const Val& v) {
  if (v.unknown()) return std::nullopt;
  std::optional<Dims> out(std::in_place, v.len());
  Dims& dims = *out;
  for (uint32_t k = 0; k < v.len(); ++k) {
    const Val d = HeapAt(v, k);
    switch (d.tag()) {
      case Tag::kInt:
        dims[k] = Dim::Known(d.i);
        break;
      case Tag::kMono:
        if (d.i == 1) {
          dims[k] = Dim::Symbol(*atoms_[d.len()]);
        } else if (std::optional<std::string> s = MonoString(d)) {
          dims[k] = Dim::Symbol(*std::move(s));
        }
        break;
      case Tag::kSymRef:
        dims[k] = Dim::Symbol(*d.s);
        break;
      case Tag::kSym:
        if (std::optional<std::string> s = polys_[d.i].ToString()) {
          dims[k] = Dim::Symbol(*std::move(s));
        }
        break;
      default:
        break;  // unknown
    }
  }
  return out;
}

absl::Status Evaluator::RunShape(InferenceContext& ctx) {
  Results results;
  if (!RunStatements(&results)) return Status();
  // Everything that can fail first: nothing is written when the rule fails.
  for (const auto& [st, v] : results) {
    if (v.unknown()) continue;
    switch (st->kind) {
      case StmtKind::kOutputAll:
        if (static_cast<int>(v.len()) != ctx.num_outputs()) {
          Fail(st->pos, absl::StrCat("output[*] has ", v.len(), " shapes but the node has ",
                                     ctx.num_outputs(), " outputs"));
          return Status();
        }
        for (int i = 0; i < ctx.num_outputs(); ++i) {
          if (!CheckDims(HeapAt(v, i), st->pos, i)) return Status();
        }
        break;
      case StmtKind::kOutput:
        if (!CheckDims(v, st->pos, st->output)) return Status();
        break;
      default:  // contents may hold negative entries (a Reshape target such as [N, -1])
        break;
    }
  }
  // Outputs the rule leaves alone get an unknown rank.
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    const bool assigned = p_.assigns_all_outputs ||
                          (i < static_cast<int>(p_.assigns_output.size()) && p_.assigns_output[i]);
    if (!assigned) ctx.set_output_shape(i, std::nullopt);
  }
  for (const auto& [st, v] : results) {
    switch (st->kind) {
      case StmtKind::kOutputAll:
        for (int i = 0; i < ctx.num_outputs(); ++i) {
          ctx.set_output_shape(i, v.unknown() ? std::nullopt : ToDims(HeapAt(v, i)));
        }
        break;
      case StmtKind::kOutputValue:
        if (!v.unknown() && v.len() <= kMaxDimsValueElements) {
          ctx.set_output_dims_value(st->output, *ToDims(v));
        }
        break;
      default:
        ctx.set_output_shape(st->output, ToDims(v));
        break;
    }
  }
  return absl::OkStatus();
}

absl::Status Evaluator::RunType(InferenceContext& ctx) {
  Results results;
  if (!RunStatements(&results)) return Status();
  for (const auto& [st, v] : results) {
    if (st->kind == StmtKind::kOutputAll) {
      if (v.unknown()) continue;
      if (static_cast<int>(v.len()) != ctx.num_outputs()) {
        Fail(st->pos, absl::StrCat("output[*] has ", v.len(), " types but the node has ",
                                   ctx.num_outputs(), " outputs"));
        return Status();
      }
      for (int i = 0; i < ctx.num_outputs(); ++i) {
        const Val d = HeapAt(v, i);
        if (d.tag() == Tag::kDType) ctx.set_output_dtype(i, static_cast<v1::DataType>(d.i));
      }
      continue;
    }
    if (v.tag() == Tag::kDType) ctx.set_output_dtype(st->output, static_cast<v1::DataType>(v.i));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<int64_t>> Evaluator::RunCost() {
  Results results;
  if (!RunStatements(&results)) return Status();
  for (const auto& [st, v] : results) {
    if (st->kind == StmtKind::kResult && v.tag() == Tag::kInt) return std::optional<int64_t>(v.i);
  }
  return std::optional<int64_t>();
}

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

// Builtins whose handler evaluates every argument first, in order, then applies the function
// (Evaluator::Apply): the linear code computes the arguments itself.
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
  std::fprintf(stderr, "rules: internal error in the linear code: %s\n", what);
  std::abort();
}

// Lowers a program's statements into a Bytecode (see VOp).
class Lowerer {
 public:
  Lowerer(const Program& p, Bytecode* bc) : p_(p), bc_(bc) {}

  // False when the program needs more registers than an instruction can name.
  bool Run() {
    // Constants: one register per distinct literal.
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
          break;
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
    if (first_temp_ > kMaxRegs) return false;
    for (int& c : const_reg_) {
      if (c >= 0) c += bc_->first_const;
    }
    // The statements in order, each finishing with a kStmt (a let's value goes straight to its
    // slot), then kRet.
    for (size_t i = 0; i < p_.stmts.size(); ++i) {
      const Stmt& st = p_.stmts[i];
      if (st.kind == StmtKind::kLet) {
        MoveTo(st.slot, Lower(st.expr, st.slot));
        continue;
      }
      int r = 0;
      if (st.kind != StmtKind::kConstraint) r = Lower(st.expr);
      const VOp op = st.kind == StmtKind::kAssert ? VOp::kAssert : VOp::kStmt;
      bc_->code[Emit(op, st.kind == StmtKind::kConstraint ? -1 : st.expr, 0, r)].target2 =
          static_cast<int32_t>(i);
      Release(r);
      if (too_many_) return false;
    }
    Emit(VOp::kRet, -1);
    bc_->num_regs = first_temp_ + max_temps_;
    return bc_->num_regs <= kMaxRegs;
  }

 private:
  static constexpr int kMaxRegs = 65535;

  // Emits an instruction for `node` carrying the nodes reached since the last one; returns
  // its index.
  int Emit(VOp op, int32_t node, int dst = 0, int a = 0, int b = 0, int c = 0) {
    VInsn x;
    x.op = op;
    x.node = node;
    x.pos = node >= 0 ? p_.nodes[node].pos : 0;
    x.dst = static_cast<uint16_t>(dst);
    x.a = static_cast<uint16_t>(a);
    x.b = static_cast<uint16_t>(b);
    x.c = static_cast<uint16_t>(c);
    // Chains of nodes reached without an instruction are at most as long as the nesting; one
    // longer than a charge can hold (limits far above the defaults) leaves the program without
    // linear code.
    if (pending_.size() > 65535) too_many_ = true;
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

  int Temp() {
    const int r = first_temp_ + num_temps_++;
    max_temps_ = std::max(max_temps_, num_temps_);
    if (r >= kMaxRegs) too_many_ = true;
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

  // Emits the code of node `id` (reached now); returns the register holding its value: `want`
  // (when given) for a node that computes, else a new temporary; a slot or constant's own
  // register for a leaf.
  int Lower(int32_t id, int want = -1) {
    const Node& n = p_.nodes[id];
    pending_.push_back(id);
    switch (n.op) {
      case Op::kSlot:
        return static_cast<int>(n.imm);
      case Op::kInt:
      case Op::kBool:
      case Op::kString:
      case Op::kDType:
      case Op::kUnknown:
        return const_reg_[id];
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
      case Op::kOr: {
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
      case Op::kCoalesce: {
        // The left operand is computed into dst (or is a leaf); the right one overwrites it.
        const int dst = Dst(want);
        const int a = Lower(Kid(n, 0), dst);
        const int shortcut = Emit(VOp::kCoalesceShort, id, dst, a);
        MoveTo(dst, Lower(Kid(n, 1), dst));
        bc_->code[shortcut].target = Label();
        return dst;
      }
      case Op::kIf: {
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
      case Op::kSlice: {
        // The list, then the bounds given in order; a first bound that is not a known int makes
        // the slice unknown before the second is evaluated.
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
      case Op::kComprehension:
        return Comprehension(id, want);
      case Op::kCall:
        if (n.fn == Fn::kKnown) return Unary(id, VOp::kKnown, want);
        if (n.fn == Fn::kLen) return Unary(id, VOp::kLen, want);
        if (AppliesToArguments(n.fn) && (n.num_kids == 1 || n.num_kids == 2)) {
          const int dst = Dst(want);
          const int a = Lower(Kid(n, 0));
          const int b = n.num_kids == 2 ? Lower(Kid(n, 1)) : 0;
          Emit(n.num_kids == 2 ? VOp::kApply2 : VOp::kApply1, id, dst, a, b);
          if (n.num_kids == 2) Release(b);
          Release(a);
          return dst;
        }
        break;
      default:
        break;
    }
    // Everything else: the node's handler.
    const int dst = Dst(want);
    Emit(VOp::kNode, id, dst);
    return dst;
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
  bool too_many_ = false;
};

}  // namespace

void PrepareProgram(Program* p) {
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
  if (Lowerer(*p, bc.get()).Run()) p->bytecode = std::move(bc);
}

absl::Status EvaluateShape(const Program& program, const RuleLimits& limits,
                           InferenceContext& ctx) {
  Evaluator e(program, limits, ctx);
  return e.RunShape(ctx);
}

absl::Status EvaluateType(const Program& program, const RuleLimits& limits,
                          InferenceContext& ctx) {
  Evaluator e(program, limits, ctx);
  return e.RunType(ctx);
}

absl::StatusOr<std::optional<int64_t>> EvaluateCost(const Program& program,
                                                    const RuleLimits& limits,
                                                    const InferenceContext& ctx) {
  Evaluator e(program, limits, ctx);
  return e.RunCost();
}

}  // namespace rules
}  // namespace graphopt
