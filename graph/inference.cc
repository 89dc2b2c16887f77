#include "graph/inference.h"

#include <cstring>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_join.h"
#include "graph/opset.h"

namespace graphopt {

// --- InferenceContext typed attribute access ------------------------------------------------

const char* AttributeKindName(const v1::Attribute& a) {
  switch (a.value_case()) {
    case v1::Attribute::kI:
      return "int";
    case v1::Attribute::kF:
      return "float";
    case v1::Attribute::kS:
      return "string";
    case v1::Attribute::kT:
      return "tensor";
    case v1::Attribute::kG:
      return "graph";
    case v1::Attribute::kInts:
      return "ints";
    case v1::Attribute::kFloats:
      return "floats";
    case v1::Attribute::kStrings:
      return "strings";
    case v1::Attribute::kTensors:
      return "tensors";
    case v1::Attribute::kGraphs:
      return "graphs";
    case v1::Attribute::kDtype:
      return "dtype";
    case v1::Attribute::kShape:
      return "shape";
    case v1::Attribute::kOpaque:
      return "opaque";
    case v1::Attribute::VALUE_NOT_SET:
      break;
  }
  return "empty";
}

absl::StatusOr<int64_t> InferenceContext::GetInt(absl::string_view name) const {
  const v1::Attribute* a = attr(name);
  if (a == nullptr) return Error("missing required attribute '", name, "'");
  if (a->value_case() == v1::Attribute::kI) return a->i();
  if (a->value_case() == v1::Attribute::kDtype) return static_cast<int64_t>(a->dtype());
  return Error("attribute '", name, "' must be an int, got ", AttributeKindName(*a));
}

absl::StatusOr<int64_t> InferenceContext::GetInt(absl::string_view name, int64_t fallback) const {
  if (attr(name) == nullptr) return fallback;
  return GetInt(name);
}

absl::StatusOr<float> InferenceContext::GetFloat(absl::string_view name) const {
  const v1::Attribute* a = attr(name);
  if (a == nullptr) return Error("missing required attribute '", name, "'");
  if (a->value_case() == v1::Attribute::kF) return a->f();
  return Error("attribute '", name, "' must be a float, got ", AttributeKindName(*a));
}

absl::StatusOr<std::string> InferenceContext::GetString(absl::string_view name) const {
  const v1::Attribute* a = attr(name);
  if (a == nullptr) return Error("missing required attribute '", name, "'");
  if (a->value_case() == v1::Attribute::kS) return a->s();
  return Error("attribute '", name, "' must be a string, got ", AttributeKindName(*a));
}

absl::StatusOr<std::vector<int64_t>> InferenceContext::GetInts(absl::string_view name) const {
  const v1::Attribute* a = attr(name);
  if (a == nullptr) return Error("missing required attribute '", name, "'");
  if (a->value_case() == v1::Attribute::kInts) {
    return std::vector<int64_t>(a->ints().values().begin(), a->ints().values().end());
  }
  return Error("attribute '", name, "' must be a list of ints, got ", AttributeKindName(*a));
}

absl::StatusOr<std::vector<int64_t>> InferenceContext::GetInts(
    absl::string_view name, std::vector<int64_t> fallback) const {
  if (attr(name) == nullptr) return fallback;
  return GetInts(name);
}

absl::StatusOr<std::vector<int64_t>> TensorToInts(const v1::Tensor& tensor,
                                                   int64_t max_elements) {
  std::optional<int64_t> n = NumElements(ShapeFromDimsList(tensor));
  if (!n || *n > max_elements) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", tensor.name(),
                                                   "' has too many elements to read as ints"));
  }
  int width = 0;
  if (tensor.dtype() == v1::DT_INT64) width = 8;
  if (tensor.dtype() == v1::DT_INT32) width = 4;
  if (width == 0) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", tensor.name(), "' is ",
                                                   DataTypeName(tensor.dtype()),
                                                   ", expected int32 or int64"));
  }
  if (tensor.raw_data().size() != static_cast<size_t>(*n) * width) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", tensor.name(), "' holds ",
                                                   tensor.raw_data().size(), " bytes, expected ",
                                                   *n * width));
  }
  std::vector<int64_t> out(*n);
  const char* data = tensor.raw_data().data();
  for (int64_t i = 0; i < *n; ++i) {
    if (width == 8) {
      int64_t v;
      std::memcpy(&v, data + i * 8, 8);
      out[i] = v;
    } else {
      int32_t v;
      std::memcpy(&v, data + i * 4, 4);
      out[i] = v;
    }
  }
  return out;
}

Dims ShapeFromDimsList(const v1::Tensor& tensor) {
  Dims dims;
  dims.reserve(tensor.dims_size());
  for (int64_t d : tensor.dims()) dims.push_back(Dim::Known(d));
  return dims;
}

