// The FusedGroup kernel: runs a group that fuse_ops made (ops/fused_group.h) as one kernel.
//
// The body's nodes are split, in order, into steps:
//  - a Conv or NhwcConv and the chain of elementwise nodes after it: one oneDNN convolution with
//    the chain as post-ops (bias and residual adds, Relu, Clip/ReLU6, LeakyRelu, ...);
//  - a decomposed LayerNormalization: one pass per row;
//  - a run of float32 elementwise nodes: one tiled loop (fused_elementwise.h), GELU as one step;
//  - any other node (MatMul/Gemm on sgemm, pools, reductions, reshapes): its own kernel, whose
//    output the next elementwise run then updates in place (an epilogue loop).
// When a step cannot run what it is given (a dtype, shape or post-op it does not handle), the
// whole group runs on runtime::Executor instead, as if it had not been fused.
//
// Rounding: oneDNN applies post-ops to the float32 accumulator in registers, the same
// operations in the same order as the unfused nodes; GELU computes x * (1/sqrt(2)) instead of
// dividing by sqrt(2), LayerNormalization multiplies by 1/sqrt(var + eps) instead of dividing
// and accumulates its means in double: results agree with the unfused graph to a few ulp.

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "graph/opset.h"
#include "graph/proto_convert.h"
#include "ops/fused_group.h"
#include "ops/fusion_patterns.h"
#include "ops/layout_ops.h"
#include "runtime/executor.h"
#include "runtime/kernels/cpu_kernels.h"
#include "runtime/kernels/fast_math.h"
#include "runtime/kernels/float_conv.h"
#include "runtime/kernels/fused_elementwise.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/nn_util.h"

namespace graphopt::runtime {
namespace {

bool IsOp(const Node& node, const char* op) {
  return IsDefaultDomain(node.domain.str()) && node.op_type == op;
}

class FusedGroupKernel : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const KernelInfo& info,
                                                          const KernelRegistry& registry);
  absl::Status Compute(KernelContext& ctx) const override;

 private:
  struct Step {
    enum class Kind : uint8_t { kNode, kProgram, kConv, kLayerNorm };
    Kind kind = Kind::kNode;
    NodeId node;                        // kNode, kConv: the node run by `kernel`
    std::unique_ptr<KernelInfo> info;   // kNode, kConv
    std::unique_ptr<OpKernel> kernel;   // kNode, kConv (the plain convolution)
    EwProgram program;                  // kProgram; kConv: the chain after the convolution
    std::vector<NodeId> chain;          // kConv
    WindowAttrs window;                 // kConv
    int64_t group = 1;                  // kConv
    bool channels_last = false;         // kConv: an NhwcConv
    bool winograd = false;              // kConv: its 'winograd' attribute
    std::unique_ptr<FloatConvolution> dnnl;  // kConv
    FusionPatternMatch norm;            // kLayerNorm
    // kNode of a reshaping op (Reshape, Flatten, Squeeze, Unsqueeze, Identity) whose output
    // shape follows from a static input shape and constant operands: when input 0 has
    // `view_from`, the output is input 0 viewed as `view_to`, without running the kernel.
    std::optional<Shape> view_from, view_to;
    // kNode, kConv: where the node's outputs go in the call's scratch (by output index).
    std::vector<PlannedOutput> planned;
    std::vector<int32_t> release;       // body values dead after this step
  };

  // What one call keeps: the body's values, and which of them this call allocated itself
  // (so that a later step may write over them).
  struct Frame {
    absl::InlinedVector<Tensor, 16> slots;
    absl::InlinedVector<char, 32> owned;
    // The call's scratch for intermediates (Compile's layout), taken on first use, and its
    // charge to the run's memory budget.
    std::shared_ptr<Buffer> scratch;
    MemoryReservation scratch_charge;
  };

  FusedGroupKernel(const KernelRegistry& registry) : registry_(registry) {}
  absl::Status Compile(const KernelInfo& info);
  absl::StatusOr<std::unique_ptr<Step>> NodeStep(const KernelInfo& info, NodeId id) const;
  std::vector<NodeId> ConvChain(const std::vector<NodeId>& order, size_t i) const;
  // True when `sigmoid` and `mul` compute x * Sigmoid(x) and x has no other reader.
  bool IsSilu(ValueId x, NodeId sigmoid, NodeId mul) const;
  // Lets a reshaping node run as a view of its input (Step::view_from).
  void SetView(Step& step) const;
  // Places the intermediates with static types in the scratch layout (scratch_offset_).
  void PlanScratch();
  // A scratch buffer no tensor views any more: from the executor's pool (ctx.scratch_pool())
  // when there is one, else from this kernel's own pool or new.
  absl::StatusOr<std::shared_ptr<Buffer>> AcquireScratch(const KernelContext& ctx) const;
  // Sets f.scratch (AcquireScratch), charged to the run's memory budget first.
  absl::Status TakeScratch(const KernelContext& ctx, Frame& f) const;

