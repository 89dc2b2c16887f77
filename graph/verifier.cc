#include "graph/verifier.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "graph/prefetch.h"
#include "graph/types.h"

namespace graphopt {
namespace {

std::string ArityText(int min, int max) {
  if (max == OpDef::kUnbounded) return absl::StrCat("at least ", min);
  if (min == max) return absl::StrCat(min);
  return absl::StrCat(min, " to ", max);
}

const char* AttributeTypeText(v1::AttributeType type) {
  switch (type) {
    case v1::ATTR_INT:
      return "an int";
    case v1::ATTR_FLOAT:
      return "a float";
    case v1::ATTR_STRING:
      return "a string";
    case v1::ATTR_TENSOR:
      return "a tensor";
    case v1::ATTR_GRAPH:
      return "a graph";
    case v1::ATTR_INTS:
      return "a list of ints";
    case v1::ATTR_FLOATS:
      return "a list of floats";
    case v1::ATTR_STRINGS:
      return "a list of strings";
    case v1::ATTR_TENSORS:
      return "a list of tensors";
    case v1::ATTR_GRAPHS:
      return "a list of graphs";
    case v1::ATTR_DTYPE:
      return "a data type";
    case v1::ATTR_SHAPE:
      return "a shape";
    case v1::ATTR_OPAQUE:
      return "an opaque value (such as an ONNX TypeProto)";
    default:
      return "an undefined kind";
  }
}

// `op` when the registry knew the op of `node`, the "unknown op" error otherwise.
absl::StatusOr<const OpDef*> NodeOpOrError(const Graph& graph, NodeId node, const OpDef* op) {
  if (op != nullptr) return op;
  const Node& n = graph.node(node);
  return absl::InvalidArgumentError(absl::StrCat(graph.NodeLabel(node), ": unknown op '",
                                                 OpLabel(n.domain, n.op_type), "'"));
}

// The per-node checks of VerifyNode once the node's op is looked up (`found`).
absl::Status VerifyNodeOf(const Graph& graph, NodeId id, absl::StatusOr<const OpDef*> found) {
  const Node& n = graph.node(id);
  auto error = [&](auto&&... parts) {
    return absl::InvalidArgumentError(absl::StrCat(graph.NodeLabel(id), ": ", parts...));
  };
  if (!found.ok()) return found.status();
  const OpDef* op = *found;
  const int num_inputs = static_cast<int>(n.inputs.size());
  const int num_outputs = static_cast<int>(n.outputs.size());
  if (num_inputs < op->min_inputs || num_inputs > op->max_inputs) {
    return error("has ", num_inputs, " inputs, ", OpLabel(n.domain, n.op_type), " takes ",
                 ArityText(op->min_inputs, op->max_inputs));
  }
  if (num_outputs < op->min_outputs || num_outputs > op->max_outputs) {
    return error("has ", num_outputs, " outputs, ", OpLabel(n.domain, n.op_type), " gives ",
                 ArityText(op->min_outputs, op->max_outputs));
  }
  for (int i = 0; i < num_inputs; ++i) {
    const v1::ArgSpec* spec = op->input_spec(i);
    if (!n.inputs[i].valid()) {
      if (spec->arity() != v1::ARITY_OPTIONAL) {
        return error("required input ", i, " '", spec->name(), "' is missing");
      }
      continue;
    }
    if (!graph.IsDefined(n.inputs[i])) {
      return error("input ", i, " '", graph.value(n.inputs[i]).name,
                   "' is not produced by any node, graph input or initializer");
    }
  }
  for (int i = 0; i < num_outputs; ++i) {
    if (!n.outputs[i].valid() && op->output_spec(i)->arity() != v1::ARITY_OPTIONAL) {
      return error("required output ", i, " '", op->output_spec(i)->name(), "' is missing");
    }
  }
  for (const auto& [name, value] : n.attributes) {
    const v1::AttributeSpec* spec = op->attribute_spec(name);
    if (spec == nullptr) {
      return error("unknown attribute '", name, "' for ", OpLabel(n.domain, n.op_type));
    }
    if (!AttributeValueMatches(value, spec->type())) {
      return error("attribute '", name, "' must be ", AttributeTypeText(spec->type()));
    }
  }
  for (const v1::AttributeSpec* spec : op->required_attributes) {
    if (!n.attributes.contains(spec->name())) {
      return error("missing required attribute '", spec->name(), "'");
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status VerifyNode(const Graph& graph, NodeId id, const OpRegistry& registry) {
  return VerifyNodeOf(graph, id, NodeOp(graph, id, registry));
}

absl::Status VerifyNode(const Graph& graph, NodeId id, const KindOps& ops) {
  return VerifyNodeOf(graph, id, NodeOp(graph, id, ops));
}

absl::StatusOr<const OpDef*> NodeOp(const Graph& graph, NodeId node, const OpRegistry& registry) {
  const Node& n = graph.node(node);
  return NodeOpOrError(graph, node, registry.Find(n.domain, n.op_type));
}

absl::StatusOr<const OpDef*> NodeOp(const Graph& graph, NodeId node, const KindOps& ops) {
  return NodeOpOrError(graph, node, ops.Find(node));
}

absl::Status VerifyStateUpdates(const Graph& graph) {
  absl::flat_hash_set<std::string> states;
  for (const v1::StateUpdate& u : graph.state_updates) {
    const std::string what = absl::StrCat("state update '", u.state(), "' <- '", u.update(), "'");
    const ValueId state = graph.FindValue(u.state());
    if (!state.valid() || graph.value(state).initializer < 0 ||
        !graph.value(state).is_graph_input) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": the state must be an initializer that is also a graph input"));
    }
    const ValueId update = graph.FindValue(u.update());
    if (!update.valid() || graph.value(update).graph_output_count == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": the update must be a graph output"));
    }
    const v1::DataType a = graph.value(state).type.dtype;
    const v1::DataType b = graph.value(update).type.dtype;
    if (a != v1::DT_UNDEFINED && b != v1::DT_UNDEFINED && a != b) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": the update is ", DataTypeName(b),
                                                     ", the state ", DataTypeName(a)));
    }
    if (!states.insert(u.state()).second) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": the state is updated twice"));
    }
  }
  return absl::OkStatus();
}