const v1::Tensor* ConstantTensorOf(const Graph& graph, ValueId value) {
  if (!value.valid()) return nullptr;
  const Value& v = graph.value(value);
  if (v.initializer >= 0) return v.is_graph_input ? nullptr : graph.initializer_of(value);
  if (!v.producer.valid()) return nullptr;
  // The producer's interned kind (a dense array) before its node: most producers are not
  // Constants, and their nodes need not be read.
  const OpKindId kind = graph.op_kind(v.producer);
  if (graph.op_kind_type(kind) != "Constant" || !graph.op_kind_domain(kind).empty()) return nullptr;
  const Node& n = graph.node(v.producer);
  auto it = n.attributes.find("value");
  if (it == n.attributes.end() || it->second.value_case() != v1::Attribute::kT) return nullptr;
  return &it->second.t();
}

namespace {

// The InferenceContext of one node of a Graph; writes results straight into the graph's values.
class NodeContext : public InferenceContext {
 public:
  NodeContext(Graph& graph, NodeId id, const OpDef& op, DimsValueTable* dims_values)
      : graph_(graph), id_(id), op_(op), dims_values_(dims_values) {}

  const Node& node() const override { return graph_.node(id_); }
  const OpDef& op() const override { return op_; }
  std::string NodeLabel() const override { return graph_.NodeLabel(id_); }
  int64_t opset_version() const override {
    // The interned kind's domain: the node's own string is further into the node.
    return OpsetVersion(graph_, graph_.op_kind_domain(graph_.op_kind(id_)));
  }

  const TensorType& input_type(int i) const override {
    static const TensorType* const kUnknown = new TensorType();
    if (!has_input(i)) return *kUnknown;
    return graph_.value(node().inputs[i]).type;
  }
  const v1::Tensor* input_constant(int i) const override {
    return has_input(i) ? ConstantTensorOf(graph_, node().inputs[i]) : nullptr;
  }
  const Dims* input_dims_value(int i) const override {
    if (!has_input(i) || dims_values_ == nullptr) return nullptr;
    const std::optional<Dims>& v = (*dims_values_)[node().inputs[i].value()];
    return v ? &*v : nullptr;
  }
  const v1::Attribute* attr(absl::string_view name) const override {
    const Node& n = node();
    auto it = n.attributes.find(name);
    if (it != n.attributes.end()) return &it->second;
    const v1::AttributeSpec* spec = op_.attribute_spec(name);
    if (spec != nullptr && spec->has_default_value()) return &spec->default_value();
    return nullptr;
  }
  v1::DataType output_dtype(int i) const override {
    return has_output(i) ? graph_.value(node().outputs[i]).type.dtype : v1::DT_UNDEFINED;
  }
  void set_output_dtype(int i, v1::DataType dtype) override {
    if (has_output(i)) graph_.mutable_value(node().outputs[i]).type.dtype = dtype;
  }
  void set_output_kind(int i, v1::ValueKind kind) override {
    if (has_output(i)) graph_.mutable_value(node().outputs[i]).type.kind = kind;
  }
  void set_output_shape(int i, std::optional<Dims> shape) override {
    if (has_output(i)) graph_.mutable_value(node().outputs[i]).type.shape = std::move(shape);
  }
  void set_output_dims_value(int i, Dims value) override {
    if (has_output(i) && dims_values_ != nullptr) {
      (*dims_values_)[node().outputs[i].value()] = std::move(value);
    }
  }

 private:
  Graph& graph_;
  NodeId id_;
  const OpDef& op_;
  DimsValueTable* dims_values_;
};

std::string AllowedList(const v1::TypeConstraint& c) {
  return absl::StrJoin(c.allowed(), ", ", [](std::string* out, int dt) {
    out->append(DataTypeName(static_cast<v1::DataType>(dt)));
  });
}

}  // namespace

DimsValueTable InitialDimsValues(const Graph& graph) {
  DimsValueTable dims_values(graph.num_value_slots());
  // Only initializers qualify: visit them, not every value slot.
  for (ValueId id : graph.InitializerValues()) {
    const Value& v = graph.value(id);
    if (!v.alive || v.is_graph_input) continue;
    const v1::Tensor& t = *graph.initializer_of(id);
    if (t.dims_size() > 1) continue;
    absl::StatusOr<std::vector<int64_t>> ints = TensorToInts(t, kMaxDimsValueElements);
    if (!ints.ok()) continue;
    Dims dims;
    dims.reserve(ints->size());
    for (int64_t x : *ints) dims.push_back(Dim::Known(x));
    dims_values[id.value()] = std::move(dims);
  }
  return dims_values;
}

