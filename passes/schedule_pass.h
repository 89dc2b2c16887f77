#ifndef GRAPHOPT_PASSES_SCHEDULE_PASS_H_
#define GRAPHOPT_PASSES_SCHEDULE_PASS_H_

#include <cstdint>
#include <vector>

#include "passes/memory_util.h"
#include "passes/pass.h"

namespace graphopt {

// Registry entry of the schedule pass (see its description in the .cc file).
PassInfo SchedulePassInfo();

// The largest sum of bytes (BoundedBytes; values of unknown size count 0) of values live at
// once when the nodes of `graph` run in `order`, given the values each node reads
// (ValuesReadByNodes). A value is live from its producer's step to its last reader's; graph
// outputs until the end. O(n). Exposed for tests.
int64_t PeakLiveBytes(const Graph& graph, const std::vector<NodeId>& order,
                      const std::vector<std::vector<ValueId>>& reads, const DimBounds& bounds);

// `order` with every recomputed node (the rematerialize pass's clones, IsRecomputedNodeName in
// passes/remat_names.h) moved to right before the first other node that reads it, its
// recomputed inputs right before it; what the pass does to each order it considers. Unchanged
// when `has_recomputation` is false. O(n + e). Exposed for tests.
std::vector<NodeId> SinkRecomputation(const Graph& graph,
                                      const std::vector<std::vector<ValueId>>& reads,
                                      std::vector<NodeId> order, bool has_recomputation);

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_SCHEDULE_PASS_H_