  absl::StatusOr<bool> RunNode(KernelContext& ctx, const Step& step, Frame& f) const;
  absl::StatusOr<bool> RunProgramStep(KernelContext& ctx, const EwProgram& p, size_t index,
                                      Frame& f) const;
  absl::StatusOr<bool> RunConv(KernelContext& ctx, const Step& step, size_t index,
                               Frame& f) const;
  absl::StatusOr<bool> RunLayerNorm(KernelContext& ctx, const Step& step, Frame& f) const;
  absl::Status RunFallback(KernelContext& ctx) const;
  // A float32 tensor of `shape` for body value v: the node's output when v is one, else new.
  absl::StatusOr<Tensor*> Allocate(KernelContext& ctx, Frame& f, ValueId v, const Shape& shape) const;
  // The post-ops computing the chain after a convolution of shape s, or nullopt.
  std::optional<absl::InlinedVector<ConvPostOp, 4>> PostOps(const Step& step, const ConvShape& s,
                                                 const Frame& f) const;

  const KernelRegistry& registry_;
  Graph body_;
  int64_t opset_ = 0;
  bool fallback_only_ = false;
  std::vector<std::unique_ptr<Step>> steps_;
  std::vector<int32_t> output_index_;  // body value -> node output index, -1
  std::vector<int32_t> last_step_;     // body value -> last step reading it, -1
  // Intermediates (not body outputs) of static type: their byte range in the scratch, so that
  // a call allocates nothing for them (-1: allocated on their own).
  std::vector<int64_t> scratch_offset_, scratch_size_;
  int64_t scratch_bytes_ = 0;
  mutable absl::Mutex mu_;
  mutable std::vector<std::shared_ptr<Buffer>> scratch_pool_ ABSL_GUARDED_BY(mu_);
  mutable std::unique_ptr<Executor> fallback_ ABSL_GUARDED_BY(mu_);
};

absl::StatusOr<std::unique_ptr<OpKernel>> FusedGroupKernel::Create(const KernelInfo& info,
                                                                   const KernelRegistry& registry) {
  std::unique_ptr<FusedGroupKernel> k(new FusedGroupKernel(registry));
  if (absl::Status s = k->Compile(info); !s.ok()) return s;
  return std::unique_ptr<OpKernel>(std::move(k));
}

absl::StatusOr<std::unique_ptr<FusedGroupKernel::Step>> FusedGroupKernel::NodeStep(
    const KernelInfo& info, NodeId id) const {
  const Node& node = body_.node(id);
  std::vector<TensorType> types;
  std::vector<const Tensor*> constants;
  for (ValueId v : node.inputs) {
    types.push_back(v.valid() ? body_.value(v).type : TensorType());
    const Tensor* c = nullptr;
    for (size_t k = 0; v.valid() && k < body_.inputs().size(); ++k) {
      if (body_.inputs()[k] == v) c = info.constant_input(static_cast<int>(k));
    }
    constants.push_back(c);
  }
  const v1::DataType dtype = types.empty() ? v1::DT_UNDEFINED : types[0].dtype;
  const KernelFactory* factory = registry_.Find(node.domain, node.op_type, info.device(), dtype);
  if (factory == nullptr) {
    return absl::UnimplementedError(absl::StrCat(info.label(), ": ", body_.NodeLabel(id),
                                                 ": no kernel for op '", node.op_type.str(), "'"));
  }
  auto step = std::make_unique<Step>();
  step->node = id;
  step->info = std::make_unique<KernelInfo>(
      node, absl::StrCat(info.label(), ": ", body_.NodeLabel(id)),
      OpsetVersion(body_, node.domain.str()), std::move(types), registry_, info.options(),
      info.device());
  step->info->set_constant_inputs(std::move(constants));
  absl::StatusOr<std::unique_ptr<OpKernel>> kernel = (*factory)(*step->info);
  if (!kernel.ok()) return kernel.status();
  step->kernel = *std::move(kernel);
  return step;
}

// The elementwise nodes after the Conv at order[i] that oneDNN may apply as post-ops: each
// reads the previous one's result (its only use) once, and otherwise only values from outside.
// SiLU, y = r * Sigmoid(r), is the one pattern that reads the running value twice: the Sigmoid
// and the Mul right after it (the Sigmoid's only reader) join together, as one swish post-op.
std::vector<NodeId> FusedGroupKernel::ConvChain(const std::vector<NodeId>& order,
                                                size_t i) const {
  std::vector<NodeId> chain;
  ValueId running = body_.node(order[i]).outputs[0];
  auto outside = [&](const Node& node, ValueId skip) {
    bool ok = true;
    for (ValueId v : node.inputs) {
      if (!v.valid() || v == running || v == skip) continue;
      const NodeId p = body_.value(v).producer;
      ok &= !p.valid() || std::find(order.begin(), order.begin() + i, p) != order.begin() + i;
    }
    return ok;
  };
  for (size_t j = i + 1; j < order.size(); ++j) {
    const Value& r = body_.value(running);
    const NodeId id = order[j];
    if (r.graph_output_count > 0 || !IsProgramNode(body_, id, opset_)) break;
    if (j + 1 < order.size() && IsSilu(running, id, order[j + 1])) {
      chain.push_back(id);
      chain.push_back(order[j + 1]);
      running = body_.node(order[j + 1]).outputs[0];
      ++j;
      continue;
    }
    if (r.uses.size() != 1 || r.uses[0].node != id) break;
    const Node& node = body_.node(id);
    if (!outside(node, ValueId())) break;
    chain.push_back(id);
    running = node.outputs[0];
  }
  return chain;
}