absl::Status InferNodeTypes(Graph& graph, NodeId id, const OpDef& op) {
  NodeContext ctx(graph, id, op, nullptr);
  const Node& n = graph.node(id);
  // Constraint name -> (dtype, input index that bound it). Ops have a handful of constraints.
  absl::InlinedVector<std::pair<const v1::TypeConstraint*, std::pair<v1::DataType, int>>, 4>
      bound;
  auto find_bound = [&](const v1::TypeConstraint* c) -> std::pair<v1::DataType, int>* {
    for (auto& b : bound) {
      if (b.first == c) return &b.second;
    }
    return nullptr;
  };
  for (int i = 0; i < static_cast<int>(n.inputs.size()); ++i) {
    if (!n.inputs[i].valid()) continue;
    const v1::ValueKind kind = graph.value(n.inputs[i]).type.kind;
    if (kind != v1::VALUE_TENSOR && !op.takes_containers) {
      return ctx.Error("input ", i, " '", graph.value(n.inputs[i]).name, "' is a ",
                       ValueKindName(kind), "; the op takes tensors only");
    }
    const v1::ArgSpec* spec = op.input_spec(i);
    if (spec == nullptr || spec->type_constraint().empty()) continue;
    const v1::DataType dt = graph.value(n.inputs[i]).type.dtype;
    if (dt == v1::DT_UNDEFINED) continue;
    auto it = op.type_constraints.find(spec->type_constraint());
    const v1::TypeConstraint* c = it->second;
    bool allowed = false;
    for (int a : c->allowed()) allowed |= (a == dt);
    if (!allowed) {
      return ctx.Error("input ", i, " (", spec->name(), ") '", graph.value(n.inputs[i]).name,
                       "' has type ", DataTypeName(dt), ", which ", c->name(),
                       " does not allow (allowed: ", AllowedList(*c), ")");
    }
    if (auto* b = find_bound(c)) {
      if (b->first != dt) {
        return ctx.Error("input ", i, " (", spec->name(), ") '", graph.value(n.inputs[i]).name,
                         "' has type ", DataTypeName(dt), " but ", c->name(), " is ",
                         DataTypeName(b->first),
                         " from input ", b->second, " '",
                         graph.value(n.inputs[b->second]).name, "'");
      }
    } else {
      bound.push_back({c, {dt, i}});
    }
  }
  for (int i = 0; i < static_cast<int>(n.outputs.size()); ++i) {
    if (!n.outputs[i].valid()) continue;
    const v1::ArgSpec* spec = op.output_spec(i);
    v1::DataType dt = v1::DT_UNDEFINED;
    if (spec != nullptr && !spec->dtype_from_attribute().empty()) {
      absl::StatusOr<int64_t> v = ctx.GetInt(spec->dtype_from_attribute());
      if (!v.ok()) return v.status();
      if (!v1::DataType_IsValid(static_cast<int>(*v)) || *v == v1::DT_UNDEFINED) {
        return ctx.Error("attribute '", spec->dtype_from_attribute(), "' is not a data type: ",
                         *v);
      }
      dt = static_cast<v1::DataType>(*v);
    } else if (spec != nullptr && !spec->type_constraint().empty()) {
      const v1::TypeConstraint* c = op.type_constraints.find(spec->type_constraint())->second;
      if (auto* b = find_bound(c)) {
        dt = b->first;
      } else if (c->allowed_size() == 1) {
        dt = static_cast<v1::DataType>(c->allowed(0));
      }
    }
    ctx.set_output_dtype(i, dt);
    ctx.set_output_kind(i, v1::VALUE_TENSOR);
  }
  if (op.type_fn) return op.type_fn(ctx);
  return absl::OkStatus();
}

absl::Status InferNodeShapes(Graph& graph, NodeId id, const OpDef& op,
                             DimsValueTable* dims_values) {
  NodeContext ctx(graph, id, op, dims_values);
  // Contents known from an earlier run may no longer hold; the rule sets them again if they do.
  if (dims_values != nullptr) {
    for (ValueId out : graph.node(id).outputs) {
      if (out.valid()) (*dims_values)[out.value()].reset();
    }
  }
  // An op without a shape rule (one known only by its decomposition body, until inline_functions
  // expands it) says nothing: its outputs keep what they have, unknown unless declared.
  if (!op.shape_fn) return absl::OkStatus();
  return op.shape_fn(ctx);
}

absl::StatusOr<std::optional<int64_t>> EvaluateNodeCost(const Graph& graph, NodeId id,
                                                        const OpDef& op, const CostFn& fn) {
  // NodeContext writes only through its setters, which a const context cannot call.
  const NodeContext ctx(const_cast<Graph&>(graph), id, op, nullptr);
  return fn(ctx);
}

}  // namespace graphopt
