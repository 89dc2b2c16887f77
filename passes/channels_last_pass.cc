#include "passes/channels_last_pass.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/constant_view.h"
#include "graph/inference.h"
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

// Axis `axis` (-4 .. 3) of an activation [N, C, H, W] is this axis of its channels-last twin
// [N, H, W, C]; nullopt when out of range.
std::optional<int64_t> ChannelsLastAxis(int64_t axis) {
  if (axis < -4 || axis > 3) return std::nullopt;
  return kToChannelsFirst[axis < 0 ? axis + 4 : axis];
}

v1::Tensor Int64Tensor(const std::vector<int64_t>& values) {
  v1::Tensor t;
  t.set_dtype(v1::DT_INT64);
  t.add_dims(static_cast<int64_t>(values.size()));
  std::string raw(values.size() * sizeof(int64_t), '\0');
  if (!values.empty()) std::memcpy(raw.data(), values.data(), raw.size());
  t.set_raw_data(std::move(raw));
  return t;
}

// The known size of dim i of `v`, or -1.
int64_t KnownDim(const Value& v, int i) {
  if (!v.type.shape || i >= static_cast<int>(v.type.shape->size())) return -1;
  const Dim& d = (*v.type.shape)[i];
  return d.is_known() ? d.size() : -1;
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
    context_ops_ = context.ops;
    hidden_ = std::make_unique<HiddenAccess>(graph, *context.ops);
    twin_.assign(graph.num_value_slots(), ValueId());
    computed_.assign(graph.num_value_slots(), 0);
    int64_t visited = 0;
    for (NodeId id : *order) {
      if (absl::Status s = context.CheckStopEvery(visited++); !s.ok()) return s;
      const Node& node = graph.node(id);
      if (!node.alive || !node.domain.empty()) continue;
      std::optional<std::string> target = Target(id);
      if (target) {
        if (absl::Status s = Convert(id, *target); !s.ok()) return s;
        continue;
      }
      if (absl::Status s = KeepChannelsLast(id); !s.ok()) return s;
    }
    // Transposes back to channels-first that nothing reads any more (every reader was
    // converted) go; those feeding graph outputs or other nodes stay.
    int back = 0;
    for (NodeId t : to_first_) {
      if (!RemoveNodeIfUnused(graph, t, *context.ops, *hidden_)) ++back;
    }
    const int converted = convs_ + pools_ + others_ + norms_ + moves_ + shuffles_;
    std::string kept;
    if (norms_ + moves_ + shuffles_ > 0) {
      kept = absl::StrCat("; kept channels-last: ", norms_, " BatchNormalization as scale and ",
                          "shift, ", moves_, " Concat/Split/Slice/reductions/Flatten, ", shuffles_,
                          " channel shuffles");
    }
    context.Note(absl::StrCat("converted ", converted, " nodes to channels-last (", convs_,
                              " Conv, ", winograd_convs_, " of them Winograd, ", pools_,
                              " pools, ", others_, " elementwise); transposes: ", to_last_,
                              " in, ", back, " out", kept));
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
    if (absl::Status s = TransposeBack(y_last, y, name, device); !s.ok()) return s;
    if (!layout_op) {
      ++others_;
    } else if (target == kNhwcConvOp) {
      ++convs_;
    } else {
      ++pools_;
    }
    return absl::OkStatus();
  }

  // Whether the node may be replaced: no input or output with a hidden access.
  bool Touchable(const Node& node) const {
    for (ValueId v : node.inputs) {
      if (v.valid() && hidden_->any(v)) return false;
    }
    for (ValueId v : node.outputs) {
      if (v.valid() && hidden_->any(v)) return false;
    }
    return !node.outputs.empty() && node.outputs[0].valid();
  }

  // Whether v's channels-last twin is the output of a converted node.
  bool Computed(ValueId v) const {
    return twin_at(v).valid() && computed_[v.value()] != 0;
  }

  // Whether output i > 0 of the node is absent or unread.
  bool ExtraOutputsUnused(const Node& node) const {
    for (size_t i = 1; i < node.outputs.size(); ++i) {
      const ValueId v = node.outputs[i];
      if (v.valid() && (!graph_->value(v).uses.empty() || graph_->value(v).graph_output_count > 0)) {
        return false;
      }
    }
    return true;
  }

  // A new value for the channels-last twin of activation y.
  ValueId NewTwin(ValueId y) {
    const std::string name = graph_->value(y).name;
    const ValueId t = graph_->AddUniqueValue(absl::StrCat(name, "_nhwc"));
    graph_->mutable_value(t).type =
        TensorType{v1::DT_FLOAT32, Permuted(*graph_->value(y).type.shape, kToChannelsLast)};
    return t;
  }

  // A new initializer named after `base` holding `tensor`.
  ValueId NewInitializer(const std::string& base, v1::Tensor tensor) {
    const ValueId v = graph_->AddUniqueValue(base);
    graph_->mutable_value(v).type = TensorType{tensor.dtype(), ShapeFromDimsList(tensor)};
    graph_->SetInitializer(v, std::move(tensor));
    return v;
  }

  // Detaches every output of `id` (absent ones stay invalid) and removes it.
  std::vector<ValueId> DetachAll(NodeId id) {
    const int n = static_cast<int>(graph_->node(id).outputs.size());
    std::vector<ValueId> outs(n);
    for (int i = 0; i < n; ++i) {
      if (graph_->node(id).outputs[i].valid()) outs[i] = graph_->DetachOutput(id, i);
    }
    graph_->RemoveNode(id);
    return outs;
  }

  // y (detached) becomes a Transpose back of its twin y_last, which a converted node computes;
  // the Transpose goes at the end when nothing reads it.
  absl::Status TransposeBack(ValueId y_last, ValueId y, const std::string& name,
                             const std::string& device) {
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
    return absl::OkStatus();
  }

  // Replaces `id` by a node of the default domain's `op` reading `inputs` (channels-last
  // activations and other operands) with `attrs`, each of whose outputs is the channels-last
  // twin of the old node's output at that position (every one a present activation).
  absl::Status Replace(NodeId id, const std::string& op, std::vector<ValueId> inputs,
                       AttributeMap attrs) {
    const std::string name = graph_->node(id).name;
    const std::string device = graph_->node(id).device;
    const std::vector<ValueId> outs = DetachAll(id);
    std::vector<ValueId> lasts;
    for (ValueId y : outs) lasts.push_back(NewTwin(y));
    absl::StatusOr<NodeId> node = graph_->AddNode(name, op, "", inputs, lasts, std::move(attrs));
    if (!node.ok()) return node.status();
    graph_->mutable_node(*node).device = device;
    for (size_t i = 0; i < outs.size(); ++i) {
      const std::string back_name = outs.size() == 1 ? name : absl::StrCat(name, "_", i);
      if (absl::Status s = TransposeBack(lasts[i], outs[i], back_name, device); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // Ops that move or normalise data rather than compute it stay channels-last when what they
  // read is computed so; otherwise each would stand between two Transposes (a DenseNet's
  // Concat -> BatchNormalization -> Relu, a ShuffleNet's Split and channel shuffle).
  absl::Status KeepChannelsLast(NodeId id) {
    const Node& node = graph_->node(id);
    if (!Touchable(node) || node.inputs.empty() || !node.inputs[0].valid()) {
      return absl::OkStatus();
    }
    const std::string& op = node.op_type;
    if (op == "Concat") return Concat(id);
    if (op == "BatchNormalization") return BatchNormAsScaleShift(id);
    if (op == "Split") return Split(id);
    if (op == "Slice") return Slice(id);
    if (op == "Reshape") return ChannelShuffle(id);
    if (op == "ReduceMean" || op == "ReduceMax" || op == "ReduceMin" || op == "ReduceSum") {
      return Reduce(id);
    }
    if (op == "Flatten") return FlattenPooled(id);
    return absl::OkStatus();
  }

  // Replaces `id` (one output) by `op` reading `inputs`, producing the same value: for results
  // that are the same in either layout.
  absl::Status ReplaceSameOutput(NodeId id, std::vector<ValueId> inputs, AttributeMap attrs) {
    const std::string name = graph_->node(id).name;
    const std::string op = graph_->node(id).op_type;
    const std::string device = graph_->node(id).device;
    const ValueId out = DetachAll(id)[0];
    absl::StatusOr<NodeId> n = graph_->AddNode(name, op, "", inputs, {out}, std::move(attrs));
    if (!n.ok()) return n.status();
    graph_->mutable_node(*n).device = device;
    return absl::OkStatus();
  }

  // Flatten(axis 1) of a pooled activation [N, C, 1, 1] is [N, C] from either layout: the
  // classifier reads the channels-last pool directly.
  absl::Status FlattenPooled(NodeId id) {
    const Node& node = graph_->node(id);
    const ValueId x = node.inputs[0];
    if (!Computed(x) || node.outputs.size() != 1 || IntAttr(node, "axis").value_or(1) != 1 ||
        KnownDim(graph_->value(x), 2) != 1 || KnownDim(graph_->value(x), 3) != 1) {
      return absl::OkStatus();
    }
    ++moves_;
    return ReplaceSameOutput(id, {twin_at(x)}, node.attributes);
  }

  // A reduction of a channels-last activation over axes given as an attribute (or a constant
  // input, as ReduceSum's): over the remapped axes. Keeping dims, its result is a channels-last
  // twin; not keeping them and reducing exactly the spatial axes (a global pooling), the
  // result is [N, C] in either layout and the new node computes the value itself.
  absl::Status Reduce(NodeId id) {
    const Node& node = graph_->node(id);
    if (!Computed(node.inputs[0]) || node.outputs.size() != 1) return absl::OkStatus();
    std::optional<std::vector<int64_t>> axes = IntsAttr(node, "axes");
    const bool axes_input = node.inputs.size() > 1 && node.inputs[1].valid();
    if (axes_input) {
      if (axes) return absl::OkStatus();
      axes = ConstantInts(*graph_, node.inputs[1], *hidden_);
    }
    if (!axes || axes->empty()) return absl::OkStatus();
    std::vector<int64_t> remapped;
    std::vector<bool> reduced(4, false);
    for (int64_t a : *axes) {
      const std::optional<int64_t> r = ChannelsLastAxis(a);
      if (!r) return absl::OkStatus();
      remapped.push_back(*r);
      reduced[a < 0 ? a + 4 : a] = true;
    }
    const bool keepdims = IntAttr(node, "keepdims").value_or(1) != 0;
    const Value& y = graph_->value(node.outputs[0]);
    const bool pooled = !keepdims && !reduced[0] && !reduced[1] && reduced[2] && reduced[3] &&
                        y.type.dtype == v1::DT_FLOAT32 && y.type.shape &&
                        y.type.shape->size() == 2;
    if (!pooled && !(keepdims && IsActivation(y))) return absl::OkStatus();
    std::vector<ValueId> inputs(node.inputs.begin(), node.inputs.end());
    AttributeMap attrs = node.attributes;
    if (axes_input) {
      if (graph_->value(inputs[1]).type.dtype != v1::DT_INT64) return absl::OkStatus();
      inputs[1] =
          NewInitializer(absl::StrCat(node.name.str(), "_axes_nhwc"), Int64Tensor(remapped));
    } else {
      v1::Attribute a;
      for (int64_t r : remapped) a.mutable_ints()->add_values(r);
      attrs["axes"] = std::move(a);
    }
    const ValueId old_axes = axes_input ? node.inputs[1] : ValueId();
    inputs[0] = twin_at(inputs[0]);
    ++moves_;
    if (keepdims) {
      if (absl::Status s = Replace(id, node.op_type.str(), std::move(inputs), std::move(attrs));
          !s.ok()) {
        return s;
      }
    } else if (absl::Status s = ReplaceSameOutput(id, std::move(inputs), std::move(attrs));
               !s.ok()) {
      return s;
    }
    if (old_axes.valid()) RemoveDefinitionIfUnused(*graph_, old_axes, *context_ops_, *hidden_);
    return absl::OkStatus();
  }

  // Concat along any axis of activations, one of them computed channels-last: along the
  // axis's place in the new layout (channels: the last). The others are transposed in, which
  // costs no more than transposing the result would.
  absl::Status Concat(NodeId id) {
    const Node& node = graph_->node(id);
    const std::optional<int64_t> axis = IntAttr(node, "axis");
    if (!axis || !ChannelsLastAxis(*axis) || node.outputs.size() != 1 ||
        !IsActivation(graph_->value(node.outputs[0]))) {
      return absl::OkStatus();
    }
    bool computed = false;
    for (ValueId v : node.inputs) {
      if (!v.valid() || !IsActivation(graph_->value(v))) return absl::OkStatus();
      computed |= Computed(v);
    }
    if (!computed) return absl::OkStatus();
    const ValueIdList old_inputs = node.inputs;
    const std::string device = node.device;
    AttributeMap attrs = node.attributes;
    attrs["axis"].set_i(*ChannelsLastAxis(*axis));
    std::vector<ValueId> inputs;
    for (ValueId v : old_inputs) {
      absl::StatusOr<ValueId> t = ChannelsLast(v, device);
      if (!t.ok()) return t.status();
      inputs.push_back(*t);
    }
    ++moves_;
    return Replace(id, "Concat", std::move(inputs), std::move(attrs));
  }

  // Split of a channels-last activation along any axis (the sizes input, if any, as it is).
  absl::Status Split(NodeId id) {
    const Node& node = graph_->node(id);
    const std::optional<int64_t> axis = ChannelsLastAxis(IntAttr(node, "axis").value_or(0));
    if (!axis || !Computed(node.inputs[0])) return absl::OkStatus();
    for (ValueId v : node.outputs) {
      if (!v.valid() || !IsActivation(graph_->value(v))) return absl::OkStatus();
    }
    std::vector<ValueId> inputs(node.inputs.begin(), node.inputs.end());
    inputs[0] = twin_at(inputs[0]);
    AttributeMap attrs = node.attributes;
    attrs["axis"].set_i(*axis);
    ++moves_;
    return Replace(id, "Split", std::move(inputs), std::move(attrs));
  }

  // Slice of a channels-last activation whose axes are known (constant, or implied by the
  // number of starts): the same starts, ends and steps along the remapped axes.
  absl::Status Slice(NodeId id) {
    const Node& node = graph_->node(id);
    if (!Computed(node.inputs[0]) || node.outputs.size() != 1 ||
        !IsActivation(graph_->value(node.outputs[0]))) {
      return absl::OkStatus();
    }
    std::vector<ValueId> inputs(node.inputs.begin(), node.inputs.end());
    AttributeMap attrs = node.attributes;
    std::vector<int64_t> axes;
    ValueId old_axes;
    if (node.attributes.contains("starts")) {  // opsets < 10: attributes
      const std::vector<int64_t> starts = IntsAttr(node, "starts").value_or(std::vector<int64_t>{});
      axes = IntsAttr(node, "axes").value_or(std::vector<int64_t>{});
      if (!node.attributes.contains("axes")) {
        for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
      }
    } else {
      if (inputs.size() < 3 || !inputs[1].valid()) return absl::OkStatus();
      const v1::DataType index_type = graph_->value(inputs[1]).type.dtype;
      if (inputs.size() > 3 && inputs[3].valid()) {
        std::optional<std::vector<int64_t>> known = ConstantInts(*graph_, inputs[3], *hidden_);
        if (!known) return absl::OkStatus();
        axes = *std::move(known);
      } else {
        const int64_t n = KnownDim(graph_->value(inputs[1]), 0);
        if (n < 0) return absl::OkStatus();
        for (int64_t i = 0; i < n; ++i) axes.push_back(i);
      }
      if (index_type != v1::DT_INT64 && index_type != v1::DT_INT32) return absl::OkStatus();
      std::vector<int64_t> remapped;
      for (int64_t a : axes) {
        const std::optional<int64_t> r = ChannelsLastAxis(a);
        if (!r) return absl::OkStatus();
        remapped.push_back(*r);
      }
      v1::Tensor t = Int64Tensor(remapped);
      if (index_type == v1::DT_INT32) {
        std::vector<int32_t> narrow(remapped.begin(), remapped.end());
        t.set_dtype(v1::DT_INT32);
        t.set_raw_data(std::string(reinterpret_cast<const char*>(narrow.data()),
                                   narrow.size() * sizeof(int32_t)));
      }
      inputs.resize(std::max<size_t>(inputs.size(), 4));
      old_axes = inputs[3];
      inputs[3] = NewInitializer(absl::StrCat(node.name.str(), "_axes_nhwc"), std::move(t));
      axes.clear();
    }
    if (!axes.empty() || node.attributes.contains("starts")) {
      v1::Attribute remapped;
      for (int64_t a : axes) {
        const std::optional<int64_t> r = ChannelsLastAxis(a);
        if (!r) return absl::OkStatus();
        remapped.mutable_ints()->add_values(*r);
      }
      attrs["axes"] = std::move(remapped);
    }
    inputs[0] = twin_at(inputs[0]);
    ++moves_;
    if (absl::Status s = Replace(id, "Slice", std::move(inputs), std::move(attrs)); !s.ok()) {
      return s;
    }
    if (old_axes.valid()) RemoveDefinitionIfUnused(*graph_, old_axes, *context_ops_, *hidden_);
    return absl::OkStatus();
  }

  // An inference BatchNormalization of a channels-last activation: y = x * a + b per channel
  // (a = scale / sqrt(var + epsilon), b = B - mean * a, in double, rounded once), two
  // elementwise ops whose [C] operands broadcast along the last axis; fuse_ops runs them, and
  // a following activation, as one loop. (Where a Conv precedes it, fold_batchnorm has folded
  // it already.)
  absl::Status BatchNormAsScaleShift(NodeId id) {
    const Node& bn = graph_->node(id);
    const ValueId x = bn.inputs[0];
    if (bn.inputs.size() != 5 || !Computed(x) || !ExtraOutputsUnused(bn) ||
        IntAttr(bn, "training_mode").value_or(0) != 0 || IntAttr(bn, "spatial").value_or(1) != 1 ||
        !IsActivation(graph_->value(bn.outputs[0]))) {
      return absl::OkStatus();
    }
    const int64_t channels = KnownDim(graph_->value(x), 1);
    if (channels <= 0) return absl::OkStatus();
    std::optional<ConstantView> p[4];
    for (int i = 0; i < 4; ++i) {
      p[i] = ConstantValue(*graph_, bn.inputs[i + 1], *hidden_);
      if (!p[i] || !IsFloatingPoint(p[i]->dtype()) || p[i]->num_elements() != channels) {
        return absl::OkStatus();
      }
    }
    // The runtime reads epsilon as a float attribute, then computes in double.
    const double eps = FloatAttr(bn, "epsilon").value_or(1e-5f);
    FloatTensorBuilder a(v1::DT_FLOAT32, {channels});
    FloatTensorBuilder b(v1::DT_FLOAT32, {channels});
    for (int64_t c = 0; c < channels; ++c) {
      const double ac = p[0]->AsDouble(c) / std::sqrt(p[3]->AsDouble(c) + eps);
      a.Set(c, ac);
      b.Set(c, p[1]->AsDouble(c) - p[2]->AsDouble(c) * ac);
    }
    const std::string name = bn.name;
    const std::string device = bn.device;
    const ValueId x_last = twin_at(x);
    const ValueIdList params = bn.inputs;
    const ValueId y = DetachAll(id)[0];
    for (size_t i = 1; i < params.size(); ++i) {
      RemoveDefinitionIfUnused(*graph_, params[i], *context_ops_, *hidden_);
    }
    const ValueId scale = NewInitializer(absl::StrCat(name, "_scale"), a.Finish());
    const ValueId shift = NewInitializer(absl::StrCat(name, "_shift"), b.Finish());
    const ValueId y_last = NewTwin(y);
    const ValueId scaled =
        graph_->AddUniqueValue(absl::StrCat(graph_->value(y).name, "_scaled_nhwc"));
    graph_->mutable_value(scaled).type = graph_->value(y_last).type;
    absl::StatusOr<NodeId> mul =
        graph_->AddNode(absl::StrCat(name, "_scale"), "Mul", "", {x_last, scale}, {scaled});
    if (!mul.ok()) return mul.status();
    graph_->mutable_node(*mul).device = device;
    absl::StatusOr<NodeId> add = graph_->AddNode(name, "Add", "", {scaled, shift}, {y_last});
    if (!add.ok()) return add.status();
    graph_->mutable_node(*add).device = device;
    ++norms_;
    return TransposeBack(y_last, y, name, device);
  }

  // A channel shuffle of a channels-last activation x [N, C, H, W]: Reshape to
  // [N, g, C/g, H, W], Transpose(0, 2, 1, 3, 4), Reshape back to x's shape, each read only by
  // the next. Channels-last it is Reshape to [N, H, W, g, C/g], Transpose(0, 1, 2, 4, 3) and
  // Reshape to [N, H, W, C]: the same permutation of each pixel's channels.
  absl::Status ChannelShuffle(NodeId id) {
    const Node& group = graph_->node(id);
    const ValueId x = group.inputs[0];
    if (!Computed(x) || group.outputs.size() != 1 || group.inputs.size() != 2) {
      return absl::OkStatus();
    }
    const Value& xv = graph_->value(x);
    const Value& grouped = graph_->value(group.outputs[0]);
    if (grouped.uses.size() != 1 || grouped.graph_output_count > 0 || !grouped.type.shape ||
        grouped.type.shape->size() != 5 || !Dim::SameSize((*grouped.type.shape)[0], (*xv.type.shape)[0])) {
      return absl::OkStatus();
    }
    const int64_t c = KnownDim(xv, 1), h = KnownDim(xv, 2), w = KnownDim(xv, 3);
    const int64_t g = KnownDim(grouped, 1), cg = KnownDim(grouped, 2);
    if (c <= 0 || h <= 0 || w <= 0 || g <= 0 || cg <= 0 || g * cg != c ||
        KnownDim(grouped, 3) != h || KnownDim(grouped, 4) != w) {
      return absl::OkStatus();
    }
    const NodeId swap = grouped.uses[0].node;
    const Node& t = graph_->node(swap);
    if (t.op_type != "Transpose" || !t.domain.empty() || !Touchable(t) ||
        IntsAttr(t, "perm") != std::vector<int64_t>{0, 2, 1, 3, 4}) {
      return absl::OkStatus();
    }
    const Value& swapped = graph_->value(t.outputs[0]);
    if (swapped.uses.size() != 1 || swapped.graph_output_count > 0) return absl::OkStatus();
    const NodeId merge = swapped.uses[0].node;
    const Node& m = graph_->node(merge);
    if (m.op_type != "Reshape" || !m.domain.empty() || !Touchable(m) || m.inputs[0] != t.outputs[0] ||
        m.outputs.size() != 1 || !IsActivation(graph_->value(m.outputs[0])) ||
        !SameStaticShape(graph_->value(m.outputs[0]).type, xv.type)) {
      return absl::OkStatus();
    }
    const std::string name = m.name;
    const std::string device = m.device;
    const ValueId x_last = twin_at(x);
    const ValueId old_shapes[2] = {group.inputs[1], m.inputs.size() > 1 ? m.inputs[1] : ValueId()};
    const ValueId y = DetachAll(merge)[0];
    RemoveNodeIfUnused(*graph_, swap, *context_ops_, *hidden_);
    RemoveNodeIfUnused(*graph_, id, *context_ops_, *hidden_);
    for (ValueId v : old_shapes) {
      if (v.valid()) RemoveDefinitionIfUnused(*graph_, v, *context_ops_, *hidden_);
    }
    // 0 copies the batch dim, whatever it is.
    const ValueId shape5 = NewInitializer(absl::StrCat(name, "_grouped_shape"),
                                          Int64Tensor({0, h, w, g, cg}));
    const ValueId shape4 = NewInitializer(absl::StrCat(name, "_shape"), Int64Tensor({0, h, w, c}));
    const Dims batch = {(*graph_->value(y).type.shape)[0]};
    auto value = [&](const std::string& base, std::vector<int64_t> tail) {
      const ValueId v = graph_->AddUniqueValue(base);
      Dims dims = batch;
      for (int64_t d : tail) dims.push_back(Dim::Known(d));
      graph_->mutable_value(v).type = TensorType{v1::DT_FLOAT32, dims};
      return v;
    };
    const ValueId a = value(absl::StrCat(name, "_grouped_nhwc"), {h, w, g, cg});
    const ValueId b = value(absl::StrCat(name, "_shuffled_nhwc"), {h, w, cg, g});
    const ValueId y_last = NewTwin(y);
    AttributeMap perm;
    for (int64_t p : {0, 1, 2, 4, 3}) perm["perm"].mutable_ints()->add_values(p);
    absl::StatusOr<NodeId> n1 =
        graph_->AddNode(absl::StrCat(name, "_group"), "Reshape", "", {x_last, shape5}, {a});
    if (!n1.ok()) return n1.status();
    absl::StatusOr<NodeId> n2 = graph_->AddNode(absl::StrCat(name, "_swap"), "Transpose", "",
                                                {a}, {b}, std::move(perm));
    if (!n2.ok()) return n2.status();
    absl::StatusOr<NodeId> n3 = graph_->AddNode(name, "Reshape", "", {b, shape4}, {y_last});
    if (!n3.ok()) return n3.status();
    for (NodeId n : {*n1, *n2, *n3}) graph_->mutable_node(n).device = device;
    ++shuffles_;
    return TransposeBack(y_last, y, name, device);
  }

  Graph* graph_ = nullptr;
  const OpRegistry* context_ops_ = nullptr;
  std::unique_ptr<HiddenAccess> hidden_;
  // Activation value -> its channels-last twin (a value the pass made), by value id.
  std::vector<ValueId> twin_;
  // Whether the twin is the output of a converted node (else a Transpose of the value).
  std::vector<char> computed_;
  // The Transposes back to channels-first, one per converted node, in creation order.
  std::vector<NodeId> to_first_;
  const bool winograd_;
  int convs_ = 0, winograd_convs_ = 0, pools_ = 0, others_ = 0, to_last_ = 0;
  int norms_ = 0, moves_ = 0, shuffles_ = 0;
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
      "NHWC pools (domain graphopt), elementwise ops between them follow, and so do "
      "Concat, Split, Slice, channel shuffles and inference BatchNormalization (as a "
      "per-channel scale and shift) of what they compute; Transposes convert at the edges of "
      "each such region only.";
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