bool FusedGroupKernel::IsSilu(ValueId x, NodeId sigmoid, NodeId mul) const {
  const Value& r = body_.value(x);
  const Node& s = body_.node(sigmoid);
  const Node& m = body_.node(mul);
  if (r.uses.size() != 2 || !IsOp(s, "Sigmoid") || !IsOp(m, "Mul") || s.inputs.size() != 1 ||
      s.inputs[0] != x || m.inputs.size() != 2 || s.outputs.size() != 1) {
    return false;
  }
  const ValueId sig = s.outputs[0];
  const Value& sv = body_.value(sig);
  if (sv.uses.size() != 1 || sv.uses[0].node != mul || sv.graph_output_count > 0) return false;
  return (m.inputs[0] == x && m.inputs[1] == sig) || (m.inputs[0] == sig && m.inputs[1] == x);
}

// The static shape of a value when every dim is known.
std::optional<Shape> StaticShape(const TensorType& type) {
  if (!type.shape) return std::nullopt;
  Shape out;
  for (const Dim& d : *type.shape) {
    if (!d.is_known()) return std::nullopt;
    out.push_back(d.size());
  }
  return out;
}

void FusedGroupKernel::SetView(Step& step) const {
  const Node& node = body_.node(step.node);
  const bool reshaping = IsOp(node, "Reshape") || IsOp(node, "Flatten") ||
                         IsOp(node, "Squeeze") || IsOp(node, "Unsqueeze") ||
                         IsOp(node, "Identity");
  if (!reshaping || node.inputs.empty() || !node.inputs[0].valid() || node.outputs.size() != 1 ||
      !node.outputs[0].valid()) {
    return;
  }
  // Shape and axes operands must be constants of the plan, so that the output shape inferred
  // from them holds whenever the input has its inferred shape.
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    if (node.inputs[i].valid() && step.info->constant_input(static_cast<int>(i)) == nullptr) return;
  }
  const TensorType& in = body_.value(node.inputs[0]).type;
  const TensorType& out = body_.value(node.outputs[0]).type;
  std::optional<Shape> from = StaticShape(in), to = StaticShape(out);
  if (!from || !to || in.dtype != out.dtype || ShapeNumElements(*from) != ShapeNumElements(*to) ||
      ShapeNumElements(*from) < 0) {
    return;
  }
  step.view_from = std::move(from);
  step.view_to = std::move(to);
}

