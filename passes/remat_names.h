#ifndef GRAPHOPT_PASSES_REMAT_NAMES_H_
#define GRAPHOPT_PASSES_REMAT_NAMES_H_

// How the parts of a training graph are told apart by node names: the gradient pass names its
// nodes "<forward node>/grad/<what>" ("grad/<what>" for seeds), the rematerialize pass its
// clones "<forward node>/remat". The schedule pass reads both (training graphs are ordered for
// their memory plan, clones run late).

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"

namespace graphopt {

// Suffix of the names of the nodes (and values) the rematerialize pass clones:
// "<forward node>/remat".
inline constexpr char kRematSuffix[] = "/remat";

// Whether a node recomputes a forward value for the backward part, by its name.
inline bool IsRecomputedNodeName(absl::string_view name) {
  return absl::EndsWith(name, kRematSuffix);
}

// Whether a node belongs to the backward part of a training graph by its name alone (a
// gradient pass node or a clone). The rematerialize pass also counts as backward every node
// that reads a value a backward node produced.
inline bool IsBackwardNodeName(absl::string_view name) {
  return absl::StartsWith(name, "grad/") || absl::StrContains(name, "/grad/") ||
         IsRecomputedNodeName(name);
}

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_REMAT_NAMES_H_
