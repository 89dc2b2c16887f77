#include "passes/simplify_pass.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/inference.h"
#include "graph/opset.h"
#include "passes/rewrite_util.h"

namespace graphopt {
namespace {

// Constants larger than this are not inspected for neutral elements.
constexpr int64_t kMaxInspectedElements = int64_t{1} << 16;

struct Options {
  // x + (+0.0) and x - (-0.0) are x except for x = -0.0; allowed only when asked.
  bool ignore_signed_zeros = false;
};

// What a constant operand of an arithmetic node is, for the neutral-element rules: its dtype
// and dims, and whether all its elements are one, zeros of either sign, or -0.0 / +0.0 only.
struct ConstantSummary {
  bool known = false;  // a constant of at most kMaxInspectedElements numeric elements
  v1::DataType dtype = v1::DT_UNDEFINED;
  runtime::Shape dims;
  bool all_one = false;
  bool all_zero = false;
  bool all_negative_zero = false;
  bool all_positive_zero = false;
};

ConstantSummary Summarize(const runtime::Tensor& c) {
  ConstantSummary s;
  if (c.dtype() == v1::DT_STRING || c.num_elements() == 0) return s;
  s.known = true;
  s.dtype = c.dtype();
  s.dims = c.shape();
  s.all_one = s.all_zero = s.all_negative_zero = s.all_positive_zero = true;
  for (int64_t i = 0; i < c.num_elements(); ++i) {
    const double e = c.ElementAsDouble(i);
    s.all_one &= e == 1;
    s.all_zero &= e == 0;
    s.all_negative_zero &= e == 0 && std::signbit(e);
    s.all_positive_zero &= e == 0 && !std::signbit(e);
  }
  return s;
}

// Lossless (exact and injective) element conversions `from` -> `to` that the runtime computes
// by value. Half-precision sources are left out: the runtime canonicalises their NaNs.
bool LosslessCast(v1::DataType from, v1::DataType to) {
  using v1::DataType;
  auto in = [to](std::initializer_list<DataType> list) {
    return std::find(list.begin(), list.end(), to) != list.end();
  };
  switch (from) {
    case v1::DT_BOOL:
      return in({v1::DT_INT8, v1::DT_UINT8, v1::DT_INT16, v1::DT_UINT16, v1::DT_INT32,
                 v1::DT_UINT32, v1::DT_INT64, v1::DT_UINT64, v1::DT_FLOAT32, v1::DT_FLOAT64});
    case v1::DT_INT8:
      return in({v1::DT_INT16, v1::DT_INT32, v1::DT_INT64, v1::DT_FLOAT32, v1::DT_FLOAT64});
    case v1::DT_UINT8:
      return in({v1::DT_INT16, v1::DT_UINT16, v1::DT_INT32, v1::DT_UINT32, v1::DT_INT64,
                 v1::DT_UINT64, v1::DT_FLOAT32, v1::DT_FLOAT64});
    case v1::DT_INT16:
      return in({v1::DT_INT32, v1::DT_INT64, v1::DT_FLOAT32, v1::DT_FLOAT64});
    case v1::DT_UINT16:
      return in({v1::DT_INT32, v1::DT_UINT32, v1::DT_INT64, v1::DT_UINT64, v1::DT_FLOAT32,
                 v1::DT_FLOAT64});
    case v1::DT_INT32:
      return in({v1::DT_INT64, v1::DT_FLOAT64});
    case v1::DT_UINT32:
      return in({v1::DT_INT64, v1::DT_UINT64, v1::DT_FLOAT64});
    case v1::DT_FLOAT32:
      // Exact for every float; the round trip back keeps every bit pattern but signalling
      // NaNs, which come out quiet (as any float arithmetic leaves them).
      return to == v1::DT_FLOAT64;
    default:
      return false;
  }
}

// The producer of `value` when it is a live node of the default domain running `op_type`.
NodeId ProducerOf(const Graph& graph, ValueId value, const char* op_type) {
  if (!value.valid()) return NodeId();
  const NodeId p = graph.value(value).producer;
  if (!p.valid()) return NodeId();
  const Node& n = graph.node(p);
  if (!n.alive || !n.domain.empty() || n.op_type != op_type) return NodeId();
  return p;
}

const v1::Attribute* Attr(const Node& n, const char* name) {
  auto it = n.attributes.find(name);
  return it == n.attributes.end() ? nullptr : &it->second;
}

std::optional<int> RankOf(const Graph& graph, ValueId v) {
  const std::optional<Dims>& shape = graph.value(v).type.shape;
  if (!shape) return std::nullopt;
  return static_cast<int>(shape->size());
}

// Normalised, sorted axes, or nullopt when one is out of range or repeated.
std::optional<std::vector<int64_t>> NormalizedAxes(std::vector<int64_t> axes, int64_t rank) {
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return std::nullopt;
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return std::nullopt;
  return axes;
}

// The default-domain ops Simplify has rules for.
constexpr const char* kRuleOps[] = {"Add",     "Sub",       "Mul",     "Div",    "Pow",
                                    "Transpose", "Reshape", "Cast",    "Shape",  "Size",
                                    "Squeeze", "Unsqueeze", "Expand",  "Slice",  "Pad",
                                    "Concat"};

class SimplifyPass : public Pass {
 public:
  explicit SimplifyPass(Options options) : options_(options) {}

  absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) override {
    absl::StatusOr<std::vector<NodeId>> order = graph.TopologicalOrder();
    if (!order.ok()) return order.status();
    opset_ = DefaultDomainOpset(graph);
    ops_ = context.ops;
    hidden_.emplace(graph, *context.ops);
    summaries_.clear();
    counts_.clear();
    kept_ = 0;
    // The kinds some rule applies to, found through the dense kind array: the other nodes are
    // not read at all.
    std::vector<char> candidate(graph.num_op_kinds(), 0);
    bool any_candidate = false;
    for (const char* op : kRuleOps) {
      const OpKindId kind = graph.FindOpKind("", op);
      if (graph.num_live_nodes_of_kind(kind) == 0) continue;
      candidate[kind.value()] = 1;
      any_candidate = true;
    }
    if (!any_candidate) order->clear();
    for (size_t k = 0; k < order->size(); ++k) {
      if (absl::Status s = context.CheckStopEvery(k); !s.ok()) return s;
      graph.PrefetchSweep(*order, k);
      const NodeId id = (*order)[k];
      if (!candidate[graph.op_kind(id).value()]) continue;
      const Node& n = graph.node(id);
      if (!n.alive || TouchesHiddenValue(n)) continue;
      // The inputs as they were: whatever the rewrite leaves unread goes too.
      const ValueIdList inputs = n.inputs;
      const std::string op = n.op_type;
      const char* rule = Simplify(graph, id, op);
      if (rule == nullptr) continue;
      ++counts_[rule];
      for (ValueId in : inputs) RemoveDefinitionIfUnused(graph, in, *ops_, *hidden_);
    }
    int64_t total = 0;
    for (const auto& [rule, count] : counts_) total += count;
    context.Note(absl::StrCat(
        "simplified ", total, " nodes",
        counts_.empty() ? "" : ": ",
        absl::StrJoin(counts_, ", ",
                      [](std::string* out, const auto& kv) {
                        absl::StrAppend(out, kv.first, " ", kv.second);
                      }),
        kept_ > 0 ? absl::StrCat("; kept ", kept_,
                                 " no-ops between graph inputs/initializers and outputs")
                  : ""));
    return total > 0;
  }

 private:
  // Applies the first rule that matches node `id`; returns its name, or null when none did.
  const char* Simplify(Graph& graph, NodeId id, const std::string& op) {
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow") {
      return NeutralOperand(graph, id, op);
    }
    if (op == "Transpose") return Transpose(graph, id);
    if (op == "Reshape") return Reshape(graph, id);
    if (op == "Cast") return Cast(graph, id);
    if (op == "Shape" || op == "Size") return ShapeOfStatic(graph, id, op);
    if (op == "Squeeze") return SqueezeOfUnsqueeze(graph, id);
    if (op == "Unsqueeze") return UnsqueezeOfSqueeze(graph, id);
    if (op == "Expand" || op == "Slice") return SameShapeNoOp(graph, id, op);
    if (op == "Pad") return ZeroPad(graph, id);
    if (op == "Concat") return graph.node(id).inputs.size() == 1 && graph.node(id).inputs[0].valid()
                                   ? Bypass(graph, id, graph.node(id).inputs[0], "concat_single")
                                   : nullptr;
    return nullptr;
  }

