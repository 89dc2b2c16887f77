#include "graph/kind_ops.h"

namespace graphopt {

KindOps::KindOps(const Graph& graph, const OpRegistry& ops) : graph_(&graph), ops_(&ops) {
  by_kind_.reserve(graph.num_op_kinds());
  for (int k = 0; k < graph.num_op_kinds(); ++k) {
    const OpKindId kind(k);
    by_kind_.push_back(ops.Find(graph.op_kind_domain(kind), graph.op_kind_type(kind)));
  }
}

}  // namespace graphopt
