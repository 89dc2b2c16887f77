#ifndef GRAPHOPT_PASSES_COST_REPORT_H_
#define GRAPHOPT_PASSES_COST_REPORT_H_

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "proto/optimizer.pb.h"

namespace graphopt {

// The cost estimate (passes/cost_model.h) of `graph` as an Optimize response carries it: the
// totals, and with COST_ESTIMATE_PER_NODE one entry per live node in the graph's node order
// (Graph::TopologicalOrder, the order the response writes the nodes in). Reads the types and
// shapes the values carry now. INVALID_ARGUMENT for a `detail` the enum does not define;
// COST_ESTIMATE_NONE gives an empty report.
absl::StatusOr<v1::CostReport> MakeCostReport(const Graph& graph, const OpRegistry& ops,
                                              v1::CostEstimate detail);

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_COST_REPORT_H_
