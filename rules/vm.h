#ifndef GRAPHOPT_RULES_VM_H_
#define GRAPHOPT_RULES_VM_H_

// The rule engine: runs a prepared program's bytecode (bytecode.h) against one node. Internal
// to //rules; the public entry is evaluator.h.

#include <cstdint>

#include "absl/base/attributes.h"
#include "graph/inference.h"
#include "rules/bytecode.h"
#include "rules/machine.h"
#include "rules/program.h"

namespace graphopt {
namespace rules {

class Vm : public Machine {
 public:
  // `p` must have been through PrepareProgram.
  Vm(const Program& p, const RuleLimits& limits, const InferenceContext& ctx)
      : Machine(p, limits, ctx, p.bytecode.get()), bc_(*p.bytecode) {}

  // Runs the statements; false (with Status() set) when the rule fails.
  bool Run(Results* results);

 private:
  // The instructions with more than a line of work, by group (Run's dispatch loop inlines
  // them). Each returns the next instruction, or null when the rule failed (with the error
  // set). Those that take `steps` charge steps themselves: `steps` is the count Run keeps in a
  // register, synchronised with steps_ around the charging calls.
  // Comprehensions.
  ABSL_ATTRIBUTE_ALWAYS_INLINE const VInsn* CompBegin(const VInsn* x, Val* r);
  ABSL_ATTRIBUTE_ALWAYS_INLINE const VInsn* CompNext(const VInsn* x, Val* r);
  ABSL_ATTRIBUTE_ALWAYS_INLINE const VInsn* CompRangeBegin(const VInsn* x, Val* r,
                                                           int64_t& steps);
  ABSL_ATTRIBUTE_ALWAYS_INLINE const VInsn* CompRangeNext(const VInsn* x, Val* r);
  ABSL_ATTRIBUTE_ALWAYS_INLINE const VInsn* CompFilter(const VInsn* x, Val* r);
  // Values read from the node.
  ABSL_ATTRIBUTE_ALWAYS_INLINE const VInsn* AttrOp(const VInsn* x, Val* r, int64_t& steps);
  ABSL_ATTRIBUTE_ALWAYS_INLINE const VInsn* InputBuiltinOp(const VInsn* x, Val* r,
                                                         int64_t& steps);
  ABSL_ATTRIBUTE_ALWAYS_INLINE const VInsn* VariadicIndexOp(const VInsn* x, Val* r);
  // Lists and membership.
  ABSL_ATTRIBUTE_ALWAYS_INLINE const VInsn* ListBegin(const VInsn* x, Val* r, int64_t& steps);
  ABSL_ATTRIBUTE_ALWAYS_INLINE const VInsn* InTest(const VInsn* x, Val* r);
  // Builtins of argument values.
  ABSL_ATTRIBUTE_ALWAYS_INLINE const VInsn* ApplyOp(const VInsn* x, const Val* args, int count,
                                                  Val* r, int64_t& steps);
  ABSL_ATTRIBUTE_NOINLINE void CodeBudgetExceeded(const VInsn& x);

  const Bytecode& bc_;
};

}  // namespace rules
}  // namespace graphopt

#endif  // GRAPHOPT_RULES_VM_H_
