#include "passes/fuse_ops_pass.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ops/fused_group.h"
#include "ops/fusion_patterns.h"
#include "graph/inference.h"
#include "ops/layout_ops.h"
#include "passes/effects.h"

namespace graphopt {
namespace {

constexpr int kDefaultMaxGroupSize = 64;
// Nodes a convexity check may visit before it gives up (and the fusion is not done): keeps the
// pass linear however the graph is shaped.
constexpr int kReachBudget = 512;

// What a group is built around; decides what may join it.
enum class Kind : uint8_t {
  kAnchor,       // an out-elemwise-fusable op, then elementwise ops of its output's shape
  kElementwise,  // elementwise/broadcast ops of one output shape
  kInjective,    // injective ops
  kReduction,    // an elementwise group closed by the reduction it feeds
  kLayerNorm,    // a decomposed LayerNormalization
};

// One node, or the nodes of a matched GELU/LayerNormalization, fused as a whole.
struct Unit {
  std::vector<NodeId> nodes;  // topological order; the last produces the unit's output
  bool gelu = false;
  bool layer_norm = false;
};

struct Group {
  Kind kind = Kind::kElementwise;
  std::vector<NodeId> nodes;
  int min_pos = 0;
  int max_pos = 0;
  std::optional<Dims> shape;  // the output shape every elementwise member must have
  bool closed = false;        // nothing joins any more
  int gelus = 0;
};

bool SameShape(const std::optional<Dims>& a, const std::optional<Dims>& b) {
  if (!a || !b || a->size() != b->size()) return false;
  for (size_t i = 0; i < a->size(); ++i) {
    if (!Dim::SameSize((*a)[i], (*b)[i])) return false;
  }
  return true;
}

// True when `shape` is known and broadcasts along the last axis of `x` only: every dim 1 but
// the last, which is x's or 1.
bool LastAxisOperand(const std::optional<Dims>& shape, const std::optional<Dims>& x) {
  if (!shape || !x || shape->size() > x->size() || x->empty()) return false;
  for (size_t i = 0; i < shape->size(); ++i) {
    const Dim& d = (*shape)[i];
    const bool last = i + 1 == shape->size();
    const bool one = d.is_known() && d.size() == 1;
    if (!one && !(last && Dim::SameSize(d, x->back()))) return false;
  }
  return true;
}

bool IsScalarShaped(const std::optional<Dims>& shape) {
  if (!shape) return false;
  for (const Dim& d : *shape) {
    if (!d.is_known() || d.size() != 1) return false;
  }
  return true;
}

// A multi-node unit fuse_ops recognises before grouping: the op its match starts from and the
// matcher (ops/fusion_patterns.h). The fused kernel runs the unit as the op it names.
struct UnitPattern {
  const char* name;
  const char* root_op;
  std::optional<FusionPatternMatch> (*match)(const Graph&, NodeId);
  bool layer_norm;
};

constexpr UnitPattern kUnitPatterns[] = {
    // y = x * 0.5 * (1 + erf(x / sqrt(2))), in the orders torch exports.
    {"gelu", "Erf", MatchGelu, false},
    // y = (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) [* scale] [+ bias], last axis.
    {"layer_norm", "ReduceMean", MatchLayerNorm, true},
};

class Fuser {
 public:
  Fuser(Graph& graph, const OpRegistry& ops, int max_group_size)
      : graph_(graph), ops_(ops), max_group_size_(max_group_size) {}

  absl::StatusOr<bool> Run(const PassContext& context) {
    absl::StatusOr<std::vector<NodeId>> order = graph_.TopologicalOrder();
    if (!order.ok()) return order.status();
    const int n = graph_.num_node_slots();
    pos_.assign(n, -1);
    for (size_t i = 0; i < order->size(); ++i) pos_[(*order)[i].value()] = static_cast<int>(i);
    hidden_.emplace(graph_, ops_);
    group_of_.assign(n, -1);
    unit_of_.assign(n, -1);
    node_epoch_.assign(n, 0);
    MatchPatterns(*order);
    int64_t visited = 0;
    for (NodeId id : *order) {
      if (absl::Status s = context.CheckStopEvery(visited++); !s.ok()) return s;
      Visit(id);
    }
    if (absl::Status s = context.CheckStop(); !s.ok()) return s;
    return Materialize(context);
  }

