#include "passes/eliminate_identity_pass.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "graph/inference.h"
#include "passes/rewrite_util.h"

namespace graphopt {
namespace {

// True when a Dropout node is the identity: no training_mode input, or a constant false one,
// and its mask output is unused.
bool IsInferenceDropout(const Graph& graph, const Node& n) {
  if (n.inputs.size() > 2 && n.inputs[2].valid()) {
    const v1::Tensor* mode = ConstantTensorOf(graph, n.inputs[2]);
    if (mode == nullptr || mode->dtype() != v1::DT_BOOL || mode->raw_data().size() != 1 ||
        mode->raw_data()[0] != 0) {
      return false;
    }
  }
  if (n.outputs.size() > 1 && n.outputs[1].valid()) {
    const Value& mask = graph.value(n.outputs[1]);
    if (!mask.uses.empty() || mask.graph_output_count > 0) return false;
  }
  return true;
}

// Removes Identity nodes, and Dropout nodes that are the identity at inference, by letting their
// consumers read the input directly. When the output is a graph output its name is kept: the
// input value takes it over, unless the input is itself part of the graph's interface (a graph
// input, output or initializer), in which case the node stays. A node whose input or output some
// node mutates also stays: it is a copy, and the write must reach only one side; and so does one
// whose output a subgraph reads by name (a capture is not an edge).
class EliminateIdentityPass : public Pass {
 public:
  absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) override {
    int64_t identities = 0;
    int64_t dropouts = 0;
    int64_t kept = 0;
    int64_t kept_mutated = 0;
    const HiddenAccess hidden(graph, *context.ops);
    // Only Identity and Dropout nodes qualify, and no node is added below: visit those, in id
    // order, found through the graph's dense op kinds.
    const OpKindId identity_kind = graph.FindOpKind("", "Identity");
    const std::vector<NodeId> candidates =
        graph.LiveNodesOfKinds({identity_kind, graph.FindOpKind("", "Dropout")});
    for (size_t k = 0; k < candidates.size(); ++k) {
      if (absl::Status s = context.CheckStopEvery(k); !s.ok()) return s;
      // Candidates are scattered through the graph: on a large one each first touch would be
      // a cache miss (measured at 10^5 nodes: 4.4 -> 3.3 ms). Loads the node six ahead, the
      // output value of the one three ahead (whose node has arrived by then), and the readers
      // of the next one's output (whose value has), which the rewiring writes.
      if (k + 6 < candidates.size()) graph.PrefetchNode(candidates[k + 6]);
      if (k + 3 < candidates.size()) {
        const Node& ahead = graph.node(candidates[k + 3]);
        if (!ahead.outputs.empty() && ahead.outputs[0].valid()) {
          graph.PrefetchValue(ahead.outputs[0]);
        }
      }
      if (k + 1 < candidates.size()) {
        const Node& next = graph.node(candidates[k + 1]);
        if (!next.outputs.empty() && next.outputs[0].valid()) {
          for (const Use& u : graph.value(next.outputs[0]).uses) graph.PrefetchNode(u.node);
        }
      }
      const NodeId id = candidates[k];
      const Node& n = graph.node(id);
      if (!n.alive) continue;  // removed earlier in this loop
      const bool is_identity = graph.op_kind(id) == identity_kind;
      const bool is_dropout = !is_identity && IsInferenceDropout(graph, n);
      if (!is_identity && !is_dropout) continue;
      if (n.inputs.empty() || !n.inputs[0].valid() || n.outputs.empty() || !n.outputs[0].valid()) {
        continue;
      }
      const ValueId in = n.inputs[0];
      const ValueId out = n.outputs[0];
      // The node is a copy: a write to either side must not reach the other's readers.
      if (hidden.any(in) || hidden.any(out)) {
        ++kept_mutated;
        continue;
      }
      // A graph output whose input is part of the interface too keeps its copy.
      if (!ReplaceNodeByValue(graph, id, in, hidden)) {
        ++kept;
        continue;
      }
      (is_identity ? identities : dropouts)++;
    }
    context.Note(absl::StrCat(
        "removed ", identities, " Identity and ", dropouts, " Dropout nodes",
        kept > 0 ? absl::StrCat("; kept ", kept, " that connect graph inputs/outputs") : "",
        kept_mutated > 0
            ? absl::StrCat("; kept ", kept_mutated,
                           " whose input or output a node mutates or a subgraph reads")
            : ""));
    return identities + dropouts > 0;
  }
};

}  // namespace

PassInfo EliminateIdentityPassInfo() {
  PassInfo info;
  info.name = "eliminate_identity";
  info.description =
      "Removes Identity nodes and inference-mode Dropout nodes, keeping graph output names "
      "(not those copying a value some node mutates).";
  info.preserves = AnalysisSet::All();
  info.min_opt_level = 1;
  info.factory = OptionlessFactory<EliminateIdentityPass>();
  return info;
}

}  // namespace graphopt
