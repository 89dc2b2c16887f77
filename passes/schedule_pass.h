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

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_SCHEDULE_PASS_H_
