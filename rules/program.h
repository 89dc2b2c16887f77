#ifndef GRAPHOPT_RULES_PROGRAM_H_
#define GRAPHOPT_RULES_PROGRAM_H_

// The compiled form of a rule: a flat array of expression nodes (children referenced by index)
// plus a statement list. The parser fills it with unresolved names; the checker resolves every
// name to a slot, input, attribute or builtin and assigns static types; PrepareProgram
// (evaluator.h) adds the evaluator's compact form; from then on it is immutable and evaluated
// by the evaluator. Internal to //rules.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proto/op.pb.h"
#include "rules/limits.h"

namespace graphopt {
namespace rules {

// "op 'my.ops::Foo' shape_rule 3:14: message".
class Diag {
 public:
  Diag(std::string prefix, absl::string_view source) : prefix_(std::move(prefix)), source_(source) {}
  absl::Status Error(int32_t pos, absl::string_view message) const;
  // 1-based line and column of byte offset `pos`.
  static std::pair<int, int> LineCol(absl::string_view source, int32_t pos);
  absl::string_view source() const { return source_; }

 private:
  std::string prefix_;
  absl::string_view source_;
};

// --- Static types ---------------------------------------------------------------------------

enum class Base : uint8_t { kAny, kInt, kBool, kString, kDType };

// A scalar type, or a list nested `depth` times. kAny stands for any type (the `unknown`
// literal, fail(...)); a list whose element type is kAny is the empty list.
struct Type {
  Base base = Base::kAny;
  uint8_t depth = 0;

  static Type Int() { return {Base::kInt, 0}; }
  static Type Bool() { return {Base::kBool, 0}; }
  static Type String() { return {Base::kString, 0}; }
  static Type DType() { return {Base::kDType, 0}; }
  static Type Any() { return {Base::kAny, 0}; }
  static Type ListOf(Type t) { return {t.base, static_cast<uint8_t>(t.depth + 1)}; }

