#ifndef GRAPHOPT_GRAPH_KIND_OPS_H_
#define GRAPHOPT_GRAPH_KIND_OPS_H_

#include <vector>

#include "graph/graph.h"
#include "graph/op_registry.h"

namespace graphopt {

// The registry's op for every op kind of a graph (Graph::op_kind), looked up once when built: a
// pass that needs each node's descriptor reads the node's dense 4-byte kind and this array
// instead of hashing the node's op_type and domain strings (which, on a graph larger than the
// cache, also costs a miss on the node). Kinds interned after construction (nodes of a new op
// added by the pass) are looked up in the registry on each call. Holds pointers into `graph`
// and `ops`, which must outlive it; the graph may be edited meanwhile.
class KindOps {
 public:
  KindOps(const Graph& graph, const OpRegistry& ops);

  // The op of `node`, or nullptr when the registry does not know it.
  const OpDef* Find(NodeId node) const { return FindKind(graph_->op_kind(node)); }
  const OpDef* FindKind(OpKindId kind) const {
    const size_t k = static_cast<size_t>(kind.value());
    if (k < by_kind_.size()) return by_kind_[k];
    return ops_->Find(graph_->op_kind_domain(kind), graph_->op_kind_type(kind));
  }

 private:
  const Graph* graph_;
  const OpRegistry* ops_;
  std::vector<const OpDef*> by_kind_;
};

}  // namespace graphopt

#endif  // GRAPHOPT_GRAPH_KIND_OPS_H_
