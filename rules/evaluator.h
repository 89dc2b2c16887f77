#ifndef GRAPHOPT_RULES_EVALUATOR_H_
#define GRAPHOPT_RULES_EVALUATOR_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/inference.h"
#include "rules/program.h"

namespace graphopt {
namespace rules {

// Compiles a checked program for the evaluator: Program::code (each node's compact form) and
// Program::bytecode (the statements as register code, see bytecode.h). CompileRule calls it
// once after the checker; a program is evaluated only after it. Fails only for a program past
// the evaluator's register file (lowering.h), far beyond the default RuleLimits.
absl::Status PrepareProgram(Program* program);

// Evaluates a checked program against one node. All state lives on the stack of the call, so a
// Program may be evaluated from many threads at once. Errors are INVALID_ARGUMENT
// "<node label>: <rule name> L:C: <message>".

// Shape rules: sets every output's shape (outputs the rule does not assign get an unknown
// rank) and the dims values the rule assigns. Nothing is written when the rule fails.
absl::Status EvaluateShape(const Program& program, const RuleLimits& limits,
                           InferenceContext& ctx);

// Type rules: checks the `in` constraints and sets the dtypes of the outputs the rule assigns
// (an unknown dtype leaves the output's current one).
absl::Status EvaluateType(const Program& program, const RuleLimits& limits,
                          InferenceContext& ctx);

// Cost rules: the cost, or nullopt when it is unknown or symbolic.
absl::StatusOr<std::optional<int64_t>> EvaluateCost(const Program& program,
                                                    const RuleLimits& limits,
                                                    const InferenceContext& ctx);

}  // namespace rules
}  // namespace graphopt

#endif  // GRAPHOPT_RULES_EVALUATOR_H_