absl::Status VerifyGraph(const Graph& graph, const OpRegistry& registry) {
  if (absl::Status s = VerifyStateUpdates(graph); !s.ok()) return s;
  const KindOps ops(graph, registry);
  int subgraph_nodes = 0;
  // Whether node-id order is topological, checked while each node's inputs are at hand: the
  // graph's own check would be a second sweep over every node and value.
  bool ids_sorted = true;
  for (int i = 0; i < graph.num_node_slots(); ++i) {
    PrefetchSweep(graph, NodeId(i));
    const Node& n = graph.node(NodeId(i));
    if (!n.alive) continue;
    // Passes find nodes by their interned kind, so op_type and domain must not be edited in
    // place (a node is replaced instead).
    const OpKindId kind = graph.op_kind(NodeId(i));
    if (n.op_type != graph.op_kind_type(kind) || n.domain != graph.op_kind_domain(kind)) {
      return absl::InternalError(absl::StrCat(
          graph.NodeLabel(NodeId(i)), ": op changed in place from '",
          OpLabel(graph.op_kind_domain(kind), graph.op_kind_type(kind)),
          "' (replace the node instead)"));
    }
    if (absl::Status s = VerifyNode(graph, NodeId(i), ops); !s.ok()) return s;
    for (ValueId in : n.inputs) {
      if (!in.valid()) continue;
      const NodeId p = graph.value(in).producer;
      if (p.valid() && p.value() >= i) ids_sorted = false;
    }
    // A graph attribute given other than through AddNode would hide captures from the passes.
    if (HasGraphAttribute(n.attributes) && !n.has_subgraphs) {
      return absl::InternalError(absl::StrCat(graph.NodeLabel(NodeId(i)),
                                              ": graph attribute not added through AddNode"));
    }
    subgraph_nodes += n.has_subgraphs ? 1 : 0;
  }
  if (subgraph_nodes != graph.num_subgraph_nodes()) {
    return absl::InternalError(absl::StrCat("the graph counts ", graph.num_subgraph_nodes(),
                                            " nodes with subgraphs but has ", subgraph_nodes));
  }
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    ValueId out = graph.outputs()[i];
    if (!graph.IsDefined(out)) {
      return absl::InvalidArgumentError(absl::StrCat("graph output ", i, " '",
                                                     graph.value(out).name,
                                                     "' is not produced by any node, graph "
                                                     "input or initializer"));
    }
  }
  if (ids_sorted) graph.NoteIdOrderIsTopological();
  absl::StatusOr<std::vector<NodeId>> order = graph.TopologicalOrder();
  return order.status();
}

}  // namespace graphopt
