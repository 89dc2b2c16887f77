#include "passes/fold_shapes_pass.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/inference.h"
#include "graph/kind_ops.h"
#include "graph/opset.h"
#include "graph/verifier.h"
#include "passes/effects.h"
#include "passes/rewrite_util.h"

namespace graphopt {
namespace {

// A tensor of `dtype` (int32 or int64) with `values`, of rank 0 when `scalar`, else 1; nullopt
// when a value does not fit the type.
std::optional<v1::Tensor> IntTensor(v1::DataType dtype, bool scalar,
                                    const std::vector<int64_t>& values) {
  v1::Tensor t;
  t.set_dtype(dtype);
  if (!scalar) t.add_dims(static_cast<int64_t>(values.size()));
  std::string raw;
  if (dtype == v1::DT_INT64) {
    raw.resize(values.size() * sizeof(int64_t));
    if (!values.empty()) std::memcpy(raw.data(), values.data(), raw.size());
  } else {
    std::vector<int32_t> narrow;
    narrow.reserve(values.size());
    for (int64_t v : values) {
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
        return std::nullopt;
      }
      narrow.push_back(static_cast<int32_t>(v));
    }
    raw.resize(narrow.size() * sizeof(int32_t));
    if (!narrow.empty()) std::memcpy(raw.data(), narrow.data(), raw.size());
  }
  t.set_raw_data(std::move(raw));
  return t;
}

bool AllInputsConstant(const Graph& graph, const Node& n) {
  for (ValueId in : n.inputs) {
    if (in.valid() && ConstantTensorOf(graph, in) == nullptr) return false;
  }
  return true;
}

struct Counts {
  int64_t folded = 0;
  int64_t reshape_targets = 0;
  int64_t reshapes_removed = 0;
};

// Infers shapes in topological order, as infer_shape does, keeping the contents inference knows
// of small integer tensors (graph/inference.h, "contents as dims"), and acts on them where a
// node reads something that is not a constant (nodes whose inputs are all constants are
// constant_fold's, which computes them with the kernels):
// - an int32/int64 output of rank <= 1 whose every element is known becomes an initializer:
//   Gather(Shape(x), 1) with x of [batch, 3, 224, 224] is 3, while batch stays symbolic;
// - a Reshape target that is computed but whose entries are known, or are x's own dim at the
//   same position (written 0: copy the input dim), or one entry of no known size (written -1)
//   becomes a constant, so the shape arithmetic feeding it goes; a target that copies every dim
//   of x in place makes the Reshape an identity, which is removed.
// -1 is computed from the element count, so on an empty input whose copied dims are 0 it is
// ambiguous (ONNX Runtime's reshape fusion makes the same trade). Only ops of the default domain
// without effects or hidden accesses are touched; graph outputs keep their names.
class FoldShapesPass : public Pass {
 public:
  absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) override {
    absl::StatusOr<std::vector<NodeId>> order = graph.TopologicalOrder();
    if (!order.ok()) return order.status();
    DimsValueTable dims = InitialDimsValues(graph);
    const KindOps kinds(graph, *context.ops);
    const HiddenAccess hidden(graph, *context.ops);
    const int64_t opset = DefaultDomainOpset(graph);
    Counts counts;
    int64_t visited = 0;
    for (NodeId id : *order) {
      if (absl::Status s = context.CheckStopEvery(visited++); !s.ok()) return s;
      if (!graph.node(id).alive) continue;
      absl::StatusOr<const OpDef*> op = NodeOp(graph, id, kinds);
      if (!op.ok()) return op.status();
      if (absl::Status s = InferNodeShapes(graph, id, **op, &dims); !s.ok()) return s;
      const Node& n = graph.node(id);
      if ((!n.domain.empty() && n.domain != "ai.onnx") || HasEffects(**op) ||
          IsNondeterministic(**op) || hidden.Touches(n) || AllInputsConstant(graph, n)) {
        continue;
      }
      if (FoldOutput(graph, id, dims)) {
        ++counts.folded;
        continue;
      }
      if (n.op_type == "Reshape" && (opset == 0 || opset >= 5)) {
        RewriteReshape(graph, id, hidden, &dims, &counts);
      }
    }
    context.Note(absl::StrCat("folded ", counts.folded,
                              " shape computations with known values into initializers; ",
                              counts.reshape_targets, " Reshape targets made constant, ",
                              counts.reshapes_removed, " Reshapes that keep the shape removed"));
    return counts.folded + counts.reshape_targets + counts.reshapes_removed > 0;
  }

