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
    for (NodeId id : *order) {
      absl::StatusOr<const OpDef*> op = NodeOp(graph, id, *context.ops);
      if (!op.ok()) return op.status();
      if (absl::Status s = InferNodeShapes(graph, id, **op, &dims_values); !s.ok()) return s;
    }
    Summarize(graph, context);
    return false;
  }

 private:
  static void Summarize(const Graph& graph, const PassContext& context) {
    int64_t known = 0, symbolic = 0, partial = 0, unknown_rank = 0;
    for (int i = 0; i < graph.num_node_slots(); ++i) {
      const Node& n = graph.node(NodeId(i));
      if (!n.alive) continue;
      for (ValueId out : n.outputs) {
        if (!out.valid()) continue;
        const std::optional<Dims>& shape = graph.value(out).type.shape;
        if (!shape) {
          ++unknown_rank;
          continue;
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
    }
    context.Note(absl::StrCat("shapes of node outputs: ", known, " static, ", symbolic,
                              " symbolic, ", partial, " partially known, ", unknown_rank,
                              " of unknown rank"));
  }
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
