#include "passes/fuse_matmul_add_pass.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "passes/rewrite_driver.h"
#include "passes/rewrite_util.h"

namespace graphopt {
namespace {

// The index (0 or 1) of the Add input that a MatMul computes; -1 when neither does.
int MatMulOperand(const Graph& graph, const Node& add) {
  if (add.inputs.size() != 2) return -1;
  for (int i : {0, 1}) {
    if (ProducerOf(graph, add.inputs[i], "MatMul").valid()) return i;
  }
  return -1;
}

// True when `bias` broadcasts to `mn` ([M, N]) without growing it: Gemm's C, which broadcasts
// one way only.
bool BroadcastsInto(const Dims& bias, const Dims& mn) {
  if (bias.size() > 2) return false;
  const size_t offset = 2 - bias.size();
  for (size_t i = 0; i < bias.size(); ++i) {
    const Dim& b = bias[i];
    if (b.is_known() && b.size() == 1) continue;
    if (!Dim::SameSize(b, mn[offset + i])) return false;
  }
  return true;
}

// Add(MatMul(A, B), C) = Gemm(A, B, C) (alpha = beta = 1, no transposes) for matrices A and B
// and a C that broadcasts to the product's [M, N]; the Add's operands in either order.
absl::StatusOr<RewriteResult> MatMulAddToGemm(RewriteContext& c, NodeId id) {
  Graph& graph = c.graph;
  const Node& add = graph.node(id);
  const int k = MatMulOperand(graph, add);
  if (k < 0 || add.outputs.size() != 1 || !add.outputs[0].valid()) {
    return RewriteResult::NoMatch();
  }
  const ValueId product = add.inputs[k], bias = add.inputs[1 - k], y = add.outputs[0];
  const NodeId mm = graph.value(product).producer;
  const Node& matmul = graph.node(mm);
  if (matmul.inputs.size() != 2 || !matmul.inputs[0].valid() || !matmul.inputs[1].valid() ||
      !bias.valid()) {
    return RewriteResult::NoMatch();
  }
  const ValueId a = matmul.inputs[0], b = matmul.inputs[1];
  const Value& p = graph.value(product);
  // The product must be read by the Add alone, and every operand the Gemm will read must be
  // free of hidden accesses (the read moves from the MatMul to the Add's place).
  if (p.uses.size() != 1 || p.graph_output_count > 0 || c.hidden.any(product) ||
      c.hidden.any(a) || c.hidden.any(b)) {
    return RewriteResult::NoMatch();
  }
  const TensorType& at = graph.value(a).type;
  const TensorType& bt = graph.value(b).type;
  const TensorType& ct = graph.value(bias).type;
  const TensorType& pt = p.type;
  const TensorType& yt = graph.value(y).type;
  // Gemm is for matrices; float32 and float64 are the types the runtime's Gemm shares with
  // MatMul's fast paths.
  if ((at.dtype != v1::DT_FLOAT32 && at.dtype != v1::DT_FLOAT64) || bt.dtype != at.dtype ||
      ct.dtype != at.dtype || yt.dtype != at.dtype || !at.shape || at.shape->size() != 2 ||
      !bt.shape || bt.shape->size() != 2 || !pt.shape || pt.shape->size() != 2 || !ct.shape ||
      !yt.shape || yt.shape->size() != 2) {
    return RewriteResult::NoMatch();
  }
  // The Add must not broadcast the product to a larger shape.
  if (!BroadcastsInto(*ct.shape, *pt.shape) || !Dim::SameSize((*yt.shape)[0], (*pt.shape)[0]) ||
      !Dim::SameSize((*yt.shape)[1], (*pt.shape)[1])) {
    return RewriteResult::NoMatch();
  }
  std::string name = matmul.name.empty() ? std::string(add.name) : std::string(matmul.name);
  graph.DetachOutput(id, 0);
  graph.RemoveNode(id);
  graph.RemoveNode(mm);
  absl::StatusOr<NodeId> gemm = graph.AddNode(std::move(name), "Gemm", "", {a, b, bias}, {y});
  if (!gemm.ok()) return gemm.status();
  return RewriteResult::Applied();
}

class FuseMatMulAddPass : public Pass {
 public:
  absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) override {
    RewriteDriverOptions options;
    options.order = RewriteDriverOptions::Order::kNodeId;
    return RunPatterns(graph, context, patterns_, "fused", options);
  }

 private:
  const std::vector<RewritePattern> patterns_ = {
      {"matmul_add_to_gemm",
       {"Add"},
       [](const RewriteContext& c, NodeId id) {
         return MatMulOperand(c.graph, c.graph.node(id)) >= 0;
       },
       MatMulAddToGemm},
  };
};

}  // namespace

PassInfo FuseMatMulAddPassInfo() {
  PassInfo info;
  info.name = "fuse_matmul_add";
  info.description =
      "Add(MatMul(A, B), C) becomes Gemm(A, B, C) when A and B are matrices (float32/float64), "
      "the product is read by the Add alone and C broadcasts to [M, N] ([N], [1, N], [M, 1], "
      "[M, N] or a scalar); a MatMul of higher rank stays (Gemm is 2-D only), for fuse_ops to "
      "give its bias to the matrix product at -O3.";
  info.requires_analyses = {Analysis::kTypes, Analysis::kShapes};
  // The Gemm's output is the Add's value, with its type.
  info.preserves = AnalysisSet::All();
  info.min_opt_level = 2;
  info.repeat_to_fixpoint = true;
  info.factory = OptionlessFactory<FuseMatMulAddPass>();
  return info;
}

}  // namespace graphopt