  // Nodes reading or producing a value some node writes or a subgraph reads by name are left
  // alone: the graph's edges do not order those accesses against a rewrite.
  bool TouchesHiddenValue(const Node& n) const {
    for (ValueId v : n.inputs) {
      if (hidden_->any(v)) return true;
    }
    for (ValueId v : n.outputs) {
      if (hidden_->any(v)) return true;
    }
    return false;
  }

  // Replaces the node by `x` (its output's readers read x); null when the interface forbids it.
  const char* Bypass(Graph& graph, NodeId id, ValueId x, const char* rule) {
    if (ReplaceNodeByValue(graph, id, x, *hidden_)) return rule;
    ++kept_;
    return nullptr;
  }

  // x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1, x ** 1, when the constant cannot broadcast x to
  // another shape and the zero's sign keeps -0.0 intact.
  const char* NeutralOperand(Graph& graph, NodeId id, const std::string& op) {
    const Node& n = graph.node(id);
    if (n.inputs.size() != 2 || !n.inputs[0].valid() || !n.inputs[1].valid() ||
        n.outputs.empty() || !n.outputs[0].valid()) {
      return nullptr;
    }
    const bool commutative = op == "Add" || op == "Mul";
    for (int x_index : {0, 1}) {
      if (x_index == 1 && !commutative) break;
      const ValueId x = n.inputs[x_index];
      const ValueId c_value = n.inputs[1 - x_index];
      const ConstantSummary& c = SummaryOf(graph, c_value);
      if (!c.known) continue;
      const TensorType& xt = graph.value(x).type;
      const TensorType& out = graph.value(n.outputs[0]).type;
      // Half-precision arithmetic runs in float32 and canonicalises NaNs on the way back, so
      // even x * 1 is not x bit for bit there.
      if (xt.dtype == v1::DT_UNDEFINED || out.dtype != xt.dtype ||
          xt.dtype == v1::DT_FLOAT16 || xt.dtype == v1::DT_BFLOAT16) {
        continue;
      }
      const bool is_float = IsFloatingPoint(xt.dtype);
      const bool signed_zero = is_float && !options_.ignore_signed_zeros;
      bool neutral = false;
      if (op == "Add") {
        // -0.0 + -0.0 is -0.0 but -0.0 + +0.0 is +0.0: only a negative zero is neutral.
        neutral = signed_zero ? c.all_negative_zero : c.all_zero;
      } else if (op == "Sub") {
        neutral = signed_zero ? c.all_positive_zero : c.all_zero;
      } else if (op == "Pow") {
        // Integer bases with a floating exponent go through double: exact only below 2^53.
        neutral = c.all_one && (is_float || (IsInteger(xt.dtype) && IsInteger(c.dtype)));
      } else {
        neutral = c.all_one;
      }
      if (!neutral) continue;
      // The result has x's shape when the constant's dims are all 1 and its rank is not above
      // x's, or when inference says so.
      bool keeps_shape = SameStaticShape(xt, out);
      if (!keeps_shape) {
        bool ones = true;
        for (int64_t d : c.dims) ones &= d == 1;
        keeps_shape = ones && (c.dims.empty() ||
                               (xt.shape && c.dims.size() <= xt.shape->size()));
      }
      if (!keeps_shape) continue;
      return Bypass(graph, id, x, "neutral_operand");
    }
    return nullptr;
  }

