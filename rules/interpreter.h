#ifndef GRAPHOPT_RULES_INTERPRETER_H_
#define GRAPHOPT_RULES_INTERPRETER_H_

// The reference interpreter, for tests only: evaluates a prepared program node by node,
// straight from the language's definition (each node charged one step when reached, parents
// first, children in order), on the same values and builtins as the VM (machine.h). The
// differential tests hold the VM's results, errors and budget errors to it. Production code
// evaluates through evaluator.h alone.

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/inference.h"
#include "rules/program.h"

namespace graphopt {
namespace rules {

// As EvaluateShape, EvaluateType and EvaluateCost (evaluator.h), without the bytecode.
absl::Status InterpretShape(const Program& program, const RuleLimits& limits,
                            InferenceContext& ctx);
absl::Status InterpretType(const Program& program, const RuleLimits& limits,
                           InferenceContext& ctx);
absl::StatusOr<std::optional<int64_t>> InterpretCost(const Program& program,
                                                     const RuleLimits& limits,
                                                     const InferenceContext& ctx);

}  // namespace rules
}  // namespace graphopt

#endif  // GRAPHOPT_RULES_INTERPRETER_H_
