#include "rules/vm.h"

#include <algorithm>
#include <cstdint>

#include "absl/base/optimization.h"
#include "absl/strings/str_cat.h"

namespace graphopt {
namespace rules {

// --- Comprehensions --------------------------------------------------------------------------

inline const VInsn* Vm::CompBegin(const VInsn* x, Val* r) {
  const Val it = r[x->a];
  if (it.unknown()) {
    r[x->dst] = it;
    return bc_.code.data() + x->target;
  }
  r[x->b].i = 0;                                      // the next element
  r[x->b].meta = it.len();                            // the count
  r[x->c].i = static_cast<int64_t>(scratch_.size());  // where the list starts
  r[x->c].meta = static_cast<uint64_t>(it.i);         // where the elements are
  return x + 1;
}

// kCompNext and kCompPushNext (which appends the body's value first).
inline const VInsn* Vm::CompNext(const VInsn* x, Val* r) {
  if (x->op == VOp::kCompPushNext) scratch_.push_back(r[x->a]);
  const int64_t k = r[x->b].i;
  if (k >= static_cast<int64_t>(r[x->b].meta)) {
    r[x->dst] = ListFromScratch(static_cast<size_t>(r[x->c].i));
    return bc_.code.data() + x->target;
  }
  r[x->d] = heap_[r[x->c].meta + k];
  r[x->b].i = k + 1;
  return x->op == VOp::kCompPushNext ? bc_.code.data() + x->target2 : x + 1;
}

inline const VInsn* Vm::CompRangeBegin(const VInsn* x, Val* r, int64_t& steps) {
  const Val count = r[x->a];
  if (count.tag() != Tag::kInt) {
    r[x->dst] = Val();
    return bc_.code.data() + x->target;
  }
  if (count.i > limits_.max_list_length) {
    Fail(x->pos, absl::StrCat("range() of ", count.i, " elements exceeds the limit of ",
                              limits_.max_list_length));
    return nullptr;
  }
  steps_ = steps;
  if (!Charge(x->pos, std::max<int64_t>(count.i, 0))) return nullptr;
  steps = steps_;
  r[x->b].i = 0;
  r[x->b].meta = static_cast<uint64_t>(std::max<int64_t>(count.i, 0));  // the count
  r[x->c].i = static_cast<int64_t>(scratch_.size());
  return x + 1;
}

// kCompRangeNext and kCompRangePushNext.
inline const VInsn* Vm::CompRangeNext(const VInsn* x, Val* r) {
  if (x->op == VOp::kCompRangePushNext) scratch_.push_back(r[x->a]);
  const int64_t k = r[x->b].i;
  if (k >= static_cast<int64_t>(r[x->b].meta)) {
    r[x->dst] = ListFromScratch(static_cast<size_t>(r[x->c].i));
    return bc_.code.data() + x->target;
  }
  r[x->d] = Val::Int(k);
  r[x->b].i = k + 1;
  return x->op == VOp::kCompRangePushNext ? bc_.code.data() + x->target2 : x + 1;
}

inline const VInsn* Vm::CompFilter(const VInsn* x, Val* r) {
  const Val keep = r[x->a];
  if (keep.unknown()) {  // the length is not known
    scratch_.truncate(static_cast<size_t>(r[x->c].i));
    r[x->dst] = keep;
    return bc_.code.data() + x->target;
  }
  return keep.i == 0 ? bc_.code.data() + x->target2 : x + 1;
}

// --- Values read from the node -----------------------------------------------------------------

inline const VInsn* Vm::AttrOp(const VInsn* x, Val* r, int64_t& steps) {
  bool absent = false;
  steps_ = steps;
  const Val v = EvalAttr(code_[x->node], &absent);
  steps = steps_;
  if (ABSL_PREDICT_FALSE(v.failed())) return nullptr;
  if (absent) return x + 1;  // the fallback's code follows
  r[x->dst] = v;
  return bc_.code.data() + x->target;
}

inline const VInsn* Vm::InputBuiltinOp(const VInsn* x, Val* r, int64_t& steps) {
  const Insn& n = code_[x->node];
  const int input = x->b == kNoReg ? static_cast<int>(n.imm) : static_cast<int>(r[x->b].i);
  steps_ = steps;
  const Val v = kNodeBuiltins[x->c](*this, n, input);
  steps = steps_;
  if (ABSL_PREDICT_FALSE(v.failed())) return nullptr;
  r[x->dst] = v;
  return x + 1;
}

inline const VInsn* Vm::VariadicIndexOp(const VInsn* x, Val* r) {
  int input;
  if (!Machine::VariadicIndex(code_[x->node], r[x->a], &input)) return nullptr;
  if (input < 0) {
    r[x->dst] = Val();
    return bc_.code.data() + x->target;
  }
  r[x->b] = Val::Int(input);
  return x + 1;
}

// --- Lists and membership ----------------------------------------------------------------------

inline const VInsn* Vm::ListBegin(const VInsn* x, Val* r, int64_t& steps) {
  size_t base;
  steps_ = steps;
  if (!BeginList(x->pos, code_[x->node].num_kids, &base)) return nullptr;
  steps = steps_;
  r[x->a].i = static_cast<int64_t>(base);
  return x + 1;
}

inline const VInsn* Vm::InTest(const VInsn* x, Val* r) {
  const Tri t = MemberOf(r[x->a], r[x->b]);
  if (t == kTrue) {
    r[x->dst] = Val::Bool(true);
    return bc_.code.data() + x->target;
  }
  if (t == kMaybe) r[x->c] = Val();
  return x + 1;
}

// --- Builtins of argument values ---------------------------------------------------------------

inline const VInsn* Vm::ApplyOp(const VInsn* x, const Val* args, int count, Val* r,
                                int64_t& steps) {
  steps_ = steps;
  const Val v = ApplyNode(code_[x->node], args, count);
  steps = steps_;
  if (ABSL_PREDICT_FALSE(v.failed())) return nullptr;
  r[x->dst] = v;
  return x + 1;
}

// --- The dispatch loop -------------------------------------------------------------------------

void Vm::CodeBudgetExceeded(const VInsn& x) {
  // The charged nodes in the order they were reached: the budget ran out at the first one
  // past it.
  const int64_t before = steps_ - x.charge;
  const int64_t k = max_steps_ - before;  // 0 <= k < charge
  const int32_t node = bc_.charged[bc_.charge_first[&x - bc_.code.data()] + k];
  BudgetExceeded(code_[node].pos);
}

bool Vm::Run(Results* results) {
  // Threaded dispatch: each instruction jumps straight to the next one's code (GCC's labels as
  // values), charging its steps first. In the order of VOp.
  static const void* const kOps[] = {
      &&op_ret,          &&op_nop,           &&op_mov,          &&op_jmp,
      &&op_stmt,         &&op_assert,        &&op_assert_fail,  &&op_constraint,
      &&op_neg,          &&op_not,           &&op_arith,        &&op_eq,
      &&op_ne,           &&op_lt,            &&op_le,           &&op_gt,
      &&op_ge,           &&op_and_short,     &&op_or_short,     &&op_and_rest,
      &&op_or_rest,      &&op_coal_short,    &&op_if_test,      &&op_index,
      &&op_concat,       &&op_in_begin,      &&op_in_test,      &&op_list_begin,
      &&op_list_push,    &&op_list_end,      &&op_slice_check,  &&op_slice,
      &&op_attr,         &&op_input_builtin, &&op_variadic_index, &&op_dim_at,
      &&op_has_item,     &&op_known,         &&op_len,          &&op_apply1,
      &&op_apply2,       &&op_apply_n,       &&op_fail,         &&op_comp_begin,
      &&op_comp_next,    &&op_crange_begin,  &&op_crange_next,  &&op_comp_filter,
      &&op_comp_next,    &&op_crange_next,
  };
  static_assert(sizeof(kOps) / sizeof(kOps[0]) == kNumVOps, "one label per VOp");
  const VInsn* const code = bc_.code.data();
  Val* const r = slots_;
  const int64_t max_steps = max_steps_;
  // The step count lives in a register here; steps_ holds it around the calls that charge
  // steps themselves (builtins, polynomial arithmetic, list building).
  int64_t steps = steps_;
  const VInsn* x = code;
  Val v;
#define GRAPHOPT_RULES_DISPATCH()                                    \
  do {                                                               \
    steps += x->charge;                                              \
    if (ABSL_PREDICT_FALSE(steps > max_steps)) goto budget_exceeded; \
    goto* kOps[static_cast<int>(x->op)];                             \
  } while (0)
#define GRAPHOPT_RULES_NEXT()  \
  do {                         \
    ++x;                       \
    GRAPHOPT_RULES_DISPATCH(); \
  } while (0)
#define GRAPHOPT_RULES_JUMP(to) \
  do {                          \
    x = code + (to);            \
    GRAPHOPT_RULES_DISPATCH();  \
  } while (0)
// Continues at `next`, an instruction a group function returned (null: the rule failed).
#define GRAPHOPT_RULES_GO(next)                        \
  do {                                                 \
    x = (next);                                        \
    if (ABSL_PREDICT_FALSE(x == nullptr)) return false; \
    GRAPHOPT_RULES_DISPATCH();                         \
  } while (0)
// As GRAPHOPT_RULES_GO for a group function that cannot fail.
#define GRAPHOPT_RULES_CONTINUE(next) \
  do {                                \
    x = (next);                       \
    GRAPHOPT_RULES_DISPATCH();        \
  } while (0)
  GRAPHOPT_RULES_DISPATCH();

  // Control.
op_ret:
  steps_ = steps;
  return true;
op_nop:
  GRAPHOPT_RULES_NEXT();
op_mov:
  r[x->dst] = r[x->a];
  GRAPHOPT_RULES_NEXT();
op_jmp:
  GRAPHOPT_RULES_JUMP(x->target);

  // Statements.
op_stmt:
  Record(p_.stmts[x->target2], r[x->a], results);
  GRAPHOPT_RULES_NEXT();
op_assert:
  // Holds (or is unknown): past the message; else on to the message's parts.
  if (r[x->a].unknown() || r[x->a].i != 0) GRAPHOPT_RULES_JUMP(x->target);
  GRAPHOPT_RULES_NEXT();
op_assert_fail:
  AssertFailed(p_.stmts[x->target2], r + x->a);
  return false;
op_constraint:
  if (!CheckConstraint(p_.stmts[x->target2], r + x->a)) return false;
  GRAPHOPT_RULES_NEXT();

  // Operators.
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
op_in_begin:
  r[x->a] = Val::Bool(false);
  GRAPHOPT_RULES_NEXT();
op_in_test:
  GRAPHOPT_RULES_CONTINUE(InTest(x, r));
op_list_begin:
  GRAPHOPT_RULES_GO(ListBegin(x, r, steps));
op_list_push:
  scratch_.push_back(r[x->a]);
  GRAPHOPT_RULES_NEXT();
op_list_end:
  r[x->dst] = ListFromScratch(static_cast<size_t>(r[x->a].i));
  GRAPHOPT_RULES_NEXT();
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

  // Values read from the node.
op_attr:
  GRAPHOPT_RULES_GO(AttrOp(x, r, steps));
op_input_builtin:
  GRAPHOPT_RULES_GO(InputBuiltinOp(x, r, steps));
op_variadic_index:
  GRAPHOPT_RULES_GO(VariadicIndexOp(x, r));
op_dim_at: {
  const Insn& n = code_[x->node];
  v = DimAt(n, x->c == kNoReg ? static_cast<int>(n.imm) : static_cast<int>(r[x->c].i), r[x->a],
            r[x->b]);
  goto store;
}
op_has_item:
  r[x->dst] = HasItem(code_[x->node], r[x->a]);
  GRAPHOPT_RULES_NEXT();

  // Builtins of argument values.
op_known:
  r[x->dst] = KnownOf(r[x->a]);
  GRAPHOPT_RULES_NEXT();
op_len:
  r[x->dst] = LenOf(r[x->a]);
  GRAPHOPT_RULES_NEXT();
op_apply1: {
  const Val arg = r[x->a];
  GRAPHOPT_RULES_GO(ApplyOp(x, &arg, 1, r, steps));
}
op_apply2: {
  const Val args[2] = {r[x->a], r[x->b]};
  GRAPHOPT_RULES_GO(ApplyOp(x, args, 2, r, steps));
}
op_apply_n:
  GRAPHOPT_RULES_GO(ApplyOp(x, r + x->a, x->b, r, steps));
op_fail:
  FailWith(code_[x->node], r + x->a);
  return false;

  // Comprehensions.
op_comp_begin:
  GRAPHOPT_RULES_CONTINUE(CompBegin(x, r));
op_comp_next:
  GRAPHOPT_RULES_CONTINUE(CompNext(x, r));
op_crange_begin:
  GRAPHOPT_RULES_GO(CompRangeBegin(x, r, steps));
op_crange_next:
  GRAPHOPT_RULES_CONTINUE(CompRangeNext(x, r));
op_comp_filter:
  GRAPHOPT_RULES_CONTINUE(CompFilter(x, r));

store:
  if (ABSL_PREDICT_FALSE(v.failed())) return false;
  r[x->dst] = v;
  GRAPHOPT_RULES_NEXT();

budget_exceeded:
  steps_ = steps;
  CodeBudgetExceeded(*x);
  return false;
#undef GRAPHOPT_RULES_CONTINUE
#undef GRAPHOPT_RULES_GO
#undef GRAPHOPT_RULES_JUMP
#undef GRAPHOPT_RULES_NEXT
#undef GRAPHOPT_RULES_DISPATCH
}

}  // namespace rules
}  // namespace graphopt
