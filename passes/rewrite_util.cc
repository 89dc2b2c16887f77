#include "passes/rewrite_util.h"

#include <string>
#include <utility>

#include "graph/inference.h"

namespace graphopt {

bool IsInterfaceValue(const Graph& graph, ValueId value) {
  const Value& v = graph.value(value);
  return v.is_graph_input || v.initializer >= 0 || v.graph_output_count > 0;
}

bool ReplaceNodeByValue(Graph& graph, NodeId node, ValueId replacement,
                        const HiddenAccess& hidden) {
  const Node& n = graph.node(node);
  if (n.outputs.empty() || !n.outputs[0].valid()) return false;
  if (hidden.any(n.outputs[0]) || hidden.mutated(replacement)) return false;
  for (size_t i = 1; i < n.outputs.size(); ++i) {
    if (!n.outputs[i].valid()) continue;
    const Value& other = graph.value(n.outputs[i]);
    if (!other.uses.empty() || other.graph_output_count > 0) return false;
  }
  const ValueId out = n.outputs[0];
  const bool out_is_output = graph.value(out).graph_output_count > 0;
  // Taking over the name is impossible for an interface value, and would hide one a subgraph
  // reads by its own name.
  if (out_is_output && (IsInterfaceValue(graph, replacement) || hidden.captured(replacement))) {
    return false;
  }
  std::string out_name, out_doc;
  if (out_is_output) {
    out_name = graph.value(out).name;
    out_doc = graph.value(out).doc_string;
  }
  graph.ReplaceAllUsesWith(out, replacement);
  if (out_is_output) graph.ReplaceGraphOutput(out, replacement);
  graph.RemoveNode(node);
  if (out_is_output) {
    // The name was freed by the removal; nothing else can hold it.
    if (!graph.RenameValue(replacement, out_name).ok()) return true;
    if (graph.value(replacement).doc_string.empty()) {
      graph.mutable_value(replacement).doc_string = out_doc;
    }
  }
  return true;
}

NodeId ProducerOf(const Graph& graph, ValueId value, const char* op_type) {
  if (!value.valid()) return NodeId();
  const NodeId p = graph.value(value).producer;
  if (!p.valid()) return NodeId();
  const Node& n = graph.node(p);
  if (!n.alive || !n.domain.empty() || n.op_type != op_type) return NodeId();
  return p;
}

bool RemoveNodeIfUnused(Graph& graph, NodeId node, const OpRegistry& ops,
                        const HiddenAccess& hidden) {
  const Node& n = graph.node(node);
  if (!n.alive) return false;
  const OpDef* op = ops.Find(n.domain, n.op_type);
  if (op == nullptr || HasEffects(*op)) return false;
  for (ValueId out : n.outputs) {
    if (!out.valid()) continue;
    const Value& v = graph.value(out);
    if (!v.uses.empty() || v.graph_output_count > 0 || hidden.any(out)) return false;
  }
  graph.RemoveNode(node);
  return true;
}

void RemoveDefinitionIfUnused(Graph& graph, ValueId value, const OpRegistry& ops,
                              const HiddenAccess& hidden) {
  if (!value.valid() || hidden.any(value)) return;
  const Value& v = graph.value(value);
  if (!v.alive || !v.uses.empty() || v.graph_output_count > 0) return;
  if (v.initializer >= 0) {
    graph.RemoveInitializer(value);
  } else if (v.producer.valid()) {
    RemoveNodeIfUnused(graph, v.producer, ops, hidden);
  }
}

absl::StatusOr<NodeId> RebuildNodeWithInputs(Graph& graph, NodeId node,
                                             std::vector<ValueId> inputs) {
  Node& n = graph.mutable_node(node);
  std::string name = n.name, op_type = n.op_type, domain = n.domain;
  std::string doc = n.doc_string, device = n.device;
  AttributeMap attributes = std::move(n.attributes);
  std::vector<ValueId> outputs;
  for (int i = 0; i < static_cast<int>(n.outputs.size()); ++i) {
    outputs.push_back(graph.DetachOutput(node, i));
  }
  graph.RemoveNode(node);
  absl::StatusOr<NodeId> id = graph.AddNode(std::move(name), std::move(op_type),
                                            std::move(domain), std::move(inputs),
                                            std::move(outputs), std::move(attributes));
  if (!id.ok()) return id.status();
  Node& rebuilt = graph.mutable_node(*id);
  rebuilt.doc_string = std::move(doc);
  rebuilt.device = std::move(device);
  return *id;
}

void ReplaceOutputByInitializer(Graph& graph, NodeId node, int index, v1::Tensor tensor) {
  const ValueId value = graph.DetachOutput(node, index);
  graph.RemoveNode(node);
  TensorType& type = graph.mutable_value(value).type;
  type.dtype = tensor.dtype();
  type.shape = ShapeFromDimsList(tensor);
  tensor.clear_name();
  graph.SetInitializer(value, std::move(tensor));
}

std::optional<ConstantView> ConstantValue(const Graph& graph, ValueId value,
                                          const HiddenAccess& hidden, int64_t max_elements) {
  if (hidden.mutated(value)) return std::nullopt;
  return ConstantView::Of(graph, value, max_elements);
}

std::optional<std::vector<int64_t>> ConstantInts(const Graph& graph, ValueId value,
                                                 const HiddenAccess& hidden) {
  if (hidden.mutated(value)) return std::nullopt;
  const v1::Tensor* proto = ConstantTensorOf(graph, value);
  if (proto == nullptr || !proto->blob().empty()) return std::nullopt;
  absl::StatusOr<std::vector<int64_t>> ints = TensorToInts(*proto);
  if (!ints.ok()) return std::nullopt;
  return *std::move(ints);
}

int64_t TensorBytes(const v1::Tensor& tensor) {
  int64_t bytes = static_cast<int64_t>(tensor.raw_data().size());
  for (const std::string& s : tensor.string_data()) bytes += static_cast<int64_t>(s.size());
  return bytes;
}

bool SameStaticShape(const TensorType& a, const TensorType& b) {
  if (!a.shape || !b.shape || a.shape->size() != b.shape->size()) return false;
  for (size_t i = 0; i < a.shape->size(); ++i) {
    if (!Dim::SameSize((*a.shape)[i], (*b.shape)[i])) return false;
  }
  return true;
}

bool FullyKnown(const std::optional<Dims>& shape) {
  if (!shape) return false;
  for (const Dim& d : *shape) {
    if (!d.is_known()) return false;
  }
  return true;
}

std::optional<int64_t> IntAttr(const Node& node, const char* name) {
  auto it = node.attributes.find(name);
  if (it == node.attributes.end() || it->second.value_case() != v1::Attribute::kI) {
    return std::nullopt;
  }
  return it->second.i();
}

std::optional<float> FloatAttr(const Node& node, const char* name) {
  auto it = node.attributes.find(name);
  if (it == node.attributes.end() || it->second.value_case() != v1::Attribute::kF) {
    return std::nullopt;
  }
  return it->second.f();
}

std::optional<std::vector<int64_t>> IntsAttr(const Node& node, const char* name) {
  auto it = node.attributes.find(name);
  if (it == node.attributes.end() || it->second.value_case() != v1::Attribute::kInts) {
    return std::nullopt;
  }
  return std::vector<int64_t>(it->second.ints().values().begin(),
                              it->second.ints().values().end());
}

}  // namespace graphopt
