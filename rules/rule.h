#ifndef GRAPHOPT_RULES_RULE_H_
#define GRAPHOPT_RULES_RULE_H_

// graphopt's rule language (docs/rule-language.md): shape, type and cost rules that travel
// with op descriptors over the wire. A rule is compiled once against its descriptor (every
// name resolved, statically typed, lowered to register bytecode) and then evaluated per node by
// a small VM that is total: every evaluation terminates within RuleLimits, and symbolic sizes
// flow through as canonical polynomials ("batch", "2*seq", "seq+1"), or become unknown, never a
// guess.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/inference.h"
#include "proto/op.pb.h"
#include "rules/limits.h"
#include "rules/program.h"

namespace graphopt {

// A compiled rule: immutable after CompileRule, safe to evaluate from many threads at once.
class CompiledRule {
 public:
  RuleKind kind() const { return program_.kind; }
  // "shape_rule", "type_rule", "cost.flops", ... as given to CompileRule.
  const std::string& name() const { return program_.rule_name; }
  const std::string& text() const { return program_.source; }
  const RuleLimits& limits() const { return limits_; }
  // The compiled form, for the evaluator and tests.
  const rules::Program& program() const { return program_; }

 private:
  friend absl::StatusOr<std::shared_ptr<const CompiledRule>> CompileRule(
      absl::string_view, RuleKind, const v1::OpDescriptor&, absl::string_view,
      const RuleLimits&);
  rules::Program program_;
  RuleLimits limits_;
};

// Parses `text` and checks it against `op` (its inputs, outputs, attributes and type
// constraints). INVALID_ARGUMENT "op 'my.ops::Foo' <rule_name> L:C: <message>" for a lexical,
// syntax, name, arity or type error, an output statement a rule kind does not allow, a
// required output a shape rule never assigns, or nesting deeper than limits.max_depth.
absl::StatusOr<std::shared_ptr<const CompiledRule>> CompileRule(
    absl::string_view text, RuleKind kind, const v1::OpDescriptor& op,
    absl::string_view rule_name, const RuleLimits& limits = RuleLimits());

// Evaluates a shape rule for ctx's node: sets the output shapes it computes (an output the rule
// does not assign gets an unknown rank) and the dims values of `output[I].value = ...`.
// INVALID_ARGUMENT "<node label>: <rule name> L:C: <message>" for a failed assert, fail(...),
// integer overflow, an index out of range, division by zero, a broadcast mismatch, a limit
// exceeded, ...; nothing is written then. FAILED_PRECONDITION for a rule of another kind.
absl::Status ApplyShapeRule(const CompiledRule& rule, InferenceContext& ctx);

// Evaluates a type rule: checks its `X in {...}` constraints and sets the dtypes of the outputs
// it assigns (an unknown result keeps the dtype InferNodeTypes derived). Errors as above.
absl::Status ApplyTypeRule(const CompiledRule& rule, InferenceContext& ctx);

// Evaluates a cost rule: the figure, or nullopt when it is unknown or symbolic.
absl::StatusOr<std::optional<int64_t>> EvaluateCostRule(const CompiledRule& rule,
                                                        const InferenceContext& ctx);

}  // namespace graphopt

#endif  // GRAPHOPT_RULES_RULE_H_
