#include "passes/cost_model.h"

#include <limits>

#include "absl/strings/string_view.h"

#include "graph/fused_group.h"
#include "graph/inference.h"
#include "graph/types.h"

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

// The type of `v` when its shape is concrete (every dim known), else null.
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

// The known dim `axis` (negative counts from the end) of input `i`, or nullopt.
std::optional<int64_t> InputDim(const Graph& graph, const Node& n, int i, int axis) {
  if (i >= static_cast<int>(n.inputs.size())) return std::nullopt;
  const Dims* shape = ConcreteShape(graph, n.inputs[i]);
  if (shape == nullptr) return std::nullopt;
  const int rank = static_cast<int>(shape->size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return std::nullopt;
  return (*shape)[axis].size();
}

std::optional<int64_t> OutputElements(const Graph& graph, const Node& n) {
  if (n.outputs.empty()) return std::nullopt;
  const Dims* shape = ConcreteShape(graph, n.outputs[0]);
  if (shape == nullptr) return std::nullopt;
  return NumElements(*shape);
}

int64_t IntAttribute(const Node& n, const char* name, int64_t fallback) {
  auto it = n.attributes.find(name);
  if (it == n.attributes.end() || it->second.value_case() != v1::Attribute::kI) return fallback;
  return it->second.i();
}

// Which built-in flops estimate an op kind has (see cost_model.h).
enum class BuiltinFlops { kNone, kMatMul, kGemm, kConv };

BuiltinFlops BuiltinFlopsOf(absl::string_view domain, absl::string_view op_type) {
  if (!domain.empty() && domain != "ai.onnx") return BuiltinFlops::kNone;
  if (op_type == "MatMul") return BuiltinFlops::kMatMul;
  if (op_type == "Gemm") return BuiltinFlops::kGemm;
  if (op_type == "Conv") return BuiltinFlops::kConv;
  return BuiltinFlops::kNone;
}

std::optional<int64_t> EstimateBuiltinFlops(const Graph& graph, const Node& n,
                                            BuiltinFlops kind) {
  std::optional<int64_t> inner;
  switch (kind) {
    case BuiltinFlops::kNone:
      return std::nullopt;
    case BuiltinFlops::kMatMul:
      inner = InputDim(graph, n, 0, -1);
      break;
    case BuiltinFlops::kGemm:
      inner = InputDim(graph, n, 0, IntAttribute(n, "transA", 0) != 0 ? 0 : 1);
      break;
    case BuiltinFlops::kConv: {
      if (n.inputs.size() < 2) return std::nullopt;
      const Dims* w = ConcreteShape(graph, n.inputs[1]);
      if (w == nullptr || w->empty() || (*w)[0].size() <= 0) return std::nullopt;
      const std::optional<int64_t> elements = NumElements(*w);
      if (!elements) return std::nullopt;
      inner = *elements / (*w)[0].size();
      break;
    }
  }
  return Mul(Mul(OutputElements(graph, n), inner), 2);
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
  cost.flops = op->flops_fn ? RuleFigure(graph, id, *op, op->flops_fn)
                            : EstimateBuiltinFlops(graph, n, builtin);
  if (op->bytes_fn) {
    cost.bytes = RuleFigure(graph, id, *op, op->bytes_fn);
  } else if (!n.has_subgraphs ||
             (n.op_type == kFusedGroupOp && n.domain == kFusedGroupDomain)) {
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