  // The summary of the constant defining `value` (not known when there is none), computed once
  // per value and run: a constant many nodes read is read once.
  const ConstantSummary& SummaryOf(const Graph& graph, ValueId value) {
    // Most operands are not constants: those are answered without growing the table.
    if (ConstantTensorOf(graph, value) == nullptr) return not_constant_;
    auto [it, inserted] = summaries_.try_emplace(value.value());
    if (inserted) {
      std::optional<runtime::Tensor> c =
          ConstantValue(graph, value, *hidden_, kMaxInspectedElements);
      if (c) it->second = Summarize(*c);
    }
    return it->second;
  }

  // Perm of a Transpose reading a value of rank `rank` (nullopt rank: only an explicit perm).
  static std::optional<std::vector<int64_t>> PermOf(const Node& n, std::optional<int> rank) {
    std::optional<std::vector<int64_t>> perm = IntsAttr(n, "perm");
    if (!perm) {
      if (Attr(n, "perm") != nullptr || !rank) return std::nullopt;
      perm.emplace();
      for (int k = *rank - 1; k >= 0; --k) perm->push_back(k);
    }
    std::vector<char> seen(perm->size(), 0);
    for (int64_t p : *perm) {
      if (p < 0 || p >= static_cast<int64_t>(perm->size()) || seen[p]) return std::nullopt;
      seen[p] = 1;
    }
    if (rank && static_cast<int>(perm->size()) != *rank) return std::nullopt;
    return perm;
  }

  static bool IsIdentityPerm(const std::vector<int64_t>& perm) {
    for (size_t i = 0; i < perm.size(); ++i) {
      if (perm[i] != static_cast<int64_t>(i)) return false;
    }
    return true;
  }

  // Transpose with the identity perm; Transpose of a Transpose as one (perms composed).
  const char* Transpose(Graph& graph, NodeId id) {
    const Node& n = graph.node(id);
    if (n.inputs.empty() || !n.inputs[0].valid()) return nullptr;
    const ValueId x = n.inputs[0];
    std::optional<std::vector<int64_t>> outer = PermOf(n, RankOf(graph, x));
    if (!outer) return nullptr;
    if (IsIdentityPerm(*outer)) return Bypass(graph, id, x, "transpose_identity");
    const NodeId inner_id = ProducerOf(graph, x, "Transpose");
    if (!inner_id.valid()) return nullptr;
    const Node& inner = graph.node(inner_id);
    if (inner.inputs.empty() || !inner.inputs[0].valid()) return nullptr;
    const ValueId source = inner.inputs[0];
    if (hidden_->any(source)) return nullptr;
    std::optional<std::vector<int64_t>> first = PermOf(inner, RankOf(graph, source));
    if (!first || first->size() != outer->size()) return nullptr;
    // out[i] = x[outer[i]] = source[first[outer[i]]].
    std::vector<int64_t> composed(outer->size());
    for (size_t i = 0; i < composed.size(); ++i) composed[i] = (*first)[(*outer)[i]];
    if (IsIdentityPerm(composed)) {
      const char* rule = Bypass(graph, id, source, "transpose_pair");
      if (rule != nullptr) return rule;
      // x is part of the interface: the identity Transpose stays, reading x.
    }
    v1::Attribute perm;
    for (int64_t p : composed) perm.mutable_ints()->add_values(p);
    graph.mutable_node(id).attributes["perm"] = std::move(perm);
    graph.SetInput(id, 0, source);
    return "transpose_chain";
  }

  // The target of a Reshape as given (input 1, or the 'shape' attribute before opset 5).
  std::optional<std::vector<int64_t>> ReshapeTarget(const Graph& graph, const Node& n) const {
    if (opset_ != 0 && opset_ < 5) return IntsAttr(n, "shape");
    if (n.inputs.size() < 2 || !n.inputs[1].valid()) return std::nullopt;
    return ConstantInts(graph, n.inputs[1], *hidden_);
  }

