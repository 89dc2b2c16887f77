#ifndef GRAPHOPT_PASSES_REMATERIALIZE_PASS_H_
#define GRAPHOPT_PASSES_REMATERIALIZE_PASS_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "graph/graph.h"
#include "passes/pass.h"

namespace graphopt {

// Nodes one rematerialize run may add unless the request says otherwise (option
// max_new_nodes); the server's ceiling is in DefaultOptionCeilings.
inline constexpr int64_t kDefaultMaxRematNodes = 1000000;

// Suffix of the names of the nodes (and values) the pass clones: "<forward node>/remat".
inline constexpr char kRematSuffix[] = "/remat";

// Whether a node belongs to the backward part of a training graph by its name alone: the
// gradient pass names its nodes "<forward node>/grad/<what>" (or "grad/<what>" for seeds), and
// this pass names its clones "<forward node>/remat". The pass also counts as backward every node
// that reads a value a backward node produced.
bool IsBackwardNodeName(absl::string_view name);

// Registry entry of the rematerialize pass (see its description in the .cc file).
PassInfo RematerializePassInfo();

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_REMATERIALIZE_PASS_H_
