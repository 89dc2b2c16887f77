#include "rules/dogfood/rule_agreement.h"

#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/graph.h"
#include "graph/inference.h"
#include "graph/types.h"
#include "tools/shape_agreement/agreement.h"

namespace graphopt {
namespace dogfood {
namespace {

// What one registry's op produced for a node.
struct Outcome {
  absl::Status status;
  std::vector<TensorType> types;               // per output (unknown for invalid outputs)
  std::vector<std::optional<Dims>> dims_values;  // per output
};

void ResetOutputs(Graph& graph, NodeId id, DimsValueTable* dims_values) {
  for (ValueId out : graph.node(id).outputs) {
    if (!out.valid()) continue;
    graph.mutable_value(out).type = TensorType();
    (*dims_values)[out.value()].reset();
  }
}

// Runs `op` on the node from scratch and records its outputs; on failure the outputs are left
// unknown.
Outcome Run(Graph& graph, NodeId id, const OpDef& op, DimsValueTable* dims_values) {
  ResetOutputs(graph, id, dims_values);
  Outcome o;
  o.status = InferNodeTypes(graph, id, op);
  if (o.status.ok()) o.status = InferNodeShapes(graph, id, op, dims_values);
  if (!o.status.ok()) ResetOutputs(graph, id, dims_values);
  for (ValueId out : graph.node(id).outputs) {
    if (!out.valid()) {
      o.types.emplace_back();
      o.dims_values.emplace_back();
      continue;
    }
    o.types.push_back(graph.value(out).type);
    o.dims_values.push_back((*dims_values)[out.value()]);
  }
  return o;
}

// What the rule knows compared with C++, accumulated over the parts of a node's outputs.
struct Knowledge {
  bool conflict = false;
  bool less = false;
  bool more = false;

  void Dim(const graphopt::Dim& cpp, const graphopt::Dim& rule) {
    if (cpp == rule) return;
    if (rule.is_unknown()) {
      less = true;
    } else if (cpp.is_unknown()) {
      more = true;
    } else {
      conflict = true;  // two sizes, two symbols, or a size against a symbol
    }
  }
  void Shape(const std::optional<Dims>& cpp, const std::optional<Dims>& rule) {
    if (!cpp || !rule) {
      less |= cpp.has_value() && !rule.has_value();
      more |= rule.has_value() && !cpp.has_value();
      return;
    }
    if (cpp->size() != rule->size()) {
      conflict = true;
      return;
    }
    for (size_t i = 0; i < cpp->size(); ++i) Dim((*cpp)[i], (*rule)[i]);
  }
  void Type(const TensorType& cpp, const TensorType& rule) {
    if (cpp.dtype != rule.dtype) {
      if (cpp.dtype != v1::DT_UNDEFINED && rule.dtype != v1::DT_UNDEFINED) {
        conflict = true;
      } else {
        less |= rule.dtype == v1::DT_UNDEFINED;
        more |= cpp.dtype == v1::DT_UNDEFINED;
      }
    }
    Shape(cpp.shape, rule.shape);
  }
  bool same() const { return !conflict && !less && !more; }
  DiffKind kind() const {
    if (conflict) return DiffKind::kConflict;
    if (less && more) return DiffKind::kLessAndMore;
    return less ? DiffKind::kRuleKnowsLess : DiffKind::kRuleKnowsMore;
  }
};

std::string Describe(const TensorType& type, const std::optional<Dims>& value) {
  return absl::StrCat(TensorTypeToString(type), " value=",
                      value ? ShapeToString(value) : std::string("none"));
}

}  // namespace

const char* DiffKindName(DiffKind kind) {
  switch (kind) {
    case DiffKind::kConflict:
      return "conflict";
    case DiffKind::kRuleKnowsLess:
      return "rule knows less";
    case DiffKind::kRuleKnowsMore:
      return "rule knows more";
    case DiffKind::kLessAndMore:
      return "rule knows less and more";
    case DiffKind::kOnlyCppRejects:
      return "only C++ rejects";
    case DiffKind::kOnlyRuleRejects:
      return "only the rule rejects";
  }
  return "?";
}

ModelComparison CompareRuleOps(absl::string_view name, const onnx::ModelProto& model,
                               const OpRegistry& cpp, const OpRegistry& rule,
                               const absl::flat_hash_set<std::string>& ops) {
  ModelComparison r;
  r.model = std::string(name);
  absl::StatusOr<Graph> imported = shape_agreement::ImportForInference(model);
  if (!imported.ok()) {
    r.import_error = imported.status().ToString();
    return r;
  }
  Graph& graph = *imported;
  absl::StatusOr<std::vector<NodeId>> order = graph.TopologicalOrder();
  if (!order.ok()) {
    r.import_error = order.status().ToString();
    return r;
  }
  DimsValueTable dims_values = InitialDimsValues(graph);
  for (NodeId id : *order) {
    const Node& n = graph.node(id);
    const OpDef* reference = cpp.Find(n.domain, n.op_type);
    if (reference == nullptr) continue;
    const std::string label = OpLabel(n.domain, n.op_type);
    if (!ops.contains(label)) {
      Run(graph, id, *reference, &dims_values);
      continue;
    }
    const std::string node_name = n.name.empty() ? absl::StrCat("#", id.value()) : n.name.str();
    OpTally& tally = r.ops[label];
    ++tally.nodes;
    const OpDef* candidate = rule.Find(n.domain, n.op_type);
    Outcome by_rule;
    if (candidate == nullptr) {
      by_rule.status = absl::NotFoundError("the rule registry does not know the op");
    } else {
      by_rule = Run(graph, id, *candidate, &dims_values);
    }
    // Last, so that inference carries on from the C++ results.
    const Outcome by_cpp = Run(graph, id, *reference, &dims_values);

    if (!by_cpp.status.ok() || !by_rule.status.ok()) {
      if (!by_cpp.status.ok() && !by_rule.status.ok()) {
        ++tally.agreed;
        ++tally.both_rejected;
        continue;
      }
      ++tally.disagreed;
      Difference d{r.model, node_name, label, "", DiffKind::kConflict, "", ""};
      if (!by_cpp.status.ok()) {
        d.kind = DiffKind::kOnlyCppRejects;
        d.cpp = absl::StrCat("error: ", by_cpp.status.message());
        d.rule = "accepted";
      } else {
        d.kind = DiffKind::kOnlyRuleRejects;
        d.cpp = "accepted";
        d.rule = absl::StrCat("error: ", by_rule.status.message());
      }
      r.differences.push_back(std::move(d));
      continue;
    }
    bool same = true;
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      if (!n.outputs[i].valid()) continue;
      Knowledge k;
      k.Type(by_cpp.types[i], by_rule.types[i]);
      k.Shape(by_cpp.dims_values[i], by_rule.dims_values[i]);
      if (k.same()) continue;
      same = false;
      r.differences.push_back({r.model, node_name, label, graph.value(n.outputs[i]).name,
                               k.kind(), Describe(by_cpp.types[i], by_cpp.dims_values[i]),
                               Describe(by_rule.types[i], by_rule.dims_values[i])});
    }
    if (same) {
      ++tally.agreed;
    } else {
      ++tally.disagreed;
    }
  }
  return r;
}

}  // namespace dogfood
}  // namespace graphopt
