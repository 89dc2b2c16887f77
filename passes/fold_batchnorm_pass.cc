#include "passes/fold_batchnorm_pass.h"

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/inference.h"
#include "passes/rewrite_driver.h"
#include "passes/rewrite_util.h"

namespace graphopt {
namespace {

// y = a * x + b per channel: what an inference BatchNormalization computes (a = scale /
// sqrt(var + epsilon), b = B - mean * a, in double as the runtime's kernel does).
struct Affine {
  std::vector<double> a;
  std::vector<double> b;
};

bool IsFoldableDtype(v1::DataType t) { return t == v1::DT_FLOAT32 || t == v1::DT_FLOAT64; }

// `w` with its elements along `axis` scaled by a[c] (w viewed as [outer, C, inner]), computed in
// double and rounded once to w's dtype.
v1::Tensor ScaleAlong(const ConstantView& w, int axis, const std::vector<double>& a) {
  FloatTensorBuilder out(w.dtype(), w.dims());
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= w.dim(i);
  for (int i = axis + 1; i < w.rank(); ++i) inner *= w.dim(i);
  const int64_t c = w.dim(axis);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t ci = 0; ci < c; ++ci) {
      const int64_t base = (o * c + ci) * inner;
      for (int64_t i = base; i < base + inner; ++i) out.Set(i, w.AsDouble(i) * a[ci]);
    }
  }
  return out.Finish();
}

// Sets `value`'s initializer to `tensor`, and its type to the tensor's.
void SetTypedInitializer(Graph& graph, ValueId value, v1::Tensor tensor) {
  TensorType& type = graph.mutable_value(value).type;
  type.dtype = tensor.dtype();
  type.shape = ShapeFromDimsList(tensor);
  graph.SetInitializer(value, std::move(tensor));
}

// A new initializer value named after `base` (made unique) holding `tensor`.
ValueId AddInitializer(Graph& graph, absl::string_view base, v1::Tensor tensor) {
  const ValueId value = graph.AddUniqueValue(base);
  SetTypedInitializer(graph, value, std::move(tensor));
  return value;
}

// The folded bias: a * beta_scale * old + b, where `old` has C elements, one, or is absent.
v1::Tensor FoldedBias(v1::DataType dtype, const std::vector<int64_t>& dims, const Affine& f,
                      const std::optional<ConstantView>& old, double beta_scale) {
  const int64_t c = static_cast<int64_t>(f.a.size());
  FloatTensorBuilder out(dtype, dims);
  for (int64_t i = 0; i < c; ++i) {
    double v = f.b[i];
    if (old) v += f.a[i] * beta_scale * old->AsDouble(old->num_elements() == 1 ? 0 : i);
    out.Set(i, v);
  }
  return out.Finish();
}

// The constant affine map of an inference BatchNormalization; nullopt when its parameters are
// not constants of one length.
std::optional<Affine> AffineOf(const RewriteContext& c, const Node& bn) {
  std::optional<ConstantView> p[4];
  for (int i = 0; i < 4; ++i) {
    p[i] = ConstantValue(c.graph, bn.inputs[i + 1], c.hidden);
    if (!p[i] || !IsFloatingPoint(p[i]->dtype())) return std::nullopt;
  }
  const int64_t n = p[0]->num_elements();
  for (int i = 1; i < 4; ++i) {
    if (p[i]->num_elements() != n) return std::nullopt;
  }
  // The runtime reads epsilon as a float attribute, then computes in double.
  const double eps = FloatAttr(bn, "epsilon").value_or(1e-5f);
  Affine f;
  f.a.resize(n);
  f.b.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    f.a[i] = p[0]->AsDouble(i) / std::sqrt(p[3]->AsDouble(i) + eps);
    f.b[i] = p[1]->AsDouble(i) - p[2]->AsDouble(i) * f.a[i];
  }
  return f;
}

// Stores `tensor` for the present input `index` of `node`: in place when that input is an
// initializer only this node reads, else as a new initializer (the old definition goes when
// unused). Returns the value now read.
ValueId Store(RewriteContext& c, NodeId node, int index, v1::Tensor tensor) {
  const ValueId old = c.graph.node(node).inputs[index];
  const Value& v = c.graph.value(old);
  if (v.initializer >= 0 && !v.is_graph_input && !c.hidden.any(old) &&
      v.graph_output_count == 0 && v.uses.size() == 1) {
    SetTypedInitializer(c.graph, old, std::move(tensor));
    return old;
  }
  const std::string name(v.name);
  const ValueId target = AddInitializer(c.graph, name, std::move(tensor));
  c.graph.SetInput(node, index, target);
  RemoveDefinitionIfUnused(c.graph, old, c.ops, c.hidden);
  return target;
}

