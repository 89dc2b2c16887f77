#include "passes/effects.h"

#include <string>

#include "graph/liveness.h"

namespace graphopt {
namespace {

// The values some live node writes; empty when there are none.
std::vector<char> MutatedValues(const Graph& graph, const OpRegistry& ops) {
  std::vector<char> mutated;
  // Most registries (the builtins alone) have no op that writes an input: nothing to look up.
  if (!ops.HasMutatingOps()) return mutated;
  for (int i = 0; i < graph.num_node_slots(); ++i) {
    const Node& n = graph.node(NodeId(i));
    if (!n.alive) continue;
    const OpDef* op = ops.Find(n.domain, n.op_type);
    if (op == nullptr) continue;
    for (int idx : op->descriptor.mutated_inputs()) {
      if (idx >= 0 && idx < static_cast<int>(n.inputs.size()) && n.inputs[idx].valid()) {
        if (mutated.empty()) mutated.assign(graph.num_value_slots(), 0);
        mutated[n.inputs[idx].value()] = 1;
      }
    }
  }
  return mutated;
}

// The values subgraphs read by name; empty when there are none.
std::vector<char> CapturedValues(const Graph& graph) {
  std::vector<char> captured;
  // Only graph attributes capture; most graphs have none.
  if (graph.num_subgraph_nodes() == 0) return captured;
  for (int i = 0; i < graph.num_node_slots(); ++i) {
    const Node& n = graph.node(NodeId(i));
    if (!n.alive || !n.has_subgraphs) continue;
    for (ValueId v : graph.CapturedInputs(NodeId(i))) {
      if (captured.empty()) captured.assign(graph.num_value_slots(), 0);
      captured[v.value()] = 1;
    }
  }
  return captured;
}

}  // namespace

HiddenAccess::HiddenAccess(const Graph& graph, const OpRegistry& ops)
    : mutated_(MutatedValues(graph, ops)), captured_(CapturedValues(graph)) {}

bool HiddenAccess::Touches(const Node& node) const {
  if (!has_any()) return false;
  for (ValueId v : node.inputs) {
    if (any(v)) return true;
  }
  for (ValueId v : node.outputs) {
    if (any(v)) return true;
  }
  return false;
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