  bool is_list() const { return depth > 0; }
  Type element() const { return {base, static_cast<uint8_t>(depth - 1)}; }
  friend bool operator==(Type a, Type b) { return a.base == b.base && a.depth == b.depth; }
  friend bool operator!=(Type a, Type b) { return !(a == b); }
};

// "int", "list<int>", "list<list<int>>", "?" (any), "list<?>".
std::string TypeName(Type t);
// The common type of a and b, or false when they have none.
bool Unify(Type a, Type b, Type* out);
// True when a value of type `t` may be used where `want` is expected.
inline bool Accepts(Type want, Type t) {
  Type u;
  return Unify(want, t, &u);
}

// --- Expressions ----------------------------------------------------------------------------

enum class Op : uint8_t {
  // Written by the parser, replaced by the checker.
  kName,      // text: identifier
  kCallName,  // text: function name; kids: arguments
  kAttrName,  // attr.NAME or attr("NAME"[, fallback]); text: NAME; kids: [fallback]
  // Literals.
  kInt,       // imm
  kBool,      // imm 0/1
  kString,    // text
  kDType,     // imm: v1::DataType
  kUnknown,
  // Resolved references.
  kSlot,  // let or comprehension variable; imm: slot
  kAttr,  // imm: index into Program::attrs; kids: [fallback]
  // Operators.
  kNeg,
  kNot,
  kAdd,
  kSub,
  kMul,
  kFloorDiv,
  kMod,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kAnd,
  kOr,
  kConcat,    // ++
  kCoalesce,  // |
  kIn,        // kids: value, members...
  kIf,        // kids: condition, then, else
  kList,      // kids: elements
  kIndex,     // kids: list, index
  kSlice,     // kids: list, [start], [end]; imm bit 1: start given, bit 2: end given
  kComprehension,  // kids: iterable, element, [filter]; imm: slot of the variable; text: name
  kCall,           // fn: Fn; ref: Ref; imm: see Ref; kids: arguments (see Ref)
};

// Builtin functions.
enum class Fn : uint8_t {
  kRank,
  kShape,
  kDim,
  kHas,
  kValue,
  kDTypeOf,
  kCount,
  kShapes,
  kHasAttr,
  kAttrDType,
  kOpset,
  kNumInputs,
  kNumOutputs,
  kBroadcast,
  kNormalizeAxis,
  kMerge,
  kFail,
  kMin,
  kMax,
  kAbs,
  kCdiv,
  kLen,
  kSum,
  kProd,
  kRange,
  kKnown,
  kAll,
  kAnyOf,
  kFlatten,
  kDTypeSize,
  kDistinct,
};

// What the first argument of an input-reading builtin refers to.
enum class Ref : uint8_t {
  kNone,
  kInput,           // imm: input index
  kVariadicItem,    // Xs[k]; imm: index of the variadic input; kids[0]: k
  kVariadicAll,     // Xs; imm: index of the variadic input
  kConstraint,      // dtype(T); imm: index into Program::constraints
  kVariadicOutput,  // count(Ys); imm: index of the variadic output
  kAttribute,       // has_attr/attr_dtype; imm: index into Program::attrs
};

struct Node {
  Op op = Op::kUnknown;
  Fn fn = Fn::kRank;
  Ref ref = Ref::kNone;
  Type type;
  int32_t pos = 0;  // byte offset of the node's token
  int32_t end = 0;  // byte offset just past the node's source text
  int32_t first_kid = 0;
  int32_t num_kids = 0;
  int64_t imm = 0;
  std::string text;
};

// The evaluator's form of a node: what evaluating it needs, packed into 32 bytes (a Node is
// twice that and mostly text and checker data), with the first two children inline. Filled by
// PrepareProgram (evaluator.h) after the checker, one per node, at the node's index.
struct Insn {
  uint8_t handler = 0;  // what the node computes (rules::H, bytecode.h)
  Ref ref = Ref::kNone;
  int32_t pos = 0;
  int32_t kid0 = -1;
  int32_t kid1 = -1;
  int32_t first_kid = 0;
  int32_t num_kids = 0;
  int64_t imm = 0;
};
static_assert(sizeof(Insn) == 32, "Insn is meant to fill half a cache line");

// The statements as register code for the VM (defined in bytecode.h).
struct Bytecode;

// --- Statements -----------------------------------------------------------------------------

enum class StmtKind : uint8_t {
  kLet,          // let NAME = expr;            slot, expr
  kAssert,       // assert expr[, parts...];    expr, parts
  kOutput,       // output[I] = expr;           output, expr
  kOutputValue,  // output[I].value = expr;     output, expr
  kOutputAll,    // output[*] = expr;           expr
  kConstraint,   // NAME in {dtypes};           name, parts (dtype expressions)
  kResult,       // expr (cost rules)           expr
};

struct Stmt {
  StmtKind kind = StmtKind::kLet;
  int32_t pos = 0;
  int32_t expr = -1;
  int32_t slot = -1;
  int32_t output = -1;
  std::string name;  // let name, output name (output[NAME]) or constraint target
  std::vector<int32_t> parts;
  // kConstraint, resolved: the declared input positions it checks.
  std::vector<int32_t> inputs;
  // Source range of `expr` (an assert without a message quotes it).
  int32_t text_begin = 0;
  int32_t text_end = 0;
};

struct AttrRef {
  std::string name;
  v1::AttributeType type = v1::ATTR_UNDEFINED;
};

struct Program {
  RuleKind kind = RuleKind::kShape;
  std::string rule_name;  // "shape_rule", "type_rule", "cost.flops", ...
  std::string op_label;   // "my.ops::Foo"
  std::string source;
  std::vector<Node> nodes;
  std::vector<int32_t> kids;
  std::vector<Stmt> stmts;

  // Filled by the checker.
  int32_t num_slots = 0;
  std::vector<AttrRef> attrs;
  std::vector<std::string> input_names;   // declared inputs, in order
  std::vector<std::string> output_names;  // declared outputs, in order
  int32_t variadic_input = -1;            // index of the variadic input, or -1
  int32_t variadic_output = -1;
  std::vector<std::string> constraint_names;
  // For each type constraint: the declared input positions that use it.
  std::vector<std::vector<int32_t>> constraint_inputs;
  // Node ids of the `output[*]` / `output[I]` statements are in stmts; the outputs a shape
  // rule assigns (for resetting the others).
  std::vector<bool> assigns_output;
  bool assigns_all_outputs = false;

  // Filled by PrepareProgram: one Insn per node, and the statements' bytecode.
  std::vector<Insn> code;
  std::shared_ptr<const Bytecode> bytecode;

  const Node& node(int32_t id) const { return nodes[id]; }
  int32_t kid(const Node& n, int i) const { return kids[n.first_kid + i]; }
};

}  // namespace rules
}  // namespace graphopt

#endif  // GRAPHOPT_RULES_PROGRAM_H_