// Input 2 (the bias) of `node` set to `bias`: stored over the old one (Store), or added as a
// new initializer named after the weights.
absl::Status SetBias(RewriteContext& c, NodeId node, v1::Tensor bias,
                     const std::string& weight_name) {
  const Node& n = c.graph.node(node);
  if (n.inputs.size() > 2 && n.inputs[2].valid()) {
    Store(c, node, 2, std::move(bias));
    return absl::OkStatus();
  }
  std::vector<ValueId> inputs(n.inputs.begin(), n.inputs.end());
  inputs.resize(3);
  inputs[2] = AddInitializer(c.graph, absl::StrCat(weight_name, "_bias"), std::move(bias));
  return RebuildNodeWithInputs(c.graph, node, std::move(inputs)).status();
}

// The constant weight input `index` of `node`, of the given rank (0: any >= 3) and `dtype`.
std::optional<ConstantView> Weights(const RewriteContext& c, const Node& node, int index,
                                    int rank, v1::DataType dtype) {
  if (index >= static_cast<int>(node.inputs.size()) || !node.inputs[index].valid()) {
    return std::nullopt;
  }
  std::optional<ConstantView> w = ConstantValue(c.graph, node.inputs[index], c.hidden);
  if (!w || w->dtype() != dtype || (rank == 0 ? w->rank() < 3 : w->rank() != rank)) {
    return std::nullopt;
  }
  return w;
}

// An optional bias input: absent (nullopt, true), or constant with `c` or 1 elements.
std::optional<ConstantView> OptionalBias(const RewriteContext& c, const Node& node, int index,
                                         int64_t channels, bool* ok) {
  *ok = true;
  if (index >= static_cast<int>(node.inputs.size()) || !node.inputs[index].valid()) {
    return std::nullopt;
  }
  std::optional<ConstantView> bias = ConstantValue(c.graph, node.inputs[index], c.hidden);
  if (!bias || !IsFloatingPoint(bias->dtype()) ||
      (bias->num_elements() != channels && bias->num_elements() != 1)) {
    *ok = false;
    return std::nullopt;
  }
  return bias;
}

// What every fold starts from: the BatchNormalization root and the node producing its input.
struct Fold {
  NodeId bn;
  NodeId producer;
  Affine affine;
  int64_t channels = 0;
};

// The checks all folds share; a refusal says why the root stays.
absl::StatusOr<RewriteResult> Prepare(const RewriteContext& c, NodeId bn_id, Fold* fold) {
  const Node& bn = c.graph.node(bn_id);
  if (IntAttr(bn, "training_mode").value_or(0) != 0) return RewriteResult::Refused("training mode");
  for (size_t i = 1; i < bn.outputs.size(); ++i) {
    if (bn.outputs[i].valid() && (!c.graph.value(bn.outputs[i]).uses.empty() ||
                                  c.graph.value(bn.outputs[i]).graph_output_count > 0)) {
      return RewriteResult::Refused("statistics outputs used");
    }
  }
  if (bn.inputs.size() != 5 || !bn.inputs[0].valid() || bn.outputs.empty() ||
      !bn.outputs[0].valid()) {
    return RewriteResult::Refused("malformed");
  }
  const Value& xv = c.graph.value(bn.inputs[0]);
  if (xv.uses.size() != 1 || xv.graph_output_count > 0) {
    return RewriteResult::Refused("producer output shared");
  }
  if (!IsFoldableDtype(xv.type.dtype)) return RewriteResult::Refused("not float32/float64");
  std::optional<Affine> affine = AffineOf(c, bn);
  if (!affine) return RewriteResult::Refused("parameters not constant");
  fold->bn = bn_id;
  fold->producer = xv.producer;
  fold->channels = static_cast<int64_t>(affine->a.size());
  fold->affine = *std::move(affine);
  return RewriteResult::Applied();
}

