#ifndef GRAPHOPT_PASSES_REMATERIALIZE_PASS_H_
#define GRAPHOPT_PASSES_REMATERIALIZE_PASS_H_

#include <cstdint>

#include "graph/graph.h"
#include "passes/pass.h"
#include "passes/remat_names.h"

namespace graphopt {

// Nodes one rematerialize run may add unless the request says otherwise (option
// max_new_nodes); the server's ceiling is in DefaultOptionCeilings.
inline constexpr int64_t kDefaultMaxRematNodes = 1000000;

// Registry entry of the rematerialize pass (see its description in the .cc file).
PassInfo RematerializePassInfo();

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_REMATERIALIZE_PASS_H_
