#ifndef GRAPHOPT_PASSES_SIMPLIFY_PASS_H_
#define GRAPHOPT_PASSES_SIMPLIFY_PASS_H_

#include "passes/pass.h"

namespace graphopt {

// Registry entry of the simplify pass (see its description in the .cc file).
PassInfo SimplifyPassInfo();

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_SIMPLIFY_PASS_H_