// Gemm and MatMul fold only where BatchNormalization's channel axis (1) is their last.
bool RankTwoInput(const RewriteContext& c, NodeId bn) {
  const std::optional<Dims>& shape = c.graph.value(c.graph.node(bn).inputs[0]).type.shape;
  return shape && shape->size() == 2;
}

// Each Into* folds the affine map into the producer and returns Applied, or why it cannot
// (graph untouched).
using FoldInto = absl::StatusOr<RewriteResult> (*)(RewriteContext&, const Fold&);

// Sets input 1 of `node` (the weights) to `weights` and input 2 (the bias) to `bias`.
absl::StatusOr<RewriteResult> StoreWeightsAndBias(RewriteContext& c, NodeId node,
                                                  v1::Tensor weights, v1::Tensor bias) {
  const std::string weight_name = c.graph.value(c.graph.node(node).inputs[1]).name;
  Store(c, node, 1, std::move(weights));
  if (absl::Status s = SetBias(c, node, std::move(bias), weight_name); !s.ok()) return s;
  return RewriteResult::Applied();
}

// BN(Conv(x, W, B)) = Conv(x, W * a[c], a * B + b).
absl::StatusOr<RewriteResult> IntoConv(RewriteContext& c, const Fold& f) {
  const Node& n = c.graph.node(f.producer);
  const v1::DataType dtype = c.graph.value(n.outputs[0]).type.dtype;
  std::optional<ConstantView> w = Weights(c, n, 1, 0, dtype);
  if (!w || w->dim(0) != f.channels) {
    return RewriteResult::Refused("weights not constant or not matching");
  }
  bool bias_ok = false;
  std::optional<ConstantView> bias = OptionalBias(c, n, 2, f.channels, &bias_ok);
  if (!bias_ok || (bias && bias->num_elements() != f.channels)) {
    return RewriteResult::Refused("bias not constant");
  }
  return StoreWeightsAndBias(c, f.producer, ScaleAlong(*w, 0, f.affine.a),
                             FoldedBias(dtype, {f.channels}, f.affine, bias, 1.0));
}

// BN(Gemm(x, W, C, beta)) = Gemm(x, W * a[c], a * beta * C + b, beta = 1).
absl::StatusOr<RewriteResult> IntoGemm(RewriteContext& c, const Fold& f) {
  if (!RankTwoInput(c, f.bn)) return RewriteResult::Refused("output not of rank 2");
  const Node& n = c.graph.node(f.producer);
  const v1::DataType dtype = c.graph.value(n.outputs[0]).type.dtype;
  std::optional<ConstantView> w = Weights(c, n, 1, 2, dtype);
  const bool trans_b = IntAttr(n, "transB").value_or(0) != 0;
  if (!w || w->dim(trans_b ? 0 : 1) != f.channels) {
    return RewriteResult::Refused("weights not constant or not matching");
  }
  bool bias_ok = false;
  std::optional<ConstantView> bias = OptionalBias(c, n, 2, f.channels, &bias_ok);
  if (!bias_ok) return RewriteResult::Refused("bias not constant");
  // C of shape [1, C] keeps it; [C] and single elements become [C]; others do not fold.
  std::vector<int64_t> bias_dims = {f.channels};
  if (bias) {
    const bool row = bias->rank() == 2 && bias->dim(0) == 1 && bias->dim(1) == f.channels;
    if (row) bias_dims = {1, f.channels};
    if (!row && !(bias->rank() == 1 && bias->dim(0) == f.channels) &&
        !(bias->num_elements() == 1 && bias->rank() <= 2)) {
      return RewriteResult::Refused("bias shape not [C], [1, C] or one element");
    }
  }
  const double beta = FloatAttr(n, "beta").value_or(1.0f);
  v1::Tensor scaled = ScaleAlong(*w, trans_b ? 0 : 1, f.affine.a);
  v1::Tensor new_bias = FoldedBias(dtype, bias_dims, f.affine, bias, beta);
  if (beta != 1.0) {
    v1::Attribute one;
    one.set_f(1.0f);
    c.graph.mutable_node(f.producer).attributes["beta"] = std::move(one);
  }
  return StoreWeightsAndBias(c, f.producer, std::move(scaled), std::move(new_bias));
}

