#include "passes/eliminate_identity_pass.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/inference.h"
#include "passes/rewrite_driver.h"
#include "passes/rewrite_util.h"

namespace graphopt {
namespace {

// True when `value` is a constant ratio of 0: a float scalar (or one element) equal to zero.
bool IsZeroRatio(const Graph& graph, ValueId value) {
  const v1::Tensor* ratio = ConstantTensorOf(graph, value);
  if (ratio == nullptr || ratio->dims_size() > 1) return false;
  const std::string& raw = ratio->raw_data();
  switch (ratio->dtype()) {
    case v1::DT_FLOAT32: {
      if (raw.size() != sizeof(float)) return false;
      float r;
      std::memcpy(&r, raw.data(), sizeof(r));
      return r == 0.0f;
    }
    case v1::DT_FLOAT64: {
      if (raw.size() != sizeof(double)) return false;
      double r;
      std::memcpy(&r, raw.data(), sizeof(r));
      return r == 0.0;
    }
    default:
      return false;
  }
}

// True when a Dropout node is the identity: no training_mode input, a constant false one, or
// a ratio of 0 (training drops nothing then and scales by 1 / (1 - 0): exporters write that
// for F.dropout(x, p=0.0), whose training defaults to true), and its mask output is unused.
bool IsInferenceDropout(const Graph& graph, const Node& n) {
  if (n.inputs.size() > 2 && n.inputs[2].valid()) {
    const v1::Tensor* mode = ConstantTensorOf(graph, n.inputs[2]);
    const bool inference = mode != nullptr && mode->dtype() == v1::DT_BOOL &&
                           mode->raw_data().size() == 1 && mode->raw_data()[0] == 0;
    if (!inference && !(n.inputs[1].valid() && IsZeroRatio(graph, n.inputs[1]))) return false;
  }
  if (n.outputs.size() > 1 && n.outputs[1].valid()) {
    const Value& mask = graph.value(n.outputs[1]);
    if (!mask.uses.empty() || mask.graph_output_count > 0) return false;
  }
  return true;
}

// Identity(x) = x; Dropout(x) = x at inference. The readers of the copy read x instead. When
// the copy is a graph output, x takes over its name, unless x is part of the graph's interface
// itself (a graph input, output or initializer): then the node stays. The driver leaves a copy of
// a value some node mutates alone (the write must reach one side only), and one whose output a
// subgraph reads by name.
absl::StatusOr<RewriteResult> Forward(RewriteContext& c, NodeId id) {
  const Node& n = c.graph.node(id);
  if (n.inputs.empty() || !n.inputs[0].valid() || n.outputs.empty() || !n.outputs[0].valid()) {
    return RewriteResult::NoMatch();
  }
  if (!ReplaceNodeByValue(c.graph, id, n.inputs[0], c.hidden)) {
    return RewriteResult::Refused("connects graph inputs and outputs");
  }
  return RewriteResult::Applied();
}

std::vector<RewritePattern> Patterns() {
  return {
      // Identity(x) = x.
      {"identity", {"Identity"}, nullptr, Forward},
      // Dropout(x, ratio, training_mode = false) = x, its mask unused.
      {"inference_dropout",
       {"Dropout"},
       [](const RewriteContext& c, NodeId id) { return IsInferenceDropout(c.graph, c.graph.node(id)); },
       Forward},
  };
}

class EliminateIdentityPass : public Pass {
 public:
  absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) override {
    // No pattern depends on its input having been visited: node-id order, no sort.
    RewriteDriverOptions options;
    options.order = RewriteDriverOptions::Order::kNodeId;
    return RunPatterns(graph, context, patterns_, "removed", options);
  }

 private:
  const std::vector<RewritePattern> patterns_ = Patterns();
};

}  // namespace

PassInfo EliminateIdentityPassInfo() {
  PassInfo info;
  info.name = "eliminate_identity";
  info.description =
      "Removes Identity nodes and Dropout nodes that are the identity (inference mode, or a "
      "ratio of 0), keeping graph output names "
      "(not those copying a value some node mutates).";
  info.preserves = AnalysisSet::All();
  info.min_opt_level = 1;
  info.repeat_to_fixpoint = true;
  info.factory = OptionlessFactory<EliminateIdentityPass>();
  return info;
}

}  // namespace graphopt
