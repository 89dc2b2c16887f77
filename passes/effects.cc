#include "passes/effects.h"

namespace graphopt {

std::vector<char> MutatedValues(const Graph& graph, const OpRegistry& ops) {
  std::vector<char> mutated(graph.num_value_slots(), 0);
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

bool IsNondeterministic(const OpDef& op) {
  const auto& extensions = op.descriptor.extensions();
  auto it = extensions.find(kNondeterministicExtension);
  return it != extensions.end() && it->second.i() != 0;
}

}  // namespace graphopt
