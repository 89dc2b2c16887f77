#ifndef GRAPHOPT_PASSES_COMMON_SUBEXPRESSION_ELIMINATION_PASS_H_
#define GRAPHOPT_PASSES_COMMON_SUBEXPRESSION_ELIMINATION_PASS_H_

#include "passes/pass.h"

namespace graphopt {

// Registry entry of the common_subexpression_elimination pass (see its description in the .cc file).
PassInfo CommonSubexpressionEliminationPassInfo();

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_COMMON_SUBEXPRESSION_ELIMINATION_PASS_H_
