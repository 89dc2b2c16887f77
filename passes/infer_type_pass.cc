#include "passes/infer_type_pass.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "graph/inference.h"
#include "graph/prefetch.h"
#include "graph/verifier.h"

namespace graphopt {
namespace {

// Sets the element type of every node output from the op descriptors' type constraints, in
// topological order. Inputs whose type is unknown leave dependent outputs unknown.
class InferTypePass : public Pass {
 public:
  absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) override {
    absl::StatusOr<std::vector<NodeId>> order = graph.TopologicalOrder();
    if (!order.ok()) return order.status();
    int64_t unknown = 0;
    int64_t outputs = 0;
    const KindOps ops(graph, *context.ops);
    for (size_t k = 0; k < order->size(); ++k) {
      if (absl::Status s = context.CheckStopEvery(k); !s.ok()) return s;
      PrefetchSweep(graph, *order, k);
      const NodeId id = (*order)[k];
      absl::StatusOr<const OpDef*> op = NodeOp(graph, id, ops);
      if (!op.ok()) return op.status();
      if (absl::Status s = InferNodeTypes(graph, id, **op); !s.ok()) return s;
      for (ValueId out : graph.node(id).outputs) {
        if (!out.valid()) continue;
        ++outputs;
        if (graph.value(out).type.dtype == v1::DT_UNDEFINED) ++unknown;
      }
    }
    context.Note(absl::StrCat("typed ", outputs - unknown, " of ", outputs, " node outputs"));
    // Annotations only: the graph's structure is unchanged.
    return false;
  }
};

}  // namespace

PassInfo InferTypePassInfo() {
  PassInfo info;
  info.name = "infer_type";
  info.description =
      "Infers the element type of every value from the ops' type constraints; rejects inputs a "
      "constraint does not allow.";
  info.provides = {Analysis::kTypes};
  info.preserves = AnalysisSet::All();
  info.min_opt_level = 1;
  info.factory = OptionlessFactory<InferTypePass>();
  return info;
}

}  // namespace graphopt
