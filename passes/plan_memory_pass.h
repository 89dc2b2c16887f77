#ifndef GRAPHOPT_PASSES_PLAN_MEMORY_PASS_H_
#define GRAPHOPT_PASSES_PLAN_MEMORY_PASS_H_

#include "passes/pass.h"

namespace graphopt {

// Registry entry of the plan_memory pass (see its description in the .cc file).
PassInfo PlanMemoryPassInfo();

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_PLAN_MEMORY_PASS_H_