 private:
  // The node's fusion pattern, or OPAQUE when it must stay alone: unknown ops, ops with effects
  // or subgraphs, nodes touching a hidden access (a mutated value, or one a subgraph reads by
  // name: fusing would make it internal to the group), nodes with other than one output, and
  // nodes whose output is not floating point (shape arithmetic gains nothing from fusion).
  v1::FusionPattern PatternOf(NodeId id) const {
    const Node& node = graph_.node(id);
    const OpDef* op = ops_.Find(node.domain, node.op_type);
    if (op == nullptr || HasEffects(*op) || IsNondeterministic(*op)) return v1::FUSION_OPAQUE;
    if (node.outputs.size() != 1 || !node.outputs[0].valid()) return v1::FUSION_OPAQUE;
    for (const auto& [name, a] : node.attributes) {
      if (a.value_case() == v1::Attribute::kG || a.value_case() == v1::Attribute::kGraphs) {
        return v1::FUSION_OPAQUE;
      }
    }
    if (hidden_->Touches(node)) return v1::FUSION_OPAQUE;
    if (!IsFloatingPoint(graph_.value(node.outputs[0]).type.dtype)) return v1::FUSION_OPAQUE;
    // A sequence or optional (Identity passes them) is no elementwise operand.
    if (!graph_.value(node.outputs[0]).type.is_tensor()) return v1::FUSION_OPAQUE;
    return op->descriptor.fusion_pattern();
  }

  bool ScalarsHold(const FusionPatternMatch& m) const {
    for (const auto& [value, want] : m.scalars) {
      const v1::Tensor* t = ConstantTensorOf(graph_, value);
      if (t == nullptr) return false;
      std::optional<double> got = ScalarOf(*t);
      if (!got || !ScalarMatches(*got, want)) return false;
    }
    return true;
  }

  bool Fusable(const std::vector<NodeId>& nodes) const {
    for (NodeId id : nodes) {
      if (unit_of_[id.value()] >= 0 || PatternOf(id) == v1::FUSION_OPAQUE) return false;
    }
    return true;
  }

  // Finds the multi-node units (kUnitPatterns) before grouping, so that grouping sees them
  // whole. Only nodes of the patterns' root kinds are looked at; a graph without them is not
  // swept.
  void MatchPatterns(const std::vector<NodeId>& order) {
    OpKindId roots[std::size(kUnitPatterns)];
    bool any = false;
    for (size_t p = 0; p < std::size(kUnitPatterns); ++p) {
      roots[p] = graph_.FindOpKind("", kUnitPatterns[p].root_op);
      any |= graph_.num_live_nodes_of_kind(roots[p]) > 0;
    }
    if (!any) return;
    for (NodeId id : order) {
      const OpKindId kind = graph_.op_kind(id);
      for (size_t p = 0; p < std::size(kUnitPatterns); ++p) {
        if (kind != roots[p] || unit_of_[id.value()] >= 0) continue;
        const UnitPattern& pattern = kUnitPatterns[p];
        std::optional<FusionPatternMatch> m = pattern.match(graph_, id);
        if (!m || !(pattern.layer_norm ? CheckLayerNorm(*m) : KeepsType(*m)) ||
            !ScalarsHold(*m)) {
          continue;
        }
        std::sort(m->nodes.begin(), m->nodes.end(),
                  [&](NodeId a, NodeId b) { return pos_[a.value()] < pos_[b.value()]; });
        if (!Fusable(m->nodes)) continue;
        const int u = static_cast<int>(units_.size());
        for (NodeId member : m->nodes) unit_of_[member.value()] = u;
        units_.push_back(Unit{m->nodes, !pattern.layer_norm, pattern.layer_norm});
      }
    }
  }

  // The unit's output has its input's type (GELU is elementwise).
  bool KeepsType(const FusionPatternMatch& m) const {
    return graph_.value(graph_.node(m.nodes.back()).outputs[0]).type == graph_.value(m.x).type;
  }