void FusedGroupKernel::PlanScratch() {
  const int num_values = body_.num_value_slots();
  scratch_offset_.assign(num_values, -1);
  scratch_size_.assign(num_values, 0);
  for (int i = 0; i < body_.num_node_slots(); ++i) {
    const Node& node = body_.node(NodeId(i));
    if (!node.alive) continue;
    for (ValueId v : node.outputs) {
      if (!v.valid() || output_index_[v.value()] >= 0) continue;
      const TensorType& t = body_.value(v).type;
      const std::optional<Shape> shape = StaticShape(t);
      const int element = DataTypeSize(t.dtype);
      if (!shape || element <= 0 || t.dtype == v1::DT_STRING) continue;
      const int64_t bytes = ShapeNumElements(*shape) * element;
      if (bytes < 0) continue;
      scratch_offset_[v.value()] = scratch_bytes_;
      scratch_size_[v.value()] = bytes;
      scratch_bytes_ += (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
    }
  }
  for (const std::unique_ptr<Step>& step : steps_) {
    if (step->kind != Step::Kind::kNode && step->kind != Step::Kind::kConv) continue;
    for (ValueId v : body_.node(step->node).outputs) {
      PlannedOutput p;
      if (v.valid() && scratch_offset_[v.value()] >= 0) {
        p.arena = 0;
        p.offset = scratch_offset_[v.value()];
        p.size = scratch_size_[v.value()];
      }
      step->planned.push_back(p);
    }
  }
}

absl::StatusOr<std::shared_ptr<Buffer>> FusedGroupKernel::AcquireScratch(
    const KernelContext& ctx) const {
  // The executor's pool: one buffer for every group of a run (each needs it only while it
  // computes), not one per group held for the plan's lifetime.
  if (ctx.scratch_pool() != nullptr) {
    return ctx.scratch_pool()->Acquire(static_cast<size_t>(std::max<int64_t>(scratch_bytes_, 1)));
  }
  constexpr size_t kPoolSize = 4;
  absl::MutexLock lock(&mu_);
  for (const std::shared_ptr<Buffer>& b : scratch_pool_) {
    if (b.use_count() == 1) return b;
  }
  absl::StatusOr<std::shared_ptr<Buffer>> b =
      Buffer::AllocateCpu(static_cast<size_t>(std::max<int64_t>(scratch_bytes_, 1)),
                          Buffer::Pages::kHugeWhenLarge);
  if (!b.ok()) return b.status();
  if (scratch_pool_.size() < kPoolSize) scratch_pool_.push_back(*b);
  return b;
}

absl::Status FusedGroupKernel::TakeScratch(const KernelContext& ctx, Frame& f) const {
  f.scratch_charge = MemoryReservation(ctx.memory());
  if (absl::Status s = f.scratch_charge.Add(scratch_bytes_ + kBufferOverheadBytes,
                                            absl::StrCat(ctx.info().label(), " scratch"));
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::shared_ptr<Buffer>> b = AcquireScratch(ctx);
  if (!b.ok()) return b.status();
  f.scratch = *std::move(b);
  return absl::OkStatus();
}

absl::Status FusedGroupKernel::Compile(const KernelInfo& info) {
  const v1::Attribute* attr = info.attr(kFusedGroupBody);
  if (attr == nullptr || attr->value_case() != v1::Attribute::kG) {
    return info.Invalid(absl::StrCat("graph attribute '", kFusedGroupBody, "' is required"));
  }
  absl::StatusOr<Graph> body = GraphFromProto(attr->g());
  if (!body.ok()) return info.Invalid(absl::StrCat("body: ", body.status().message()));
  body_ = *std::move(body);
  if (static_cast<int>(body_.inputs().size()) != info.num_inputs() ||
      static_cast<int>(body_.outputs().size()) != info.num_outputs()) {
    return info.Invalid("the body's inputs and outputs do not match the node's");
  }
  opset_ = DefaultDomainOpset(body_);
  const int num_values = body_.num_value_slots();
  output_index_.assign(num_values, -1);
  for (size_t k = 0; k < body_.outputs().size(); ++k) {
    int32_t& o = output_index_[body_.outputs()[k].value()];
    if (o < 0) o = static_cast<int32_t>(k);
  }
  // The nodes in the body's order, which must be topological; anything unusual (subgraphs,
  // initializers, undefined values) runs on the executor.
  std::vector<NodeId> order;
  std::vector<char> defined(num_values, 0);
  for (ValueId v : body_.inputs()) defined[v.value()] = 1;
  for (int i = 0; i < body_.num_node_slots(); ++i) {
    const Node& node = body_.node(NodeId(i));
    if (!node.alive) continue;
    for (ValueId v : node.inputs) fallback_only_ |= v.valid() && !defined[v.value()];
    for (const auto& [name, a] : node.attributes) {
      fallback_only_ |= a.value_case() == v1::Attribute::kG ||
                        a.value_case() == v1::Attribute::kGraphs;
    }
    for (ValueId v : node.outputs) {
      if (v.valid()) defined[v.value()] = 1;
    }
    order.push_back(NodeId(i));
  }
  for (ValueId v : body_.outputs()) fallback_only_ |= !defined[v.value()];
  for (int i = 0; i < num_values; ++i) fallback_only_ |= body_.value(ValueId(i)).initializer >= 0;
  if (fallback_only_) return absl::OkStatus();

  // Partition into steps.
  std::vector<int> step_of(body_.num_node_slots(), -1);
  std::vector<std::vector<NodeId>> members;
  for (size_t i = 0; i < order.size();) {
    const NodeId id = order[i];
    const Node& node = body_.node(id);
    std::unique_ptr<Step> step;
    std::vector<NodeId> nodes;
    if (IsOp(node, "ReduceMean")) {
      std::optional<FusionPatternMatch> m = MatchLayerNorm(body_, id);
      bool consecutive = m.has_value() && i + m->nodes.size() <= order.size();
      for (size_t k = 0; consecutive && k < m->nodes.size(); ++k) {
        consecutive = order[i + k] == m->nodes[k];
      }
      if (consecutive && body_.value(m->x).type.dtype == v1::DT_FLOAT32) {
        step = std::make_unique<Step>();
        step->kind = Step::Kind::kLayerNorm;
        step->norm = *std::move(m);
        nodes = step->norm.nodes;
      }
    }
    const bool nhwc_conv = node.domain == kLayoutDomain && node.op_type == kNhwcConvOp;
    if (step == nullptr && (IsOp(node, "Conv") || nhwc_conv) && node.outputs.size() == 1 &&
        node.inputs.size() >= 2) {
      absl::StatusOr<std::unique_ptr<Step>> s = NodeStep(info, id);
      if (!s.ok()) return s.status();
      step = *std::move(s);
      step->kind = Step::Kind::kConv;
      step->channels_last = nhwc_conv;
      step->winograd = nhwc_conv && step->info->GetInt("winograd", 0) != 0;
      step->chain = ConvChain(order, i);
      absl::StatusOr<WindowAttrs> window = ParseWindowAttrs(*step->info);
      if (!window.ok()) return window.status();
      step->window = *std::move(window);
      step->group = step->info->GetInt("group", 1);
      absl::StatusOr<std::unique_ptr<FloatConvolution>> dnnl = FloatConvolution::Create(info);
      if (!dnnl.ok()) return dnnl.status();
      step->dnnl = *std::move(dnnl);
      nodes = {id};
      nodes.insert(nodes.end(), step->chain.begin(), step->chain.end());
    }
    if (step == nullptr && IsProgramNode(body_, id, opset_)) {
      step = std::make_unique<Step>();
      step->kind = Step::Kind::kProgram;
      for (size_t j = i; j < order.size() && IsProgramNode(body_, order[j], opset_); ++j) {
        nodes.push_back(order[j]);
      }
    }
    if (step == nullptr) {
      absl::StatusOr<std::unique_ptr<Step>> s = NodeStep(info, id);
      if (!s.ok()) return s.status();
      step = *std::move(s);
      SetView(*step);
      nodes = {id};
    }
    for (NodeId n : nodes) step_of[n.value()] = static_cast<int>(steps_.size());
    members.push_back(nodes);
    steps_.push_back(std::move(step));
    i += nodes.size();
  }
  // Which values each step must write out: those read by a later step or returned.
  last_step_.assign(num_values, -1);
  std::vector<char> needed(num_values, 0);
  for (ValueId v : body_.outputs()) needed[v.value()] = 1;
  for (NodeId id : order) {
    for (ValueId v : body_.node(id).inputs) {
      if (!v.valid()) continue;
      last_step_[v.value()] = std::max(last_step_[v.value()], step_of[id.value()]);
      const NodeId p = body_.value(v).producer;
      if (p.valid() && step_of[p.value()] != step_of[id.value()]) needed[v.value()] = 1;
    }
  }
  for (size_t s = 0; s < steps_.size(); ++s) {
    Step& step = *steps_[s];
    if (step.kind == Step::Kind::kProgram) {
      step.program = CompileProgram(body_, members[s], opset_, needed);
    } else if (step.kind == Step::Kind::kConv && !step.chain.empty()) {
      step.program = CompileProgram(body_, step.chain, opset_, needed);
    }
  }
  std::vector<char> is_output(num_values, 0);
  for (ValueId v : body_.outputs()) is_output[v.value()] = 1;
  for (int v = 0; v < num_values; ++v) {
    if (last_step_[v] >= 0 && !is_output[v]) steps_[last_step_[v]]->release.push_back(v);
  }
  PlanScratch();
  return absl::OkStatus();
}

absl::StatusOr<Tensor*> FusedGroupKernel::Allocate(KernelContext& ctx, Frame& f, ValueId v,
                                                   const Shape& shape) const {
  const int k = output_index_[v.value()];
  if (k >= 0) {
    absl::StatusOr<Tensor*> t = ctx.AllocateOutput(k, v1::DT_FLOAT32, shape);
    if (!t.ok()) return t.status();
    f.slots[v.value()] = **t;
    f.owned[v.value()] = 0;
  } else {
    const int64_t bytes = ShapeNumElements(shape) * static_cast<int64_t>(sizeof(float));
    absl::StatusOr<Tensor> t = absl::InternalError("unplanned");
    if (scratch_offset_[v.value()] >= 0 && bytes >= 0 && bytes <= scratch_size_[v.value()]) {
      if (f.scratch == nullptr) {
        if (absl::Status s = TakeScratch(ctx, f); !s.ok()) return s;
      }
      t = Tensor::InBuffer(f.scratch, scratch_offset_[v.value()], v1::DT_FLOAT32, shape);
    }
    if (!t.ok()) t = ctx.AllocateTemp(v1::DT_FLOAT32, shape, "fused intermediate");
    if (!t.ok()) return t.status();
    f.slots[v.value()] = *std::move(t);
    f.owned[v.value()] = 1;
  }
  return &f.slots[v.value()];
}

absl::StatusOr<bool> FusedGroupKernel::RunNode(KernelContext& ctx, const Step& step,
                                               Frame& f) const {
  const Node& node = body_.node(step.node);
  if (step.view_from) {
    const Tensor& x = f.slots[node.inputs[0].value()];
    if (x.shape() == *step.view_from) {
      absl::StatusOr<Tensor> view = x.Reshaped(*step.view_to);
      if (view.ok()) {
        f.slots[node.outputs[0].value()] = *std::move(view);
        f.owned[node.outputs[0].value()] = 0;
        return true;
      }
    }
  }
  absl::InlinedVector<const Tensor*, 4> in(node.inputs.size(), nullptr);
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i].valid()) in[i] = &f.slots[node.inputs[i].value()];
  }
  absl::InlinedVector<Tensor, 2> out(node.outputs.size());
  // Bodies read nothing from enclosing graphs (Compile sends bodies with subgraphs to the
  // executor), so the node needs no lookup of outer values.
  KernelContext sub(*step.info, in, absl::MakeSpan(out), nullptr, ctx.num_threads());
  bool planned = false;
  for (const PlannedOutput& p : step.planned) planned |= p.arena >= 0;
  if (planned && f.scratch == nullptr) {
    if (absl::Status s = TakeScratch(ctx, f); !s.ok()) return s;
  }
  sub.SetRunGuards(ctx.stop(), &ctx.memory());
  sub.SetScratchPool(ctx.scratch_pool());
  const std::shared_ptr<Buffer> arenas[1] = {f.scratch};
  if (planned) sub.SetMemoryPlan(step.planned, arenas);
  if (absl::Status s = step.kernel->Compute(sub); !s.ok()) return s;
  // Stopped inside: the outputs are unfinished.
  if (sub.stop_seen()) return ctx.StopStatus(step.info->label());
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    const ValueId v = node.outputs[i];
    if (!v.valid()) continue;
    if (!out[i].defined()) {
      return absl::InternalError(absl::StrCat(step.info->label(), ": produced no output ", i));
    }
    // A result in its own range of the scratch, or in a buffer no input shares, is the node's
    // own; anything else may be a view of an input (Reshape, Identity, Slice): never written over.
    bool fresh;
    if (f.scratch != nullptr && out[i].buffer() == f.scratch.get()) {
      fresh = i < step.planned.size() && step.planned[i].arena >= 0 &&
              out[i].byte_offset() == static_cast<size_t>(step.planned[i].offset);
    } else {
      fresh = true;
      for (const Tensor* t : in) fresh &= t == nullptr || t->buffer() != out[i].buffer();
    }
    f.slots[v.value()] = std::move(out[i]);
    f.owned[v.value()] = fresh && output_index_[v.value()] < 0;
  }
  return true;
}

