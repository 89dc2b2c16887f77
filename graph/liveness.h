#ifndef GRAPHOPT_GRAPH_LIVENESS_H_
#define GRAPHOPT_GRAPH_LIVENESS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "graph/graph.h"
#include "proto/graph.pb.h"

namespace graphopt {

// What the memory planner (passes/plan_memory_pass.h) and the executor (runtime/executor.h)
// must agree on: which values each step reads, when every value is live, and whether a plan
// still belongs to its graph. Both sides call these functions, so they cannot drift apart.

// (FreeNames and SubgraphFreeNames, what subgraphs capture, are declared in graph/graph.h: the
// graph's topological order depends on them too.)

// Live ranges of values for one execution order, in steps (positions in `order`).
struct Liveness {
  // Per value slot: the step of its producer; -1 for values no scheduled node produces.
  std::vector<int32_t> def_step;
  // Per value slot: the last step reading it, as an input or as a capture of a node's
  // subgraphs; -1 when no step reads it.
  std::vector<int32_t> last_use;
  // Per step: values of this graph its node's subgraphs read (captures), sorted by id.
  std::vector<std::vector<ValueId>> captures;
};
// O(nodes + edges + subgraph sizes).
Liveness ComputeLiveness(const Graph& graph, absl::Span<const NodeId> order);

// A stable 64-bit fingerprint (FNV-1a) of the node order and the edges: op, domain, input and
// output names of every node in `order`, and the graph outputs. A memory plan records it; an
// executor uses the plan only when its graph gives the same fingerprint. O(graph size).
uint64_t PlanFingerprint(const Graph& graph, absl::Span<const NodeId> order);

// One reserved byte range over an inclusive step range.
struct Placement {
  int32_t first_step = 0;
  int32_t last_step = 0;
  int64_t offset = 0;
  int64_t size = 0;
  // Index in the caller's list, for messages.
  int32_t id = 0;
};
// OK when no two placements overlap both in steps and in bytes (zero-sized ones never
// overlap); INTERNAL naming the two ids otherwise. O(n log n): a sweep over steps keeps the
// live byte ranges sorted by offset, and a new range only has to be checked against its
// neighbours, since the live ones never overlap each other.
absl::Status CheckPlacements(std::vector<Placement> placements);

}  // namespace graphopt

#endif  // GRAPHOPT_GRAPH_LIVENESS_H_