// BN(MatMul(x, W)) = Add(MatMul(x, W * a[c]), b): the Add replaces the BatchNormalization,
// producing its output value.
absl::StatusOr<RewriteResult> IntoMatMul(RewriteContext& c, const Fold& f) {
  if (!RankTwoInput(c, f.bn)) return RewriteResult::Refused("output not of rank 2");
  const Node& n = c.graph.node(f.producer);
  const v1::DataType dtype = c.graph.value(n.outputs[0]).type.dtype;
  std::optional<ConstantView> w = Weights(c, n, 1, 2, dtype);
  if (!w || w->dim(1) != f.channels) {
    return RewriteResult::Refused("weights not constant or not matching");
  }
  v1::Tensor scaled = ScaleAlong(*w, 1, f.affine.a);
  const std::string weight_name = c.graph.value(n.inputs[1]).name;
  Store(c, f.producer, 1, std::move(scaled));
  const ValueId b = AddInitializer(c.graph, absl::StrCat(weight_name, "_bias"),
                                   FoldedBias(dtype, {f.channels}, f.affine, std::nullopt, 1.0));
  const std::string name = c.graph.node(f.bn).name;
  const ValueId x = c.graph.node(f.bn).inputs[0];
  const ValueId y = c.graph.DetachOutput(f.bn, 0);
  c.graph.RemoveNode(f.bn);
  absl::StatusOr<NodeId> add = c.graph.AddNode(name, "Add", "", {x, b}, {y});
  if (!add.ok()) return add.status();
  return RewriteResult::Applied();
}

// BN(Add(MatMul(x, W), B)) = Add(MatMul(x, W * a[c]), a * B + b).
absl::StatusOr<RewriteResult> IntoMatMulAdd(RewriteContext& c, const Fold& f) {
  if (!RankTwoInput(c, f.bn)) return RewriteResult::Refused("output not of rank 2");
  const Node& add = c.graph.node(f.producer);
  if (add.inputs.size() != 2 || !add.inputs[0].valid() || !add.inputs[1].valid()) {
    return RewriteResult::NoMatch();
  }
  int mm_index = -1;
  for (int i : {0, 1}) {
    const ValueId v = add.inputs[i];
    const Value& value = c.graph.value(v);
    if (ProducerOf(c.graph, v, "MatMul").valid() && value.uses.size() == 1 &&
        value.graph_output_count == 0 && !c.hidden.any(v)) {
      mm_index = i;
      break;
    }
  }
  if (mm_index < 0) return RewriteResult::NoMatch();
  const NodeId matmul = c.graph.value(add.inputs[mm_index]).producer;
  const int bias_index = 1 - mm_index;
  const v1::DataType dtype = c.graph.value(add.outputs[0]).type.dtype;
  std::optional<ConstantView> w = Weights(c, c.graph.node(matmul), 1, 2, dtype);
  if (!w || w->dim(1) != f.channels) {
    return RewriteResult::Refused("weights not constant or not matching");
  }
  std::optional<ConstantView> bias = ConstantValue(c.graph, add.inputs[bias_index], c.hidden);
  if (!bias || bias->dtype() != dtype) return RewriteResult::Refused("bias not constant");
  std::vector<int64_t> bias_dims;
  if (bias->rank() == 1 && bias->dim(0) == f.channels) {
    bias_dims = {f.channels};
  } else if (bias->rank() == 2 && bias->dim(0) == 1 && bias->dim(1) == f.channels) {
    bias_dims = {1, f.channels};
  } else if (bias->num_elements() == 1 && bias->rank() <= 1) {
    bias_dims = {f.channels};
  } else {
    return RewriteResult::Refused("bias shape not [C], [1, C] or one element");
  }
  v1::Tensor scaled = ScaleAlong(*w, 1, f.affine.a);
  v1::Tensor new_bias = FoldedBias(dtype, bias_dims, f.affine, bias, 1.0);
  const NodeId add_id = f.producer;
  Store(c, matmul, 1, std::move(scaled));
  Store(c, add_id, bias_index, std::move(new_bias));
  return RewriteResult::Applied();
}

