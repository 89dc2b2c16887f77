#ifndef GRAPHOPT_PASSES_EFFECTS_H_
#define GRAPHOPT_PASSES_EFFECTS_H_

#include <vector>

#include "graph/graph.h"
#include "graph/op_registry.h"

namespace graphopt {

// Values that some live node writes (an input listed in its op's mutated_inputs), indexed by
// ValueId::value() over graph.num_value_slots(). A pass that moves reads or writes between
// values (CSE merging two readers, eliminate_identity forwarding a copy) must leave nodes that
// touch such values alone: the graph's edges do not say when the write happens. Linear.
std::vector<char> MutatedValues(const Graph& graph, const OpRegistry& ops);

// Values of `graph` that the subgraphs of some live node read by name (If, Loop and Scan bodies
// capturing them), indexed like MutatedValues. Such reads are not edges of the graph either: a
// pass that forwards, merges or renames values must leave the nodes producing them alone. Linear
// in nodes and subgraph sizes.
std::vector<char> CapturedValues(const Graph& graph);

// MutatedValues and CapturedValues together: the values some access to which the graph's edges
// do not show.
std::vector<char> ValuesWithHiddenAccess(const Graph& graph, const OpRegistry& ops);

// True when the op carries a non-zero kNondeterministicExtension.
bool IsNondeterministic(const OpDef& op);

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_EFFECTS_H_
