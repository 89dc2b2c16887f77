#include "passes/channels_last_pass.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/layout_ops.h"
#include "passes/rewrite_util.h"

namespace graphopt {
namespace {

constexpr std::array<int64_t, 4> kToChannelsLast = {0, 2, 3, 1};
constexpr std::array<int64_t, 4> kToChannelsFirst = {0, 3, 1, 2};

// Ops that compute each output element from the elements at the same position of their inputs
// (and attributes that name no axis), so that they give the same result in either layout.
// Sorted, for a binary search.
constexpr std::string_view kLayoutFreeOps[] = {
    "Abs",   "Add",     "Ceil",      "Celu",       "Clip",     "Cos",   "Div",
    "Elu",   "Erf",     "Exp",       "Floor",      "HardSigmoid",       "HardSwish",
    "Identity", "LeakyRelu", "Log",  "Max",        "Mean",     "Min",   "Mish",
    "Mul",   "Neg",     "Pow",       "Reciprocal", "Relu",     "Round", "Selu",
    "Sigmoid", "Sign",  "Sin",       "Softplus",   "Softsign", "Sqrt",  "Sub",
    "Sum",   "Tanh",    "ThresholdedRelu"};

constexpr bool SortedAndUnique() {
  for (size_t i = 1; i < std::size(kLayoutFreeOps); ++i) {
    if (!(kLayoutFreeOps[i - 1] < kLayoutFreeOps[i])) return false;
  }
  return true;
}
static_assert(SortedAndUnique(), "kLayoutFreeOps must be sorted");

bool IsLayoutFree(std::string_view op_type) {
  return std::binary_search(std::begin(kLayoutFreeOps), std::end(kLayoutFreeOps), op_type);
}

// A float32 value of rank 4: an activation [N, C, H, W] the pass may relayout.
bool IsActivation(const Value& v) {
  return v.type.dtype == v1::DT_FLOAT32 && v.type.shape && v.type.shape->size() == 4;
}

// A value of known shape holding one element (it broadcasts alike in either layout).
bool IsScalarShaped(const Value& v) {
  if (!v.type.shape) return false;
  for (const Dim& d : *v.type.shape) {
    if (!d.is_known() || d.size() != 1) return false;
  }
  return true;
}

Dims Permuted(const Dims& dims, const std::array<int64_t, 4>& perm) {
  Dims out;
  for (int64_t p : perm) out.push_back(dims[p]);
  return out;
}

v1::Attribute PermAttribute(const std::array<int64_t, 4>& perm) {
  v1::Attribute a;
  for (int64_t p : perm) a.mutable_ints()->add_values(p);
  return a;
}

// Whether Winograd's F(2x2, 3x3) pays for the Conv `node`: 3x3 kernel, stride and dilation 1,
// one group, at least 64 input and output channels and a known output of at least 28x28.
// The bounds are where, inside ResNets, oneDNN's blocked-layout Winograd kernels (their reorders
// included) beat its direct channels-last ones: below 28x28 the transformed weights (16 values
// per 3x3 tap set instead of 9), read cold from memory on every run, cost more than Winograd
// saves, and below 64 channels it loses as well.
bool WinogradPays(const Graph& graph, const Node& node) {
  auto ints = [&](const char* name) -> std::vector<int64_t> {
    auto it = node.attributes.find(name);
    if (it == node.attributes.end()) return {};
    return {it->second.ints().values().begin(), it->second.ints().values().end()};
  };
  auto all_one = [](const std::vector<int64_t>& v) {
    for (int64_t x : v) {
      if (x != 1) return false;
    }
    return true;
  };
  auto group = node.attributes.find("group");
  if (group != node.attributes.end() && group->second.i() != 1) return false;
  if (!all_one(ints("strides")) || !all_one(ints("dilations"))) return false;
  const std::optional<Dims>& w = graph.value(node.inputs[1]).type.shape;
  const std::optional<Dims>& y = graph.value(node.outputs[0]).type.shape;
  if (!w || w->size() != 4 || !y) return false;
  auto at_least = [](const Dim& d, int64_t n) { return d.is_known() && d.size() >= n; };
  auto exactly = [](const Dim& d, int64_t n) { return d.is_known() && d.size() == n; };
  return exactly((*w)[2], 3) && exactly((*w)[3], 3) && at_least((*w)[0], 64) &&
         at_least((*w)[1], 64) && at_least((*y)[2], 28) && at_least((*y)[3], 28);
}

class ChannelsLastPass : public Pass {
 public:
  explicit ChannelsLastPass(bool winograd) : winograd_(winograd) {}

  absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) override {
    absl::StatusOr<std::vector<NodeId>> order = graph.TopologicalOrder();
    if (!order.ok()) return order.status();
    graph_ = &graph;
    hidden_ = std::make_unique<HiddenAccess>(graph, *context.ops);
    twin_.assign(graph.num_value_slots(), ValueId());
    computed_.assign(graph.num_value_slots(), 0);
    int64_t visited = 0;
    for (NodeId id : *order) {
      if (absl::Status s = context.CheckStopEvery(visited++); !s.ok()) return s;
      const Node& node = graph.node(id);
      if (!node.alive || !node.domain.empty()) continue;
      std::optional<std::string> target = Target(id);
      if (!target) continue;
      if (absl::Status s = Convert(id, *target); !s.ok()) return s;
    }
    // Transposes back to channels-first that nothing reads any more (every reader was
    // converted) go; those feeding graph outputs or other nodes stay.
    int back = 0;
    for (NodeId t : to_first_) {
      if (!RemoveNodeIfUnused(graph, t, *context.ops, *hidden_)) ++back;
    }
    const int converted = convs_ + pools_ + others_;
    context.Note(absl::StrCat("converted ", converted, " nodes to channels-last (", convs_,
                              " Conv, ", winograd_convs_, " of them Winograd, ", pools_,
                              " pools, ", others_, " elementwise); transposes: ", to_last_,
                              " in, ", back, " out"));
    graph_ = nullptr;
    return converted > 0;
  }

 private:
  // The channels-last op that replaces the node, or nullopt when it stays as it is.
  std::optional<std::string> Target(NodeId id) const {
    const Node& node = graph_->node(id);
    for (ValueId v : node.inputs) {
      if (v.valid() && hidden_->any(v)) return std::nullopt;
    }
    if (node.outputs.empty() || !node.outputs[0].valid() || hidden_->any(node.outputs[0])) {
      return std::nullopt;
    }
    for (size_t i = 1; i < node.outputs.size(); ++i) {
      // MaxPool's Indices: only when absent or unread.
      const ValueId v = node.outputs[i];
      if (v.valid() && (!graph_->value(v).uses.empty() || graph_->value(v).graph_output_count > 0)) {
        return std::nullopt;
      }
    }
    const Value& y = graph_->value(node.outputs[0]);
    if (!IsActivation(y) || node.inputs.empty() || !node.inputs[0].valid() ||
        !IsActivation(graph_->value(node.inputs[0]))) {
      return std::nullopt;
    }
    const std::string& op = node.op_type;
    if (op == "Conv") {
      if (node.inputs.size() < 2 || !node.inputs[1].valid()) return std::nullopt;
      return kNhwcConvOp;
    }
    if (op == "MaxPool") return kNhwcMaxPoolOp;  // storage_order: only Indices, unread
    if (op == "AveragePool") return kNhwcAveragePoolOp;
    if (op == "GlobalAveragePool") return kNhwcGlobalAveragePoolOp;
    if (op == "GlobalMaxPool") return kNhwcGlobalMaxPoolOp;
    if (!IsLayoutFree(op) || node.outputs.size() != 1) return std::nullopt;
    // Layout-free ops follow the converted nodes they read: every input must be of rank 4
    // (broadcasting along any of its dims, a squeeze-excite's [N, C, 1, 1] scale say: the same
    // permutation of every operand's axes keeps the broadcast) or a single element. Inputs of
    // the output's shape must already be available channels-last; one input must be computed
    // so (not a Transpose of a channels-first value: following that would only move a
    // Transpose behind the op). An input that is one value per image and channel ([N, C, 1, 1])
    // may be transposed here: that is a copy of N * C values.
    bool computed = false;
    for (ValueId v : node.inputs) {
      if (!v.valid()) continue;
      const Value& in = graph_->value(v);
      if (IsScalarShaped(in)) continue;
      if (!in.type.shape || in.type.shape->size() != 4) return std::nullopt;
      bool full = true;
      for (int i = 0; i < 4; ++i) {
        const Dim& d = (*in.type.shape)[i];
        if (Dim::SameSize(d, (*y.type.shape)[i])) continue;
        if (!d.is_known() || d.size() != 1) return std::nullopt;
        full = false;
      }
      const bool per_channel = (*in.type.shape)[2].is_known() && (*in.type.shape)[2].size() == 1 &&
                               (*in.type.shape)[3].is_known() && (*in.type.shape)[3].size() == 1;
      if (!twin_at(v).valid() && (full || !per_channel)) return std::nullopt;
      computed |= twin_at(v).valid() && computed_[v.value()] != 0;
    }
    if (!computed) return std::nullopt;
    return op;
  }

  ValueId twin_at(ValueId v) const {
    return v.value() < static_cast<int>(twin_.size()) ? twin_[v.value()] : ValueId();
  }

  // The channels-last twin of activation v, made by a Transpose when it has none yet.
  absl::StatusOr<ValueId> ChannelsLast(ValueId v, const std::string& device) {
    if (twin_at(v).valid()) return twin_at(v);
    const Value& value = graph_->value(v);
    const std::string name = value.name;
    const Dims dims = Permuted(*value.type.shape, kToChannelsLast);
    const ValueId t = graph_->AddUniqueValue(absl::StrCat(name, "_nhwc"));
    graph_->mutable_value(t).type = TensorType{v1::DT_FLOAT32, dims};
    AttributeMap attrs;
    attrs["perm"] = PermAttribute(kToChannelsLast);
    absl::StatusOr<NodeId> node =
        graph_->AddNode(absl::StrCat(name, "_to_nhwc"), "Transpose", "", {v}, {t}, std::move(attrs));
    if (!node.ok()) return node.status();
    graph_->mutable_node(*node).device = device;
    twin_[v.value()] = t;
    ++to_last_;
    return t;
  }

