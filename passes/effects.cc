#include "passes/effects.h"

#include <string>

#include "graph/liveness.h"

namespace graphopt {

std::vector<char> MutatedValues(const Graph& graph, const OpRegistry& ops) {
  std::vector<char> mutated(graph.num_value_slots(), 0);
  // Most registries (the builtins alone) have no op that writes an input: nothing to look up.
  if (!ops.HasMutatingOps()) return mutated;
  for (int i = 0; i < graph.num_node_slots(); ++i) {
    const Node& n = graph.node(NodeId(i));
    if (!n.alive) continue;
    const OpDef* op = ops.Find(n.domain, n.op_type);
    if (op == nullptr) continue;
    for (int idx : op->descriptor.mutated_inputs()) {
      if (idx >= 0 && idx < static_cast<int>(n.inputs.size()) && n.inputs[idx].valid()) {
        mutated[n.inputs[idx].value()] = 1;
      }
    }
  }
  return mutated;
}

std::vector<char> CapturedValues(const Graph& graph) {
  std::vector<char> captured(graph.num_value_slots(), 0);
  // Only graph attributes capture; most graphs have none.
  if (graph.num_subgraph_nodes() == 0) return captured;
  for (int i = 0; i < graph.num_node_slots(); ++i) {
    const Node& n = graph.node(NodeId(i));
    if (!n.alive || !n.has_subgraphs) continue;
    for (ValueId v : graph.CapturedInputs(NodeId(i))) captured[v.value()] = 1;
  }
  return captured;
}

std::vector<char> ValuesWithHiddenAccess(const Graph& graph, const OpRegistry& ops) {
  std::vector<char> hidden = MutatedValues(graph, ops);
  const std::vector<char> captured = CapturedValues(graph);
  for (size_t i = 0; i < hidden.size(); ++i) hidden[i] |= captured[i];
  return hidden;
}

bool IsNondeterministic(const OpDef& op) {
  const auto& extensions = op.descriptor.extensions();
  if (extensions.empty()) return false;
  // The key outgrows std::string's inline buffer: build it once, not per call.
  static const std::string* const kKey = new std::string(kNondeterministicExtension);
  auto it = extensions.find(*kKey);
  return it != extensions.end() && it->second.i() != 0;
}

}  // namespace graphopt
