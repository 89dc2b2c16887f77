#include "rules/evaluator.h"

#include "rules/lowering.h"
#include "rules/vm.h"

namespace graphopt {
namespace rules {

absl::Status PrepareProgram(Program* program) { return LowerProgram(program); }

absl::Status EvaluateShape(const Program& program, const RuleLimits& limits,
                           InferenceContext& ctx) {
  Vm vm(program, limits, ctx);
  Vm::Results results;
  if (!vm.Run(&results)) return vm.Status();
  return vm.WriteShapes(results, ctx);
}

absl::Status EvaluateType(const Program& program, const RuleLimits& limits,
                          InferenceContext& ctx) {
  Vm vm(program, limits, ctx);
  Vm::Results results;
  if (!vm.Run(&results)) return vm.Status();
  return vm.WriteTypes(results, ctx);
}

absl::StatusOr<std::optional<int64_t>> EvaluateCost(const Program& program,
                                                    const RuleLimits& limits,
                                                    const InferenceContext& ctx) {
  Vm vm(program, limits, ctx);
  Vm::Results results;
  if (!vm.Run(&results)) return vm.Status();
  return vm.Cost(results);
}

}  // namespace rules
}  // namespace graphopt
