#ifndef GRAPHOPT_OPS_FUSION_PATTERNS_H_
#define GRAPHOPT_OPS_FUSION_PATTERNS_H_

// Multi-node patterns that fuse_ops fuses as a unit and the runtime's FusedGroup kernel runs as
// one loop: GELU in its Erf form and LayerNormalization in its decomposed form, as PyTorch
// exports them. The matchers look at structure only (ops, attributes, single uses); the scalar
// operands a match needs (1/sqrt(2), 1, 0.5, the exponent 2) are returned for the caller to check
// against what it knows: the pass against constant tensors, the runtime against the tensors it
// is given.

#include <optional>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "proto/graph.pb.h"

namespace graphopt {

struct FusionPatternMatch {
  // The pattern's nodes in a topological order; the last one produces its only output, and no
  // other value of the pattern is used outside it or is a graph output.
  std::vector<NodeId> nodes;
  // The data input (GELU's and LayerNormalization's x).
  ValueId x;
  // Operands that must be scalars of these values for the pattern to compute what it names.
  std::vector<std::pair<ValueId, double>> scalars;
  // LayerNormalization: epsilon (a scalar operand) and the optional per-element scale and bias
  // (broadcast along the last axis; invalid when absent).
  ValueId epsilon;
  ValueId scale;
  ValueId bias;
};

// y = x * 0.5 * (1 + erf(x / sqrt(2))) around the Erf node `erf`, in any of the orders torch
// exports: x/sqrt(2) or x*(1/sqrt(2)); (x * (1+e)) * 0.5, (x * 0.5) * (1+e), x * ((1+e) * 0.5).
std::optional<FusionPatternMatch> MatchGelu(const Graph& graph, NodeId erf);

// y = (x - mean) / sqrt(mean((x - mean)^2) + eps) [* scale] [+ bias] over the last axis,
// starting at the first ReduceMean `mean` (ReduceMean, Sub, Pow 2 or Mul d*d, ReduceMean, Add
// eps, Sqrt, Div, then optionally Mul scale, then optionally Add bias).
std::optional<FusionPatternMatch> MatchLayerNorm(const Graph& graph, NodeId mean);

// The single element of a numeric tensor (float32/64, int32/64) as a double, or nullopt.
std::optional<double> ScalarOf(const v1::Tensor& tensor);

// True when `got` equals `want` within a relative 1e-5 (the constants as float32 rounds them).
bool ScalarMatches(double got, double want);

}  // namespace graphopt

#endif  // GRAPHOPT_OPS_FUSION_PATTERNS_H_