  // Shapes the LayerNormalization loop relies on: a scalar epsilon, a scale and bias along the
  // last axis and an output of x's shape. A scale or bias of another shape is left outside.
  bool CheckLayerNorm(FusionPatternMatch& m) const {
    const TensorType& x = graph_.value(m.x).type;
    if (!x.shape || x.shape->empty()) return false;
    if (!IsScalarShaped(graph_.value(m.epsilon).type.shape)) return false;
    auto fits = [&](ValueId v, NodeId node) {
      return LastAxisOperand(graph_.value(v).type.shape, x.shape) &&
             SameShape(graph_.value(graph_.node(node).outputs[0]).type.shape, x.shape);
    };
    if (m.scale.valid() && !fits(m.scale, m.nodes[7])) {
      m.nodes.resize(7);
      m.scale = m.bias = ValueId();
    }
    const size_t bias_at = m.scale.valid() ? 8 : 7;
    if (m.bias.valid() && !fits(m.bias, m.nodes[bias_at])) {
      m.nodes.resize(bias_at);
      m.bias = ValueId();
    }
    return SameShape(graph_.value(graph_.node(m.nodes.back()).outputs[0]).type.shape, x.shape);
  }

  // Values read by `nodes` that none of them produces, in reading order (duplicates kept).
  std::vector<ValueId> ExternalInputs(const std::vector<NodeId>& nodes) const {
    std::vector<ValueId> out;
    for (NodeId id : nodes) {
      for (ValueId v : graph_.node(id).inputs) {
        if (!v.valid()) continue;
        const NodeId p = graph_.value(v).producer;
        if (p.valid() && std::find(nodes.begin(), nodes.end(), p) != nodes.end()) continue;
        out.push_back(v);
      }
    }
    return out;
  }

  void Visit(NodeId id) {
    const int u = unit_of_[id.value()];
    if (u >= 0 && units_[u].nodes.back() != id) return;  // a unit is visited at its last node
    Unit single;
    single.nodes = {id};
    const Unit& unit = u >= 0 ? units_[u] : single;
    v1::FusionPattern pattern = unit.gelu ? v1::FUSION_ELEMWISE : PatternOf(id);
    if (unit.layer_norm) {
      NewGroup(Kind::kLayerNorm, unit);
      return;
    }
    if (pattern == v1::FUSION_OPAQUE) return;
    const std::vector<ValueId> inputs = ExternalInputs(unit.nodes);
    std::vector<int> tried;
    for (ValueId v : inputs) {
      const NodeId p = graph_.value(v).producer;
      if (!p.valid() || group_of_[p.value()] < 0) continue;
      const int g = group_of_[p.value()];
      if (std::find(tried.begin(), tried.end(), g) != tried.end()) continue;
      tried.push_back(g);
      if (CanJoin(g, unit, pattern, v) && Convex(g, inputs)) {
        Join(g, unit, pattern);
        return;
      }
    }
    switch (pattern) {
      case v1::FUSION_OUT_ELEMWISE_FUSABLE: NewGroup(Kind::kAnchor, unit); break;
      case v1::FUSION_ELEMWISE:
      case v1::FUSION_BROADCAST: NewGroup(Kind::kElementwise, unit); break;
      case v1::FUSION_INJECTIVE: NewGroup(Kind::kInjective, unit); break;
      default: break;  // a reduction alone gains nothing
    }
  }

  bool CanJoin(int g, const Unit& unit, v1::FusionPattern pattern, ValueId via) const {
    const Group& group = groups_[g];
    if (group.closed ||
        static_cast<int>(group.nodes.size() + unit.nodes.size()) > max_group_size_) {
      return false;
    }
    const TensorType& out = graph_.value(graph_.node(unit.nodes.back()).outputs[0]).type;
    switch (pattern) {
      case v1::FUSION_ELEMWISE:
      case v1::FUSION_BROADCAST:
        return (group.kind == Kind::kAnchor || group.kind == Kind::kElementwise) &&
               SameShape(out.shape, group.shape);
      case v1::FUSION_REDUCTION:
        // The reduction takes its elementwise prologue's result as its data input.
        return group.kind == Kind::kElementwise && graph_.node(unit.nodes[0]).inputs[0] == via;
      case v1::FUSION_INJECTIVE:
        return group.kind == Kind::kInjective;
      default:
        return false;
    }
  }

