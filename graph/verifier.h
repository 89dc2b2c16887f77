#ifndef GRAPHOPT_GRAPH_VERIFIER_H_
#define GRAPHOPT_GRAPH_VERIFIER_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "graph/kind_ops.h"
#include "graph/op_registry.h"

namespace graphopt {

// Checks the structural invariants of `graph` against `registry`. Returns OK or
// INVALID_ARGUMENT naming the first offending node (in node-id order):
//  - an op unknown to the registry;
//  - input/output counts outside the descriptor's arity, a missing required input;
//  - an input that no node, graph input or initializer defines;
//  - a missing required attribute, an attribute the descriptor does not declare, or one whose
//    value is of the wrong kind;
//  - a cycle;
//  - a graph output that is not defined.
// Linear in the size of the graph (plus the topological sort), no recursion.
absl::Status VerifyGraph(const Graph& graph, const OpRegistry& registry);
// The graph's state updates: each state an initializer that is a graph input, listed once;
// each update a graph output of the state's dtype. Part of VerifyGraph.
absl::Status VerifyStateUpdates(const Graph& graph);

// The per-node part of VerifyGraph: the op is known, the input/output counts, required
// inputs/outputs and attributes match its descriptor, and every input is defined.
absl::Status VerifyNode(const Graph& graph, NodeId node, const OpRegistry& registry);
// The same with the ops of the graph's kinds looked up once (for a sweep over many nodes).
absl::Status VerifyNode(const Graph& graph, NodeId node, const KindOps& ops);

// The op of `node`, or INVALID_ARGUMENT "node 'x' (Op): unknown op 'Op'".
absl::StatusOr<const OpDef*> NodeOp(const Graph& graph, NodeId node, const OpRegistry& registry);
absl::StatusOr<const OpDef*> NodeOp(const Graph& graph, NodeId node, const KindOps& ops);

}  // namespace graphopt

#endif  // GRAPHOPT_GRAPH_VERIFIER_H_