  // Reshape of a Reshape reads the first one's input (when the target copies no dim of it);
  // a Reshape to the shape its input already has is removed.
  const char* Reshape(Graph& graph, NodeId id) {
    const Node& n = graph.node(id);
    if (n.inputs.empty() || !n.inputs[0].valid() || n.outputs.empty() || !n.outputs[0].valid()) {
      return nullptr;
    }
    const char* rule = nullptr;
    const NodeId inner_id = ProducerOf(graph, n.inputs[0], "Reshape");
    if (inner_id.valid() && !graph.node(inner_id).inputs.empty() &&
        graph.node(inner_id).inputs[0].valid() && !hidden_->any(graph.node(inner_id).inputs[0])) {
      std::optional<std::vector<int64_t>> target = ReshapeTarget(graph, n);
      const bool allowzero = IntAttr(n, "allowzero").value_or(0) != 0;
      if (target && (allowzero || std::find(target->begin(), target->end(), 0) == target->end())) {
        graph.SetInput(id, 0, graph.node(inner_id).inputs[0]);
        rule = "reshape_chain";
      }
    }
    const ValueId x = graph.node(id).inputs[0];
    if (SameStaticShape(graph.value(x).type, graph.value(graph.node(id).outputs[0]).type)) {
      const char* bypassed = Bypass(graph, id, x, "reshape_same_shape");
      if (bypassed != nullptr) return bypassed;
    }
    return rule;
  }

  // Cast to the input's own type; Cast of a lossless Cast reads the first one's input.
  const char* Cast(Graph& graph, NodeId id) {
    const Node& n = graph.node(id);
    std::optional<int64_t> to = IntAttr(n, "to");
    if (!to || n.inputs.empty() || !n.inputs[0].valid()) return nullptr;
    const ValueId x = n.inputs[0];
    const v1::DataType x_type = graph.value(x).type.dtype;
    if (x_type != v1::DT_UNDEFINED && x_type == *to) return Bypass(graph, id, x, "cast_same_type");
    const NodeId inner_id = ProducerOf(graph, x, "Cast");
    if (!inner_id.valid()) return nullptr;
    const Node& inner = graph.node(inner_id);
    std::optional<int64_t> middle = IntAttr(inner, "to");
    if (!middle || inner.inputs.empty() || !inner.inputs[0].valid()) return nullptr;
    const ValueId source = inner.inputs[0];
    if (hidden_->any(source)) return nullptr;
    const v1::DataType from = graph.value(source).type.dtype;
    const auto mid = static_cast<v1::DataType>(*middle);
    const auto last = static_cast<v1::DataType>(*to);
    if (!LosslessCast(from, mid)) return nullptr;
    if (last == from) return Bypass(graph, id, source, "cast_round_trip");
    if (!LosslessCast(from, last)) return nullptr;
    graph.SetInput(id, 0, source);
    return "cast_chain";
  }