// The shared checks, the fold, and the BatchNormalization's removal (unless the fold replaced
// it): its output's readers read the producer's output, which takes over its name.
absl::StatusOr<RewriteResult> FoldBatchNorm(RewriteContext& c, NodeId bn, FoldInto into) {
  Fold fold;
  absl::StatusOr<RewriteResult> prepared = Prepare(c, bn, &fold);
  if (!prepared.ok() || prepared->kind() != RewriteResult::Kind::kApplied) return prepared;
  const ValueId x = c.graph.node(bn).inputs[0];
  absl::StatusOr<RewriteResult> folded = into(c, fold);
  if (!folded.ok() || folded->kind() != RewriteResult::Kind::kApplied) return folded;
  if (c.graph.node(bn).alive && !ReplaceNodeByValue(c.graph, bn, x, c.hidden)) {
    return absl::InternalError(absl::StrCat(c.graph.NodeLabel(bn), ": could not be removed"));
  }
  return RewriteResult::Applied();
}

// Conv(BN(x), W, B) = Conv(x, W * a[c], B + sum over c and taps of W * b[c]), where c is the
// input channel each weight reads. Exact only when the Conv pads nothing: every tap then reads
// an element of BN(x), which carries the shift b; a padded tap would read a zero of BN(x)'s
// padding, where x's padding gives no shift. The BatchNormalization's output must be read by
// that Conv alone (as its data); x may have other readers.
absl::StatusOr<RewriteResult> FoldIntoNextConv(RewriteContext& c, NodeId bn_id) {
  const Node& bn = c.graph.node(bn_id);
  if (IntAttr(bn, "training_mode").value_or(0) != 0) return RewriteResult::Refused("training mode");
  if (bn.inputs.size() != 5 || !bn.inputs[0].valid() || bn.outputs.empty() ||
      !bn.outputs[0].valid()) {
    return RewriteResult::Refused("malformed");
  }
  for (size_t i = 1; i < bn.outputs.size(); ++i) {
    if (bn.outputs[i].valid() && (!c.graph.value(bn.outputs[i]).uses.empty() ||
                                  c.graph.value(bn.outputs[i]).graph_output_count > 0)) {
      return RewriteResult::Refused("statistics outputs used");
    }
  }
  const Value& y = c.graph.value(bn.outputs[0]);
  if (y.uses.size() != 1 || y.graph_output_count > 0 || y.uses[0].input_index != 0 ||
      c.hidden.any(bn.outputs[0]) || c.hidden.any(bn.inputs[0])) {
    return RewriteResult::NoMatch();
  }
  const NodeId conv = y.uses[0].node;
  const Node& n = c.graph.node(conv);
  if (!IsFoldableDtype(y.type.dtype)) return RewriteResult::Refused("not float32/float64");
  for (int64_t p : IntsAttr(n, "pads").value_or(std::vector<int64_t>{})) {
    if (p != 0) return RewriteResult::Refused("next Conv pads");
  }
  if (auto it = n.attributes.find("auto_pad");
      it != n.attributes.end() && it->second.s() != "NOTSET" && it->second.s() != "VALID") {
    return RewriteResult::Refused("next Conv pads");
  }
  std::optional<Affine> affine = AffineOf(c, bn);
  if (!affine) return RewriteResult::Refused("parameters not constant");
  const int64_t channels = static_cast<int64_t>(affine->a.size());
  const v1::DataType dtype = c.graph.value(n.outputs[0]).type.dtype;
  std::optional<ConstantView> w = Weights(c, n, 1, 0, dtype);
  const int64_t groups = IntAttr(n, "group").value_or(1);
  if (!w || groups <= 0 || w->dim(0) % groups != 0 || w->dim(1) * groups != channels) {
    return RewriteResult::Refused("weights not constant or not matching");
  }
  const int64_t m = w->dim(0);
  bool bias_ok = false;
  std::optional<ConstantView> bias = OptionalBias(c, n, 2, m, &bias_ok);
  if (!bias_ok || (bias && bias->num_elements() != m)) {
    return RewriteResult::Refused("bias not constant");
  }
  // W viewed as [M, C/group, taps]: output channel o reads input channel g * C/group + ci.
  const int64_t per_group = w->dim(1);
  const int64_t taps = w->num_elements() / (m * per_group);
  const int64_t outputs_per_group = m / groups;
  FloatTensorBuilder scaled(w->dtype(), w->dims());
  std::vector<double> shift(m, 0.0);
  for (int64_t o = 0; o < m; ++o) {
    const int64_t g = o / outputs_per_group;
    for (int64_t ci = 0; ci < per_group; ++ci) {
      const int64_t ch = g * per_group + ci;
      const int64_t base = (o * per_group + ci) * taps;
      for (int64_t k = base; k < base + taps; ++k) {
        scaled.Set(k, w->AsDouble(k) * affine->a[ch]);
        shift[o] += w->AsDouble(k) * affine->b[ch];
      }
    }
  }
  FloatTensorBuilder new_bias(dtype, {m});
  for (int64_t o = 0; o < m; ++o) new_bias.Set(o, shift[o] + (bias ? bias->AsDouble(o) : 0.0));
  const ValueId x = bn.inputs[0];
  absl::StatusOr<RewriteResult> stored =
      StoreWeightsAndBias(c, conv, scaled.Finish(), new_bias.Finish());
  if (!stored.ok()) return stored;
  if (!ReplaceNodeByValue(c.graph, bn_id, x, c.hidden)) {
    return absl::InternalError(absl::StrCat(c.graph.NodeLabel(bn_id), ": could not be removed"));
  }
  return RewriteResult::Applied();
}

