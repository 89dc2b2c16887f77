#include "passes/cost_model.h"

#include <limits>
#include <string>

#include "absl/strings/string_view.h"
#include "graph/inference.h"
#include "graph/types.h"
#include "ops/fused_group.h"
#include "ops/nn_grad_ops.h"

namespace graphopt {
namespace {

constexpr int64_t kMaxCost = std::numeric_limits<int64_t>::max();

std::optional<int64_t> Mul(std::optional<int64_t> a, std::optional<int64_t> b) {
  int64_t out;
  if (!a || !b || __builtin_mul_overflow(*a, *b, &out)) return std::nullopt;
  return out;
}

std::optional<int64_t> Add(std::optional<int64_t> a, std::optional<int64_t> b) {
  int64_t out;
  if (!a || !b || __builtin_add_overflow(*a, *b, &out)) return std::nullopt;
  return out;
}

// The shape of `v` when it is concrete (every dim known), else null.
const Dims* ConcreteShape(const Graph& graph, ValueId v) {
  if (!v.valid()) return nullptr;
  const std::optional<Dims>& shape = graph.value(v).type.shape;
  if (!shape) return nullptr;
  for (const Dim& d : *shape) {
    if (!d.is_known()) return nullptr;
  }
  return &*shape;
}

std::optional<int64_t> ValueBytes(const Graph& graph, ValueId v) {
  const Dims* shape = ConcreteShape(graph, v);
  const int element = DataTypeSize(graph.value(v).type.dtype);
  if (shape == nullptr || element == 0) return std::nullopt;
  return Mul(NumElements(*shape), element);
}

// The known dim `axis` (negative counts from the end) of `shape`, or nullopt.
std::optional<int64_t> DimOf(const Dims* shape, int axis) {
  if (shape == nullptr) return std::nullopt;
  const int rank = static_cast<int>(shape->size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return std::nullopt;
  return (*shape)[axis].size();
}

int64_t IntAttribute(const AttributeMap& attributes, const char* name, int64_t fallback) {
  auto it = attributes.find(name);
  if (it == attributes.end() || it->second.value_case() != v1::Attribute::kI) return fallback;
  return it->second.i();
}

int64_t IntAttribute(const v1::Node& node, const char* name, int64_t fallback) {
  for (const v1::Attribute& a : node.attributes()) {
    if (a.name() == name) return a.value_case() == v1::Attribute::kI ? a.i() : fallback;
  }
  return fallback;
}

// Which built-in flops estimate an op kind has (see cost_model.h).
enum class BuiltinFlops { kNone, kMatMul, kGemm, kConv, kConvGradData, kConvGradWeight };

BuiltinFlops BuiltinFlopsOf(absl::string_view domain, absl::string_view op_type) {
  if (domain == kNnGradDomain) {
    if (op_type == kConvGradDataOp) return BuiltinFlops::kConvGradData;
    if (op_type == kConvGradWeightOp) return BuiltinFlops::kConvGradWeight;
    return BuiltinFlops::kNone;
  }
  if (!domain.empty() && domain != "ai.onnx") return BuiltinFlops::kNone;
  if (op_type == "MatMul") return BuiltinFlops::kMatMul;
  if (op_type == "Gemm") return BuiltinFlops::kGemm;
  if (op_type == "Conv") return BuiltinFlops::kConv;
  return BuiltinFlops::kNone;
}

// The built-in estimate from the concrete shapes (null: not concrete) of inputs 0 and 1 and
// output 0, and Gemm's transA.
std::optional<int64_t> EstimateBuiltinFlops(BuiltinFlops kind, const Dims* a, const Dims* b,
                                            const Dims* y, int64_t trans_a) {
  std::optional<int64_t> inner;
  switch (kind) {
    case BuiltinFlops::kNone:
      return std::nullopt;
    case BuiltinFlops::kMatMul:
      inner = DimOf(a, -1);
      break;
    case BuiltinFlops::kGemm:
      inner = DimOf(a, trans_a != 0 ? 0 : 1);
      break;
    case BuiltinFlops::kConv: {
      if (b == nullptr || b->empty() || (*b)[0].size() <= 0) return std::nullopt;
      const std::optional<int64_t> elements = NumElements(*b);
      if (!elements) return std::nullopt;
      inner = *elements / (*b)[0].size();
      break;
    }
    // The forward Conv's figure: ConvGradData(dY, W) from dY and W, ConvGradWeight(X, dY) -> dW
    // from dY and dW.
    case BuiltinFlops::kConvGradData:
      return EstimateBuiltinFlops(BuiltinFlops::kConv, nullptr, b, a, 0);
    case BuiltinFlops::kConvGradWeight:
      return EstimateBuiltinFlops(BuiltinFlops::kConv, nullptr, y, b, 0);
  }
  return Mul(Mul(y == nullptr ? std::nullopt : NumElements(*y), inner), 2);
}

std::optional<int64_t> EstimateBuiltinFlops(const Graph& graph, const Node& n,
                                            BuiltinFlops kind) {
  if (kind == BuiltinFlops::kNone || n.inputs.size() < 2 || n.outputs.empty()) {
    return std::nullopt;
  }
  return EstimateBuiltinFlops(kind, ConcreteShape(graph, n.inputs[0]),
                              ConcreteShape(graph, n.inputs[1]),
                              ConcreteShape(graph, n.outputs[0]),
                              IntAttribute(n.attributes, "transA", 0));
}

// The concrete shape of value `name` of a fused group's body (its inputs, outputs, value_info
// or initializers), kept in `storage`; null when unknown. Bodies are small: a linear search.
const Dims* BodyShape(const v1::Graph& body, const std::string& name, Dims* storage) {
  auto concrete = [&](const v1::TensorType& type) -> const Dims* {
    if (!type.has_shape()) return nullptr;
    *storage = ShapeFromProto(type.shape());
    for (const Dim& d : *storage) {
      if (!d.is_known()) return nullptr;
    }
    return storage;
  };
  for (const auto* list : {&body.inputs(), &body.value_info(), &body.outputs()}) {
    for (const v1::ValueInfo& v : *list) {
      if (v.name() == name) return concrete(v.type());
    }
  }
  for (const v1::Tensor& t : body.initializers()) {
    if (t.name() == name) {
      storage->clear();
      for (int64_t d : t.dims()) storage->push_back(Dim::Known(d));
      return storage;
    }
  }
  return nullptr;
}

// A fused group's flops: those of the MatMul, Gemm and Conv nodes of its body (its epilogue of
// bias and activations is not counted, as for those ops alone); unknown when it has none or
// one of them is unknown.
std::optional<int64_t> FusedGroupFlops(const Node& n) {
  auto it = n.attributes.find(kFusedGroupBody);
  if (it == n.attributes.end() || it->second.value_case() != v1::Attribute::kG) {
    return std::nullopt;
  }
  const v1::Graph& body = it->second.g();
  std::optional<int64_t> flops;
  for (const v1::Node& inner : body.nodes()) {
    const BuiltinFlops kind = BuiltinFlopsOf(inner.domain(), inner.op_type());
    if (kind == BuiltinFlops::kNone) continue;
    if (inner.inputs_size() < 2 || inner.outputs_size() < 1) return std::nullopt;
    Dims a, b, y;
    const std::optional<int64_t> f = EstimateBuiltinFlops(
        kind, BodyShape(body, inner.inputs(0), &a), BodyShape(body, inner.inputs(1), &b),
        BodyShape(body, inner.outputs(0), &y), IntAttribute(inner, "transA", 0));
    if (!f) return std::nullopt;
    flops = Add(flops.value_or(0), f);
  }
  return flops;
}

// A figure from a cost rule: unknown when the rule fails or gives a negative one.
std::optional<int64_t> RuleFigure(const Graph& graph, NodeId id, const OpDef& op,
                                  const CostFn& fn) {
  absl::StatusOr<std::optional<int64_t>> figure = EvaluateNodeCost(graph, id, op, fn);
  if (!figure.ok() || !figure->has_value() || **figure < 0) return std::nullopt;
  return **figure;
}

std::optional<int64_t> InputOutputBytes(const Graph& graph, const Node& n) {
  std::optional<int64_t> bytes = 0;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const ValueId v = n.inputs[i];
    if (!v.valid()) continue;
    bool repeated = false;
    for (size_t j = 0; j < i && !repeated; ++j) repeated = n.inputs[j] == v;
    if (!repeated) bytes = Add(bytes, ValueBytes(graph, v));
  }
  for (ValueId v : n.outputs) {
    if (v.valid()) bytes = Add(bytes, ValueBytes(graph, v));
  }
  return bytes;
}

NodeCost Estimate(const Graph& graph, NodeId id, const OpDef* op, BuiltinFlops builtin) {
  NodeCost cost;
  if (op == nullptr) return cost;
  const Node& n = graph.node(id);
  const bool fused = n.has_subgraphs && n.op_type == kFusedGroupOp && n.domain == kFusedGroupDomain;
  if (op->flops_fn) {
    cost.flops = RuleFigure(graph, id, *op, op->flops_fn);
  } else if (fused) {
    cost.flops = FusedGroupFlops(n);
  } else {
    cost.flops = EstimateBuiltinFlops(graph, n, builtin);
  }
  if (op->bytes_fn) {
    cost.bytes = RuleFigure(graph, id, *op, op->bytes_fn);
  } else if (!n.has_subgraphs || fused) {
    cost.bytes = InputOutputBytes(graph, n);
  }
  return cost;
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t out;
  return __builtin_add_overflow(a, b, &out) ? kMaxCost : out;
}

}  // namespace

NodeCost EstimateNodeCost(const Graph& graph, NodeId id, const OpDef* op) {
  const Node& n = graph.node(id);
  return Estimate(graph, id, op, BuiltinFlopsOf(n.domain, n.op_type));
}

std::vector<NodeCost> EstimateCosts(const Graph& graph, const OpRegistry& ops) {
  // Per op kind: its descriptor and built-in estimate, looked up on first use.
  struct Kind {
    bool looked_up = false;
    const OpDef* op = nullptr;
    BuiltinFlops builtin = BuiltinFlops::kNone;
  };
  std::vector<Kind> kinds(graph.num_op_kinds());
  std::vector<NodeCost> costs(graph.num_node_slots());
  for (int i = 0; i < graph.num_node_slots(); ++i) {
    const NodeId id(i);
    if (!graph.node(id).alive) continue;
    const OpKindId kind_id = graph.op_kind(id);
    Kind& kind = kinds[kind_id.value()];
    if (!kind.looked_up) {
      const absl::string_view domain = graph.op_kind_domain(kind_id);
      const absl::string_view type = graph.op_kind_type(kind_id);
      kind = {true, ops.Find(domain, type), BuiltinFlopsOf(domain, type)};
    }
    costs[i] = Estimate(graph, id, kind.op, kind.builtin);
  }
  return costs;
}

CostTotals SumCosts(const Graph& graph, const std::vector<NodeCost>& costs) {
  CostTotals totals;
  for (int i = 0; i < graph.num_node_slots() && i < static_cast<int>(costs.size()); ++i) {
    if (!graph.node(NodeId(i)).alive) continue;
    ++totals.nodes;
    const NodeCost& c = costs[i];
    if (c.flops) {
      totals.flops = SaturatingAdd(totals.flops, *c.flops);
    } else {
      ++totals.flops_unknown;
    }
    if (c.bytes) {
      totals.bytes = SaturatingAdd(totals.bytes, *c.bytes);
    } else {
      ++totals.bytes_unknown;
    }
  }
  return totals;
}

}  // namespace graphopt
