#ifndef GRAPHOPT_PASSES_REWRITE_UTIL_H_
#define GRAPHOPT_PASSES_REWRITE_UTIL_H_

// Small graph edits and constant reads shared by the rewriting passes (simplify,
// fold_batchnorm, constant_fold). The helpers never forward, remove or rename a value with a
// hidden access (effects.h), and a written value is no constant. Every function is O(size of the nodes and values it touches).

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/constant_view.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "graph/types.h"
#include "passes/effects.h"

namespace graphopt {

// True when `value` is part of the graph's interface: a graph input, an initializer or a graph
// output. Such a value keeps its name.
bool IsInterfaceValue(const Graph& graph, ValueId value);

// Removes `node`, whose output 0 computes exactly `replacement`: the readers of output 0 read
// `replacement` instead. When output 0 is a graph output, `replacement` takes over its name (and
// doc string when it has none); that is impossible when `replacement` is itself part of the
// interface, and then nothing is done and the result is false. Also false (nothing done) when
// another output of the node is read or is a graph output, when output 0 has hidden accesses,
// when some node writes `replacement`, or when it would have to rename a `replacement` a subgraph
// reads by name.
bool ReplaceNodeByValue(Graph& graph, NodeId node, ValueId replacement,
                        const HiddenAccess& hidden);

// The producer of `value` when it is a live node of the default domain running `op_type`; an
// invalid id otherwise (also for an invalid `value`).
NodeId ProducerOf(const Graph& graph, ValueId value, const char* op_type);

// Removes `node` when it is alive, its op is known and has no effects, and none of its outputs is
// read, a graph output or hidden-accessed. True when it was removed. Does not look further up.
bool RemoveNodeIfUnused(Graph& graph, NodeId node, const OpRegistry& ops,
                        const HiddenAccess& hidden);

// Removes what defines `value` when nothing reads it any more (edges or hidden accesses) and it
// is not a graph output: an initializer (not a graph input), or an unused node producing it.
void RemoveDefinitionIfUnused(Graph& graph, ValueId value, const OpRegistry& ops,
                              const HiddenAccess& hidden);

// Replaces `node` by a node with the same name, op, attributes, doc string and device, producing
// the same output values, that reads `inputs`: how a node gains an input slot (a Conv its bias).
// The new node's id is returned.
absl::StatusOr<NodeId> RebuildNodeWithInputs(Graph& graph, NodeId node,
                                             std::vector<ValueId> inputs);

// Turns output `index` of `node` into an initializer holding `tensor` (its dtype and dims become
// the value's type) and removes the node. The node's other outputs must be unused and not graph
// outputs. The value keeps its name, its readers and its graph-output entries.
void ReplaceOutputByInitializer(Graph& graph, NodeId node, int index, v1::Tensor tensor);

// A view of the constant defining `value` (ConstantView::Of); nullopt when it is not a viewable
// constant of at most `max_elements`, or some node writes it.
std::optional<ConstantView> ConstantValue(const Graph& graph, ValueId value,
                                          const HiddenAccess& hidden,
                                          int64_t max_elements = int64_t{1} << 26);

// The integers of a small int32/int64 constant; nullopt when `value` is no such constant.
std::optional<std::vector<int64_t>> ConstantInts(const Graph& graph, ValueId value,
                                                 const HiddenAccess& hidden);

// Bytes of a wire tensor's elements (raw_data, or the strings of string_data).
int64_t TensorBytes(const v1::Tensor& tensor);

// True when both shapes have a known rank and every pair of dims is provably the same size.
bool SameStaticShape(const TensorType& a, const TensorType& b);

// All dims known.
bool FullyKnown(const std::optional<Dims>& shape);

// A node's own attribute of the given kind (descriptor defaults are not applied); nullopt when
// absent or of another kind.
std::optional<int64_t> IntAttr(const Node& node, const char* name);
std::optional<float> FloatAttr(const Node& node, const char* name);
std::optional<std::vector<int64_t>> IntsAttr(const Node& node, const char* name);

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_REWRITE_UTIL_H_