// A pattern folding a BatchNormalization that reads `op`'s output.
RewritePattern FoldPattern(const char* name, const char* op, FoldInto into) {
  return RewritePattern{
      name,
      {"BatchNormalization"},
      [op](const RewriteContext& c, NodeId id) {
        const Node& bn = c.graph.node(id);
        return !bn.inputs.empty() && ProducerOf(c.graph, bn.inputs[0], op).valid();
      },
      [into](RewriteContext& c, NodeId id) { return FoldBatchNorm(c, id, into); }};
}

// Folds inference-mode BatchNormalization into the preceding linear op whose weights are
// constants: Conv (with or without bias; a bias input is added when absent), Gemm (C folded,
// beta set to 1), MatMul + Add(constant bias), and a bare MatMul (the BatchNormalization becomes
// an Add of the folded bias). One that cannot fold backwards (after a Concat, say) folds forwards
// into the Conv that alone reads it, when that Conv pads nothing (FoldIntoNextConv).
// The scale goes into the weights and the shift into the bias,
// computed in double and rounded once, so results match the unfolded graph to float rounding.
// Only when the producer's output is read by the BatchNormalization alone, its statistics
// outputs are unused and training_mode is 0; float32 and float64 only. Weights shared with
// other nodes are copied, not changed. The BatchNormalization's output keeps its name.
class FoldBatchNormPass : public Pass {
 public:
  absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) override {
    return RunPatterns(graph, context, patterns_, "folded BatchNormalization");
  }

 private:
  const std::vector<RewritePattern> patterns_ = {
      FoldPattern("into_conv", "Conv", IntoConv),
      FoldPattern("into_gemm", "Gemm", IntoGemm),
      FoldPattern("into_matmul", "MatMul", IntoMatMul),
      FoldPattern("into_matmul_add", "Add", IntoMatMulAdd),
      // Last: a BatchNormalization that folds backwards does so (its Conv then reads x).
      RewritePattern{"into_next_conv",
                     {"BatchNormalization"},
                     [](const RewriteContext& c, NodeId id) {
                       const Node& bn = c.graph.node(id);
                       if (bn.outputs.empty() || !bn.outputs[0].valid()) return false;
                       const Value& y = c.graph.value(bn.outputs[0]);
                       return y.uses.size() == 1 &&
                              c.graph.node(y.uses[0].node).op_type == "Conv" &&
                              c.graph.node(y.uses[0].node).domain.empty();
                     },
                     FoldIntoNextConv},
  };
};

}  // namespace

PassInfo FoldBatchNormPassInfo() {
  PassInfo info;
  info.name = "fold_batchnorm";
  info.description =
      "Folds inference BatchNormalization into the preceding Conv, Gemm or MatMul(+Add) with "
      "constant weights (scale into the weights, shift into the bias; a bias is added when "
      "absent) when nothing else reads the producer's output; else into the following Conv "
      "that alone reads it, when that Conv pads nothing.";
  info.requires_analyses = {Analysis::kTypes, Analysis::kShapes};
  info.preserves = AnalysisSet::All();
  info.min_opt_level = 2;
  info.repeat_to_fixpoint = true;
  info.factory = OptionlessFactory<FoldBatchNormPass>();
  return info;
}

}  // namespace graphopt