 private:
  // Replaces the single output of `id` by an initializer when inference knows all its elements.
  static bool FoldOutput(Graph& graph, NodeId id, const DimsValueTable& dims) {
    const Node& n = graph.node(id);
    if (n.outputs.size() != 1 || !n.outputs[0].valid()) return false;
    const ValueId out = n.outputs[0];
    const std::optional<Dims>& value = dims[out.value()];
    if (!value) return false;
    const TensorType& type = graph.value(out).type;
    if ((type.dtype != v1::DT_INT64 && type.dtype != v1::DT_INT32) || !FullyKnown(type.shape) ||
        type.shape->size() > 1) {
      return false;
    }
    const bool scalar = type.shape->empty();
    const size_t count = scalar ? 1 : static_cast<size_t>((*type.shape)[0].size());
    if (value->size() != count) return false;
    std::vector<int64_t> values;
    values.reserve(count);
    for (const Dim& d : *value) {
      if (!d.is_known()) return false;
      values.push_back(d.size());
    }
    std::optional<v1::Tensor> tensor = IntTensor(type.dtype, scalar, values);
    if (!tensor) return false;
    ReplaceOutputByInitializer(graph, id, 0, *std::move(tensor));
    return true;
  }

  static void RewriteReshape(Graph& graph, NodeId id, const HiddenAccess& hidden,
                             DimsValueTable* dims, Counts* counts) {
    const Node& n = graph.node(id);
    if (n.inputs.size() < 2 || !n.inputs[0].valid() || !n.inputs[1].valid()) return;
    const ValueId x = n.inputs[0], target_value = n.inputs[1];
    if (ConstantTensorOf(graph, target_value) != nullptr) return;
    if (IntAttr(n, "allowzero").value_or(0) != 0) return;  // 0 would mean a 0 there
    const std::optional<Dims>& target = (*dims)[target_value.value()];
    const std::optional<Dims>& x_shape = graph.value(x).type.shape;
    const TensorType& target_type = graph.value(target_value).type;
    if (!target || !x_shape || target_type.dtype != v1::DT_INT64 || !target_type.shape ||
        target_type.shape->size() != 1) {
      return;
    }
    std::vector<int64_t> values;
    values.reserve(target->size());
    bool copies_all = target->size() == x_shape->size();
    bool has_minus_one = false;
    int free_entries = 0;
    for (size_t i = 0; i < target->size(); ++i) {
      const Dim& t = (*target)[i];
      const Dim* xd = i < x_shape->size() ? &(*x_shape)[i] : nullptr;
      if (t.is_known()) {
        values.push_back(t.size());
        has_minus_one |= t.size() == -1;
        copies_all &= t.size() == 0 ||
                      (xd != nullptr && xd->is_known() && xd->size() == t.size());
      } else if (t.is_symbol() && xd != nullptr && xd->is_symbol() &&
                 xd->symbol() == t.symbol()) {
        values.push_back(0);  // x's dim at the same position: copied
      } else if (t.is_unknown()) {
        // A symbol the input does not carry in place stays: -1 would lose what inference knows.
        values.push_back(-1);
        ++free_entries;
        copies_all = false;
      } else {
        return;
      }
    }
    if (free_entries > 1 || (free_entries == 1 && has_minus_one)) return;
    if (copies_all) {
      if (ReplaceNodeByValue(graph, id, x, hidden)) ++counts->reshapes_removed;
      return;
    }
    std::optional<v1::Tensor> tensor = IntTensor(v1::DT_INT64, false, values);
    if (!tensor) return;
    const ValueId constant =
        graph.AddUniqueValue(n.name.empty() ? std::string("reshape_target")
                                            : absl::StrCat(n.name.str(), "/target"));
    TensorType& type = graph.mutable_value(constant).type;
    type.dtype = v1::DT_INT64;
    type.shape = Dims{Dim::Known(static_cast<int64_t>(values.size()))};
    graph.SetInitializer(constant, *std::move(tensor));
    if (dims->size() <= static_cast<size_t>(constant.value())) {
      dims->resize(graph.num_value_slots());
    }
    Dims known;
    for (int64_t v : values) known.push_back(Dim::Known(v));
    (*dims)[constant.value()] = std::move(known);
    graph.SetInput(id, 1, constant);
    ++counts->reshape_targets;
  }
};

}  // namespace

PassInfo FoldShapesPassInfo() {
  PassInfo info;
  info.name = "fold_shapes";
  info.description =
      "Symbolic shape folding: shape arithmetic (Shape -> Gather/Slice -> Unsqueeze -> Concat, "
      "and the arithmetic on it) whose values inference knows becomes initializers while "
      "unknown dims such as the batch stay symbolic; computed Reshape targets become constants "
      "(0 for a dim copied in place, -1 for one unknown entry), and a Reshape that keeps its "
      "input's shape is removed.";
  info.requires_analyses = {Analysis::kTypes, Analysis::kShapes};
  // It re-infers the shapes as it goes; folded values keep their types.
  info.preserves = AnalysisSet::All();
  info.min_opt_level = 2;
  info.repeat_to_fixpoint = true;
  info.factory = OptionlessFactory<FoldShapesPass>();
  return info;
}

}  // namespace graphopt