absl::StatusOr<bool> FusedGroupKernel::RunProgramStep(KernelContext& ctx, const EwProgram& p,
                                                      size_t index, Frame& f) const {
  absl::InlinedVector<const Tensor*, 8> inputs;
  for (ValueId v : p.inputs) inputs.push_back(&f.slots[v.value()]);
  absl::InlinedVector<char, 8> taken(p.inputs.size(), 0);
  auto allocate = [&](int k, const Shape& shape) -> absl::StatusOr<Tensor*> {
    const ValueId v = p.outputs[k];
    const int in = p.may_overwrite[k];
    if (in >= 0 && !taken[in] && output_index_[v.value()] < 0) {
      const ValueId u = p.inputs[in];
      const Tensor& t = f.slots[u.value()];
      if (f.owned[u.value()] && last_step_[u.value()] == static_cast<int>(index) &&
          t.shape() == shape && t.dtype() == v1::DT_FLOAT32) {
        taken[in] = 1;
        f.slots[v.value()] = t;
        f.owned[v.value()] = 1;
        return &f.slots[v.value()];
      }
    }
    return Allocate(ctx, f, v, shape);
  };
  return RunProgram(ctx, p, inputs, allocate);
}

// True when v is +-2^k with 2^-k a normal float, so that dividing by v and multiplying by 1 / v
// round the same.
bool IsPowerOfTwo(float v) {
  int e = 0;
  const float m = std::frexp(std::fabs(v), &e);
  return m == 0.5f && e > -125 && e < 126;
}

