#ifndef GRAPHOPT_GRAPH_PREFETCH_H_
#define GRAPHOPT_GRAPH_PREFETCH_H_

// Cache hints for passes that walk a large graph. None of them changes a result: they start
// loading a node's or value's slot some iterations before it is read, so that a sweep over a
// graph larger than the caches does not wait on the first touch of each slot.

#include <cstddef>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/graph.h"

namespace graphopt {

// Prefetches every cache line of `bytes` bytes at `p`. An asm statement rather than
// __builtin_prefetch: GCC 12 at -O2 deletes a __builtin_prefetch in an inlined helper whose loop
// has no other effect.
inline void PrefetchLines(const void* p, size_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (size_t offset = 0; offset < bytes; offset += 64) {
#if defined(__x86_64__)
    asm volatile("prefetcht0 %0" : : "m"(c[offset]));
#else
    __builtin_prefetch(c + offset);
#endif
  }
}

inline void PrefetchNode(const Graph& graph, NodeId id) {
  PrefetchLines(&graph.node(id), sizeof(Node));
}
inline void PrefetchValue(const Graph& graph, ValueId id) {
  PrefetchLines(&graph.value(id), sizeof(Value));
}
// The value slots of the node's inputs.
inline void PrefetchInputs(const Graph& graph, NodeId id) {
  for (ValueId v : graph.node(id).inputs) {
    if (v.valid()) PrefetchValue(graph, v);
  }
}

// How far ahead a sweep loads: the node kSweepNodeAhead places ahead, and the inputs of the one
// kSweepValuesAhead ahead, whose node slot has arrived by then. infer_shape does not prefetch: it
// computes long enough per node to hide the misses.
constexpr int kSweepNodeAhead = 8;
constexpr int kSweepValuesAhead = 4;

// For a pass sweeping the node ids of `order` (a topological order, say), at position k.
inline void PrefetchSweep(const Graph& graph, absl::Span<const NodeId> order, size_t k) {
  if (k + kSweepNodeAhead < order.size()) PrefetchNode(graph, order[k + kSweepNodeAhead]);
  if (k + kSweepValuesAhead < order.size()) PrefetchInputs(graph, order[k + kSweepValuesAhead]);
}

// The same for a sweep over every node slot in id order, at node `id`.
inline void PrefetchSweep(const Graph& graph, NodeId id) {
  const int i = id.value();
  if (i + kSweepNodeAhead < graph.num_node_slots()) {
    PrefetchNode(graph, NodeId(i + kSweepNodeAhead));
  }
  if (i + kSweepValuesAhead < graph.num_node_slots()) {
    PrefetchInputs(graph, NodeId(i + kSweepValuesAhead));
  }
}

// For a pass visiting scattered nodes (a list of candidates, where the hardware sees no sweep
// coming), at position k: loads the node six places ahead, the input and output values of the
// one three ahead (whose node slot has arrived by then), and the readers of the next one's first
// output (whose value has), which a rewrite forwarding that output rewires.
inline void PrefetchScattered(const Graph& graph, absl::Span<const NodeId> nodes, size_t k) {
  if (k + 6 < nodes.size()) PrefetchNode(graph, nodes[k + 6]);
  if (k + 3 < nodes.size()) {
    const Node& ahead = graph.node(nodes[k + 3]);
    for (ValueId v : ahead.inputs) {
      if (v.valid()) PrefetchValue(graph, v);
    }
    for (ValueId v : ahead.outputs) {
      if (v.valid()) PrefetchValue(graph, v);
    }
  }
  if (k + 1 < nodes.size()) {
    const Node& next = graph.node(nodes[k + 1]);
    if (!next.outputs.empty() && next.outputs[0].valid()) {
      for (const Use& use : graph.value(next.outputs[0]).uses) PrefetchNode(graph, use.node);
    }
  }
}

// The name table's slot for `name` (for reading a graph: a lookup some names ahead). A friend of
// Graph, inline: it runs once per name while a graph is read.
inline void PrefetchName(const Graph& graph, absl::string_view name) {
  graph.value_by_name_.prefetch(name);
}

}  // namespace graphopt

#endif  // GRAPHOPT_GRAPH_PREFETCH_H_
