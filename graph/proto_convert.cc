#include "graph/proto_convert.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "graph/prefetch.h"

namespace graphopt {
namespace {

std::string ProtoNodeLabel(const v1::Node& n, int index) {
  std::string op = n.domain().empty() ? n.op_type() : absl::StrCat(n.domain(), "::", n.op_type());
  if (n.name().empty()) return absl::StrCat("node #", index, " (", op, ")");
  return absl::StrCat("node '", n.name(), "' (", op, ")");
}

// Moves a string field out of a message. An empty one is not touched: mutable_x() on an unset
// field allocates a string only for nothing to be moved out of it (four per node, most nodes
// having no domain, doc string or device).
template <typename MutableField>
std::string TakeString(const std::string& current, MutableField mutable_field) {
  return current.empty() ? std::string() : std::move(*mutable_field());
}

// A declared type with a negative dim size: every shape rule and kernel takes sizes to be
// non-negative (INT64_MIN negated overflows), so it is refused where it enters.
absl::Status CheckDeclaredDims(const v1::TensorType& type, absl::string_view what,
                               const std::string& name) {
  for (int i = 0; i < type.shape().dims_size(); ++i) {
    const v1::Dim& d = type.shape().dims(i);
    if (d.value_case() == v1::Dim::kSize && d.size() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, " '", name, "': dim ", i,
                                                     " has a negative size ", d.size()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Graph> GraphFromProto(v1::Graph proto) {
  Graph g;
  g.name = TakeString(proto.name(), [&] { return proto.mutable_name(); });
  g.doc_string = TakeString(proto.doc_string(), [&] { return proto.mutable_doc_string(); });
  g.opset_imports.assign(proto.opset_imports().begin(), proto.opset_imports().end());
  if (proto.has_model()) g.model = std::move(*proto.mutable_model());
  if (proto.has_memory_plan()) g.memory_plan = std::move(*proto.mutable_memory_plan());
  g.state_updates.assign(std::make_move_iterator(proto.mutable_state_updates()->begin()),
                         std::make_move_iterator(proto.mutable_state_updates()->end()));
  // Roughly one value per node output plus inputs and initializers.
  g.Reserve(proto.nodes_size(),
            proto.nodes_size() + proto.inputs_size() + proto.initializers_size());

  // Who defines each value, for error messages about a second definition.
  auto defined_by = [&](ValueId v) -> std::string {
    const Value& val = g.value(v);
    if (val.producer.valid()) return g.NodeLabel(val.producer);
    if (val.is_graph_input) return "a graph input";
    if (val.initializer >= 0) return "an initializer";
    return "";
  };

  for (int i = 0; i < proto.inputs_size(); ++i) {
    v1::ValueInfo& in = *proto.mutable_inputs(i);
    if (in.name().empty()) {
      return absl::InvalidArgumentError(absl::StrCat("graph input ", i, " has an empty name"));
    }
    if (g.FindValue(in.name()).valid()) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph input '", in.name(), "' is listed twice"));
    }
    if (absl::Status s = CheckDeclaredDims(in.type(), "graph input", in.name()); !s.ok()) return s;
    ValueId id = g.FindOrAddValue(in.name());
    Value& v = g.mutable_value(id);
    v.type = TensorTypeFromProto(in.type());
    v.doc_string = TakeString(in.doc_string(), [&] { return in.mutable_doc_string(); });
    g.AddGraphInput(id);
  }
  for (int i = 0; i < proto.initializers_size(); ++i) {
    v1::Tensor& t = *proto.mutable_initializers(i);
    if (t.name().empty()) {
      return absl::InvalidArgumentError(absl::StrCat("initializer ", i, " has an empty name"));
    }
    ValueId id = g.FindOrAddValue(t.name());
    Value& v = g.mutable_value(id);
    if (v.initializer >= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("initializer '", t.name(), "' is given twice"));
    }
    TensorType type;
    type.dtype = t.dtype();
    type.shape.emplace();
    for (int64_t d : t.dims()) {
      if (d < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("initializer '", t.name(), "' has a negative dim ", d));
      }
      type.shape->push_back(Dim::Known(d));
    }
    if (v.is_graph_input) {
      // An overridable weight: the declared input type wins where it says something.
      if (v.type.dtype == v1::DT_UNDEFINED) v.type.dtype = type.dtype;
      if (!v.type.shape) v.type.shape = type.shape;
    } else {
      v.type = std::move(type);
    }
    g.SetInitializer(id, std::move(t));
  }

  // Each edge is a name-table lookup at a place the hardware cannot guess: start loading the
  // table slots of a node some nodes ahead.
  constexpr int kPrefetchAhead = 8;
  for (int i = 0; i < proto.nodes_size(); ++i) {
    if (i + kPrefetchAhead < proto.nodes_size()) {
      const v1::Node& ahead = proto.nodes(i + kPrefetchAhead);
      for (const std::string& name : ahead.inputs()) PrefetchName(g, name);
      for (const std::string& name : ahead.outputs()) PrefetchName(g, name);
    }
    v1::Node& pn = *proto.mutable_nodes(i);
    // Built only for an error message: most graphs have none.
    auto label = [&] { return ProtoNodeLabel(pn, i); };
    if (pn.op_type().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(label(), ": empty op_type"));
    }
    // Inline for the usual few edges: no heap block per node for lists AddNode only copies.
    ValueIdList inputs;
    inputs.reserve(pn.inputs_size());
    for (const std::string& name : pn.inputs()) {
      inputs.push_back(name.empty() ? ValueId() : g.FindOrAddValue(name));
    }
    ValueIdList outputs;
    outputs.reserve(pn.outputs_size());
    // A repeated output: compared with the others directly when there are few, through a set
    // when there are many (linear in the node's outputs either way).
    constexpr int kFewOutputs = 16;
    absl::flat_hash_set<int32_t> seen_outputs;
    if (pn.outputs_size() > kFewOutputs) seen_outputs.reserve(pn.outputs_size());
    for (int k = 0; k < pn.outputs_size(); ++k) {
      const std::string& name = pn.outputs(k);
      if (name.empty()) {
        outputs.push_back(ValueId());
        continue;
      }
      ValueId id = g.FindOrAddValue(name);
      std::string other = defined_by(id);
      if (!other.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(label(), ": output ", k, " '", name,
                                                       "' is already produced by ", other));
      }
      bool repeated = false;
      if (pn.outputs_size() > kFewOutputs) {
        repeated = !seen_outputs.insert(id.value()).second;
      } else {
        for (ValueId prev : outputs) repeated |= prev == id;
      }
      if (repeated) {
        return absl::InvalidArgumentError(
            absl::StrCat(label(), ": output '", name, "' is listed twice"));
      }
      outputs.push_back(id);
    }
    AttributeMap attributes;
    for (int k = 0; k < pn.attributes_size(); ++k) {
      v1::Attribute& a = *pn.mutable_attributes(k);
      if (a.name().empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(label(), ": attribute ", k, " has an empty name"));
      }
      if (a.value_case() == v1::Attribute::VALUE_NOT_SET) {
        return absl::InvalidArgumentError(
            absl::StrCat(label(), ": attribute '", a.name(), "' has no value"));
      }
      // What walks nested graphs (executors, captures, exports) is bounded by their depth.
      if (absl::Status s = CheckSubgraphDepth(a, kMaxSubgraphDepth); !s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(label(), ": attribute '", a.name(), "': ", s.message()));
      }
      std::string name = a.name();
      if (!attributes.try_emplace(name, std::move(a)).second) {
        return absl::InvalidArgumentError(
            absl::StrCat(label(), ": attribute '", name, "' is given twice"));
      }
    }
    // The checks above leave AddNode nothing to refuse; should it, the node is named by its
    // index (its strings have moved into the call).
    absl::StatusOr<NodeId> id =
        g.AddNode(TakeString(pn.name(), [&] { return pn.mutable_name(); }),
                  TakeString(pn.op_type(), [&] { return pn.mutable_op_type(); }),
                  TakeString(pn.domain(), [&] { return pn.mutable_domain(); }),
                  inputs, outputs, std::move(attributes));
    if (!id.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("node #", i, ": ", id.status().message()));
    }
    Node& node = g.mutable_node(*id);
    node.doc_string = TakeString(pn.doc_string(), [&] { return pn.mutable_doc_string(); });
    node.device = TakeString(pn.device(), [&] { return pn.mutable_device(); });
  }

  for (int i = 0; i < proto.outputs_size(); ++i) {
    v1::ValueInfo& out = *proto.mutable_outputs(i);
    if (out.name().empty()) {
      return absl::InvalidArgumentError(absl::StrCat("graph output ", i, " has an empty name"));
    }
    if (absl::Status s = CheckDeclaredDims(out.type(), "graph output", out.name()); !s.ok()) {
      return s;
    }
    ValueId id = g.FindOrAddValue(out.name());
    Value& v = g.mutable_value(id);
    // Declared output types are the client's expectation; keep them until inference runs.
    if (!v.is_graph_input && v.initializer < 0 && out.has_type()) {
      v.type = TensorTypeFromProto(out.type());
    }
    if (v.doc_string.empty()) {
      v.doc_string = TakeString(out.doc_string(), [&] { return out.mutable_doc_string(); });
    }
    g.AddGraphOutput(id);
  }
  for (v1::ValueInfo& vi : *proto.mutable_value_info()) {
    ValueId id = g.FindValue(vi.name());
    if (!id.valid()) continue;  // Annotation of a value the graph does not have: dropped.
    Value& v = g.mutable_value(id);
    if (v.is_graph_input || v.initializer >= 0) continue;
    if (absl::Status s = CheckDeclaredDims(vi.type(), "value_info", vi.name()); !s.ok()) return s;
    v.type = TensorTypeFromProto(vi.type());
    if (v.doc_string.empty()) {
      v.doc_string = TakeString(vi.doc_string(), [&] { return vi.mutable_doc_string(); });
    }
  }
  return g;
}