// True when `t` holds one value per output channel of a convolution of shape s (broadcast
// along the channel axis of s's layout).
bool PerChannel(const Tensor& t, const ConvShape& s) {
  const int rank = static_cast<int>(s.out_shape.size());
  const int channel_axis = s.channels_last ? rank - 1 : 1;
  if (t.rank() > rank || t.num_elements() != s.m) return false;
  for (int i = 0; i < t.rank(); ++i) {
    const int d = rank - t.rank() + i;
    if (t.dim(i) != (d == channel_axis ? s.m : 1)) return false;
  }
  return true;
}

std::optional<absl::InlinedVector<ConvPostOp, 4>> FusedGroupKernel::PostOps(const Step& step,
                                                                 const ConvShape& s,
                                                                 const Frame& f) const {
  absl::InlinedVector<ConvPostOp, 4> ops;
  ValueId running = body_.node(step.node).outputs[0];
  bool summed = false;
  // A scalar attribute of the node, or `fallback`.
  auto attr = [](const Node& node, const char* name, float fallback) {
    auto a = node.attributes.find(name);
    return a != node.attributes.end() && a->second.value_case() == v1::Attribute::kF
               ? a->second.f()
               : fallback;
  };
  for (size_t c = 0; c < step.chain.size(); ++c) {
    const NodeId id = step.chain[c];
    const Node& node = body_.node(id);
    ConvPostOp op;
    if (c + 1 < step.chain.size() && IsSilu(running, id, step.chain[c + 1])) {
      op.alg = dnnl::algorithm::eltwise_swish;
      op.alpha = 1.0f;
      ops.push_back(op);
      running = body_.node(step.chain[++c]).outputs[0];
      continue;
    }
    const Tensor* other = nullptr;
    bool running_first = node.inputs[0] == running;
    if (node.inputs.size() == 2 && node.inputs[1].valid() && !IsOp(node, "Clip")) {
      other = &f.slots[node.inputs[running_first ? 1 : 0].value()];
      if (other->dtype() != v1::DT_FLOAT32) return std::nullopt;
    }
    const float scalar = other != nullptr && other->num_elements() == 1 ? other->data<float>()[0]
                                                                        : std::nanf("");
    if (IsOp(node, "Relu")) {
      op.alg = dnnl::algorithm::eltwise_relu;
    } else if (IsOp(node, "LeakyRelu")) {
      op.alg = dnnl::algorithm::eltwise_relu;
      op.alpha = attr(node, "alpha", 0.01f);
    } else if (IsOp(node, "Sigmoid")) {
      op.alg = dnnl::algorithm::eltwise_logistic;
    } else if (IsOp(node, "Tanh")) {
      op.alg = dnnl::algorithm::eltwise_tanh;
    } else if (IsOp(node, "Exp")) {
      op.alg = dnnl::algorithm::eltwise_exp;
    } else if (IsOp(node, "Sqrt")) {
      op.alg = dnnl::algorithm::eltwise_sqrt;
    } else if (IsOp(node, "Abs")) {
      op.alg = dnnl::algorithm::eltwise_abs;
    } else if (IsOp(node, "Softplus")) {
      // (Log is left to the loop: oneDNN's is off by 1e-4 relative near log(1) = 0.)
      op.alg = dnnl::algorithm::eltwise_soft_relu;
    } else if (IsOp(node, "HardSwish")) {
      op.alg = dnnl::algorithm::eltwise_hardswish;
    } else if (IsOp(node, "Elu")) {
      op.alg = dnnl::algorithm::eltwise_elu;
      op.alpha = attr(node, "alpha", 1.0f);
    } else if (IsOp(node, "Neg")) {
      op.alg = dnnl::algorithm::eltwise_linear;
      op.alpha = -1.0f;
    } else if (IsOp(node, "HardSigmoid")) {
      // clamp(alpha * x + beta, 0, 1) as two steps, each rounding as the node does.
      op.alg = dnnl::algorithm::eltwise_linear;
      op.alpha = attr(node, "alpha", 0.2f);
      op.beta = attr(node, "beta", 0.5f);
      ops.push_back(op);
      op = ConvPostOp();
      op.alg = dnnl::algorithm::eltwise_clip;
      op.alpha = 0.0f;
      op.beta = 1.0f;
    } else if (IsOp(node, "Clip")) {
      op.alg = dnnl::algorithm::eltwise_clip;
      op.alpha = -std::numeric_limits<float>::infinity();
      op.beta = std::numeric_limits<float>::infinity();
      if (opset_ > 0 && opset_ < 11) {
        for (auto [name, bound] : {std::pair{"min", &op.alpha}, std::pair{"max", &op.beta}}) {
          auto a = node.attributes.find(name);
          if (a != node.attributes.end()) *bound = a->second.f();
        }
      } else {
        for (size_t i = 1; i < node.inputs.size() && i < 3; ++i) {
          if (!node.inputs[i].valid()) continue;
          const Tensor& b = f.slots[node.inputs[i].value()];
          if (b.dtype() != v1::DT_FLOAT32 || b.num_elements() != 1) return std::nullopt;
          (i == 1 ? op.alpha : op.beta) = b.data<float>()[0];
        }
      }
    } else if (IsOp(node, "Add") && other != nullptr) {
      if (other->shape() == s.out_shape && !summed) {
        op.kind = ConvPostOp::Kind::kSum;
        op.operand = other;
        summed = true;
      } else if (PerChannel(*other, s)) {
        op.kind = ConvPostOp::Kind::kBinaryAdd;
        op.operand = other;
      } else if (!std::isnan(scalar)) {
        op.alg = dnnl::algorithm::eltwise_linear;
        op.alpha = 1.0f;
        op.beta = scalar;
      } else {
        return std::nullopt;
      }
    } else if (IsOp(node, "Sub") && other != nullptr && !std::isnan(scalar)) {
      // x - s = 1 * x + (-s) and s - x = -1 * x + s, rounded once either way.
      op.alg = dnnl::algorithm::eltwise_linear;
      op.alpha = running_first ? 1.0f : -1.0f;
      op.beta = running_first ? -scalar : scalar;
    } else if (IsOp(node, "Div") && other != nullptr && running_first && !std::isnan(scalar) &&
               IsPowerOfTwo(scalar)) {
      // x / 2^k = x * 2^-k exactly.
      op.alg = dnnl::algorithm::eltwise_linear;
      op.alpha = 1.0f / scalar;
    } else if (IsOp(node, "Mul") && other != nullptr) {
      if (PerChannel(*other, s)) {
        op.kind = ConvPostOp::Kind::kBinaryMul;
        op.operand = other;
      } else if (!std::isnan(scalar)) {
        op.alg = dnnl::algorithm::eltwise_linear;
        op.alpha = scalar;
      } else {
        return std::nullopt;
      }
    } else {
      return std::nullopt;
    }
    ops.push_back(op);
    running = node.outputs[0];
  }
  return ops;
}

