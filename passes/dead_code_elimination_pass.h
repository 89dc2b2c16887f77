#ifndef GRAPHOPT_PASSES_DEAD_CODE_ELIMINATION_PASS_H_
#define GRAPHOPT_PASSES_DEAD_CODE_ELIMINATION_PASS_H_

#include "passes/pass.h"

namespace graphopt {

// Registry entry of the dead_code_elimination pass (see its description in the .cc file).
PassInfo DeadCodeEliminationPassInfo();

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_DEAD_CODE_ELIMINATION_PASS_H_
