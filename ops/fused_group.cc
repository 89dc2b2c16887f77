#include "ops/fused_group.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/types.h"

namespace graphopt {

std::vector<v1::InPlacePair> FusedGroupInPlacePairs(const Node& node) {
  std::vector<v1::InPlacePair> pairs;
  if (node.domain != kFusedGroupDomain || node.op_type != kFusedGroupOp) return pairs;
  auto it = node.attributes.find(kFusedGroupInPlace);
  if (it == node.attributes.end() || it->second.ints().values_size() % 2 != 0) return pairs;
  const auto& v = it->second.ints().values();
  for (int i = 0; i + 1 < v.size(); i += 2) {
    if (v[i] < 0 || v[i] >= static_cast<int64_t>(node.inputs.size()) || v[i + 1] < 0 ||
        v[i + 1] >= static_cast<int64_t>(node.outputs.size())) {
      return {};
    }
    v1::InPlacePair p;
    p.set_input(static_cast<int32_t>(v[i]));
    p.set_output(static_cast<int32_t>(v[i + 1]));
    pairs.push_back(p);
  }
  return pairs;
}

absl::StatusOr<NodeId> FusedGroupBuilder::Replace(absl::Span<const NodeId> nodes,
                                                  absl::string_view pattern) {
  if (nodes.empty()) return NodeId();
  in_group_.resize(graph_.num_node_slots(), 0);
  seen_.resize(graph_.num_value_slots(), 0);
  for (NodeId id : nodes) in_group_[id.value()] = 1;
  std::vector<ValueId> inputs, outputs;
  for (NodeId id : nodes) {
    for (ValueId v : graph_.node(id).inputs) {
      if (!v.valid() || seen_[v.value()]) continue;
      const NodeId p = graph_.value(v).producer;
      if (p.valid() && in_group_[p.value()]) continue;
      seen_[v.value()] = 1;
      inputs.push_back(v);
    }
  }
  v1::Graph body;
  const Node& first = graph_.node(nodes.front());
  const std::string name = first.name.empty() ? absl::StrCat("fused_", nodes.front().value())
                                              : absl::StrCat(first.name.str(), "_fused");
  body.set_name(name);
  auto value_info = [&](ValueId v, v1::ValueInfo* out) {
    const Value& value = graph_.value(v);
    out->set_name(value.name);
    TensorTypeToProto(value.type, out->mutable_type());
  };
  for (ValueId v : inputs) value_info(v, body.add_inputs());
  std::vector<std::pair<NodeId, int>> detach;
  for (NodeId id : nodes) {
    const Node& node = graph_.node(id);
    v1::Node* out = body.add_nodes();
    out->set_name(node.name);
    out->set_op_type(node.op_type);
    out->set_domain(node.domain);
    out->set_doc_string(node.doc_string);
    out->set_device(node.device);
    for (ValueId v : node.inputs) out->add_inputs(v.valid() ? graph_.value(v).name : "");
    for (const auto& [attr_name, attr] : node.attributes) {
      v1::Attribute* a = out->add_attributes();
      *a = attr;
      a->set_name(attr_name);
    }
    for (int i = 0; i < static_cast<int>(node.outputs.size()); ++i) {
      const ValueId v = node.outputs[i];
      out->add_outputs(v.valid() ? graph_.value(v).name : "");
      if (!v.valid()) continue;
      const Value& value = graph_.value(v);
      bool escapes = value.graph_output_count > 0;
      for (const Use& use : value.uses) escapes |= !in_group_[use.node.value()];
      if (escapes) {
        outputs.push_back(v);
        detach.emplace_back(id, i);
        value_info(v, body.add_outputs());
      } else {
        value_info(v, body.add_value_info());
      }
    }
  }
  for (ValueId v : inputs) seen_[v.value()] = 0;
  for (NodeId id : nodes) in_group_[id.value()] = 0;
  if (inputs.empty() || outputs.empty()) return NodeId();
  for (const v1::OpsetImport& o : graph_.opset_imports) *body.add_opset_imports() = o;
  for (const auto& [id, index] : detach) graph_.DetachOutput(id, index);
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) graph_.RemoveNode(*it);
  AttributeMap attributes;
  v1::Attribute& b = attributes[kFusedGroupBody];
  b.set_name(kFusedGroupBody);
  *b.mutable_g() = std::move(body);
  v1::Attribute& p = attributes[kFusedGroupPattern];
  p.set_name(kFusedGroupPattern);
  p.set_s(std::string(pattern));
  absl::StatusOr<NodeId> fused = graph_.AddNode(name, kFusedGroupOp, kFusedGroupDomain, inputs,
                                                outputs, std::move(attributes));
  if (!fused.ok()) return absl::InternalError(fused.status().message());
  return *fused;
}

}  // namespace graphopt
