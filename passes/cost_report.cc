#include "passes/cost_report.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "passes/cost_model.h"

namespace graphopt {

absl::StatusOr<v1::CostReport> MakeCostReport(const Graph& graph, const OpRegistry& ops,
                                              v1::CostEstimate detail) {
  if (!v1::CostEstimate_IsValid(detail)) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.cost_estimate: unknown value ", static_cast<int>(detail)));
  }
  v1::CostReport report;
  if (detail == v1::COST_ESTIMATE_NONE) return report;
  const std::vector<NodeCost> costs = EstimateCosts(graph, ops);
  const CostTotals totals = SumCosts(graph, costs);
  report.set_flops(totals.flops);
  report.set_bytes(totals.bytes);
  report.set_nodes(totals.nodes);
  report.set_flops_unknown_nodes(totals.flops_unknown);
  report.set_bytes_unknown_nodes(totals.bytes_unknown);
  if (detail != v1::COST_ESTIMATE_PER_NODE) return report;
  absl::StatusOr<std::vector<NodeId>> order = graph.TopologicalOrder();
  if (!order.ok()) return order.status();
  report.mutable_node_costs()->Reserve(static_cast<int>(order->size()));
  for (size_t i = 0; i < order->size(); ++i) {
    const NodeId id = (*order)[i];
    const Node& n = graph.node(id);
    v1::NodeCost* entry = report.add_node_costs();
    entry->set_node(n.name.empty() ? absl::StrCat("#", i) : std::string(n.name));
    entry->set_op(OpLabel(n.domain, n.op_type));
    const NodeCost& cost = costs[id.value()];
    if (cost.flops) entry->set_flops(*cost.flops);
    if (cost.bytes) entry->set_bytes(*cost.bytes);
  }
  return report;
}

}  // namespace graphopt
