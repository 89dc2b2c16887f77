#ifndef GRAPHOPT_OPS_FUSED_GROUP_H_
#define GRAPHOPT_OPS_FUSED_GROUP_H_

// The op that fuse_ops creates: one node standing for a group of nodes, executed by the runtime
// as one kernel. Its graph attribute kFusedGroupBody holds the group: the body's inputs are the
// node's inputs and its outputs the node's outputs, by position, with the names and types of the
// values they stand for; intermediates keep their names and types in value_info. The optional
// string attribute kFusedGroupPattern names what fuse_ops recognised (kFusedPattern*); the
// runtime treats it as a hint only and checks the body itself.

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/graph.h"
#include "proto/op.pb.h"

namespace graphopt {

inline constexpr char kFusedGroupDomain[] = "graphopt";
inline constexpr char kFusedGroupOp[] = "FusedGroup";
inline constexpr char kFusedGroupBody[] = "body";
inline constexpr char kFusedGroupPattern[] = "pattern";
// Optional ints attribute: pairs (input index, output index) whose storage the output may take
// over when the input dies at the node (the op descriptor's in-place pairs, per node, since
// every group computes something else). fuse_ops declares it where the kernel reads each
// element of the input before it writes the same element of the output and nothing else reads
// that input: a convolution's residual sum.
inline constexpr char kFusedGroupInPlace[] = "inplace";

// Values of kFusedGroupPattern.
// A Conv followed by elementwise ops (bias, residual Add, Relu, Clip, ...).
inline constexpr char kFusedPatternConv[] = "conv_epilogue";
// A MatMul or Gemm followed by elementwise ops (bias Add, activation, GELU, residual Add).
inline constexpr char kFusedPatternMatMul[] = "matmul_epilogue";
// Another out-elemwise-fusable op (a pool, a custom op) followed by elementwise ops.
inline constexpr char kFusedPatternAnchor[] = "anchor_epilogue";
// Elementwise and broadcast ops over one shape.
inline constexpr char kFusedPatternElementwise[] = "elementwise";
// x * 0.5 * (1 + erf(x / sqrt(2))), possibly with more elementwise ops.
inline constexpr char kFusedPatternGelu[] = "gelu";
// LayerNormalization over the last axis in its decomposed form.
inline constexpr char kFusedPatternLayerNorm[] = "layer_norm";
// A reduction with its elementwise prologue.
inline constexpr char kFusedPatternReduction[] = "reduction";
// A chain of injective ops (reshapes, transposes, slices, ...).
inline constexpr char kFusedPatternInjective[] = "injective";

// The in-place pairs of kFusedGroupInPlace on a FusedGroup node (empty for other nodes, or
// when the attribute is absent or malformed).
std::vector<v1::InPlacePair> FusedGroupInPlacePairs(const Node& node);

// Replaces groups of nodes of one graph by FusedGroup nodes. Keeps marks between groups, so that
// replacing many small groups costs time proportional to their sizes, not to the graph's.
class FusedGroupBuilder {
 public:
  explicit FusedGroupBuilder(Graph& graph) : graph_(graph) {}

  // Replaces `nodes` (live, in a topological order, and convex: no path leaves the set and comes
  // back) by one FusedGroup node with `pattern`, named after the first node ("<name>_fused").
  // Its inputs are the values the nodes read and do not produce, in reading order; its outputs
  // those they produce that a node outside reads or that are graph outputs, in producing order
  // (they keep their ids, names and types). Returns the new node, or an invalid id when the
  // group has no input or no output (the graph is then left as it is).
  absl::StatusOr<NodeId> Replace(absl::Span<const NodeId> nodes, absl::string_view pattern);

 private:
  Graph& graph_;
  std::vector<char> in_group_;  // by node id
  std::vector<char> seen_;      // by value id
};

}  // namespace graphopt

#endif  // GRAPHOPT_OPS_FUSED_GROUP_H_