  // Shape (or Size) of a value whose shape is fully known becomes a constant.
  const char* ShapeOfStatic(Graph& graph, NodeId id, const std::string& op) {
    const Node& n = graph.node(id);
    if (n.inputs.empty() || !n.inputs[0].valid() || n.outputs.size() != 1 ||
        !n.outputs[0].valid()) {
      return nullptr;
    }
    const std::optional<Dims>& shape = graph.value(n.inputs[0]).type.shape;
    if (!FullyKnown(shape)) return nullptr;
    const int64_t rank = static_cast<int64_t>(shape->size());
    std::vector<int64_t> values;
    if (op == "Size") {
      std::optional<int64_t> count = NumElements(*shape);
      if (!count) return nullptr;
      values.push_back(*count);
    } else {
      // The runtime's Shape: start and end clamped to [0, rank] after adding rank to negatives.
      auto clamp = [rank](int64_t v) {
        if (v < 0) v += rank;
        return std::min(std::max<int64_t>(v, 0), rank);
      };
      const int64_t start = clamp(IntAttr(n, "start").value_or(0));
      const int64_t end = clamp(IntAttr(n, "end").value_or(rank));
      for (int64_t i = start; i < end; ++i) values.push_back((*shape)[i].size());
    }
    v1::Tensor tensor;
    tensor.set_dtype(v1::DT_INT64);
    if (op == "Shape") tensor.add_dims(static_cast<int64_t>(values.size()));
    tensor.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()),
                                    values.size() * sizeof(int64_t)));
    ReplaceOutputByInitializer(graph, id, 0, std::move(tensor));
    return op == "Shape" ? "shape_of_static" : "size_of_static";
  }

  // Squeeze/Unsqueeze axes: the attribute before opset 13, input 1 from 13. nullopt when absent
  // or not constant.
  std::optional<std::vector<int64_t>> AxesOf(const Graph& graph, const Node& n) const {
    if (opset_ != 0 && opset_ < 13) return IntsAttr(n, "axes");
    if (n.inputs.size() < 2 || !n.inputs[1].valid()) return std::nullopt;
    return ConstantInts(graph, n.inputs[1], *hidden_);
  }

  // Squeeze's axes normalised against its input `x`; without axes, the dims of x known to be 1
  // (all of x's dims must be known then).
  std::optional<std::vector<int64_t>> SqueezedAxes(const Graph& graph, const Node& squeeze,
                                                   ValueId x) const {
    const std::optional<Dims>& shape = graph.value(x).type.shape;
    std::optional<std::vector<int64_t>> axes = AxesOf(graph, squeeze);
    const bool has_axes_input = squeeze.inputs.size() > 1 && squeeze.inputs[1].valid();
    if (!axes) {
      if (has_axes_input || (opset_ != 0 && opset_ < 13 && Attr(squeeze, "axes") != nullptr) ||
          !FullyKnown(shape)) {
        return std::nullopt;
      }
      axes.emplace();
      for (size_t i = 0; i < shape->size(); ++i) {
        if ((*shape)[i].size() == 1) axes->push_back(static_cast<int64_t>(i));
      }
      return axes;
    }
    if (!shape) return std::nullopt;
    return NormalizedAxes(*axes, static_cast<int64_t>(shape->size()));
  }

  // Squeeze(Unsqueeze(x, A), A) is x.
  const char* SqueezeOfUnsqueeze(Graph& graph, NodeId id) {
    const Node& n = graph.node(id);
    if (n.inputs.empty() || !n.inputs[0].valid()) return nullptr;
    const NodeId inner_id = ProducerOf(graph, n.inputs[0], "Unsqueeze");
    if (!inner_id.valid()) return nullptr;
    const Node& inner = graph.node(inner_id);
    if (inner.inputs.empty() || !inner.inputs[0].valid()) return nullptr;
    if (hidden_->any(inner.inputs[0])) return nullptr;
    std::optional<std::vector<int64_t>> inserted = AxesOf(graph, inner);
    std::optional<int> source_rank = RankOf(graph, inner.inputs[0]);
    if (!inserted || !source_rank) return nullptr;
    const int64_t rank = *source_rank + static_cast<int64_t>(inserted->size());
    inserted = NormalizedAxes(*inserted, rank);
    if (!inserted) return nullptr;
    std::optional<std::vector<int64_t>> removed = SqueezedAxes(graph, n, n.inputs[0]);
    if (!removed || *removed != *inserted) return nullptr;
    return Bypass(graph, id, inner.inputs[0], "unsqueeze_squeeze");
  }

  // Unsqueeze(Squeeze(x, A), A) is x when x's dims at A are known to be 1.
  const char* UnsqueezeOfSqueeze(Graph& graph, NodeId id) {
    const Node& n = graph.node(id);
    if (n.inputs.empty() || !n.inputs[0].valid()) return nullptr;
    const NodeId inner_id = ProducerOf(graph, n.inputs[0], "Squeeze");
    if (!inner_id.valid()) return nullptr;
    const Node& inner = graph.node(inner_id);
    if (inner.inputs.empty() || !inner.inputs[0].valid()) return nullptr;
    const ValueId source = inner.inputs[0];
    if (hidden_->any(source)) return nullptr;
    std::optional<std::vector<int64_t>> removed = SqueezedAxes(graph, inner, source);
    const std::optional<Dims>& shape = graph.value(source).type.shape;
    if (!removed || !shape) return nullptr;
    for (int64_t a : *removed) {
      if (!(*shape)[a].is_known() || (*shape)[a].size() != 1) return nullptr;
    }
    std::optional<std::vector<int64_t>> inserted = AxesOf(graph, n);
    if (!inserted) return nullptr;
    inserted = NormalizedAxes(*inserted, static_cast<int64_t>(shape->size()));
    if (!inserted || *inserted != *removed) return nullptr;
    return Bypass(graph, id, source, "squeeze_unsqueeze");
  }

  // Expand to the shape its input already has; Slice with unit steps keeping every element.
  const char* SameShapeNoOp(Graph& graph, NodeId id, const std::string& op) {
    const Node& n = graph.node(id);
    if (n.inputs.empty() || !n.inputs[0].valid() || n.outputs.empty() || !n.outputs[0].valid()) {
      return nullptr;
    }
    const TensorType& in = graph.value(n.inputs[0]).type;
    const TensorType& out = graph.value(n.outputs[0]).type;
    if (in.dtype != out.dtype || !SameStaticShape(in, out)) return nullptr;
    if (op == "Slice" && n.inputs.size() > 4 && n.inputs[4].valid()) {
      std::optional<std::vector<int64_t>> steps = ConstantInts(graph, n.inputs[4], *hidden_);
      if (!steps) return nullptr;
      for (int64_t s : *steps) {
        if (s != 1) return nullptr;
      }
    }
    return Bypass(graph, id, n.inputs[0], op == "Slice" ? "slice_whole" : "expand_same_shape");
  }

  // Pad by zero everywhere.
  const char* ZeroPad(Graph& graph, NodeId id) {
    const Node& n = graph.node(id);
    if (n.inputs.empty() || !n.inputs[0].valid()) return nullptr;
    std::optional<std::vector<int64_t>> pads;
    if (opset_ != 0 && opset_ < 11) {
      pads = IntsAttr(n, "pads");
      if (!pads) pads = IntsAttr(n, "paddings");
    } else if (n.inputs.size() > 1 && n.inputs[1].valid()) {
      pads = ConstantInts(graph, n.inputs[1], *hidden_);
    }
    if (!pads) return nullptr;
    for (int64_t p : *pads) {
      if (p != 0) return nullptr;
    }
    return Bypass(graph, id, n.inputs[0], "pad_zero");
  }

  Options options_;
  int64_t opset_ = 0;
  const OpRegistry* ops_ = nullptr;
  std::optional<HiddenAccess> hidden_;
  absl::flat_hash_map<int32_t, ConstantSummary> summaries_;
  const ConstantSummary not_constant_;
  absl::btree_map<std::string, int64_t> counts_;
  int64_t kept_ = 0;
};

}  // namespace