  // True when adding a unit reading `inputs` to group g keeps the graph of groups acyclic: no
  // input comes from a node that depends on g (through other groups, which become single
  // nodes too). Walks producers backwards, skipping what lies entirely before g's first node.
  bool Convex(int g, const std::vector<ValueId>& inputs) {
    ++epoch_;
    const int floor = groups_[g].min_pos;
    std::vector<NodeId> stack;
    for (ValueId v : inputs) {
      const NodeId p = graph_.value(v).producer;
      if (p.valid() && group_of_[p.value()] != g) stack.push_back(p);
    }
    int visited = 0;
    while (!stack.empty()) {
      const NodeId q = stack.back();
      stack.pop_back();
      if (node_epoch_[q.value()] == epoch_) continue;
      node_epoch_[q.value()] = epoch_;
      if (++visited > kReachBudget) return false;
      const int h = group_of_[q.value()];
      if (h == g) return false;
      if ((h >= 0 ? groups_[h].max_pos : pos_[q.value()]) <= floor) continue;
      auto push_producers = [&](NodeId member) {
        for (ValueId v : graph_.node(member).inputs) {
          if (v.valid() && graph_.value(v).producer.valid()) stack.push_back(graph_.value(v).producer);
        }
      };
      if (h < 0) {
        push_producers(q);
      } else if (group_epoch_[h] != epoch_) {
        group_epoch_[h] = epoch_;
        for (NodeId member : groups_[h].nodes) push_producers(member);
      }
    }
    return true;
  }

  void NewGroup(Kind kind, const Unit& unit) {
    Group group;
    group.kind = kind;
    group.min_pos = pos_[unit.nodes.front().value()];
    group.max_pos = group.min_pos;
    group.shape = graph_.value(graph_.node(unit.nodes.back()).outputs[0]).type.shape;
    group.closed = kind == Kind::kLayerNorm;
    groups_.push_back(std::move(group));
    group_epoch_.push_back(0);
    Join(static_cast<int>(groups_.size()) - 1, unit, v1::FUSION_ELEMWISE);
  }

  void Join(int g, const Unit& unit, v1::FusionPattern pattern) {
    Group& group = groups_[g];
    for (NodeId id : unit.nodes) {
      group.nodes.push_back(id);
      group_of_[id.value()] = g;
      group.min_pos = std::min(group.min_pos, pos_[id.value()]);
      group.max_pos = std::max(group.max_pos, pos_[id.value()]);
    }
    group.gelus += unit.gelu;
    if (pattern == v1::FUSION_REDUCTION) {
      group.kind = Kind::kReduction;
      group.closed = true;
    }
  }

  const char* PatternName(const Group& group) const {
    switch (group.kind) {
      case Kind::kAnchor: {
        const Node& anchor = graph_.node(group.nodes.front());
        const std::string& op = anchor.op_type;
        if (op == "Conv" || (anchor.domain == kLayoutDomain && op == kNhwcConvOp)) {
          return kFusedPatternConv;
        }
        if (op == "MatMul" || op == "Gemm") return kFusedPatternMatMul;
        return kFusedPatternAnchor;
      }
      case Kind::kElementwise: return group.gelus > 0 ? kFusedPatternGelu : kFusedPatternElementwise;
      case Kind::kInjective: return kFusedPatternInjective;
      case Kind::kReduction: return kFusedPatternReduction;
      case Kind::kLayerNorm: return kFusedPatternLayerNorm;
    }
    return kFusedPatternElementwise;
  }

