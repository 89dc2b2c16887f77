#include "passes/fold_batchnorm_pass.h"

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "passes/rewrite_util.h"

namespace graphopt {
namespace {

// y = a * x + b per channel: what an inference BatchNormalization computes (a = scale /
// sqrt(var + epsilon), b = B - mean * a, in double as the runtime's kernel does).
struct Affine {
  std::vector<double> a;
  std::vector<double> b;
};

// What the FoldInto* functions return when they folded (otherwise: why not).
constexpr const char* kFolded = nullptr;

bool IsFoldableDtype(v1::DataType t) { return t == v1::DT_FLOAT32 || t == v1::DT_FLOAT64; }

// `w` with its elements along `axis` scaled by a[c] (w viewed as [outer, C, inner]), computed in
// double and rounded once to w's dtype.
absl::StatusOr<runtime::Tensor> ScaleAlong(const runtime::Tensor& w, int axis,
                                           const std::vector<double>& a) {
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= w.dim(i);
  for (int i = axis + 1; i < w.rank(); ++i) inner *= w.dim(i);
  const int64_t c = w.dim(axis);
  absl::StatusOr<runtime::Tensor> out = runtime::Tensor::Allocate(w.dtype(), w.shape());
  if (!out.ok()) return out.status();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t ci = 0; ci < c; ++ci) {
      const int64_t base = (o * c + ci) * inner;
      for (int64_t i = base; i < base + inner; ++i) {
        if (w.dtype() == v1::DT_FLOAT32) {
          out->data<float>()[i] = static_cast<float>(w.data<float>()[i] * a[ci]);
        } else {
          out->data<double>()[i] = w.data<double>()[i] * a[ci];
        }
      }
    }
  }
  return out;
}

// Sets `value`'s initializer to `tensor`, and its type to the tensor's.
void SetTypedInitializer(Graph& graph, ValueId value, const runtime::Tensor& tensor) {
  TensorType& type = graph.mutable_value(value).type;
  type.dtype = tensor.dtype();
  type.shape = Dims();
  for (int64_t d : tensor.shape()) type.shape->push_back(Dim::Known(d));
  v1::Tensor proto;
  tensor.ToProto(&proto);
  graph.SetInitializer(value, std::move(proto));
}

// A new initializer value named after `base` (made unique) holding `tensor`.
ValueId AddInitializer(Graph& graph, absl::string_view base, const runtime::Tensor& tensor) {
  const ValueId value = graph.AddUniqueValue(base);
  SetTypedInitializer(graph, value, tensor);
  return value;
}

// The folded bias: a * beta_scale * old + b, where `old` has C elements, one, or is absent.
runtime::Tensor FoldedBias(v1::DataType dtype, const runtime::Shape& shape, const Affine& f,
                           const std::optional<runtime::Tensor>& old, double beta_scale) {
  const int64_t c = static_cast<int64_t>(f.a.size());
  runtime::Tensor out = runtime::Tensor::Allocate(dtype, shape).value();
  for (int64_t i = 0; i < c; ++i) {
    double v = f.b[i];
    if (old) v += f.a[i] * beta_scale * old->ElementAsDouble(old->num_elements() == 1 ? 0 : i);
    if (dtype == v1::DT_FLOAT32) {
      out.data<float>()[i] = static_cast<float>(v);
    } else {
      out.data<double>()[i] = v;
    }
  }
  return out;
}

