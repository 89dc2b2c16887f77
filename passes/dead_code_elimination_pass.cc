#include "passes/dead_code_elimination_pass.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/kind_ops.h"
#include "graph/liveness.h"
#include "graph/prefetch.h"

namespace graphopt {
namespace {

// True when the node must stay even if nothing reads its outputs.
bool MustKeep(NodeId id, const KindOps& ops) {
  const OpDef* op = ops.Find(id);
  // Unknown ops are kept: the pass cannot know what they do.
  return op == nullptr || HasEffects(*op);
}

// Removes nodes whose outputs no graph output depends on (unless they have side effects or
// mutate inputs: a write to an input is an effect on a value others may read, so such a node and
// what it reads stay), then initializers nothing reads. Graph inputs are the interface and stay.
// Nondeterministic ops without effects are removed like any other when dead: their outputs are
// all they do (CSE is what must not merge them). A value the subgraphs of a live node read by
// name (an If, Loop or Scan body capturing it) is read like an input.
class DeadCodeEliminationPass : public Pass {
 public:
  absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) override {
    absl::StatusOr<std::vector<NodeId>> order = graph.TopologicalOrder();
    if (!order.ok()) return order.status();
    // Decides in reverse topological order, so that every reader of a node's outputs (inputs
    // and the values subgraphs read by name alike: the order puts their producers first) is
    // decided before the node. A node stays when it must (effects, written inputs, unknown op)
    // or when one of its outputs is needed: a graph output, or read by a node that stays. One
    // sweep over the order and a byte per value: linear, and no walk jumping around memory.
    const KindOps ops(graph, *context.ops);
    std::vector<char> live(graph.num_node_slots(), 0);
    std::vector<char> needed(graph.num_value_slots(), 0);
    std::vector<char> captured(graph.num_value_slots(), 0);
    for (ValueId out : graph.outputs()) {
      if (out.valid()) needed[out.value()] = 1;
    }
    int64_t visited = 0;
    for (auto it = order->rbegin(); it != order->rend(); ++it) {
      if (absl::Status s = context.CheckStopEvery(visited++); !s.ok()) return s;
      const Node& n = graph.node(*it);
      bool keep = false;
      for (ValueId out : n.outputs) {
        if (out.valid() && needed[out.value()]) {
          keep = true;
          break;
        }
      }
      if (!keep && !MustKeep(*it, ops)) continue;
      live[it->value()] = 1;
      for (ValueId in : n.inputs) {
        if (in.valid()) needed[in.value()] = 1;
      }
      if (!n.has_subgraphs) continue;
      for (ValueId v : graph.CapturedInputs(*it)) {
        captured[v.value()] = 1;
        needed[v.value()] = 1;
      }
    }
    int64_t removed_nodes = 0;
    // Consumers before producers, so every removed node's outputs are unused by then.
    std::vector<NodeId> dead;
    for (auto it = order->rbegin(); it != order->rend(); ++it) {
      if (!live[it->value()]) dead.push_back(*it);
    }
    for (size_t k = 0; k < dead.size(); ++k) {
      // Dead nodes are scattered: load the slots RemoveNode unlinks a few removals ahead.
      PrefetchScattered(graph, dead, k);
      graph.RemoveNode(dead[k]);
      ++removed_nodes;
    }
    int64_t removed_initializers = 0;
    // The initializers, not every value slot.
    for (ValueId id : graph.InitializerValues()) {
      const Value& v = graph.value(id);
      if (v.alive && v.uses.empty() && !v.is_graph_input && v.graph_output_count == 0 &&
          !captured[id.value()]) {
        graph.RemoveInitializer(id);
        ++removed_initializers;
      }
    }
    context.Note(absl::StrCat("removed ", removed_nodes, " nodes and ", removed_initializers,
                              " initializers"));
    return removed_nodes > 0 || removed_initializers > 0;
  }
};

}  // namespace

PassInfo DeadCodeEliminationPassInfo() {
  PassInfo info;
  info.name = "dead_code_elimination";
  info.description =
      "Removes nodes no graph output depends on (keeping ops with side effects or mutated "
      "inputs) and unused initializers.";
  info.preserves = AnalysisSet::All();
  info.min_opt_level = 1;
  info.repeat_to_fixpoint = true;
  info.factory = OptionlessFactory<DeadCodeEliminationPass>();
  return info;
}

}  // namespace graphopt