  // Tallies what a group recognised, for the report.
  void CountPatterns(const Group& group, std::map<std::string, int>& counts) const {
    counts["gelu"] += group.gelus;
    if (group.kind == Kind::kLayerNorm) ++counts["layer_norm"];
    if (group.kind != Kind::kAnchor) return;
    const ValueId anchor_out = graph_.node(group.nodes.front()).outputs[0];
    for (size_t i = 1; i < group.nodes.size(); ++i) {
      const Node& node = graph_.node(group.nodes[i]);
      if (node.op_type == "Relu" || node.op_type == "Clip" || node.op_type == "LeakyRelu" ||
          node.op_type == "Sigmoid" || node.op_type == "Tanh") {
        ++counts["activation " + node.op_type.str()];
      } else if (node.op_type == "Add" && node.inputs.size() == 2) {
        const bool full = SameShape(graph_.value(node.inputs[0]).type.shape, group.shape) &&
                          SameShape(graph_.value(node.inputs[1]).type.shape, group.shape);
        const bool on_anchor = node.inputs[0] == anchor_out || node.inputs[1] == anchor_out;
        if (full) {
          ++counts["residual add"];
        } else if (on_anchor) {
          ++counts["bias add"];
        }
      }
    }
  }

  // The residual a channels-last convolution group may overwrite with its result: the group is
  // an NhwcConv followed by a chain of elementwise nodes, each reading the previous one's
  // result (its only reader), one of them an Add of that result and a value from outside the
  // group of the result's shape, which no other member reads. The kernel runs such a group as
  // one convolution whose sum post-op reads each element of that value just before it writes
  // the same element of the result (runtime/kernels/fused.cc). Invalid when there is none.
  ValueId InPlaceResidual(const Group& group) const {
    if (group.kind != Kind::kAnchor) return ValueId();
    const Node& anchor = graph_.node(group.nodes.front());
    if (anchor.domain != kLayoutDomain || anchor.op_type != kNhwcConvOp) return ValueId();
    ValueId running = anchor.outputs[0];
    ValueId residual;
    for (size_t i = 1; i < group.nodes.size(); ++i) {
      const Value& r = graph_.value(running);
      if (r.uses.size() != 1 || r.uses[0].node != group.nodes[i] || r.graph_output_count > 0) {
        return ValueId();
      }
      const Node& node = graph_.node(group.nodes[i]);
      if (node.outputs.size() != 1) return ValueId();
      if (node.op_type == "Add" && node.domain.empty() && node.inputs.size() == 2 &&
          !residual.valid()) {
        const ValueId other = node.inputs[0] == running ? node.inputs[1] : node.inputs[0];
        const Value& o = graph_.value(other);
        const bool outside = !o.producer.valid() || GroupOf(o.producer) != GroupOf(group.nodes[0]);
        if (other != running && outside && SameShape(o.type.shape, r.type.shape) &&
            o.type.dtype == r.type.dtype) {
          residual = other;
        }
      }
      running = node.outputs[0];
    }
    if (!residual.valid()) return ValueId();
    int readers_in_group = 0;
    for (const Use& u : graph_.value(residual).uses) {
      readers_in_group += GroupOf(u.node) == GroupOf(group.nodes[0]);
    }
    return readers_in_group == 1 ? residual : ValueId();
  }

  // The group of a node of the graph as the pass found it; -1 for nodes it made since.
  int GroupOf(NodeId id) const {
    return id.value() < static_cast<int>(group_of_.size()) ? group_of_[id.value()] : -1;
  }

  // Declares that the fused node's single output may take over `residual`'s storage.
  void DeclareInPlace(NodeId fused, ValueId residual) {
    Node& node = graph_.mutable_node(fused);
    if (node.outputs.size() != 1) return;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.inputs[i] != residual) continue;
      v1::Attribute a;
      a.mutable_ints()->add_values(static_cast<int64_t>(i));
      a.mutable_ints()->add_values(0);
      node.attributes[kFusedGroupInPlace] = std::move(a);
      ++counts_["in-place residual"];
      return;
    }
  }

