#ifndef GRAPHOPT_PASSES_ELIMINATE_IDENTITY_PASS_H_
#define GRAPHOPT_PASSES_ELIMINATE_IDENTITY_PASS_H_

#include "passes/pass.h"

namespace graphopt {

// Registry entry of the eliminate_identity pass (see its description in the .cc file).
PassInfo EliminateIdentityPassInfo();

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_ELIMINATE_IDENTITY_PASS_H_
