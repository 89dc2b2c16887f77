#include "passes/infer_shape_pass.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "graph/inference.h"
#include "graph/verifier.h"

namespace graphopt {
namespace {


// Infers the shape of every node output with the ops' shape rules, in topological order.
// Symbolic dims propagate; what cannot be known stays unknown.
class InferShapePass : public Pass {
 public:
  absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) override {
    absl::StatusOr<std::vector<NodeId>> order = graph.TopologicalOrder();
    if (!order.ok()) return order.status();
    DimsValueTable dims_values = InitialDimsValues(graph);
    ShapeCounts counts;
    const KindOps ops(graph, *context.ops);
    int64_t visited = 0;
    for (NodeId id : *order) {
      if (absl::Status s = context.CheckStopEvery(visited++); !s.ok()) return s;
      absl::StatusOr<const OpDef*> op = NodeOp(graph, id, ops);
      if (!op.ok()) return op.status();
      if (absl::Status s = InferNodeShapes(graph, id, **op, &dims_values); !s.ok()) return s;
      // Counted while the node's outputs are at hand, not in a second sweep over every value.
      for (ValueId out : graph.node(id).outputs) {
        if (out.valid()) counts.Add(graph.value(out).type.shape);
      }
    }
    context.Note(absl::StrCat("shapes of node outputs: ", counts.known, " static, ",
                              counts.symbolic, " symbolic, ", counts.partial,
                              " partially known, ", counts.unknown_rank, " of unknown rank"));
    return false;
  }

 private:
  struct ShapeCounts {
    int64_t known = 0, symbolic = 0, partial = 0, unknown_rank = 0;

    void Add(const std::optional<Dims>& shape) {
      if (!shape) {
        ++unknown_rank;
        return;
      }
      bool any_unknown = false, any_symbol = false;
      for (const Dim& d : *shape) {
        any_unknown |= d.is_unknown();
        any_symbol |= d.is_symbol();
      }
      if (any_unknown) {
        ++partial;
      } else if (any_symbol) {
        ++symbolic;
      } else {
        ++known;
      }
    }
  };
};

}  // namespace

PassInfo InferShapePassInfo() {
  PassInfo info;
  info.name = "infer_shape";
  info.description =
      "Infers the shape of every value with the ops' shape rules; symbolic dims propagate, "
      "unknowable dims stay unknown.";
  info.requires_analyses = {Analysis::kTypes};
  info.provides = {Analysis::kShapes};
  info.preserves = AnalysisSet::All();
  info.min_opt_level = 1;
  info.factory = OptionlessFactory<InferShapePass>();
  return info;
}

}  // namespace graphopt
