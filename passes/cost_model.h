#ifndef GRAPHOPT_PASSES_COST_MODEL_H_
#define GRAPHOPT_PASSES_COST_MODEL_H_

// Per-node cost estimates (flops, bytes read and written) from the types and shapes the graph's
// values carry and the ops' cost rules: what the schedule pass and the Optimize report's cost
// estimate read.

#include <cstdint>
#include <optional>
#include <vector>

#include "graph/graph.h"
#include "graph/op_registry.h"

namespace graphopt {

// One node's estimate; nullopt is unknown.
struct NodeCost {
  std::optional<int64_t> flops;
  // Bytes the node reads and writes.
  std::optional<int64_t> bytes;

  friend bool operator==(const NodeCost& a, const NodeCost& b) {
    return a.flops == b.flops && a.bytes == b.bytes;
  }
};

// The estimate of live node `id` of op `op` (null: an op without descriptor, all unknown):
//  - flops: the descriptor's cost.flops rule (OpDef::flops_fn) when it has one; else the
//    built-in estimate below for MatMul, Gemm and Conv of the default domain and for Conv's
//    backward ops (ops/nn_grad_ops.h), and for a
//    FusedGroup the sum of those of its body's MatMul, Gemm and Conv nodes (from the body's
//    value types; unknown when it has none or one is unknown); else unknown.
//  - bytes: the descriptor's cost.bytes_moved rule (OpDef::bytes_fn) when it has one; else the
//    sum of the bytes of its distinct present inputs and of its outputs, each read or written
//    once (a FusedGroup's intermediates stay in its kernel and are not counted). Unknown for
//    nodes with other subgraphs (If, Loop, Scan), whose bodies move what their inputs do not
//    say.
// A figure is unknown when a shape it needs has a symbolic or unknown dim, or an element type
// has no fixed size (the estimate never guesses: bind symbolic dims first), when a rule fails
// or gives a negative figure, and on int64 overflow.
//
// Built-in flops count a multiply-add as 2 and leave out bias, scaling and activations (Y is
// the output, |T| a tensor's element count):
//   MatMul  2 * |Y| * K, K the last dim of A
//   Gemm    2 * |Y| * K, K = A's dim 0 with transA, else its dim 1
//   Conv    2 * |Y| * |W| / W[0]  (C_in / group times the kernel size per output element)
//   graphopt ConvGradData(dY, W) and ConvGradWeight(X, dY) -> dW: their forward Conv's,
//           2 * |dY| * |W| / W[0]
NodeCost EstimateNodeCost(const Graph& graph, NodeId id, const OpDef* op);

// Estimates by node slot (dead slots unknown). Looks each op kind up once; O(nodes + edges),
// plus the cost rules of the ops that have them.
std::vector<NodeCost> EstimateCosts(const Graph& graph, const OpRegistry& ops);

// Sums of the known figures (saturating at the int64 maximum) and counts of live nodes.
struct CostTotals {
  int64_t flops = 0;
  int64_t bytes = 0;
  int64_t nodes = 0;
  int64_t flops_unknown = 0;
  int64_t bytes_unknown = 0;
};
CostTotals SumCosts(const Graph& graph, const std::vector<NodeCost>& costs);

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_COST_MODEL_H_
