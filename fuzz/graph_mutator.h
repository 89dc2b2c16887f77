#ifndef GRAPHOPT_FUZZ_GRAPH_MUTATOR_H_
#define GRAPHOPT_FUZZ_GRAPH_MUTATOR_H_

#include <cstdint>
#include <random>

#include "graph/op_registry.h"
#include "proto/graph.pb.h"

namespace graphopt {
namespace fuzz {

// One structural change to `graph`, chosen by `rng`, of the kinds that byte mutations of a
// serialized proto almost never make while keeping it parseable: a node's op replaced by
// another of `ops` (with that op's required attributes added), an attribute set to an edge
// value (0, -1, huge, a short or long list), a node input rewired to another value, a node
// duplicated or removed, a dim of a graph input or initializer changed (0, 1, huge, symbolic,
// unknown), a rank added or removed, an initializer's dtype changed. Deterministic for a given
// rng state.
void MutateGraph(const OpRegistry& ops, std::minstd_rand& rng, v1::Graph* graph);

}  // namespace fuzz
}  // namespace graphopt

#endif  // GRAPHOPT_FUZZ_GRAPH_MUTATOR_H_