PassInfo SimplifyPassInfo() {
  PassInfo info;
  info.name = "simplify";
  info.description =
      "Algebraic identities that keep every value bit for bit: x+(-0), x-0, x*1, x/1, x**1 "
      "(when the constant cannot broadcast x), Transpose chains composed (identity removed), "
      "Reshape chains, Reshape/Expand/Slice/Pad that change nothing, Cast to the same type and "
      "lossless Cast chains, Shape/Size of static shapes as constants, Unsqueeze/Squeeze pairs, "
      "Concat of one input; graph outputs keep their names.";
  info.options = {
      {"ignore_signed_zeros",
       "'true' also removes x+0 and x-(-0) in floating point, which turn -0.0 into +0.0 "
       "(default false)"},
  };
  info.requires_analyses = {Analysis::kTypes, Analysis::kShapes};
  // Every value that stays keeps its type and shape; new constants carry theirs.
  info.preserves = AnalysisSet::All();
  info.min_opt_level = 2;
  info.factory = [](const PassOptions& options) -> absl::StatusOr<std::unique_ptr<Pass>> {
    Options o;
    if (auto it = options.find("ignore_signed_zeros"); it != options.end()) {
      if (it->second != "true" && it->second != "false") {
        return absl::InvalidArgumentError(absl::StrCat(
            "option 'ignore_signed_zeros': '", it->second, "' is not 'true' or 'false'"));
      }
      o.ignore_signed_zeros = it->second == "true";
    }
    return std::unique_ptr<Pass>(std::make_unique<SimplifyPass>(o));
  };
  return info;
}

}  // namespace graphopt