// Folds inference-mode BatchNormalization into the preceding linear op whose weights are
// constants: Conv (with or without bias; a bias input is added when absent), Gemm (C folded,
// beta set to 1), MatMul + Add(constant bias), and a bare MatMul (the BatchNormalization becomes
// an Add of the folded bias). The scale goes into the weights and the shift into the bias,
// computed in double and rounded once, so results match the unfolded graph to float rounding.
// Only when the producer's output is read by the BatchNormalization alone, its statistics
// outputs are unused and training_mode is 0; float32 and float64 only. Weights shared with
// other nodes are copied, not changed. The BatchNormalization's output keeps its name.
class FoldBatchNormPass : public Pass {
 public:
  absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) override {
    absl::StatusOr<std::vector<NodeId>> order = graph.TopologicalOrder();
    if (!order.ok()) return order.status();
    ops_ = context.ops;
    hidden_.emplace(graph, *context.ops);
    folded_.clear();
    left_.clear();
    // Through the graph's dense op kinds: no sweep over the nodes when there is no
    // BatchNormalization, and 4 bytes read per node when there is.
    const OpKindId bn_kind = graph.FindOpKind("", "BatchNormalization");
    if (graph.num_live_nodes_of_kind(bn_kind) > 0) {
      int64_t visited = 0;
      for (NodeId id : *order) {
        if (absl::Status s = context.CheckStopEvery(visited++); !s.ok()) return s;
        if (graph.op_kind(id) != bn_kind || !graph.node(id).alive) continue;
        absl::StatusOr<const char*> into = Fold(graph, id);
        if (!into.ok()) return into.status();
        if (*into != nullptr) ++folded_[*into];
      }
    }
    int64_t total = 0, left = 0;
    for (const auto& [op, count] : folded_) total += count;
    for (const auto& [why, count] : left_) left += count;
    auto join = [](const absl::btree_map<std::string, int64_t>& m) {
      return absl::StrJoin(m, ", ", [](std::string* out, const auto& kv) {
        absl::StrAppend(out, kv.first, " ", kv.second);
      });
    };
    context.Note(absl::StrCat("folded ", total, " BatchNormalization nodes",
                              total > 0 ? absl::StrCat(" into ", join(folded_)) : "",
                              left > 0 ? absl::StrCat("; left ", left, ": ", join(left_)) : ""));
    return total > 0;
  }

 private:
  // Returns the op folded into, or null (with the reason counted) when the node stays.
  absl::StatusOr<const char*> Fold(Graph& graph, NodeId bn_id) {
    const Node& bn = graph.node(bn_id);
    if (IntAttr(bn, "training_mode").value_or(0) != 0) return Leave("training mode");
    for (size_t i = 1; i < bn.outputs.size(); ++i) {
      if (bn.outputs[i].valid() && (!graph.value(bn.outputs[i]).uses.empty() ||
                                    graph.value(bn.outputs[i]).graph_output_count > 0)) {
        return Leave("statistics outputs used");
      }
    }
    if (bn.inputs.size() != 5 || !bn.inputs[0].valid() || bn.outputs.empty() ||
        !bn.outputs[0].valid()) {
      return Leave("malformed");
    }
    const ValueId x = bn.inputs[0];
    const Value& xv = graph.value(x);
    const NodeId producer = xv.producer;
    if (!producer.valid() || !graph.node(producer).domain.empty()) {
      return Leave("not after Conv, Gemm or MatMul");
    }
    if (xv.uses.size() != 1 || xv.graph_output_count > 0) return Leave("producer output shared");
    // Their values change or they go: no subgraph may read them by name, no node write them.
    if (hidden_->any(x) || hidden_->any(bn.outputs[0])) return Leave("hidden accesses");
    if (!IsFoldableDtype(xv.type.dtype)) return Leave("not float32/float64");

    std::optional<Affine> affine = AffineOf(graph, bn);
    if (!affine) return Leave("parameters not constant");
    const int64_t c = static_cast<int64_t>(affine->a.size());
    const std::string op = graph.node(producer).op_type;
    if (op != "Conv" && (!xv.type.shape || xv.type.shape->size() != 2)) {
      // Gemm and MatMul fold only where BatchNormalization's channel axis (1) is their last.
      return Leave(op == "Gemm" || op == "MatMul" || op == "Add" ? "output not of rank 2"
                                                                   : "not after Conv, Gemm or MatMul");
    }
    const ValueIdList params = bn.inputs;
    absl::StatusOr<const char*> why;
    if (op == "Conv") {
      why = FoldIntoConv(graph, producer, *affine, c);
    } else if (op == "Gemm") {
      why = FoldIntoGemm(graph, producer, *affine, c);
    } else if (op == "MatMul") {
      why = FoldIntoMatMul(graph, producer, bn_id, *affine, c);
    } else if (op == "Add") {
      why = FoldIntoMatMulAdd(graph, producer, *affine, c);
    } else {
      return Leave("not after Conv, Gemm or MatMul");
    }
    if (!why.ok()) return why.status();
    if (*why != nullptr) return Leave(*why);
    // The MatMul case already replaced the BatchNormalization by an Add.
    if (graph.node(bn_id).alive && !ReplaceNodeByValue(graph, bn_id, x, *hidden_)) {
      return absl::InternalError(absl::StrCat(graph.NodeLabel(bn_id), ": could not be removed"));
    }
    for (size_t i = 1; i < params.size(); ++i) RemoveDefinitionIfUnused(graph, params[i], *ops_, *hidden_);
    return op == "Conv" ? "Conv" : op == "Gemm" ? "Gemm" : op == "MatMul" ? "MatMul" : "MatMul+Add";
  }

  const char* Leave(const char* why) {
    ++left_[why];
    return nullptr;
  }

  std::optional<Affine> AffineOf(const Graph& graph, const Node& bn) const {
    std::optional<runtime::Tensor> p[4];
    for (int i = 0; i < 4; ++i) {
      p[i] = ConstantValue(graph, bn.inputs[i + 1], *hidden_);
      if (!p[i] || !IsFloatingPoint(p[i]->dtype())) return std::nullopt;
    }
    const int64_t c = p[0]->num_elements();
    for (int i = 1; i < 4; ++i) {
      if (p[i]->num_elements() != c) return std::nullopt;
    }
    // The runtime reads epsilon as a float attribute, then computes in double.
    const double eps = FloatAttr(bn, "epsilon").value_or(1e-5f);
    Affine f;
    f.a.resize(c);
    f.b.resize(c);
    for (int64_t i = 0; i < c; ++i) {
      f.a[i] = p[0]->ElementAsDouble(i) / std::sqrt(p[3]->ElementAsDouble(i) + eps);
      f.b[i] = p[1]->ElementAsDouble(i) - p[2]->ElementAsDouble(i) * f.a[i];
    }
    return f;
  }

  // Input 2 (the bias) of `node` set to `bias`: stored over the old one (Store), or added as a
  // new initializer named after the weights.
  absl::StatusOr<const char*> SetBias(Graph& graph, NodeId node, const runtime::Tensor& bias,
                                      const std::string& weight_name) {
    const Node& n = graph.node(node);
    if (n.inputs.size() > 2 && n.inputs[2].valid()) {
      Store(graph, node, 2, bias);
      return kFolded;
    }
    std::vector<ValueId> inputs(n.inputs.begin(), n.inputs.end());
    inputs.resize(3);
    inputs[2] = AddInitializer(graph, absl::StrCat(weight_name, "_bias"), bias);
    absl::StatusOr<NodeId> rebuilt = RebuildNodeWithInputs(graph, node, std::move(inputs));
    if (!rebuilt.ok()) return rebuilt.status();
    return kFolded;
  }

  // Stores `tensor` for the present input `index` of `node`: in place when that input is an initializer
  // only this node reads, else as a new initializer (the old definition goes when unused).
  // Returns the value now read.
  ValueId Store(Graph& graph, NodeId node, int index, const runtime::Tensor& tensor) {
    const Node& n = graph.node(node);
    const ValueId old = n.inputs[index];
    if (graph.value(old).initializer >= 0 && !graph.value(old).is_graph_input &&
        !hidden_->any(old) &&
        graph.value(old).graph_output_count == 0 && graph.value(old).uses.size() == 1) {
      SetTypedInitializer(graph, old, tensor);
      return old;
    }
    const ValueId target =
        AddInitializer(graph, graph.value(old).name, tensor);
    graph.SetInput(node, index, target);
    RemoveDefinitionIfUnused(graph, old, *ops_, *hidden_);
    return target;
  }

  // The constant weight input `index` of `node`, of the given rank (0: any >= 3) and `dtype`.
  std::optional<runtime::Tensor> Weights(const Graph& graph, const Node& node, int index,
                                         int rank, v1::DataType dtype) {
    if (index >= static_cast<int>(node.inputs.size()) || !node.inputs[index].valid()) {
      return std::nullopt;
    }
    std::optional<runtime::Tensor> w = ConstantValue(graph, node.inputs[index], *hidden_);
    if (!w || w->dtype() != dtype || (rank == 0 ? w->rank() < 3 : w->rank() != rank)) {
      return std::nullopt;
    }
    return w;
  }

  // An optional bias input: absent (nullopt, true), or constant with `c` or 1 elements.
  std::optional<runtime::Tensor> OptionalBias(const Graph& graph, const Node& node, int index,
                                              int64_t c, bool* ok) {
    *ok = true;
    if (index >= static_cast<int>(node.inputs.size()) || !node.inputs[index].valid()) {
      return std::nullopt;
    }
    std::optional<runtime::Tensor> bias = ConstantValue(graph, node.inputs[index], *hidden_);
    if (!bias || !IsFloatingPoint(bias->dtype()) ||
        (bias->num_elements() != c && bias->num_elements() != 1)) {
      *ok = false;
      return std::nullopt;
    }
    return bias;
  }

  // Each FoldInto* returns why the pattern does not match (graph untouched), or null when it
  // folded.
  absl::StatusOr<const char*> FoldIntoConv(Graph& graph, NodeId conv, const Affine& f,
                                           int64_t c) {
    const Node& n = graph.node(conv);
    const v1::DataType dtype = graph.value(n.outputs[0]).type.dtype;
    std::optional<runtime::Tensor> w = Weights(graph, n, 1, 0, dtype);
    if (!w || w->dim(0) != c) return "weights not constant or not matching";
    bool bias_ok = false;
    std::optional<runtime::Tensor> bias = OptionalBias(graph, n, 2, c, &bias_ok);
    if (!bias_ok || (bias && bias->num_elements() != c)) return "bias not constant";
    absl::StatusOr<runtime::Tensor> scaled = ScaleAlong(*w, 0, f.a);
    if (!scaled.ok()) return scaled.status();
    const std::string weight_name = graph.value(n.inputs[1]).name;
    Store(graph, conv, 1, *scaled);
    return SetBias(graph, conv, FoldedBias(dtype, {c}, f, bias, 1.0), weight_name);
  }

  absl::StatusOr<const char*> FoldIntoGemm(Graph& graph, NodeId gemm, const Affine& f,
                                           int64_t c) {
    const Node& n = graph.node(gemm);
    const v1::DataType dtype = graph.value(n.outputs[0]).type.dtype;
    std::optional<runtime::Tensor> w = Weights(graph, n, 1, 2, dtype);
    const bool trans_b = IntAttr(n, "transB").value_or(0) != 0;
    if (!w || w->dim(trans_b ? 0 : 1) != c) return "weights not constant or not matching";
    bool bias_ok = false;
    std::optional<runtime::Tensor> bias = OptionalBias(graph, n, 2, c, &bias_ok);
    if (!bias_ok) return "bias not constant";
    // C of shape [1, C] keeps it; [C] and single elements become [C]; others do not fold.
    runtime::Shape bias_shape = {c};
    if (bias) {
      const bool row = bias->rank() == 2 && bias->dim(0) == 1 && bias->dim(1) == c;
      if (row) bias_shape = {1, c};
      if (!row && !(bias->rank() == 1 && bias->dim(0) == c) &&
          !(bias->num_elements() == 1 && bias->rank() <= 2)) {
        return "bias shape not [C], [1, C] or one element";
      }
    }
    absl::StatusOr<runtime::Tensor> scaled = ScaleAlong(*w, trans_b ? 0 : 1, f.a);
    if (!scaled.ok()) return scaled.status();
    const double beta = FloatAttr(n, "beta").value_or(1.0f);
    const std::string weight_name = graph.value(n.inputs[1]).name;
    Store(graph, gemm, 1, *scaled);
    runtime::Tensor new_bias = FoldedBias(dtype, bias_shape, f, bias, beta);
    if (beta != 1.0) {
      v1::Attribute one;
      one.set_f(1.0f);
      graph.mutable_node(gemm).attributes["beta"] = std::move(one);
    }
    return SetBias(graph, gemm, new_bias, weight_name);
  }

  // MatMul(x, W) -> BN becomes MatMul(x, W * a) -> Add(b): the BatchNormalization node is
  // replaced by the Add, producing its output value.
  absl::StatusOr<const char*> FoldIntoMatMul(Graph& graph, NodeId matmul, NodeId bn_id,
                                             const Affine& f, int64_t c) {
    const Node& n = graph.node(matmul);
    const v1::DataType dtype = graph.value(n.outputs[0]).type.dtype;
    std::optional<runtime::Tensor> w = Weights(graph, n, 1, 2, dtype);
    if (!w || w->dim(1) != c) return "weights not constant or not matching";
    absl::StatusOr<runtime::Tensor> scaled = ScaleAlong(*w, 1, f.a);
    if (!scaled.ok()) return scaled.status();
    const std::string weight_name = graph.value(n.inputs[1]).name;
    Store(graph, matmul, 1, *scaled);
    const ValueId b = AddInitializer(graph, absl::StrCat(weight_name, "_bias"),
                                     FoldedBias(dtype, {c}, f, std::nullopt, 1.0));
    const Node& bn = graph.node(bn_id);
    const std::string name = bn.name;
    const ValueIdList params = bn.inputs;
    const ValueId x = params[0];
    const ValueId y = graph.DetachOutput(bn_id, 0);
    graph.RemoveNode(bn_id);
    absl::StatusOr<NodeId> add = graph.AddNode(name, "Add", "", {x, b}, {y});
    if (!add.ok()) return add.status();
    for (size_t i = 1; i < params.size(); ++i) RemoveDefinitionIfUnused(graph, params[i], *ops_, *hidden_);
    return kFolded;
  }

  // MatMul(x, W) -> Add(bias) -> BN: W and bias folded; the Add's output replaces the BN's.
  absl::StatusOr<const char*> FoldIntoMatMulAdd(Graph& graph, NodeId add_id, const Affine& f,
                                                int64_t c) {
    const Node& add = graph.node(add_id);
    if (add.inputs.size() != 2 || !add.inputs[0].valid() || !add.inputs[1].valid()) {
      return "not after Conv, Gemm or MatMul";
    }
    int mm_index = -1;
    for (int i : {0, 1}) {
      const ValueId v = add.inputs[i];
      const Value& value = graph.value(v);
      if (value.producer.valid() && graph.node(value.producer).op_type == "MatMul" &&
          graph.node(value.producer).domain.empty() && value.uses.size() == 1 &&
          value.graph_output_count == 0 && !hidden_->any(v)) {
        mm_index = i;
        break;
      }
    }
    if (mm_index < 0) return "not after Conv, Gemm or MatMul";
    const NodeId matmul = graph.value(add.inputs[mm_index]).producer;
    const int bias_index = 1 - mm_index;
    const v1::DataType dtype = graph.value(add.outputs[0]).type.dtype;
    std::optional<runtime::Tensor> w = Weights(graph, graph.node(matmul), 1, 2, dtype);
    if (!w || w->dim(1) != c) return "weights not constant or not matching";
    std::optional<runtime::Tensor> bias = ConstantValue(graph, add.inputs[bias_index], *hidden_);
    if (!bias || bias->dtype() != dtype) return "bias not constant";
    runtime::Shape bias_shape;
    if (bias->rank() == 1 && bias->dim(0) == c) {
      bias_shape = {c};
    } else if (bias->rank() == 2 && bias->dim(0) == 1 && bias->dim(1) == c) {
      bias_shape = {1, c};
    } else if (bias->num_elements() == 1 && bias->rank() <= 1) {
      bias_shape = {c};
    } else {
      return "bias shape not [C], [1, C] or one element";
    }
    absl::StatusOr<runtime::Tensor> scaled = ScaleAlong(*w, 1, f.a);
    if (!scaled.ok()) return scaled.status();
    const std::string weight_name = graph.value(graph.node(matmul).inputs[1]).name;
    Store(graph, matmul, 1, *scaled);
    Store(graph, add_id, bias_index, FoldedBias(dtype, bias_shape, f, bias, 1.0));
    return kFolded;
  }

  const OpRegistry* ops_ = nullptr;
  std::optional<HiddenAccess> hidden_;
  absl::btree_map<std::string, int64_t> folded_;
  absl::btree_map<std::string, int64_t> left_;
};

}  // namespace

PassInfo FoldBatchNormPassInfo() {
  PassInfo info;
  info.name = "fold_batchnorm";
  info.description =
      "Folds inference BatchNormalization into the preceding Conv, Gemm or MatMul(+Add) with "
      "constant weights (scale into the weights, shift into the bias; a bias is added when "
      "absent) when nothing else reads the producer's output.";
  info.requires_analyses = {Analysis::kTypes, Analysis::kShapes};
  info.preserves = AnalysisSet::All();
  info.min_opt_level = 2;
  info.factory = OptionlessFactory<FoldBatchNormPass>();
  return info;
}

}  // namespace graphopt