namespace {

// GraphToProto's body. `taken` holds the initializers moved out of `graph` (then they are moved
// into the result), or is null (then they are copied).
v1::Graph WriteProto(const Graph& graph, const ToProtoOptions& options,
                     std::vector<v1::Tensor>* taken) {
  v1::Graph out;
  out.set_name(graph.name);
  out.set_doc_string(graph.doc_string);
  for (const v1::OpsetImport& o : graph.opset_imports) *out.add_opset_imports() = o;
  if (graph.model) *out.mutable_model() = *graph.model;
  if (graph.memory_plan) *out.mutable_memory_plan() = *graph.memory_plan;
  for (const v1::StateUpdate& u : graph.state_updates) *out.add_state_updates() = u;

  auto write_info = [&](ValueId id, v1::ValueInfo* info) {
    const Value& v = graph.value(id);
    info->set_name(v.name);
    if (v.type.dtype != v1::DT_UNDEFINED || v.type.shape) {
      TensorTypeToProto(v.type, info->mutable_type());
    }
    if (!v.doc_string.empty()) info->set_doc_string(v.doc_string);
  };
  for (ValueId id : graph.inputs()) write_info(id, out.add_inputs());
  for (ValueId id : graph.outputs()) write_info(id, out.add_outputs());

  // Live initializers in their original order.
  std::vector<ValueId> init_owner(taken != nullptr ? taken->size() : graph.initializers().size());
  for (int i = 0; i < graph.num_value_slots(); ++i) {
    const Value& v = graph.value(ValueId(i));
    if (v.alive && v.initializer >= 0) init_owner[v.initializer] = ValueId(i);
  }
  for (size_t i = 0; i < init_owner.size(); ++i) {
    if (!init_owner[i].valid()) continue;
    v1::Tensor* t = out.add_initializers();
    *t = taken != nullptr ? std::move((*taken)[i]) : graph.initializers()[i];
    t->set_name(graph.value(init_owner[i]).name);
  }

  absl::StatusOr<std::vector<NodeId>> order = graph.TopologicalOrder();
  std::vector<NodeId> ids;
  if (order.ok()) {
    ids = std::move(*order);
  } else {
    for (int i = 0; i < graph.num_node_slots(); ++i) {
      if (graph.node(NodeId(i)).alive) ids.push_back(NodeId(i));
    }
  }
  out.mutable_nodes()->Reserve(static_cast<int>(ids.size()));
  for (NodeId id : ids) {
    const Node& n = graph.node(id);
    v1::Node* pn = out.add_nodes();
    // Empty strings are the proto default: setting them would only allocate.
    if (!n.name.empty()) pn->set_name(n.name);
    pn->set_op_type(n.op_type);
    if (!n.domain.empty()) pn->set_domain(n.domain);
    pn->mutable_inputs()->Reserve(static_cast<int>(n.inputs.size()));
    for (ValueId in : n.inputs) pn->add_inputs(in.valid() ? graph.value(in).name : "");
    pn->mutable_outputs()->Reserve(static_cast<int>(n.outputs.size()));
    for (ValueId o : n.outputs) pn->add_outputs(o.valid() ? graph.value(o).name : "");
    for (const auto& [name, attr] : n.attributes) {
      v1::Attribute* a = pn->add_attributes();
      *a = attr;
      a->set_name(name);
    }
    if (!n.doc_string.empty()) pn->set_doc_string(n.doc_string);
    if (!n.device.empty()) pn->set_device(n.device);
  }

  if (options.value_info) {
    for (int i = 0; i < graph.num_value_slots(); ++i) {
      const Value& v = graph.value(ValueId(i));
      if (!v.alive || !v.producer.valid() || v.graph_output_count > 0) continue;
      if (v.type.dtype == v1::DT_UNDEFINED && !v.type.shape) continue;
      write_info(ValueId(i), out.add_value_info());
    }
  }
  return out;
}

}  // namespace

v1::Graph GraphToProto(const Graph& graph, const ToProtoOptions& options) {
  return WriteProto(graph, options, nullptr);
}

v1::Graph GraphToProto(Graph&& graph, const ToProtoOptions& options) {
  std::vector<v1::Tensor> taken = graph.TakeInitializers();
  return WriteProto(graph, options, &taken);
}

}  // namespace graphopt
