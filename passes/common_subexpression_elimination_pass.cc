#include "passes/common_subexpression_elimination_pass.h"

#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace graphopt {
namespace {

// Ops whose outputs may differ between two evaluations with equal inputs say so with this
// extension attribute (set to a non-zero int); CSE never merges them.
constexpr char kNondeterministic[] = "nondeterministic";

bool Mergeable(const OpDef* op) {
  if (op == nullptr) return false;
  const v1::OpDescriptor& d = op->descriptor;
  if (d.has_side_effects() || d.mutated_inputs_size() > 0) return false;
  auto it = d.extensions().find(kNondeterministic);
  return it == d.extensions().end() || it->second.i() == 0;
}

// The identity of a computation: op, inputs (by value id), output count and attributes.
std::string NodeKey(const Node& n) {
  std::string key;
  absl::StrAppend(&key, n.domain, "\x1f", n.op_type, "\x1f", n.outputs.size(), "\x1f");
  for (ValueId in : n.inputs) absl::StrAppend(&key, in.value(), ",");
  for (const auto& [name, attr] : n.attributes) {
    absl::StrAppend(&key, "\x1e", name, "=");
    google::protobuf::io::StringOutputStream stream(&key);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    attr.SerializeToCodedStream(&coded);
  }
  return key;
}

// Merges nodes that compute the same op on the same inputs with the same attributes: the later
// node's uses move to the earlier node and the later node goes away. One walk in topological
// order, so chains of duplicates collapse in a single run.
class CommonSubexpressionEliminationPass : public Pass {
 public:
  absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) override {
    absl::StatusOr<std::vector<NodeId>> order = graph.TopologicalOrder();
    if (!order.ok()) return order.status();
    absl::flat_hash_map<std::string, NodeId> seen;
    seen.reserve(order->size());
    int64_t merged = 0;
    for (NodeId id : *order) {
      const Node& n = graph.node(id);
      if (n.outputs.empty() || !Mergeable(context.ops->Find(n.domain, n.op_type))) continue;
      auto [it, inserted] = seen.try_emplace(NodeKey(n), id);
      if (inserted) continue;
      const Node& first = graph.node(it->second);
      bool keeps_output_name = false;
      for (ValueId out : n.outputs) {
        keeps_output_name |= out.valid() && graph.value(out).graph_output_count > 0;
      }
      // A graph output's name is part of the interface: such a duplicate stays.
      if (keeps_output_name) continue;
      bool outputs_match = true;
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        // A duplicate using an output the first node omitted cannot be redirected.
        if (n.outputs[k].valid() && !first.outputs[k].valid()) outputs_match = false;
      }
      if (!outputs_match) continue;
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        if (n.outputs[k].valid()) graph.ReplaceAllUsesWith(n.outputs[k], first.outputs[k]);
      }
      graph.RemoveNode(id);
      ++merged;
    }
    context.Note(absl::StrCat("merged ", merged, " duplicate nodes"));
    return merged > 0;
  }
};

}  // namespace

PassInfo CommonSubexpressionEliminationPassInfo() {
  PassInfo info;
  info.name = "common_subexpression_elimination";
  info.description =
      "Merges nodes computing the same op on the same inputs with the same attributes (never "
      "ops with side effects, mutated inputs or the 'nondeterministic' extension).";
  info.preserves = AnalysisSet::All();
  info.min_opt_level = 1;
  info.factory = [](const PassOptions&) -> absl::StatusOr<std::unique_ptr<Pass>> {
    return std::make_unique<CommonSubexpressionEliminationPass>();
  };
  return info;
}

}  // namespace graphopt