absl::StatusOr<bool> FusedGroupKernel::RunConv(KernelContext& ctx, const Step& step, size_t index,
                                               Frame& f) const {
  const Node& node = body_.node(step.node);
  const Tensor& x = f.slots[node.inputs[0].value()];
  const Tensor& w = f.slots[node.inputs[1].value()];
  const Tensor* b = node.inputs.size() > 2 && node.inputs[2].valid()
                        ? &f.slots[node.inputs[2].value()]
                        : nullptr;
  const bool f32 = x.dtype() == v1::DT_FLOAT32 && w.dtype() == v1::DT_FLOAT32 &&
                   (b == nullptr || b->dtype() == v1::DT_FLOAT32);
  if (f32) {
    // The convolution's own context, so that its errors name it.
    KernelContext conv_ctx(*step.info, {}, {}, nullptr, ctx.num_threads());
    conv_ctx.SetRunGuards(ctx.stop(), &ctx.memory());
    absl::StatusOr<ConvShape> s =
        step.channels_last
            ? CheckConvChannelsLast(conv_ctx, step.window, step.group, x, w, b)
            : CheckConv(conv_ctx, step.window, step.group, x, w, b);
    if (!s.ok()) return s.status();
    s->winograd = step.winograd;
    std::optional<absl::InlinedVector<ConvPostOp, 4>> ops;
    if (s->window.nd <= 3 && x.num_elements() > 0 && w.num_elements() > 0) ops = PostOps(step, *s, f);
    if (ops) {
      const ValueId out =
          step.chain.empty() ? node.outputs[0] : body_.node(step.chain.back()).outputs[0];
      absl::StatusOr<Tensor*> y = Allocate(ctx, f, out, s->out_shape);
      if (!y.ok()) return y.status();
      absl::Status st = step.dnnl->Run(conv_ctx, *s, x, w, b, *ops, **y);
      if (st.ok()) return true;
      if (st.code() != absl::StatusCode::kUnimplemented) return st;
    }
  }
  // The convolution on its own kernel, then the chain as a loop over its result.
  absl::StatusOr<bool> ran = RunNode(ctx, step, f);
  if (!ran.ok() || !*ran || step.chain.empty()) return ran;
  return RunProgramStep(ctx, step.program, index, f);
}