  // Replaces `id` by the same computation in channels-last layout (op `target`, in the
  // graphopt domain for Conv and the pools), and its output by a Transpose of the new output.
  absl::Status Convert(NodeId id, const std::string& target) {
    const Node& old = graph_->node(id);
    const std::string name = old.name;
    const std::string device = old.device;
    const bool layout_op = target != old.op_type;
    AttributeMap attrs = old.attributes;
    attrs.erase("storage_order");
    if (target == kNhwcConvOp && winograd_ && WinogradPays(*graph_, old)) {
      attrs["winograd"].set_i(1);
      ++winograd_convs_;
    }
    const ValueIdList old_inputs = old.inputs;
    std::vector<ValueId> inputs;
    for (size_t i = 0; i < old_inputs.size(); ++i) {
      const ValueId v = old_inputs[i];
      // Conv's weights and bias keep their layout; so do single-element operands.
      const bool activation = v.valid() && (layout_op ? i == 0 : !IsScalarShaped(graph_->value(v)));
      if (!activation) {
        inputs.push_back(v);
        continue;
      }
      absl::StatusOr<ValueId> t = ChannelsLast(v, device);
      if (!t.ok()) return t.status();
      inputs.push_back(*t);
    }
    const int num_outputs = static_cast<int>(graph_->node(id).outputs.size());
    const ValueId y = graph_->DetachOutput(id, 0);
    for (int i = 1; i < num_outputs; ++i) {
      if (graph_->node(id).outputs[i].valid()) graph_->DetachOutput(id, i);
    }
    graph_->RemoveNode(id);
    const Value& out = graph_->value(y);
    const ValueId y_last = graph_->AddUniqueValue(absl::StrCat(out.name, "_nhwc"));
    graph_->mutable_value(y_last).type =
        TensorType{v1::DT_FLOAT32, Permuted(*graph_->value(y).type.shape, kToChannelsLast)};
    absl::StatusOr<NodeId> node =
        graph_->AddNode(name, target, layout_op ? kLayoutDomain : "", inputs, {y_last},
                        std::move(attrs));
    if (!node.ok()) return node.status();
    graph_->mutable_node(*node).device = device;
    AttributeMap perm;
    perm["perm"] = PermAttribute(kToChannelsFirst);
    absl::StatusOr<NodeId> back = graph_->AddNode(absl::StrCat(name, "_to_nchw"), "Transpose", "",
                                                  {y_last}, {y}, std::move(perm));
    if (!back.ok()) return back.status();
    graph_->mutable_node(*back).device = device;
    to_first_.push_back(*back);
    if (y.value() < static_cast<int>(twin_.size())) {
      twin_[y.value()] = y_last;
      computed_[y.value()] = 1;
    }
    if (!layout_op) {
      ++others_;
    } else if (target == kNhwcConvOp) {
      ++convs_;
    } else {
      ++pools_;
    }
    return absl::OkStatus();
  }

  Graph* graph_ = nullptr;
  std::unique_ptr<HiddenAccess> hidden_;
  // Activation value -> its channels-last twin (a value the pass made), by value id.
  std::vector<ValueId> twin_;
  // Whether the twin is the output of a converted node (else a Transpose of the value).
  std::vector<char> computed_;
  // The Transposes back to channels-first, one per converted node, in creation order.
  std::vector<NodeId> to_first_;
  const bool winograd_;
  int convs_ = 0, winograd_convs_ = 0, pools_ = 0, others_ = 0, to_last_ = 0;
};

absl::StatusOr<std::unique_ptr<Pass>> MakeChannelsLastPass(const PassOptions& options) {
  bool winograd = true;
  if (auto it = options.find("winograd"); it != options.end()) {
    if (it->second != "0" && it->second != "1") {
      return absl::InvalidArgumentError(
          absl::StrCat("option 'winograd': '", it->second, "' is not 0 or 1"));
    }
    winograd = it->second == "1";
  }
  return std::unique_ptr<Pass>(std::make_unique<ChannelsLastPass>(winograd));
}

}  // namespace

PassInfo ChannelsLastPassInfo() {
  PassInfo info;
  info.name = "channels_last";
  info.description =
      "Runs float32 2-D convolutions and pools channels-last, the layout oneDNN's fast CPU "
      "kernels take: Conv, MaxPool, AveragePool and the global pools become NhwcConv and the "
      "NHWC pools (domain graphopt), elementwise ops between them follow, and Transposes "
      "convert at the edges of each such region only.";
  info.requires_analyses = {Analysis::kTypes, Analysis::kShapes};
  info.preserves = AnalysisSet::All();
  info.min_opt_level = 3;
  info.options = {
      {"winograd",
       "1 (default): 3x3 stride-1 convolutions of 64 or more channels use Winograd's "
       "algorithm (faster; rounds differently, within 1e-5 of the largest output); 0: all "
       "direct"},
  };
  info.factory = MakeChannelsLastPass;
  return info;
}

}  // namespace graphopt
