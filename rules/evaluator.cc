#include "rules/evaluator.h"

#include <algorithm>
#include <limits>
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

// A runtime value. Lists live in the evaluation's heap (offset `i`, length `len`) and are
// immutable, so slices share storage. Symbolic ints are a symbol string read from the node
// (kSymRef: kept verbatim when passed through), `coef * atom` (kMono: coefficient `i`, atom
// `len` in the evaluation's atom table: the common "batch", "12*batch", computed without
// allocating), or any other polynomial (kSym: index into the polynomial table). None is ever
// a constant, which is a kInt.
enum class Tag : uint8_t { kUnknown, kInt, kBool, kSym, kSymRef, kMono, kStr, kDType, kList };

struct Val {
  Tag tag = Tag::kUnknown;
  uint32_t len = 0;
  union {
    int64_t i;
    const std::string* s;
  };
  Val() : i(0) {}

  static Val Int(int64_t v) {
    Val x;
    x.tag = Tag::kInt;
    x.i = v;
    return x;
  }
  static Val Bool(bool b) {
    Val x;
    x.tag = Tag::kBool;
    x.i = b ? 1 : 0;
    return x;
  }
  static Val Str(const std::string* s) {
    Val x;
    x.tag = Tag::kStr;
    x.s = s;
    return x;
  }
  static Val DType(int64_t dt) {
    Val x;
    x.tag = Tag::kDType;
    x.i = dt;
    return x;
  }
  static Val SymRef(const std::string* s) {
    Val x;
    x.tag = Tag::kSymRef;
    x.s = s;
    return x;
  }
  static Val List(size_t offset, size_t len) {
    Val x;
    x.tag = Tag::kList;
    x.i = static_cast<int64_t>(offset);
    x.len = static_cast<uint32_t>(len);
    return x;
  }
  bool unknown() const { return tag == Tag::kUnknown; }
  bool symbolic() const {
    return tag == Tag::kSym || tag == Tag::kSymRef || tag == Tag::kMono;
  }
};

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
  void truncate(size_t n) { size_ = n; }

 private:
  void Grow(size_t need) {
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

static_assert(std::is_trivially_copyable<Val>::value, "Val must be trivially copyable");
static_assert(std::is_trivially_destructible<Val>::value, "Val must be trivially destructible");

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

class Evaluator {
 public:
  Evaluator(const Program& p, const RuleLimits& limits, const InferenceContext& ctx)
      : p_(p),
        limits_(limits),
        ctx_(ctx),
        node_(ctx.node()),
        nodes_(p.nodes.data()),
        kids_(p.kids.data()),
        max_steps_(limits.max_steps),
        num_inputs_(static_cast<int>(node_.inputs.size())) {
    // Slots are written (let, comprehension) before they are read: the checker resolves a name
    // only after its definition.
    if (p.num_slots > kInlineSlots) {
      slots_heap_ = std::make_unique<Val[]>(p.num_slots);
      slots_ = slots_heap_.get();
    } else {
      slots_ = reinterpret_cast<Val*>(slots_inline_);
    }
  }

  absl::Status RunShape(InferenceContext& out);
  absl::Status RunType(InferenceContext& out);
  absl::StatusOr<std::optional<int64_t>> RunCost();

 private:
  // --- Errors ---------------------------------------------------------------------------------
  bool Fail(int32_t pos, std::string message) {
    err_pos_ = pos;
    err_ = std::move(message);
    return false;
  }
  absl::Status Status() const {
    const auto [line, col] = Diag::LineCol(p_.source, err_pos_);
    return absl::InvalidArgumentError(
        absl::StrCat(ctx_.NodeLabel(), ": ", p_.rule_name, " ", line, ":", col, ": ", err_));
  }

  // --- Values ---------------------------------------------------------------------------------
  const Val& HeapAt(const Val& list, int64_t k) const { return heap_[list.i + k]; }
  bool Charge(int32_t pos, int64_t steps) {
    steps_ += steps;
    if (steps_ > max_steps_) {
      return Fail(pos, absl::StrCat("evaluation exceeded the budget of ", limits_.max_steps,
                                    " steps"));
    }
    return true;
  }
  bool CheckLength(int32_t pos, int64_t n) {
    if (n > limits_.max_list_length) {
      return Fail(pos, absl::StrCat("a list of ", n, " elements exceeds the limit of ",
                                    limits_.max_list_length));
    }
    return Charge(pos, n);
  }
  // Moves scratch_[base..] into a new heap list.
  Val ListFromScratch(size_t base) {
    const size_t n = scratch_.size() - base;
    const size_t off = heap_.Append(n);
    for (size_t k = 0; k < n; ++k) heap_[off + k] = scratch_[base + k];
    scratch_.truncate(base);
    return Val::List(off, n);
  }

  // `v` as coef * atom when it is one (a kMono, or a kSymRef naming an atom); false otherwise.
  bool AsMono(const Val& v, int64_t* coef, uint32_t* atom) {
    if (v.tag == Tag::kMono) {
      *coef = v.i;
      *atom = v.len;
      return true;
    }
    if (v.tag != Tag::kSymRef) return false;
    *coef = 1;
    for (size_t k = 0; k < atoms_.size(); ++k) {
      if (atoms_[k] == v.s) {
        *atom = static_cast<uint32_t>(k);
        return true;
      }
    }
    if (!IsAtomName(*v.s)) return false;
    for (size_t k = 0; k < atoms_.size(); ++k) {
      if (*atoms_[k] == *v.s) {
        *atom = static_cast<uint32_t>(k);
        return true;
      }
    }
    atoms_.push_back(v.s);
    *atom = static_cast<uint32_t>(atoms_.size() - 1);
    return true;
  }
  static Val Mono(int64_t coef, uint32_t atom) {
    if (coef == 0) return Val::Int(0);
    Val v;
    v.tag = Tag::kMono;
    v.i = coef;
    v.len = atom;
    return v;
  }
  // Exact results of `a op b` where a and b are ints or coef * atom, computed without
  // polynomials. Returns false when the general path must decide.
  bool MonoOp(Arith op, int32_t pos, const Val& a, const Val& b, Val* out, bool* failed);

  // The polynomial of a symbolic or known int. Reading a symbol string parses it once per
  // evaluation; call Materialize on every operand before taking pointers (the table grows).
  void Materialize(const Val& v) {
    if (v.tag != Tag::kSymRef) return;
    for (const auto& entry : parsed_) {
      if (entry.first == v.s) return;
    }
    polys_.push_back(Poly::FromSymbol(*v.s));
    parsed_.emplace_back(v.s, static_cast<int>(polys_.size() - 1));
  }
  const Poly* PolyOf(const Val& v, Poly* tmp) const {
    switch (v.tag) {
      case Tag::kInt:
        *tmp = Poly::Constant(v.i);
        return tmp;
      case Tag::kSym:
        return &polys_[v.i];
      case Tag::kMono:
        *tmp = Poly::Constant(v.i);
        if (Poly::Mul(*tmp, Poly::Atom(*atoms_[v.len]), tmp) != PolyStatus::kOk) return nullptr;
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
    Val v;
    v.tag = Tag::kSym;
    v.i = static_cast<int64_t>(polys_.size());
    polys_.push_back(std::move(p));
    return v;
  }

  // Known ints without overflow inline; everything else in IntOpSlow.
  bool IntOp(Arith op, int32_t pos, const Val& a, const Val& b, Val* out) {
    if (a.tag == Tag::kInt && b.tag == Tag::kInt) {
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
      if (!overflow) {
        *out = Val::Int(r);
        return true;
      }
    }
    return IntOpSlow(op, pos, a, b, out);
  }
  ABSL_ATTRIBUTE_NOINLINE bool IntOpSlow(Arith op, int32_t pos, const Val& a, const Val& b,
                                         Val* out);
  Tri CompareInts(Op op, const Val& a, const Val& b);
  Tri Equal(const Val& a, const Val& b);
  // Exact min (want_max false) or max; unknown when not determined.
  Val MinMax(bool want_max, const Val& a, const Val& b);

  std::string Format(const Val& v, Type t);
  // The canonical string of a kMono (as Poly::ToString).
  std::optional<std::string> MonoString(const Val& v) const {
    const std::string& atom = *atoms_[v.len];
    if (v.i == 1) return atom;
    Poly p;
    if (Poly::Mul(Poly::Constant(v.i), Poly::Atom(atom), &p) != PolyStatus::kOk) {
      return std::nullopt;
    }
    return p.ToString();
  }
  std::string FormatParts(const std::vector<int32_t>& parts, bool* ok);
  std::string InputLabel(int i) const {
    const int declared = static_cast<int>(p_.input_names.size());
    if (p_.variadic_input >= 0 && i >= p_.variadic_input) {
      return absl::StrCat(p_.input_names[p_.variadic_input], "[", i - p_.variadic_input, "]");
    }
    return i < declared ? p_.input_names[i] : absl::StrCat("#", i);
  }

  // --- Evaluation -----------------------------------------------------------------------------
  bool Eval(int32_t id, Val* out);
  // Literals and variables are read in place, without a call; other children go straight to
  // their handler.
  ABSL_ATTRIBUTE_ALWAYS_INLINE bool EvalKid(const Node& n, int k, Val* out) {
    const Node& kid = nodes_[kids_[n.first_kid + k]];
    if (ABSL_PREDICT_FALSE(++steps_ > max_steps_)) return BudgetExceeded(kid);
    switch (kid.op) {
      case Op::kInt:
        *out = Val::Int(kid.imm);
        return true;
      case Op::kSlot:
        *out = slots_[kid.imm];
        return true;
      case Op::kString:
        *out = Val::Str(&kid.text);
        return true;
      case Op::kBool:
        *out = Val::Bool(kid.imm != 0);
        return true;
      case Op::kCall:
        return kFnHandlers[static_cast<int>(kid.fn)](*this, kid, out);
      default:
        return kHandlers[static_cast<int>(kid.op)](*this, kid, out);
    }
  }
  // One handler per Op (kHandlers): small functions, so that each node pays only for what
  // its operation needs.
  using Handler = bool (*)(Evaluator&, const Node&, Val*);
  static const Handler kHandlers[];
  static bool HLiteral(Evaluator& e, const Node& n, Val* out);
  static bool HSlot(Evaluator& e, const Node& n, Val* out);
  static bool HAttr(Evaluator& e, const Node& n, Val* out) { return e.EvalAttr(n, out); }
  static bool HNeg(Evaluator& e, const Node& n, Val* out);
  static bool HNot(Evaluator& e, const Node& n, Val* out);
  template <Arith kOp>
  static bool HArith(Evaluator& e, const Node& n, Val* out);
  static bool HEquality(Evaluator& e, const Node& n, Val* out);
  static bool HOrder(Evaluator& e, const Node& n, Val* out);
  static bool HAndOr(Evaluator& e, const Node& n, Val* out);
  static bool HCoalesce(Evaluator& e, const Node& n, Val* out);
  static bool HIf(Evaluator& e, const Node& n, Val* out);
  static bool HIndex(Evaluator& e, const Node& n, Val* out);
  static bool HConcat(Evaluator& e, const Node& n, Val* out) { return e.EvalConcat(n, out); }
  static bool HIn(Evaluator& e, const Node& n, Val* out) { return e.EvalIn(n, out); }
  static bool HList(Evaluator& e, const Node& n, Val* out) { return e.EvalList(n, out); }
  static bool HSlice(Evaluator& e, const Node& n, Val* out) { return e.EvalSlice(n, out); }
  static bool HComprehension(Evaluator& e, const Node& n, Val* out) {
    return e.EvalComprehension(n, out);
  }
  static bool HCall(Evaluator& e, const Node& n, Val* out) {
    return kFnHandlers[static_cast<int>(n.fn)](e, n, out);
  }
  static bool HInvalid(Evaluator& e, const Node& n, Val* out);

  bool EvalAttr(const Node& n, Val* out);
  // One instantiation per builtin (kFnHandlers), so that each call pays only for its own.
  template <Fn kFn>
  bool EvalCall(const Node& n, Val* out);
  template <Fn kFn>
  static bool HFn(Evaluator& e, const Node& n, Val* out) {
    return e.EvalCall<kFn>(n, out);
  }
  static const Handler kFnHandlers[];
  bool EvalList(const Node& n, Val* out);
  bool EvalSlice(const Node& n, Val* out);
  bool EvalComprehension(const Node& n, Val* out);
  bool EvalConcat(const Node& n, Val* out);
  bool EvalIn(const Node& n, Val* out);
  ABSL_ATTRIBUTE_NOINLINE bool BudgetExceeded(const Node& n);
  ABSL_ATTRIBUTE_NOINLINE bool IndexError(const Node& n, const Val& list, int64_t index);
  // The node input a builtin's input argument names; *index = -1 when the variadic index is
  // not known.
  bool InputIndex(const Node& n, int* index) {
    if (ABSL_PREDICT_TRUE(n.ref == Ref::kInput)) {
      *index = static_cast<int>(n.imm);
      return true;
    }
    return VariadicIndex(n, index);
  }
  bool VariadicIndex(const Node& n, int* index);
  bool InputShape(int i, int32_t pos, Val* out);
  bool InputValue(int i, int32_t pos, Val* out);
  // ctx_.has_input without the virtual node() call.
  bool HasInput(int i) const {
    return i >= 0 && i < num_inputs_ && node_.inputs[i].valid();
  }
  bool RequirePresent(int i, int32_t pos) {
    if (ABSL_PREDICT_TRUE(HasInput(i))) return true;
    return Absent(i, pos);
  }
  ABSL_ATTRIBUTE_NOINLINE bool Absent(int i, int32_t pos) {
    return Fail(pos, absl::StrCat("input '", InputLabel(i), "' is absent",
                                  i < static_cast<int>(p_.input_names.size()) &&
                                          p_.variadic_input != i
                                      ? absl::StrCat(" (test has(", p_.input_names[i], ") first)")
                                      : ""));
  }
  Val DimVal(const Dim& d) {
    if (d.is_known()) return Val::Int(d.size());
    if (d.is_symbol()) return Val::SymRef(&d.symbol());
    return Val();
  }
  bool Broadcast(const Node& n, Val* out);
  bool Merge(int32_t pos, const Val& a, const Val& b, Val* out);
  // Collects the int arguments of min/max/merge (a list, or the arguments themselves).
  bool Operands(const Node& n, absl::InlinedVector<Val, 8>* vals, bool* unknown);

  using Results = absl::InlinedVector<std::pair<const Stmt*, Val>, 4>;
  bool RunStatements(Results* results);
  // Output `output`'s shape (or, when `contents`, its dims value) from a list value; false (with
  // an error) for a negative known dim of a shape. Contents may hold negative entries (a
  // Reshape target such as [N, -1]).
  bool ToDims(const Val& v, int32_t pos, int output, bool contents, std::optional<Dims>* out);

  static constexpr int kInlineSlots = 32;
  // Per-evaluation caches of input shapes and attributes, for the first kCached of each.
  static constexpr int kCached = 32;

  const Program& p_;
  const RuleLimits& limits_;
  const InferenceContext& ctx_;
  const ::graphopt::Node& node_;
  const Node* const nodes_;
  const int32_t* const kids_;
  const int64_t max_steps_;
  const int num_inputs_;
  Val* slots_;
  alignas(Val) unsigned char slots_inline_[kInlineSlots * sizeof(Val)];
  std::unique_ptr<Val[]> slots_heap_;
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
  int64_t steps_ = 0;
  int32_t err_pos_ = 0;
  std::string err_;
};

bool Evaluator::MonoOp(Arith op, int32_t pos, const Val& a, const Val& b, Val* out,
                       bool* failed) {
  *failed = false;
  int64_t ca = 0, cb = 0;
  uint32_t sa = 0, sb = 0;
  const bool ma = AsMono(a, &ca, &sa);
  const bool mb = AsMono(b, &cb, &sb);
  if (!(ma || a.tag == Tag::kInt) || !(mb || b.tag == Tag::kInt)) return false;
  auto overflow = [&]() {
    *failed = true;
    return Fail(pos, absl::StrCat("integer overflow in ", Format(a, Type::Int()), " ",
                                  ArithSymbol(op), " ", Format(b, Type::Int())));
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

bool Evaluator::IntOpSlow(Arith op, int32_t pos, const Val& a, const Val& b, Val* out) {
  const bool division = op == Arith::kFloorDiv || op == Arith::kMod || op == Arith::kCeilDiv;
  if (division && b.tag == Tag::kInt && b.i == 0) {
    return Fail(pos, op == Arith::kMod ? "modulo by zero" : "division by zero");
  }
  if (a.tag == Tag::kInt && b.tag == Tag::kInt) {
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
    *out = Val::Int(r);
    return true;
  }
  // Zero times anything is zero.
  if (op == Arith::kMul && ((a.tag == Tag::kInt && a.i == 0) || (b.tag == Tag::kInt && b.i == 0))) {
    *out = Val::Int(0);
    return true;
  }
  if (a.unknown() || b.unknown()) {
    *out = Val();
    return true;
  }
  bool failed;
  if (MonoOp(op, pos, a, b, out, &failed)) return true;
  if (failed) return false;
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
    return false;
  }
  if (status == PolyStatus::kOverflow) {
    return Fail(pos, absl::StrCat("integer overflow in a coefficient of ",
                                  Format(a, Type::Int()), " ", ArithSymbol(op), " ",
                                  Format(b, Type::Int())));
  }
  if (status == PolyStatus::kTooLarge || !exact) {
    *out = Val();
    return true;
  }
  *out = FromPoly(std::move(r));
  return true;
}

Tri Evaluator::CompareInts(Op op, const Val& a, const Val& b) {
  int64_t diff_sign;  // sign of a - b
  if (a.tag == Tag::kInt && b.tag == Tag::kInt) {
    diff_sign = a.i < b.i ? -1 : (a.i > b.i ? 1 : 0);
  } else if (a.unknown() || b.unknown()) {
    return kMaybe;
  } else if (a.tag == Tag::kSymRef && b.tag == Tag::kSymRef && *a.s == *b.s) {
    diff_sign = 0;
  } else {
    int64_t ca = 0, cb = 0;
    uint32_t sa = 0, sb = 0;
    const bool ma = AsMono(a, &ca, &sa);
    const bool mb = AsMono(b, &cb, &sb);
    if ((ma || a.tag == Tag::kInt) && (mb || b.tag == Tag::kInt)) {
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
  switch (a.tag) {
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
      if (a.len != b.len) return kFalse;
      Tri r = kTrue;
      for (uint32_t k = 0; k < a.len; ++k) {
        const Tri e = Equal(HeapAt(a, k), HeapAt(b, k));
        if (e == kFalse) return kFalse;
        if (e == kMaybe) r = kMaybe;
      }
      return r;
    }
    case Tag::kUnknown:
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
  switch (v.tag) {
    case Tag::kUnknown:
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
      for (uint32_t k = 0; k < v.len; ++k) {
        if (k > 0) out.push_back(',');
        out += Format(HeapAt(v, k), elem);
      }
      out.push_back(']');
      return out;
    }
  }
  return "?";
}

std::string Evaluator::FormatParts(const std::vector<int32_t>& parts, bool* ok) {
  std::string out;
  *ok = true;
  for (int32_t part : parts) {
    Val v;
    if (!Eval(part, &v)) {
      *ok = false;
      return out;
    }
    out += Format(v, p_.nodes[part].type);
  }
  return out;
}

bool Evaluator::InputShape(int i, int32_t pos, Val* out) {
  if (!RequirePresent(i, pos)) return false;
  if (i < kCached && (shape_cached_ >> i & 1) != 0) {
    *out = ShapeCache(i);
    return true;
  }
  Val v;
  if (const std::optional<Dims>& shape = ctx_.input_shape(i)) {
    const size_t off = heap_.size();
    for (const Dim& d : *shape) heap_.push_back(DimVal(d));
    v = Val::List(off, shape->size());
    if (!Charge(pos, static_cast<int64_t>(shape->size()))) return false;
  } else if (const v1::Tensor* t = ctx_.input_constant(i)) {
    const size_t off = heap_.size();
    for (int64_t d : t->dims()) heap_.push_back(Val::Int(d));
    v = Val::List(off, t->dims_size());
    if (!Charge(pos, t->dims_size())) return false;
  }
  if (i < kCached) {
    shape_cached_ |= 1u << i;
    ShapeCache(i) = v;
  }
  *out = v;
  return true;
}

bool Evaluator::InputValue(int i, int32_t pos, Val* out) {
  if (!RequirePresent(i, pos)) return false;
  *out = Val();
  if (const Dims* d = ctx_.input_dims_value(i)) {
    const size_t off = heap_.size();
    for (const Dim& x : *d) heap_.push_back(DimVal(x));
    *out = Val::List(off, d->size());
    return Charge(pos, static_cast<int64_t>(d->size()));
  }
  const v1::Tensor* t = ctx_.input_constant(i);
  if (t == nullptr || t->dims_size() > 1) return true;
  absl::StatusOr<std::vector<int64_t>> ints = TensorToInts(*t, kMaxDimsValueElements);
  if (!ints.ok()) return true;
  const size_t off = heap_.size();
  for (int64_t x : *ints) heap_.push_back(Val::Int(x));
  *out = Val::List(off, ints->size());
  return Charge(pos, static_cast<int64_t>(ints->size()));
}

bool Evaluator::VariadicIndex(const Node& n, int* index) {
  // Ref::kVariadicItem: kid 0 is the index within the variadic group.
  Val k;
  if (!EvalKid(n, 0, &k)) return false;
  if (k.tag != Tag::kInt) {
    *index = -1;
    return true;
  }
  const int64_t first = n.imm;
  const int64_t count = std::max<int64_t>(0, num_inputs_ - first);
  const int64_t j = k.i < 0 ? k.i + count : k.i;
  if (j < 0 || j >= count) {
    return Fail(n.pos, absl::StrCat("index ", k.i, " is out of range for the ", count,
                                    " inputs of '", p_.input_names[first], "'"));
  }
  *index = static_cast<int>(first + j);
  return true;
}

bool Evaluator::EvalAttr(const Node& n, Val* out) {
  const size_t index = static_cast<size_t>(n.imm);
  if (index < kCached && (attr_cached_ >> index & 1) != 0) {
    *out = AttrCache(static_cast<int>(index));
    return true;
  }
  const AttrRef& ref = p_.attrs[index];
  const v1::Attribute* a = ctx_.attr(ref.name);
  if (a == nullptr) {
    if (n.num_kids == 1) return EvalKid(n, 0, out);
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
            heap_.push_back(Val::SymRef(&d.symbol()));
          } else {
            heap_.push_back(Val());
          }
        }
      } else {
        return mismatch(ref.type == v1::ATTR_SHAPE ? "a shape" : "a list of ints");
      }
      const size_t len = heap_.size() - off;
      if (!CheckLength(n.pos, static_cast<int64_t>(len))) return false;
      v = Val::List(off, len);
      break;
    }
    case v1::ATTR_STRINGS: {
      if (vc != v1::Attribute::kStrings) return mismatch("a list of strings");
      const size_t off = heap_.size();
      for (const std::string& s : a->strings().values()) heap_.push_back(Val::Str(&s));
      const size_t len = heap_.size() - off;
      if (!CheckLength(n.pos, static_cast<int64_t>(len))) return false;
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
  *out = v;
  return true;
}

bool Evaluator::Merge(int32_t pos, const Val& a, const Val& b, Val* out) {
  const Tri eq = CompareInts(Op::kEq, a, b);
  if (eq == kTrue) {
    *out = a;
    return true;
  }
  if (eq == kFalse) {
    return Fail(pos, absl::StrCat("merge(): sizes ", Format(a, Type::Int()), " and ",
                                  Format(b, Type::Int()), " differ"));
  }
  if (a.tag == Tag::kInt) {
    *out = a;
  } else if (b.tag == Tag::kInt) {
    *out = b;
  } else if (a.symbolic() && b.symbolic()) {
    *out = Val();
  } else {
    *out = a.symbolic() ? a : b;
  }
  return true;
}

bool Evaluator::Operands(const Node& n, absl::InlinedVector<Val, 8>* vals, bool* unknown) {
  *unknown = false;
  if (n.imm == 1) {  // a single list
    Val l;
    if (!EvalKid(n, 0, &l)) return false;
    if (l.unknown()) {
      *unknown = true;
      return true;
    }
    for (uint32_t k = 0; k < l.len; ++k) vals->push_back(HeapAt(l, k));
    return Charge(n.pos, l.len);
  }
  for (int k = 0; k < n.num_kids; ++k) {
    Val v;
    if (!EvalKid(n, k, &v)) return false;
    vals->push_back(v);
  }
  return true;
}

bool Evaluator::Broadcast(const Node& n, Val* out) {
  absl::InlinedVector<Val, 4> shapes;
  if (n.imm == 1) {
    Val l;
    if (!EvalKid(n, 0, &l)) return false;
    if (l.unknown()) {
      *out = Val();
      return true;
    }
    for (uint32_t k = 0; k < l.len; ++k) shapes.push_back(HeapAt(l, k));
  } else {
    for (int k = 0; k < n.num_kids; ++k) {
      Val s;
      if (!EvalKid(n, k, &s)) return false;
      shapes.push_back(s);
    }
  }
  uint32_t rank = 0;
  for (const Val& s : shapes) {
    if (s.unknown()) {
      *out = Val();
      return true;
    }
    rank = std::max(rank, s.len);
  }
  if (!Charge(n.pos, static_cast<int64_t>(rank) * static_cast<int64_t>(shapes.size()))) {
    return false;
  }
  const size_t off = heap_.Append(rank, Val::Int(1));
  absl::InlinedVector<int, 8> decided_by(rank, -1);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Val s = shapes[i];
    const uint32_t shift = rank - s.len;
    for (uint32_t k = 0; k < s.len; ++k) {
      const Val a = heap_[off + shift + k];
      const Val b = HeapAt(s, k);
      Val r;
      if (a.tag == Tag::kInt && b.tag == Tag::kInt) {
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
      } else if (a.tag == Tag::kInt) {
        r = a.i == 1 ? b : a;
      } else if (b.tag == Tag::kInt) {
        r = b.i == 1 ? a : b;
      } else if (a.symbolic() && b.symbolic() && CompareInts(Op::kEq, a, b) == kTrue) {
        r = a;
      }  // else unknown
      if (b.tag == Tag::kInt && b.i != 1) decided_by[shift + k] = static_cast<int>(i);
      heap_[off + shift + k] = r;
    }
  }
  *out = Val::List(off, rank);
  return true;
}

template <Fn kFn>
bool Evaluator::EvalCall(const Node& n, Val* out) {
  switch (kFn) {
    case Fn::kRank:
    case Fn::kShape:
    case Fn::kDim:
    case Fn::kValue: {
      int i;
      if (!InputIndex(n, &i)) return false;
      if (i < 0) {
        *out = Val();
        return true;
      }
      if (kFn == Fn::kValue) return InputValue(i, n.pos, out);
      Val s;
      if (!InputShape(i, n.pos, &s)) return false;
      if (kFn == Fn::kShape) {
        *out = s;
        return true;
      }
      if (kFn == Fn::kRank) {
        *out = s.unknown() ? Val() : Val::Int(s.len);
        return true;
      }
      Val k;
      if (!EvalKid(n, n.ref == Ref::kVariadicItem ? 1 : 0, &k)) return false;
      if (s.unknown() || k.tag != Tag::kInt) {
        *out = Val();
        return true;
      }
      const int64_t j = k.i < 0 ? k.i + s.len : k.i;
      if (j < 0 || j >= s.len) {
        return Fail(n.pos, absl::StrCat("dim(): index ", k.i, " is out of range for input '",
                                        InputLabel(i), "' of rank ", s.len, " (shape ",
                                        Format(s, Type::ListOf(Type::Int())), ")"));
      }
      *out = HeapAt(s, j);
      return true;
    }
    case Fn::kHas: {
      if (n.ref == Ref::kInput) {
        *out = Val::Bool(HasInput(static_cast<int>(n.imm)));
        return true;
      }
      Val k;
      if (!EvalKid(n, 0, &k)) return false;
      if (k.tag != Tag::kInt) {
        *out = Val();
        return true;
      }
      const int64_t count = std::max<int64_t>(0, num_inputs_ - n.imm);
      const int64_t j = k.i < 0 ? k.i + count : k.i;
      *out = Val::Bool(j >= 0 && j < count && HasInput(static_cast<int>(n.imm + j)));
      return true;
    }
    case Fn::kDTypeOf: {
      if (n.ref == Ref::kConstraint) {
        *out = Val();
        for (int32_t d : p_.constraint_inputs[n.imm]) {
          const int last = d == p_.variadic_input ? num_inputs_ - 1 : d;
          for (int i = d; i <= last; ++i) {
            if (!HasInput(i)) continue;
            const v1::DataType dt = ctx_.input_type(i).dtype;
            if (dt != v1::DT_UNDEFINED) {
              *out = Val::DType(dt);
              return true;
            }
          }
        }
        return true;
      }
      int i;
      if (!InputIndex(n, &i)) return false;
      if (i < 0) {
        *out = Val();
        return true;
      }
      if (!RequirePresent(i, n.pos)) return false;
      const v1::DataType dt = ctx_.input_type(i).dtype;
      *out = dt == v1::DT_UNDEFINED ? Val() : Val::DType(dt);
      return true;
    }
    case Fn::kCount: {
      const int total = n.ref == Ref::kVariadicOutput ? ctx_.num_outputs() : num_inputs_;
      *out = Val::Int(std::max<int64_t>(0, total - n.imm));
      return true;
    }
    case Fn::kShapes: {
      const int count = std::max(0, num_inputs_ - static_cast<int>(n.imm));
      if (!CheckLength(n.pos, count)) return false;
      const size_t base = scratch_.size();
      for (int i = static_cast<int>(n.imm); i < num_inputs_; ++i) {
        if (!HasInput(i)) continue;
        Val s;
        if (!InputShape(i, n.pos, &s)) return false;
        scratch_.push_back(s);
      }
      *out = ListFromScratch(base);
      return true;
    }
    case Fn::kHasAttr: {
      const int64_t index = n.imm;
      if (index < kCached && (has_attr_cached_ >> index & 1) != 0) {
        *out = Val::Bool((has_attr_ >> index & 1) != 0);
        return true;
      }
      const bool has = node_.attributes.contains(p_.attrs[index].name);
      if (index < kCached) {
        has_attr_cached_ |= 1u << index;
        if (has) has_attr_ |= 1u << index;
      }
      *out = Val::Bool(has);
      return true;
    }
    case Fn::kAttrDType: {
      const std::string& name = p_.attrs[n.imm].name;
      const v1::Attribute* a = ctx_.attr(name);
      *out = Val();
      if (a == nullptr) return true;
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
      *out = Val::DType(dt);
      return true;
    }
    case Fn::kOpset:
      if (opset_ < 0) opset_ = ctx_.opset_version();
      *out = Val::Int(opset_);
      return true;
    case Fn::kNumInputs:
      *out = Val::Int(num_inputs_);
      return true;
    case Fn::kNumOutputs:
      *out = Val::Int(ctx_.num_outputs());
      return true;
    case Fn::kBroadcast:
      return Broadcast(n, out);
    case Fn::kNormalizeAxis: {
      Val axis, rank;
      if (!EvalKid(n, 0, &axis) || !EvalKid(n, 1, &rank)) return false;
      if (axis.tag != Tag::kInt || rank.tag != Tag::kInt) {
        *out = Val();
        return true;
      }
      if (rank.i < 0 || axis.i < -rank.i || axis.i >= rank.i) {
        return Fail(n.pos, absl::StrCat("axis ", axis.i, " is out of range for rank ", rank.i,
                                        " (expected [", -rank.i, ", ", rank.i - 1, "])"));
      }
      *out = Val::Int(axis.i < 0 ? axis.i + rank.i : axis.i);
      return true;
    }
    case Fn::kMerge:
    case Fn::kMin:
    case Fn::kMax: {
      absl::InlinedVector<Val, 8> vals;
      bool unknown;
      if (!Operands(n, &vals, &unknown)) return false;
      if (unknown) {
        *out = Val();
        return true;
      }
      if (vals.empty()) {
        return Fail(n.pos, absl::StrCat(kFn == Fn::kMerge ? "merge" : kFn == Fn::kMin ? "min"
                                                                                        : "max",
                                        "() of an empty list"));
      }
      Val r = vals[0];
      for (size_t k = 1; k < vals.size(); ++k) {
        if (kFn == Fn::kMerge) {
          if (!Merge(n.pos, r, vals[k], &r)) return false;
        } else if (r.unknown() || vals[k].unknown()) {
          r = Val();
        } else {
          r = MinMax(kFn == Fn::kMax, r, vals[k]);
        }
      }
      *out = r;
      return true;
    }
    case Fn::kFail: {
      bool ok;
      std::vector<int32_t> parts(p_.kids.begin() + n.first_kid,
                                 p_.kids.begin() + n.first_kid + n.num_kids);
      std::string message = FormatParts(parts, &ok);
      if (!ok) return false;
      return Fail(n.pos, std::move(message));
    }
    case Fn::kAbs: {
      Val a;
      if (!EvalKid(n, 0, &a)) return false;
      if (a.tag != Tag::kInt) {
        *out = Val();
        return true;
      }
      if (a.i == kInt64Min) return Fail(n.pos, "integer overflow in abs()");
      *out = Val::Int(a.i < 0 ? -a.i : a.i);
      return true;
    }
    case Fn::kCdiv: {
      Val a, b;
      if (!EvalKid(n, 0, &a) || !EvalKid(n, 1, &b)) return false;
      return IntOp(Arith::kCeilDiv, n.pos, a, b, out);
    }
    case Fn::kLen: {
      Val l;
      if (!EvalKid(n, 0, &l)) return false;
      *out = l.unknown() ? Val() : Val::Int(l.len);
      return true;
    }
    case Fn::kSum:
    case Fn::kProd: {
      Val l;
      if (!EvalKid(n, 0, &l)) return false;
      if (l.unknown()) {
        *out = Val();
        return true;
      }
      Val r = Val::Int(kFn == Fn::kSum ? 0 : 1);
      for (uint32_t k = 0; k < l.len; ++k) {
        const Val x = HeapAt(l, k);
        if (!IntOp(kFn == Fn::kSum ? Arith::kAdd : Arith::kMul, n.pos, r, x, &r)) return false;
      }
      if (!Charge(n.pos, l.len)) return false;
      *out = r;
      return true;
    }
    case Fn::kRange: {
      Val a[3];
      for (int k = 0; k < n.num_kids; ++k) {
        if (!EvalKid(n, k, &a[k])) return false;
      }
      for (int k = 0; k < n.num_kids; ++k) {
        if (a[k].tag != Tag::kInt) {
          *out = Val();
          return true;
        }
      }
      const int64_t start = n.num_kids == 1 ? 0 : a[0].i;
      const int64_t stop = n.num_kids == 1 ? a[0].i : a[1].i;
      const int64_t step = n.num_kids == 3 ? a[2].i : 1;
      if (step == 0) return Fail(n.pos, "range() step must not be zero");
      // Element count, computed in 128 bits so that no bound overflows.
      __int128 count = 0;
      const __int128 span = static_cast<__int128>(stop) - start;
      if ((step > 0 && span > 0) || (step < 0 && span < 0)) {
        const __int128 s = step;
        count = (span + (step > 0 ? s - 1 : s + 1)) / s;
      }
      if (count > limits_.max_list_length) {
        return Fail(n.pos, absl::StrCat("range() of ", static_cast<int64_t>(std::min<__int128>(
                                                           count, INT64_MAX)),
                                        " elements exceeds the limit of ",
                                        limits_.max_list_length));
      }
      if (!Charge(n.pos, static_cast<int64_t>(count))) return false;
      const size_t off = heap_.size();
      for (int64_t k = 0; k < static_cast<int64_t>(count); ++k) {
        heap_.push_back(Val::Int(start + k * step));
      }
      *out = Val::List(off, static_cast<size_t>(count));
      return true;
    }
    case Fn::kKnown: {
      Val v;
      if (!EvalKid(n, 0, &v)) return false;
      *out = Val::Bool(!v.unknown() && !v.symbolic());
      return true;
    }
    case Fn::kAll:
    case Fn::kAnyOf: {
      Val l;
      if (!EvalKid(n, 0, &l)) return false;
      if (l.unknown()) {
        *out = Val();
        return true;
      }
      const bool all = kFn == Fn::kAll;
      bool maybe = false;
      for (uint32_t k = 0; k < l.len; ++k) {
        const Val x = HeapAt(l, k);
        if (x.unknown()) {
          maybe = true;
        } else if ((x.i != 0) != all) {
          *out = Val::Bool(!all);
          return true;
        }
      }
      *out = maybe ? Val() : Val::Bool(all);
      return Charge(n.pos, l.len);
    }
    case Fn::kFlatten: {
      Val l;
      if (!EvalKid(n, 0, &l)) return false;
      if (l.unknown()) {
        *out = Val();
        return true;
      }
      int64_t total = 0;
      for (uint32_t k = 0; k < l.len; ++k) {
        const Val x = HeapAt(l, k);
        if (x.unknown()) {
          *out = Val();
          return true;
        }
        total += x.len;
      }
      if (!CheckLength(n.pos, total)) return false;
      const size_t off = heap_.Append(static_cast<size_t>(total));
      size_t w = off;
      for (uint32_t k = 0; k < l.len; ++k) {
        const Val x = HeapAt(l, k);
        for (uint32_t e = 0; e < x.len; ++e) heap_[w++] = HeapAt(x, e);
      }
      *out = Val::List(off, static_cast<size_t>(total));
      return true;
    }
    case Fn::kDistinct: {
      // Kleene: false when two elements are provably equal, true when every pair provably
      // differs, else unknown.
      Val l;
      if (!EvalKid(n, 0, &l)) return false;
      if (l.unknown()) {
        *out = Val();
        return true;
      }
      if (!Charge(n.pos, static_cast<int64_t>(l.len) * l.len / 2)) return false;
      bool maybe = false;
      for (uint32_t a = 0; a < l.len; ++a) {
        const Val x = HeapAt(l, a);
        for (uint32_t b = a + 1; b < l.len; ++b) {
          const Val y = HeapAt(l, b);
          const Tri eq = x.tag == Tag::kInt && y.tag == Tag::kInt ? (x.i == y.i ? kTrue : kFalse)
                                                                  : CompareInts(Op::kEq, x, y);
          if (eq == kTrue) {
            *out = Val::Bool(false);
            return true;
          }
          maybe |= eq == kMaybe;
        }
      }
      *out = maybe ? Val() : Val::Bool(true);
      return true;
    }
    case Fn::kDTypeSize: {
      Val d;
      if (!EvalKid(n, 0, &d)) return false;
      const int size = d.tag == Tag::kDType ? DataTypeSize(static_cast<v1::DataType>(d.i)) : 0;
      *out = size > 0 ? Val::Int(size) : Val();
      return true;
    }
  }
  return Fail(n.pos, "internal: unknown function");
}

bool Evaluator::BudgetExceeded(const Node& n) {
  return Fail(n.pos, absl::StrCat("evaluation exceeded the budget of ", limits_.max_steps,
                                  " steps"));
}

bool Evaluator::EvalConcat(const Node& n, Val* out) {
  Val a, b;
  if (!EvalKid(n, 0, &a) || !EvalKid(n, 1, &b)) return false;
  if (a.unknown() || b.unknown()) {
    *out = Val();
    return true;
  }
  const int64_t len = static_cast<int64_t>(a.len) + b.len;
  if (!CheckLength(n.pos, len)) return false;
  const size_t off = heap_.Append(static_cast<size_t>(len));
  for (uint32_t k = 0; k < a.len; ++k) heap_[off + k] = HeapAt(a, k);
  for (uint32_t k = 0; k < b.len; ++k) heap_[off + a.len + k] = HeapAt(b, k);
  *out = Val::List(off, static_cast<size_t>(len));
  return true;
}

bool Evaluator::EvalIn(const Node& n, Val* out) {
  Val x;
  if (!EvalKid(n, 0, &x)) return false;
  bool maybe = false;
  for (int k = 1; k < n.num_kids; ++k) {
    Val m;
    if (!EvalKid(n, k, &m)) return false;
    const Tri t = Equal(x, m);
    if (t == kTrue) {
      *out = Val::Bool(true);
      return true;
    }
    maybe |= t == kMaybe;
  }
  *out = maybe ? Val() : Val::Bool(false);
  return true;
}

bool Evaluator::EvalList(const Node& n, Val* out) {
  if (!CheckLength(n.pos, n.num_kids)) return false;
  const size_t base = scratch_.size();
  for (int k = 0; k < n.num_kids; ++k) {
    Val e;
    if (!EvalKid(n, k, &e)) return false;
    scratch_.push_back(e);
  }
  *out = ListFromScratch(base);
  return true;
}

bool Evaluator::EvalSlice(const Node& n, Val* out) {
  Val l;
  if (!EvalKid(n, 0, &l)) return false;
  Val bounds[2];
  int kid = 1;
  for (int b = 0; b < 2; ++b) {
    if ((n.imm & (1 << b)) == 0) continue;
    if (!EvalKid(n, kid++, &bounds[b])) return false;
    if (bounds[b].tag != Tag::kInt) {
      *out = Val();
      return true;
    }
  }
  if (l.unknown()) {
    *out = Val();
    return true;
  }
  const int64_t len = l.len;
  auto clamp = [len](int64_t x) {
    if (x < 0) x = x < -len ? 0 : x + len;
    return std::min(x, len);
  };
  const int64_t start = (n.imm & 1) ? clamp(bounds[0].i) : 0;
  const int64_t end = (n.imm & 2) ? clamp(bounds[1].i) : len;
  *out = Val::List(static_cast<size_t>(l.i + start),
                   static_cast<size_t>(std::max<int64_t>(0, end - start)));
  return true;
}

bool Evaluator::EvalComprehension(const Node& n, Val* out) {
  // [E for i in range(N)]: iterate without building the range.
  const Node& it = p_.nodes[p_.kid(n, 0)];
  if (it.op == Op::kCall && it.fn == Fn::kRange && it.num_kids == 1) {
    Val count;
    if (!EvalKid(it, 0, &count)) return false;
    if (count.tag != Tag::kInt) {
      *out = Val();
      return true;
    }
    if (count.i > limits_.max_list_length) {
      return Fail(it.pos, absl::StrCat("range() of ", count.i, " elements exceeds the limit of ",
                                       limits_.max_list_length));
    }
    if (!Charge(it.pos, std::max<int64_t>(count.i, 0))) return false;
    const size_t base = scratch_.size();
    const bool filtered = n.num_kids > 2;
    for (int64_t k = 0; k < count.i; ++k) {
      slots_[n.imm] = Val::Int(k);
      if (filtered) {
        Val keep;
        if (!EvalKid(n, 2, &keep)) return false;
        if (keep.unknown()) {
          scratch_.truncate(base);
          *out = Val();
          return true;
        }
        if (keep.i == 0) continue;
      }
      Val e;
      if (!EvalKid(n, 1, &e)) return false;
      scratch_.push_back(e);
    }
    *out = ListFromScratch(base);
    return true;
  }
  Val iter;
  if (!EvalKid(n, 0, &iter)) return false;
  if (iter.unknown()) {
    *out = Val();
    return true;
  }
  const size_t base = scratch_.size();
  const bool filtered = n.num_kids > 2;
  for (uint32_t k = 0; k < iter.len; ++k) {
    slots_[n.imm] = HeapAt(iter, k);
    if (filtered) {
      Val keep;
      if (!EvalKid(n, 2, &keep)) return false;
      if (keep.unknown()) {  // the length is not known
        scratch_.truncate(base);
        *out = Val();
        return true;
      }
      if (keep.i == 0) continue;
    }
    Val e;
    if (!EvalKid(n, 1, &e)) return false;
    scratch_.push_back(e);
  }
  *out = ListFromScratch(base);
  return true;
}

bool Evaluator::IndexError(const Node& n, const Val& list, int64_t index) {
  return Fail(n.pos, absl::StrCat("index ", index, " is out of range for ",
                                  Format(list, p_.nodes[p_.kid(n, 0)].type), " (length ",
                                  list.len, ")"));
}

bool Evaluator::HLiteral(Evaluator& e, const Node& n, Val* out) {
  switch (n.op) {
    case Op::kInt:
      *out = Val::Int(n.imm);
      return true;
    case Op::kBool:
      *out = Val::Bool(n.imm != 0);
      return true;
    case Op::kString:
      *out = Val::Str(&n.text);
      return true;
    case Op::kDType:
      *out = Val::DType(n.imm);
      return true;
    default:
      *out = Val();
      return true;
  }
}

bool Evaluator::HSlot(Evaluator& e, const Node& n, Val* out) {
  *out = e.slots_[n.imm];
  return true;
}

bool Evaluator::HNeg(Evaluator& e, const Node& n, Val* out) {
  Val a;
  if (!e.EvalKid(n, 0, &a)) return false;
  return e.IntOp(Arith::kSub, n.pos, Val::Int(0), a, out);
}

bool Evaluator::HNot(Evaluator& e, const Node& n, Val* out) {
  Val a;
  if (!e.EvalKid(n, 0, &a)) return false;
  *out = a.unknown() ? Val() : Val::Bool(a.i == 0);
  return true;
}

template <Arith kOp>
bool Evaluator::HArith(Evaluator& e, const Node& n, Val* out) {
  Val a, b;
  if (!e.EvalKid(n, 0, &a) || !e.EvalKid(n, 1, &b)) return false;
  return e.IntOp(kOp, n.pos, a, b, out);
}

bool Evaluator::HEquality(Evaluator& e, const Node& n, Val* out) {
  Val a, b;
  if (!e.EvalKid(n, 0, &a) || !e.EvalKid(n, 1, &b)) return false;
  Tri t;
  if (a.tag == Tag::kInt && b.tag == Tag::kInt) {
    t = a.i == b.i ? kTrue : kFalse;
  } else if (a.tag == b.tag && a.tag != Tag::kUnknown && a.tag != Tag::kList && a.len == b.len &&
             a.i == b.i) {
    // The same representation (the same symbol string, polynomial or c * atom; `v == v`).
    t = kTrue;
  } else {
    t = e.Equal(a, b);
  }
  if (n.op == Op::kNe && t != kMaybe) t = t == kTrue ? kFalse : kTrue;
  *out = FromTri(t);
  return true;
}

bool Evaluator::HOrder(Evaluator& e, const Node& n, Val* out) {
  Val a, b;
  if (!e.EvalKid(n, 0, &a) || !e.EvalKid(n, 1, &b)) return false;
  if (a.tag == Tag::kInt && b.tag == Tag::kInt) {
    bool r;
    switch (n.op) {
      case Op::kLt:
        r = a.i < b.i;
        break;
      case Op::kLe:
        r = a.i <= b.i;
        break;
      case Op::kGt:
        r = a.i > b.i;
        break;
      default:
        r = a.i >= b.i;
        break;
    }
    *out = Val::Bool(r);
    return true;
  }
  *out = FromTri(e.CompareInts(n.op, a, b));
  return true;
}

bool Evaluator::HAndOr(Evaluator& e, const Node& n, Val* out) {
  // Kleene logic, short-circuiting on a decided left operand.
  const bool is_and = n.op == Op::kAnd;
  Val a;
  if (!e.EvalKid(n, 0, &a)) return false;
  if (!a.unknown() && (a.i != 0) != is_and) {
    *out = a;
    return true;
  }
  Val b;
  if (!e.EvalKid(n, 1, &b)) return false;
  if (!b.unknown() && (b.i != 0) != is_and) {
    *out = b;
  } else if (a.unknown() || b.unknown()) {
    *out = Val();
  } else {
    *out = Val::Bool(is_and);
  }
  return true;
}

bool Evaluator::HCoalesce(Evaluator& e, const Node& n, Val* out) {
  if (!e.EvalKid(n, 0, out)) return false;
  if (!out->unknown()) return true;
  return e.EvalKid(n, 1, out);
}

bool Evaluator::HIf(Evaluator& e, const Node& n, Val* out) {
  Val c;
  if (!e.EvalKid(n, 0, &c)) return false;
  if (c.unknown()) {
    *out = Val();
    return true;
  }
  return e.EvalKid(n, c.i != 0 ? 1 : 2, out);
}

bool Evaluator::HIndex(Evaluator& e, const Node& n, Val* out) {
  Val l, k;
  if (!e.EvalKid(n, 0, &l) || !e.EvalKid(n, 1, &k)) return false;
  if (l.unknown() || k.tag != Tag::kInt) {
    *out = Val();
    return true;
  }
  const int64_t j = k.i < 0 ? k.i + l.len : k.i;
  if (ABSL_PREDICT_FALSE(j < 0 || j >= l.len)) return e.IndexError(n, l, k.i);
  *out = e.HeapAt(l, j);
  return true;
}

bool Evaluator::HInvalid(Evaluator& e, const Node& n, Val* out) {
  return e.Fail(n.pos, "internal: unresolved expression");
}

// Indexed by Op; see the enum's order.
const Evaluator::Handler Evaluator::kHandlers[] = {
    &Evaluator::HInvalid,                     // kName
    &Evaluator::HInvalid,                     // kCallName
    &Evaluator::HInvalid,                     // kAttrName
    &Evaluator::HLiteral,                     // kInt
    &Evaluator::HLiteral,                     // kBool
    &Evaluator::HLiteral,                     // kString
    &Evaluator::HLiteral,                     // kDType
    &Evaluator::HLiteral,                     // kUnknown
    &Evaluator::HSlot,                        // kSlot
    &Evaluator::HAttr,                        // kAttr
    &Evaluator::HNeg,                         // kNeg
    &Evaluator::HNot,                         // kNot
    &Evaluator::HArith<Arith::kAdd>,          // kAdd
    &Evaluator::HArith<Arith::kSub>,          // kSub
    &Evaluator::HArith<Arith::kMul>,          // kMul
    &Evaluator::HArith<Arith::kFloorDiv>,     // kFloorDiv
    &Evaluator::HArith<Arith::kMod>,          // kMod
    &Evaluator::HEquality,                    // kEq
    &Evaluator::HEquality,                    // kNe
    &Evaluator::HOrder,                       // kLt
    &Evaluator::HOrder,                       // kLe
    &Evaluator::HOrder,                       // kGt
    &Evaluator::HOrder,                       // kGe
    &Evaluator::HAndOr,                       // kAnd
    &Evaluator::HAndOr,                       // kOr
    &Evaluator::HConcat,                      // kConcat
    &Evaluator::HCoalesce,                    // kCoalesce
    &Evaluator::HIn,                          // kIn
    &Evaluator::HIf,                          // kIf
    &Evaluator::HList,                        // kList
    &Evaluator::HIndex,                       // kIndex
    &Evaluator::HSlice,                       // kSlice
    &Evaluator::HComprehension,               // kComprehension
    &Evaluator::HCall,                        // kCall
};
// Indexed by Fn; see the enum's order.
const Evaluator::Handler Evaluator::kFnHandlers[] = {
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

bool Evaluator::Eval(int32_t id, Val* out) {
  static_assert(sizeof(kFnHandlers) / sizeof(kFnHandlers[0]) ==
                    static_cast<size_t>(Fn::kDistinct) + 1,
                "one handler per Fn");
  static_assert(sizeof(kHandlers) / sizeof(kHandlers[0]) == static_cast<size_t>(Op::kCall) + 1,
                "one handler per Op");
  const Node& n = p_.nodes[id];
  if (ABSL_PREDICT_FALSE(++steps_ > max_steps_)) return BudgetExceeded(n);
  return kHandlers[static_cast<int>(n.op)](*this, n, out);
}

bool Evaluator::RunStatements(Results* results) {
  for (const Stmt& st : p_.stmts) {
    switch (st.kind) {
      case StmtKind::kLet:
        if (!Eval(st.expr, &slots_[st.slot])) return false;
        break;
      case StmtKind::kAssert: {
        Val c;
        if (!Eval(st.expr, &c)) return false;
        if (c.unknown() || c.i != 0) break;
        if (st.parts.empty()) {
          return Fail(st.pos, absl::StrCat("assertion failed: ",
                                           p_.source.substr(st.text_begin,
                                                            st.text_end - st.text_begin)));
        }
        bool ok;
        std::string message = FormatParts(st.parts, &ok);
        if (!ok) return false;
        return Fail(st.pos, std::move(message));
      }
      case StmtKind::kConstraint: {
        absl::InlinedVector<int64_t, 8> allowed;
        for (int32_t part : st.parts) {
          Val d;
          if (!Eval(part, &d)) return false;
          if (d.tag == Tag::kDType) allowed.push_back(d.i);
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
            return Fail(st.pos, absl::StrCat("input '", InputLabel(i), "' has type ",
                                             DataTypeName(dt), ", which '", st.name,
                                             " in {...}' does not allow (allowed: ", set, ")"));
          }
        }
        break;
      }
      case StmtKind::kOutput:
      case StmtKind::kOutputValue:
      case StmtKind::kOutputAll:
      case StmtKind::kResult: {
        Val v;
        if (!Eval(st.expr, &v)) return false;
        results->emplace_back(&st, v);
        break;
      }
    }
  }
  return true;
}

bool Evaluator::ToDims(const Val& v, int32_t pos, int output, bool contents,
                       std::optional<Dims>* out) {
  if (v.unknown()) {
    out->reset();
    return true;
  }
  Dims dims;
  dims.reserve(v.len);
  for (uint32_t k = 0; k < v.len; ++k) {
    const Val d = HeapAt(v, k);
    switch (d.tag) {
      case Tag::kInt:
        if (ABSL_PREDICT_FALSE(d.i < 0) && !contents) {
          return Fail(pos, absl::StrCat("output[", output, "] has a negative dim ", d.i,
                                        " at index ", k, ": ",
                                        Format(v, Type::ListOf(Type::Int()))));
        }
        dims.push_back(Dim::Known(d.i));
        break;
      case Tag::kSymRef:
        dims.push_back(Dim::Symbol(*d.s));
        break;
      case Tag::kSym: {
        std::optional<std::string> s = polys_[d.i].ToString();
        dims.push_back(s ? Dim::Symbol(*std::move(s)) : Dim::Unknown());
        break;
      }
      case Tag::kMono: {
        std::optional<std::string> s = MonoString(d);
        dims.push_back(s ? Dim::Symbol(*std::move(s)) : Dim::Unknown());
        break;
      }
      default:
        dims.push_back(Dim::Unknown());
    }
  }
  *out = std::move(dims);
  return true;
}

absl::Status Evaluator::RunShape(InferenceContext& ctx) {
  Results results;
  if (!RunStatements(&results)) return Status();
  struct Write {
    int output;
    bool value;
    std::optional<Dims> dims;
  };
  absl::InlinedVector<Write, 4> writes;
  for (const auto& [st, v] : results) {
    if (st->kind == StmtKind::kOutputAll) {
      if (!v.unknown() && static_cast<int>(v.len) != ctx.num_outputs()) {
        Fail(st->pos, absl::StrCat("output[*] has ", v.len, " shapes but the node has ",
                                   ctx.num_outputs(), " outputs"));
        return Status();
      }
      for (int i = 0; i < ctx.num_outputs(); ++i) {
        Write w{i, false, std::nullopt};
        if (!v.unknown() &&
            !ToDims(HeapAt(v, i), st->pos, i, false, &w.dims)) {
          return Status();
        }
        writes.push_back(std::move(w));
      }
      continue;
    }
    Write w{st->output, st->kind == StmtKind::kOutputValue, std::nullopt};
    if (!ToDims(v, st->pos, st->output, w.value, &w.dims)) return Status();
    writes.push_back(std::move(w));
  }
  // Outputs the rule leaves alone get an unknown rank.
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    const bool assigned = p_.assigns_all_outputs ||
                          (i < static_cast<int>(p_.assigns_output.size()) && p_.assigns_output[i]);
    if (!assigned) ctx.set_output_shape(i, std::nullopt);
  }
  for (Write& w : writes) {
    if (w.value) {
      if (w.dims && static_cast<int64_t>(w.dims->size()) <= kMaxDimsValueElements) {
        ctx.set_output_dims_value(w.output, *std::move(w.dims));
      }
    } else {
      ctx.set_output_shape(w.output, std::move(w.dims));
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
      if (static_cast<int>(v.len) != ctx.num_outputs()) {
        Fail(st->pos, absl::StrCat("output[*] has ", v.len, " types but the node has ",
                                   ctx.num_outputs(), " outputs"));
        return Status();
      }
      for (int i = 0; i < ctx.num_outputs(); ++i) {
        const Val d = HeapAt(v, i);
        if (d.tag == Tag::kDType) ctx.set_output_dtype(i, static_cast<v1::DataType>(d.i));
      }
      continue;
    }
    if (v.tag == Tag::kDType) ctx.set_output_dtype(st->output, static_cast<v1::DataType>(v.i));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<int64_t>> Evaluator::RunCost() {
  Results results;
  if (!RunStatements(&results)) return Status();
  for (const auto& [st, v] : results) {
    if (st->kind == StmtKind::kResult && v.tag == Tag::kInt) return std::optional<int64_t>(v.i);
  }
  return std::optional<int64_t>();
}

}  // namespace

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