absl::StatusOr<bool> FusedGroupKernel::RunLayerNorm(KernelContext& ctx, const Step& step,
                                                    Frame& f) const {
  const FusionPatternMatch& m = step.norm;
  const Tensor& x = f.slots[m.x.value()];
  const Tensor& eps = f.slots[m.epsilon.value()];
  if (x.dtype() != v1::DT_FLOAT32 || x.rank() < 1 || eps.dtype() != v1::DT_FLOAT32 ||
      eps.num_elements() != 1) {
    return false;
  }
  for (const auto& [v, want] : m.scalars) {
    const Tensor& t = f.slots[v.value()];
    if (t.num_elements() != 1 || !ScalarMatches(t.ElementAsDouble(0), want)) return false;
  }
  const int64_t d = x.dim(x.rank() - 1);
  // Scale and bias: along the last axis (every other dim 1), or one value.
  auto along_last = [&](ValueId v) -> const float* {
    if (!v.valid()) return nullptr;
    const Tensor& t = f.slots[v.value()];
    if (t.dtype() != v1::DT_FLOAT32 || t.rank() > x.rank()) return nullptr;
    for (int i = 0; i + 1 < t.rank(); ++i) {
      if (t.dim(i) != 1) return nullptr;
    }
    if (t.rank() > 0 && t.dim(t.rank() - 1) != d && t.dim(t.rank() - 1) != 1) return nullptr;
    return t.data<float>();
  };
  const float* scale = along_last(m.scale);
  const float* bias = along_last(m.bias);
  if ((m.scale.valid() && scale == nullptr) || (m.bias.valid() && bias == nullptr)) return false;
  const int64_t scale_step = m.scale.valid() && f.slots[m.scale.value()].num_elements() == d;
  const int64_t bias_step = m.bias.valid() && f.slots[m.bias.value()].num_elements() == d;
  absl::StatusOr<Tensor*> y =
      Allocate(ctx, f, body_.node(m.nodes.back()).outputs[0], x.shape());
  if (!y.ok()) return y.status();
  if (d == 0 || x.num_elements() == 0) return true;
  const float e = eps.data<float>()[0];
  const float* xp = x.data<float>();
  float* yp = (*y)->data<float>();
  ctx.ParallelFor(x.num_elements() / d, std::max<int64_t>(1, 16384 / d), [&](int64_t b0, int64_t b1) {
    LayerNormRowsF32(b1 - b0, d, xp + b0 * d, scale, scale_step, bias, bias_step, e, yp + b0 * d,
                     nullptr, nullptr);
  });
  return true;
}

absl::Status FusedGroupKernel::RunFallback(KernelContext& ctx) const {
  Executor* executor = nullptr;
  {
    absl::MutexLock lock(&mu_);
    if (fallback_ == nullptr) {
      absl::StatusOr<std::unique_ptr<Executor>> e =
          ctx.info().CreateSubgraphExecutor(kFusedGroupBody);
      if (!e.ok()) return e.status();
      fallback_ = *std::move(e);
    }
    executor = fallback_.get();
  }
  std::vector<Tensor> inputs(ctx.num_inputs());
  for (int k = 0; k < ctx.num_inputs(); ++k) {
    if (ctx.input(k) != nullptr) inputs[k] = *ctx.input(k);
  }
  RunOptions run;
  run.stop = ctx.stop();
  run.memory = ctx.memory();
  absl::StatusOr<RunResult> r = executor->RunPositional(inputs, run, ctx.outer_lookup());
  if (!r.ok()) return r.status();
  for (int k = 0; k < ctx.num_outputs() && k < static_cast<int>(r->outputs.size()); ++k) {
    ctx.SetOutput(k, std::move(r->outputs[k]));
  }
  return absl::OkStatus();
}

absl::Status FusedGroupKernel::Compute(KernelContext& ctx) const {
  if (fallback_only_) return RunFallback(ctx);
  Frame f;
  f.slots.resize(body_.num_value_slots());
  f.owned.assign(body_.num_value_slots(), 0);
  for (size_t k = 0; k < body_.inputs().size(); ++k) {
    const Tensor* t = ctx.input(static_cast<int>(k));
    if (t == nullptr) return RunFallback(ctx);
    f.slots[body_.inputs()[k].value()] = *t;
  }
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& step = *steps_[i];
    absl::StatusOr<bool> ran = false;
    switch (step.kind) {
      case Step::Kind::kNode: ran = RunNode(ctx, step, f); break;
      case Step::Kind::kProgram: ran = RunProgramStep(ctx, step.program, i, f); break;
      case Step::Kind::kConv: ran = RunConv(ctx, step, i, f); break;
      case Step::Kind::kLayerNorm: ran = RunLayerNorm(ctx, step, f); break;
    }
    if (!ran.ok()) return ran.status();
    if (!*ran) return RunFallback(ctx);
    for (int32_t v : step.release) f.slots[v] = Tensor();
  }
  for (size_t k = 0; k < body_.outputs().size(); ++k) {
    const Tensor& t = f.slots[body_.outputs()[k].value()];
    if (!t.defined()) {
      return absl::InternalError(absl::StrCat(ctx.info().label(), ": output ", k, " not computed"));
    }
    Tensor& out = ctx.output(static_cast<int>(k));
    if (!out.defined() || out.raw_data() != t.raw_data() || out.shape() != t.shape()) {
      ctx.SetOutput(static_cast<int>(k), t);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RegisterFusedKernels(KernelRegistry& registry) {
  const KernelRegistry* r = &registry;
  return registry.Register(
      KernelRegistry::Key{kFusedGroupDomain, kFusedGroupOp, DeviceKind::kCpu, v1::DT_UNDEFINED},
      [r](const KernelInfo& info) { return FusedGroupKernel::Create(info, *r); });
}

}  // namespace graphopt::runtime