  absl::StatusOr<bool> Materialize(const PassContext& context) {
    int fused_nodes = 0;
    std::map<std::string, int> by_pattern;
    FusedGroupBuilder builder(graph_);
    for (Group& group : groups_) {
      if (group.nodes.size() < 2) continue;
      std::sort(group.nodes.begin(), group.nodes.end(),
                [&](NodeId a, NodeId b) { return pos_[a.value()] < pos_[b.value()]; });
      const char* pattern = PatternName(group);
      std::map<std::string, int> counts;
      CountPatterns(group, counts);
      const ValueId residual = InPlaceResidual(group);
      absl::StatusOr<NodeId> fused = builder.Replace(group.nodes, pattern);
      if (!fused.ok()) return fused.status();
      if (!fused->valid()) continue;
      if (residual.valid()) DeclareInPlace(*fused, residual);
      for (const auto& [name, count] : counts) counts_[name] += count;
      ++by_pattern[pattern];
      fused_nodes += static_cast<int>(group.nodes.size());
    }
    int groups = 0;
    for (const auto& [name, count] : by_pattern) groups += count;
    std::string message = absl::StrCat("fused ", fused_nodes, " nodes into ", groups, " groups");
    if (groups > 0) {
      absl::StrAppend(&message, ": ",
                      absl::StrJoin(by_pattern, ", ", absl::PairFormatter(" ")));
    }
    std::vector<std::pair<std::string, int>> found;
    for (const auto& [name, count] : counts_) {
      if (count > 0) found.emplace_back(name, count);
    }
    if (!found.empty()) {
      absl::StrAppend(&message, "; recognised ", absl::StrJoin(found, ", ", absl::PairFormatter(" ")));
    }
    context.Note(std::move(message));
    return groups > 0;
  }

  Graph& graph_;
  const OpRegistry& ops_;
  const int max_group_size_;
  std::vector<int> pos_;
  std::optional<HiddenAccess> hidden_;
  std::vector<int> group_of_;
  std::vector<int> unit_of_;
  std::vector<Unit> units_;
  std::vector<Group> groups_;
  std::vector<int> node_epoch_;
  std::vector<int> group_epoch_;
  int epoch_ = 0;
  std::map<std::string, int> counts_;
};

// Fuses nodes into FusedGroup nodes by the fusion patterns of their ops' descriptors, as NNVM
// did: elementwise and broadcast ops into the out-elemwise-fusable op they follow (Conv + bias +
// Relu/Clip, the residual Add; MatMul/Gemm + bias + activation), chains of elementwise ops of one
// shape, chains of injective ops, elementwise prologues into the reduction they feed, plus GELU
// and decomposed LayerNormalization as units. Nodes are visited in topological order; a node
// joins the group of one of its producers when its pattern fits the group's and joining keeps
// the graph of groups acyclic. Values used outside a group (or graph outputs) become its outputs.
class FuseOpsPass : public Pass {
 public:
  explicit FuseOpsPass(int max_group_size) : max_group_size_(max_group_size) {}

  absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) override {
    Fuser fuser(graph, *context.ops, max_group_size_);
    return fuser.Run(context);
  }

 private:
  int max_group_size_;
};

absl::StatusOr<std::unique_ptr<Pass>> MakeFuseOpsPass(const PassOptions& options) {
  int max_group_size = kDefaultMaxGroupSize;
  if (auto it = options.find("max_group_size"); it != options.end()) {
    if (!absl::SimpleAtoi(it->second, &max_group_size) || max_group_size < 2 ||
        max_group_size > 4096) {
      return absl::InvalidArgumentError(absl::StrCat(
          "option 'max_group_size': '", it->second, "' is not a count from 2 to 4096"));
    }
  }
  return std::unique_ptr<Pass>(std::make_unique<FuseOpsPass>(max_group_size));
}

}  // namespace

PassInfo FuseOpsPassInfo() {
  PassInfo info;
  info.name = "fuse_ops";
  info.description =
      "Fuses nodes by their ops' fusion patterns into FusedGroup nodes (domain graphopt) that "
      "hold them as a 'body' graph: elementwise/broadcast chains into the Conv/MatMul/Gemm/pool "
      "they follow, elementwise, injective and reduction-with-prologue groups, GELU (Erf form) "
      "and decomposed LayerNormalization; never across a cycle.";
  info.requires_analyses = {Analysis::kTypes, Analysis::kShapes};
  info.preserves = AnalysisSet::All();
  info.options = {
      {"max_group_size",
       absl::StrCat("most nodes in one group (default ", kDefaultMaxGroupSize, ")")},
  };
  info.budget_options["max_group_size"] = {kDefaultMaxGroupSize, nullptr};
  info.min_opt_level = 3;
  info.factory = MakeFuseOpsPass;
  return info;
}

}  // namespace graphopt
