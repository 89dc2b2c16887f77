#ifndef GRAPHOPT_RULES_BYTECODE_H_
#define GRAPHOPT_RULES_BYTECODE_H_

// The rule engine's executable form: PrepareProgram (lowering.h) lowers each statement's
// expression once into register instructions that the VM (vm.h) runs. Slots and literals are
// registers, so reading them costs nothing; every expression node the checker accepts lowers
// to instructions, so a prepared program never needs another engine.
//
// The steps charged are exactly those the language defines (docs/rule-language.md, "Limits"):
// one per node, in the order the nodes are reached (parents first), plus what the builtins
// charge themselves. The nodes reached between two instructions (a parent, its first child,
// ... down to a leaf) are charged with the next instruction; when that exceeds the budget, the
// error names the node at which it ran out. Internal to //rules.

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "rules/program.h"
#include "rules/value.h"

namespace graphopt {
namespace rules {

// Insn::handler values: one per operation and per builtin function. The reference
// interpreter (interpreter.h) dispatches on them; the VM reads a call's function from them.
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

// The function of call node `n` (n.handler >= kHFn).
inline Fn FnOf(const Insn& n) { return static_cast<Fn>(n.handler - kHFn); }

// A register operand that is absent (an input builtin whose input is the node's own imm).
inline constexpr uint16_t kNoReg = 0xffff;

enum class VOp : uint8_t {
  // Control.
  kRet,   // the end of the statements
  kNop,   // charges nodes only (a chain of nodes longer than one charge can hold)
  kMov,   // R[dst] = R[a]
  kJmp,   // goto target
  // Statements.
  kStmt,        // statement target2 (an output or result) finishes with value R[a]
  kAssert,      // assert statement target2: R[a] holds or is unknown: goto target
  kAssertFail,  // assert statement target2 fails, its message parts in R[a .. a+b)
  kConstraint,  // type constraint statement target2, its dtypes in R[a .. a+b)
  // Operators.
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
  kInBegin,     // R[a] = false (whether `x in {...}` is unknown so far)
  kInTest,      // R[a] equals R[b]: R[dst] = true, goto target; maybe: R[c] = unknown
  kListBegin,   // a list literal of the node's length: R[a] = where it starts in scratch
  kListPush,    // appends R[a] to the list being built
  kListEnd,     // R[dst] = the list that started at R[a]
  kSliceCheck,  // R[a] (a slice's first bound) not an int: R[dst] = unknown, goto target
  kSlice,       // R[dst] = R[a][R[b]:R[c]] (the node's bounds; R[b] or R[c] unused when absent)
  // Values read from the node.
  kAttr,           // R[dst] = the attribute, goto target; absent with a fallback: next
  kInputBuiltin,   // R[dst] = builtin c of input R[b] (kNoReg: the node's imm), or of the node
  kVariadicIndex,  // R[b] = the input Xs[R[a]] names; unknown: R[dst] = unknown, goto target
  kDimAt,          // R[dst] = dim R[b] of shape R[a] of input R[c] (kNoReg: the node's imm)
  kHasItem,        // R[dst] = has(Xs[R[a]])
  // Builtins of argument values.
  kKnown,
  kLen,
  kApply1,  // R[dst] = the node's builtin of R[a]
  kApply2,  // R[dst] = the node's builtin of R[a], R[b]
  kApplyN,  // R[dst] = the node's builtin of R[a .. a+b)
  kFail,    // fail(...) with its parts in R[a .. a+b)
  // Comprehensions keep their state in R[b] (next index, count) and R[c] (where the list
  // starts in the scratch buffer, where the elements are in the heap); R[d] is the variable.
  kCompBegin,       // for x in R[a]: unknown: R[dst] = unknown, goto target
  kCompNext,        // R[d] = the next element; after the last: R[dst] = the list, goto target
  kCompRangeBegin,  // for x in range(R[a]) (pos: the range call's)
  kCompRangeNext,
  kCompFilter,    // R[a] unknown: R[dst] = unknown, goto target; false: goto target2 (next)
  kCompPushNext,  // appends R[a], then as kCompNext but continuing at target2 (the body)
  kCompRangePushNext,
};
inline constexpr int kNumVOps = static_cast<int>(VOp::kCompRangePushNext) + 1;

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
  int32_t node = -1;  // the node it evaluates (builtin, error messages)
  int32_t pos = 0;
  int32_t target = -1;
  int32_t target2 = -1;
};
static_assert(sizeof(VInsn) == 32, "VInsn is meant to fill half a cache line");

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

}  // namespace rules
}  // namespace graphopt

#endif  // GRAPHOPT_RULES_BYTECODE_H_
