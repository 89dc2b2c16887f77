#include "passes/gradient_pass.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "graph/gradient.h"
#include "graph/inference.h"
#include "graph/opset.h"

namespace graphopt {
namespace {

struct Options {
  std::vector<std::string> wrt;
  // Values seeded with ones: the gradient of the sum of their elements.
  std::vector<std::string> loss;
  // Values whose gradients the caller gives, as new graph inputs "<name><suffix>".
  std::vector<std::string> outputs;
  std::vector<std::string> stop_gradient;
  std::string suffix = "_grad";
  int64_t max_new_nodes = kDefaultMaxGradientNodes;
};

// "a;b", "a,b" or "a; b": names in order, empty entries dropped.
std::vector<std::string> SplitNames(absl::string_view text) {
  std::vector<std::string> names;
  for (absl::string_view part : absl::StrSplit(text, absl::ByAnyChar(";,"))) {
    part = absl::StripAsciiWhitespace(part);
    if (!part.empty()) names.emplace_back(part);
  }
  return names;
}

bool IsDifferentiableType(v1::DataType dtype) {
  return dtype == v1::DT_FLOAT32 || dtype == v1::DT_FLOAT64 || dtype == v1::DT_FLOAT16 ||
         dtype == v1::DT_BFLOAT16;
}

const char* kOpsWithoutGradient = "no gradient definition";

// One differentiation: from seeds (values with their gradients) back to targets.
struct Request {
  std::vector<std::pair<ValueId, ValueId>> seeds;  // value, its gradient
  std::vector<ValueId> targets;
  // For messages: "the gradient of 'loss' with respect to 'w'".
  std::string what;
};

struct Stats {
  int64_t forward_nodes = 0;
  int64_t sums = 0;
  int64_t zero_targets = 0;
  int64_t pruned_nondifferentiable = 0;  // integer/boolean or declared non-differentiable
  int64_t pruned_stop = 0;
  int64_t removed_unused = 0;
  std::vector<std::string> zero_target_names;
};

// Builds backward graphs. One instance per pass run: it owns the bookkeeping of the values it
// adds (dims values for inference, the node budget).
class Builder : public GradientContext {
 public:
  Builder(Graph& graph, const PassContext& context, const Options& options)
      : graph_(graph), context_(context), options_(options) {
    opset_ = DefaultDomainOpset(graph);
    dims_values_ = InitialDimsValues(graph);
    first_new_node_ = graph.num_node_slots();
    first_new_value_ = graph.num_value_slots();
  }

  // --- GradientContext ----------------------------------------------------------------------
  const Graph& graph() const override { return graph_; }
  NodeId node_id() const override { return node_; }
  const OpDef& op() const override { return *op_; }
  int64_t opset_version() const override { return opset_; }
  ValueId output_grad(int i) const override {
    return i >= 0 && i < static_cast<int>(out_grads_.size()) ? out_grads_[i] : ValueId();
  }
  bool needs_input_grad(int i) const override {
    return i >= 0 && i < static_cast<int>(wanted_inputs_.size()) && wanted_inputs_[i];
  }

  absl::StatusOr<std::vector<ValueId>> Emit(absl::string_view op_type,
                                            absl::Span<const ValueId> inputs,
                                            AttributeMap attributes, int num_outputs,
                                            absl::string_view domain) override {
    const OpDef* op = context_.ops->Find(domain, op_type);
    if (op == nullptr) {
      return Here(absl::StrCat("the backward graph needs op '", OpLabel(domain, op_type),
                               "', which is not registered"));
    }
    if (++added_nodes_ > options_.max_new_nodes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "gradient: the backward graph would have more than ", options_.max_new_nodes,
          " nodes (option max_new_nodes)"));
    }
    std::vector<ValueId> outputs;
    outputs.reserve(num_outputs);
    const std::string base = BaseName(op_type);
    for (int i = 0; i < num_outputs; ++i) {
      outputs.push_back(graph_.AddUniqueValue(num_outputs == 1 ? base : absl::StrCat(base, "_", i)));
    }
    absl::StatusOr<NodeId> id = graph_.AddNode(base, std::string(op_type), std::string(domain),
                                               inputs, outputs, std::move(attributes));
    if (!id.ok()) return id.status();
    if (!node_.valid() && !seed_device_.empty()) {
      graph_.mutable_node(*id).device = seed_device_;
    } else if (node_.valid()) {
      graph_.mutable_node(*id).device = graph_.node(node_).device;
    }
    dims_values_.resize(graph_.num_value_slots());
    if (absl::Status s = InferNodeTypes(graph_, *id, *op); !s.ok()) return Here(s.message());
    if (absl::Status s = InferNodeShapes(graph_, *id, *op, &dims_values_); !s.ok()) {
      return Here(s.message());
    }
    return outputs;
  }

  ValueId AddConstant(v1::Tensor tensor) override {
    const ValueId v = graph_.AddUniqueValue(BaseName("const"));
    TensorType type;
    type.dtype = tensor.dtype();
    Dims dims;
    for (int64_t d : tensor.dims()) dims.push_back(Dim::Known(d));
    type.shape = std::move(dims);
    graph_.mutable_value(v).type = std::move(type);
    tensor.set_name(graph_.value(v).name);
    graph_.SetInitializer(v, std::move(tensor));
    dims_values_.resize(graph_.num_value_slots());
    new_constants_.push_back(v);
    return v;
  }

  absl::Status AddInputGrad(int i, ValueId grad) override {
    if (!has_input(i)) return Error("gradient given for absent input ", i);
    if (!grad.valid()) return Error("invalid gradient value for input ", i);
    const ValueId in = input(i);
    const TensorType& want = graph_.value(in).type;
    const TensorType& got = graph_.value(grad).type;
    if (want.dtype != v1::DT_UNDEFINED && got.dtype != v1::DT_UNDEFINED &&
        want.dtype != got.dtype) {
      return Error("the gradient of input ", i, " is ", DataTypeName(got.dtype), ", the input is ",
                   DataTypeName(want.dtype), " (a bug in the op's gradient definition)");
    }
    if (want.shape && got.shape) {
      bool mismatch = want.shape->size() != got.shape->size();
      for (size_t d = 0; !mismatch && d < want.shape->size(); ++d) {
        const Dim& a = (*want.shape)[d];
        const Dim& b = (*got.shape)[d];
        mismatch = a.is_known() && b.is_known() && a.size() != b.size();
      }
      if (mismatch) {
        return Error("the gradient of input ", i, " has shape ", ShapeToString(got.shape),
                     ", the input has ", ShapeToString(want.shape),
                     " (a bug in the op's gradient definition)");
      }
    }
    contributions_[in].push_back(grad);
    return absl::OkStatus();
  }

  // --- Driving ------------------------------------------------------------------------------
  // Differentiates `request`; returns each target's gradient (in request.targets' order).
  absl::StatusOr<std::vector<ValueId>> Differentiate(const Request& request, Stats* stats);

  // Removes backward nodes (and constants) nothing reads.
  int64_t RemoveUnused();

  ValueId SeedOnes(ValueId loss) {
    node_ = NodeId();
    seed_device_ = graph_.value(loss).producer.valid()
                       ? std::string(graph_.node(graph_.value(loss).producer).device)
                       : std::string();
    absl::StatusOr<ValueId> ones = FilledLike(*this, loss, 1.0);
    return ones.ok() ? *ones : ValueId();
  }
  absl::StatusOr<ValueId> Zeros(ValueId like) {
    node_ = NodeId();
    seed_device_.clear();
    return FilledLike(*this, like, 0.0);
  }
  absl::StatusOr<ValueId> Sum(ValueId a, ValueId b) { return Emit1("Add", {a, b}); }

  int64_t added_nodes() const { return added_nodes_; }
  // True for a value a backward node made (not a seed, constant or forward value).
  bool MadeByBackward(ValueId v) const {
    return v.value() >= first_new_value_ && graph_.value(v).producer.valid();
  }

 private:
  absl::Status Here(absl::string_view message) const {
    if (node_.valid()) return Error(message);
    return absl::InvalidArgumentError(absl::StrCat("gradient: ", message));
  }

  std::string BaseName(absl::string_view what) const {
    if (!node_.valid()) return absl::StrCat("grad/", what);
    const Node& n = graph_.node(node_);
    const absl::string_view name = n.name;
    return absl::StrCat(name.empty() ? absl::StrCat(std::string(n.op_type), "#", node_.value())
                                     : std::string(name),
                        "/grad/", what);
  }

  // The gradient of `v` from its contributions, summed in the order they were made: the
  // backward pass produces them in that order, so each partial sum frees a contribution as
  // early as the schedule allows (a Sum over all of them would keep every one alive until the
  // last). Invalid when there are none.
  absl::StatusOr<ValueId> Accumulate(ValueId v, Stats* stats) {
    auto it = contributions_.find(v);
    if (it == contributions_.end() || it->second.empty()) return ValueId();
    std::vector<ValueId> parts = std::move(it->second);
    contributions_.erase(it);
    ValueId total = parts[0];
    for (size_t i = 1; i < parts.size(); ++i) {
      absl::StatusOr<ValueId> s = Sum(total, parts[i]);
      if (!s.ok()) return s.status();
      total = *s;
      ++stats->sums;
    }
    return total;
  }

  absl::Status RunGradientOf(NodeId id, const OpDef& op);
  absl::Status InstantiateBody(const OpDef& op);

  Graph& graph_;
  const PassContext& context_;
  const Options& options_;
  int64_t opset_ = 0;
  DimsValueTable dims_values_;
  int first_new_node_ = 0;
  int first_new_value_ = 0;
  int64_t added_nodes_ = 0;
  std::vector<ValueId> new_constants_;
  std::string seed_device_;
  // The node being differentiated.
  NodeId node_;
  const OpDef* op_ = nullptr;
  std::vector<ValueId> out_grads_;
  std::vector<bool> wanted_inputs_;
  absl::flat_hash_map<ValueId, std::vector<ValueId>> contributions_;
};

absl::Status Builder::InstantiateBody(const OpDef& op) {
  const v1::Graph& body = op.descriptor.gradient().body();
  const int n = op.descriptor.inputs_size();
  const int m = op.descriptor.outputs_size();
  const std::string label = OpLabel(op.descriptor.domain(), op.descriptor.name());
  if (body.inputs_size() != n + 2 * m) {
    return Error("the gradient body of ", label, " has ", body.inputs_size(),
                 " inputs, expected ", n + 2 * m);
  }
  absl::flat_hash_map<std::string, ValueId> local;
  for (int i = 0; i < n; ++i) local[body.inputs(i).name()] = input(i);
  for (int j = 0; j < m; ++j) local[body.inputs(n + j).name()] = output(j);
  for (int j = 0; j < m; ++j) {
    ValueId g = output_grad(j);
    if (!g.valid() && output(j).valid()) {
      absl::StatusOr<ValueId> z = FilledLike(*this, output(j), 0.0);
      if (!z.ok()) return z.status();
      g = *z;
    }
    local[body.inputs(n + m + j).name()] = g;
  }
  for (const v1::Tensor& t : body.initializers()) {
    if (!local.contains(t.name())) local[t.name()] = AddConstant(t);
  }
  for (const v1::Node& bn : body.nodes()) {
    std::vector<ValueId> ins;
    for (const std::string& name : bn.inputs()) {
      if (name.empty()) {
        ins.push_back(ValueId());
        continue;
      }
      auto it = local.find(name);
      if (it == local.end()) {
        return Error("the gradient body of ", label, " reads '", name, "' before defining it");
      }
      ins.push_back(it->second);
    }
    AttributeMap attrs;
    for (const v1::Attribute& a : bn.attributes()) {
      if (!a.ref_attr_name().empty()) {
        const v1::Attribute* ref = attr(a.ref_attr_name());
        if (ref == nullptr) continue;
        v1::Attribute copy = *ref;
        copy.set_name(a.name());
        copy.clear_ref_attr_name();
        attrs[a.name()] = std::move(copy);
      } else {
        attrs[a.name()] = a;
      }
    }
    absl::StatusOr<std::vector<ValueId>> outs =
        Emit(bn.op_type(), ins, std::move(attrs), bn.outputs_size(), bn.domain());
    if (!outs.ok()) return outs.status();
    for (int k = 0; k < bn.outputs_size(); ++k) {
      if (!bn.outputs(k).empty()) local[bn.outputs(k)] = (*outs)[k];
    }
  }
  std::vector<bool> nondiff(n, false);
  for (int i : op.descriptor.non_differentiable_inputs()) {
    if (i >= 0 && i < n) nondiff[i] = true;
  }
  int k = 0;
  for (int i = 0; i < n; ++i) {
    if (nondiff[i]) continue;
    if (k >= body.outputs_size()) break;
    const std::string& name = body.outputs(k++).name();
    if (!needs_input_grad(i)) continue;
    auto it = local.find(name);
    if (it == local.end()) {
      return Error("the gradient body of ", label, " has output '", name, "', which it never defines");
    }
    if (absl::Status s = AddInputGrad(i, it->second); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status Builder::RunGradientOf(NodeId id, const OpDef& op) {
  if (op.descriptor.gradient().has_body()) return InstantiateBody(op);
  if (op.gradient_fn) return op.gradient_fn(*this);
  return Error(kOpsWithoutGradient, " for op '",
               OpLabel(op.descriptor.domain(), op.descriptor.name()),
               "'; register its descriptor with a gradient body, or mark the input a "
               "stop_gradient value");
}

absl::StatusOr<std::vector<ValueId>> Builder::Differentiate(const Request& request,
                                                            Stats* stats) {
  absl::StatusOr<std::vector<NodeId>> order = graph_.TopologicalOrder();
  if (!order.ok()) return order.status();
  const int num_values = graph_.num_value_slots();
  std::vector<bool> stop(num_values, false);
  for (const std::string& name : options_.stop_gradient) {
    const ValueId v = graph_.FindValue(name);
    if (v.valid()) stop[v.value()] = true;
  }
  // 1. Forward: values that depend on a target through differentiable inputs.
  std::vector<bool> active(num_values, false);
  for (ValueId t : request.targets) {
    if (!stop[t.value()]) active[t.value()] = true;
  }
  std::vector<const OpDef*> node_ops(graph_.num_node_slots(), nullptr);
  auto differentiable_input = [&](const OpDef& op, int i) {
    for (int k : op.descriptor.non_differentiable_inputs()) {
      if (k == i) return false;
    }
    return true;
  };
  for (NodeId id : *order) {
    const Node& n = graph_.node(id);
    const OpDef* op = context_.ops->Find(n.domain, n.op_type);
    node_ops[id.value()] = op;
    if (op == nullptr) continue;
    bool any = false;
    for (int i = 0; i < static_cast<int>(n.inputs.size()); ++i) {
      const ValueId in = n.inputs[i];
      if (!in.valid() || !active[in.value()]) continue;
      if (!differentiable_input(*op, i)) {
        ++stats->pruned_nondifferentiable;
        continue;
      }
      any = true;
    }
    if (!any) continue;
    for (ValueId out : n.outputs) {
      if (!out.valid()) continue;
      if (stop[out.value()]) {
        ++stats->pruned_stop;
      } else if (!IsDifferentiableType(graph_.value(out).type.dtype)) {
        ++stats->pruned_nondifferentiable;
      } else {
        active[out.value()] = true;
      }
    }
  }
  // 2. Backward: seeds, then every node in reverse order whose outputs have gradients.
  for (const auto& [value, grad] : request.seeds) {
    if (active[value.value()]) contributions_[value].push_back(grad);
  }
  std::vector<bool> is_target(num_values, false);
  for (ValueId t : request.targets) is_target[t.value()] = true;
  // Target gradients are taken when their producer is reached (all their uses come later in
  // topological order), or at the end for inputs and initializers.
  absl::flat_hash_map<ValueId, ValueId> target_grads;
  int64_t visited = 0;
  for (auto it = order->rbegin(); it != order->rend(); ++it) {
    if (absl::Status s = context_.CheckStopEvery(visited++); !s.ok()) return s;
    const NodeId id = *it;
    const OpDef* op = node_ops[id.value()];
    if (op == nullptr) continue;
    bool has_grad = false;
    for (ValueId out : graph_.node(id).outputs) {
      has_grad |= out.valid() && contributions_.contains(out);
    }
    if (!has_grad) continue;
    // Copies: summing contributions adds nodes, which may move the graph's node storage.
    const std::vector<ValueId> outputs(graph_.node(id).outputs.begin(),
                                       graph_.node(id).outputs.end());
    const std::vector<ValueId> inputs(graph_.node(id).inputs.begin(),
                                      graph_.node(id).inputs.end());
    node_ = id;
    op_ = op;
    out_grads_.assign(outputs.size(), ValueId());
    for (size_t j = 0; j < outputs.size(); ++j) {
      const ValueId out = outputs[j];
      if (!out.valid()) continue;
      absl::StatusOr<ValueId> g = Accumulate(out, stats);
      if (!g.ok()) return g.status();
      out_grads_[j] = *g;
      if (is_target[out.value()] && g->valid()) target_grads[out] = *g;
    }
    wanted_inputs_.assign(inputs.size(), false);
    bool wanted_any = false;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const ValueId in = inputs[i];
      wanted_inputs_[i] = in.valid() && active[in.value()] &&
                          differentiable_input(*op, static_cast<int>(i)) &&
                          IsDifferentiableType(graph_.value(in).type.dtype);
      wanted_any |= wanted_inputs_[i];
    }
    if (!wanted_any) continue;  // only targets among its outputs
    ++stats->forward_nodes;
    if (absl::Status s = RunGradientOf(id, *op); !s.ok()) return s;
  }
  node_ = NodeId();
  op_ = nullptr;
  std::vector<ValueId> result;
  for (ValueId t : request.targets) {
    if (!target_grads.contains(t)) {
      absl::StatusOr<ValueId> g = Accumulate(t, stats);
      if (!g.ok()) return g.status();
      if (g->valid()) target_grads[t] = *g;
    }
    auto found = target_grads.find(t);
    if (found != target_grads.end()) {
      result.push_back(found->second);
      continue;
    }
    ++stats->zero_targets;
    stats->zero_target_names.push_back(graph_.value(t).name);
    absl::StatusOr<ValueId> z = Zeros(t);
    if (!z.ok()) return z.status();
    result.push_back(*z);
  }
  contributions_.clear();
  return result;
}

int64_t Builder::RemoveUnused() {
  int64_t removed = 0;
  for (int i = graph_.num_node_slots() - 1; i >= first_new_node_; --i) {
    const NodeId id(i);
    const Node& n = graph_.node(id);
    if (!n.alive) continue;
    bool used = false;
    for (ValueId out : n.outputs) {
      if (out.valid() &&
          (!graph_.value(out).uses.empty() || graph_.value(out).graph_output_count > 0)) {
        used = true;
      }
    }
    if (used) continue;
    graph_.RemoveNode(id);
    ++removed;
  }
  for (ValueId c : new_constants_) {
    const Value& v = graph_.value(c);
    if (v.alive && v.uses.empty() && v.graph_output_count == 0 && !v.is_graph_input) {
      graph_.RemoveInitializer(c);
    }
  }
  return removed;
}

absl::StatusOr<ValueId> FindNamed(const Graph& graph, absl::string_view option,
                                  const std::string& name) {
  const ValueId v = graph.FindValue(name);
  if (!v.valid() || !graph.value(v).alive) {
    return absl::InvalidArgumentError(
        absl::StrCat("option '", option, "': the graph has no value named '", name, "'"));
  }
  return v;
}

std::string Quoted(const std::vector<std::string>& names) {
  return absl::StrCat("'", absl::StrJoin(names, "', '"), "'");
}

// Gives `grad` the name "<target><suffix>" as a graph output: renamed when the backward graph
// made it for this target alone, else copied by an Identity.
absl::StatusOr<ValueId> NameGradient(Graph& graph, Builder& builder, ValueId target,
                                     ValueId grad, const std::string& suffix,
                                     absl::flat_hash_map<ValueId, int>* claimed) {
  const std::string want = absl::StrCat(graph.value(target).name, suffix);
  const Value& g = graph.value(grad);
  const bool own = builder.MadeByBackward(grad) && g.graph_output_count == 0 &&
                   (*claimed)[grad] == 0;
  ValueId named = grad;
  if (!own) {
    absl::StatusOr<ValueId> copy = builder.Emit1("Identity", {grad});
    if (!copy.ok()) return copy.status();
    named = *copy;
  }
  ++(*claimed)[named];
  const ValueId taken = graph.FindValue(want);
  std::string name = want;
  if (taken.valid() && taken != named) {
    for (int k = 1;; ++k) {
      name = absl::StrCat(want, "_", k);
      if (!graph.FindValue(name).valid()) break;
    }
  }
  if (absl::Status s = graph.RenameValue(named, name); !s.ok()) return s;
  return named;
}

// Differentiates a graph: for the pass's options, or for each ONNX training Gradient node.
class GradientPass : public Pass {
 public:
  explicit GradientPass(Options options) : options_(std::move(options)) {}

  absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) override {
    Builder builder(graph, context, options_);
    Stats stats;
    bool changed = false;
    std::vector<std::string> built;
    // ONNX's Gradient nodes first: each is one differentiation of its attribute y with respect
    // to its attribute xs, and its outputs take the gradients.
    if (absl::StatusOr<int64_t> n = ExpandOnnxGradients(graph, builder, &stats); !n.ok()) {
      return n.status();
    } else if (*n > 0) {
      changed = true;
      built.push_back(absl::StrCat(*n, " ONNX Gradient node", *n == 1 ? "" : "s", " expanded"));
    }
    if (!options_.wrt.empty()) {
      absl::StatusOr<std::string> what = DifferentiateForOptions(graph, builder, &stats);
      if (!what.ok()) return what.status();
      built.push_back(*what);
      changed = true;
    } else if (!options_.loss.empty() || !options_.outputs.empty()) {
      return absl::InvalidArgumentError(
          "option 'wrt' is required: the values to differentiate with respect to");
    }
    if (!changed) {
      context.Note("nothing to differentiate (no option 'wrt', no ONNX Gradient node)");
      return false;
    }
    stats.removed_unused = builder.RemoveUnused();
    std::string line = absl::StrJoin(built, "; ");
    absl::StrAppend(&line, ": ", builder.added_nodes() - stats.removed_unused,
                    " backward nodes for ", stats.forward_nodes, " forward nodes");
    if (stats.sums > 0) absl::StrAppend(&line, ", ", stats.sums, " gradient sums");
    context.Note(line);
    std::vector<std::string> pruned;
    if (stats.pruned_nondifferentiable > 0) {
      pruned.push_back(absl::StrCat(stats.pruned_nondifferentiable,
                                    " integer, boolean or non-differentiable inputs"));
    }
    if (stats.pruned_stop > 0) pruned.push_back(absl::StrCat(stats.pruned_stop, " stop_gradient values"));
    if (stats.removed_unused > 0) {
      pruned.push_back(absl::StrCat(stats.removed_unused, " unused backward nodes removed"));
    }
    if (!pruned.empty()) context.Note(absl::StrCat("zero gradients pruned: ", absl::StrJoin(pruned, ", ")));
    if (stats.zero_targets > 0) {
      context.Note(absl::StrCat("zero gradient (the loss does not depend on it): ",
                                Quoted(stats.zero_target_names)));
    }
    return true;
  }

 private:
  absl::StatusOr<std::string> DifferentiateForOptions(Graph& graph, Builder& builder,
                                                      Stats* stats) {
    Request request;
    std::vector<std::string> loss = options_.loss;
    std::vector<std::string> outputs = options_.outputs;
    if (loss.empty() && outputs.empty()) {
      for (ValueId out : graph.outputs()) outputs.push_back(graph.value(out).name);
    }
    for (const std::string& name : options_.wrt) {
      absl::StatusOr<ValueId> v = FindNamed(graph, "wrt", name);
      if (!v.ok()) return v.status();
      if (!IsDifferentiableType(graph.value(*v).type.dtype)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "option 'wrt': '", name, "' is ", DataTypeName(graph.value(*v).type.dtype),
            "; only floating-point values have gradients"));
      }
      request.targets.push_back(*v);
    }
    for (const std::string& name : loss) {
      absl::StatusOr<ValueId> v = FindNamed(graph, "loss", name);
      if (!v.ok()) return v.status();
      if (!IsDifferentiableType(graph.value(*v).type.dtype)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "option 'loss': '", name, "' is ", DataTypeName(graph.value(*v).type.dtype),
            "; a loss must be floating point"));
      }
      const ValueId ones = builder.SeedOnes(*v);
      if (!ones.valid()) {
        return absl::InvalidArgumentError(
            absl::StrCat("option 'loss': cannot make the seed of '", name, "'"));
      }
      request.seeds.push_back({*v, ones});
    }
    for (const std::string& name : outputs) {
      absl::StatusOr<ValueId> v = FindNamed(graph, "outputs", name);
      if (!v.ok()) return v.status();
      if (!IsDifferentiableType(graph.value(*v).type.dtype)) continue;
      const ValueId seed = graph.AddUniqueValue(absl::StrCat(name, options_.suffix));
      graph.mutable_value(seed).type = graph.value(*v).type;
      graph.AddGraphInput(seed);
      request.seeds.push_back({*v, seed});
    }
    absl::StatusOr<std::vector<ValueId>> grads = builder.Differentiate(request, stats);
    if (!grads.ok()) return grads.status();
    absl::flat_hash_map<ValueId, int> claimed;
    for (size_t i = 0; i < grads->size(); ++i) {
      absl::StatusOr<ValueId> named = NameGradient(graph, builder, request.targets[i],
                                                   (*grads)[i], options_.suffix, &claimed);
      if (!named.ok()) return named.status();
      graph.AddGraphOutput(*named);
    }
    std::vector<std::string> of = loss;
    of.insert(of.end(), outputs.begin(), outputs.end());
    return absl::StrCat("gradients of ", Quoted(of), " with respect to ", Quoted(options_.wrt));
  }

  absl::StatusOr<int64_t> ExpandOnnxGradients(Graph& graph, Builder& builder, Stats* stats) {
    if (graph.num_live_nodes_of_op(kOnnxTrainingDomain, "Gradient") == 0) return 0;
    const std::vector<NodeId> nodes =
        graph.LiveNodesOfKinds({graph.FindOpKind(kOnnxTrainingDomain, "Gradient")});
    int64_t expanded = 0;
    for (NodeId id : nodes) {
      const Node& n = graph.node(id);
      const std::string label = graph.NodeLabel(id);
      auto y_attr = n.attributes.find("y");
      auto xs_attr = n.attributes.find("xs");
      if (y_attr == n.attributes.end() || xs_attr == n.attributes.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat(label, ": a Gradient node needs the attributes 'y' and 'xs'"));
      }
      Request request;
      const std::string y_name = y_attr->second.s();
      absl::StatusOr<ValueId> y = FindNamed(graph, "y", y_name);
      if (!y.ok()) return absl::InvalidArgumentError(absl::StrCat(label, ": attribute ", y.status().message()));
      const std::vector<std::string> xs(xs_attr->second.strings().values().begin(),
                                        xs_attr->second.strings().values().end());
      if (static_cast<int>(xs.size()) != static_cast<int>(n.outputs.size())) {
        return absl::InvalidArgumentError(absl::StrCat(label, ": ", xs.size(), " names in 'xs' but ",
                                                       n.outputs.size(), " outputs"));
      }
      for (const std::string& x : xs) {
        absl::StatusOr<ValueId> v = FindNamed(graph, "xs", x);
        if (!v.ok()) return absl::InvalidArgumentError(absl::StrCat(label, ": attribute ", v.status().message()));
        request.targets.push_back(*v);
      }
      const ValueId ones = builder.SeedOnes(*y);
      if (!ones.valid()) {
        return absl::InvalidArgumentError(absl::StrCat(label, ": cannot seed '", y_name, "'"));
      }
      request.seeds.push_back({*y, ones});
      absl::StatusOr<std::vector<ValueId>> grads = builder.Differentiate(request, stats);
      if (!grads.ok()) return grads.status();
      // The Gradient node's outputs keep their names: each is now copied from its gradient.
      // Differentiating added nodes, so `n` may no longer be valid: read the node again.
      const Node& node = graph.node(id);
      std::vector<ValueId> outs(node.outputs.begin(), node.outputs.end());
      const std::string device(node.device);
      for (size_t k = 0; k < outs.size(); ++k) {
        if (outs[k].valid()) graph.DetachOutput(id, static_cast<int>(k));
      }
      graph.RemoveNode(id);
      for (size_t k = 0; k < outs.size(); ++k) {
        if (!outs[k].valid()) continue;
        absl::StatusOr<NodeId> copy = graph.AddNode(
            absl::StrCat(graph.value(outs[k]).name, "/copy"), "Identity", "", {(*grads)[k]},
            {outs[k]});
        if (!copy.ok()) return copy.status();
        graph.mutable_node(*copy).device = device;
      }
      ++expanded;
    }
    return expanded;
  }

  Options options_;
};

absl::StatusOr<Options> ParseOptions(const PassOptions& options) {
  Options o;
  if (auto it = options.find("wrt"); it != options.end()) o.wrt = SplitNames(it->second);
  if (auto it = options.find("loss"); it != options.end()) o.loss = SplitNames(it->second);
  if (auto it = options.find("outputs"); it != options.end()) o.outputs = SplitNames(it->second);
  if (auto it = options.find("stop_gradient"); it != options.end()) {
    o.stop_gradient = SplitNames(it->second);
  }
  if (auto it = options.find("suffix"); it != options.end()) {
    if (it->second.empty()) return absl::InvalidArgumentError("option 'suffix' is empty");
    o.suffix = it->second;
  }
  if (auto it = options.find("max_new_nodes"); it != options.end()) {
    if (!absl::SimpleAtoi(it->second, &o.max_new_nodes) || o.max_new_nodes <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("option 'max_new_nodes': '", it->second, "' is not a positive count"));
    }
  }
  if (auto it = options.find("wrt"); it != options.end() && o.wrt.empty()) {
    return absl::InvalidArgumentError("option 'wrt' names no value");
  }
  return o;
}

}  // namespace

PassInfo GradientPassInfo() {
  PassInfo info;
  info.name = "gradient";
  info.description =
      "Appends the backward graph: the gradients of the loss (or of outputs whose gradients "
      "are given) with respect to the 'wrt' values, as graph outputs '<name>_grad'; also "
      "expands ONNX training Gradient nodes.";
  info.requires_analyses = {Analysis::kTypes, Analysis::kShapes};
  info.provides = {};
  info.preserves = {Analysis::kTypes, Analysis::kShapes};
  info.options = {
      {"wrt", "values to differentiate with respect to, separated by ';' (or ',')"},
      {"loss",
       "values whose element sum is differentiated (seeded with ones); default: every graph "
       "output, through 'outputs'"},
      {"outputs",
       "values whose gradients the caller gives as new graph inputs '<name>_grad' (vector-"
       "Jacobian products, Hessian-vector products on a gradient)"},
      {"stop_gradient", "values treated as constants"},
      {"suffix", "name suffix of the gradient outputs and inputs (default _grad)"},
      {"max_new_nodes", "most nodes the backward graph may have"},
  };
  info.budget_options["max_new_nodes"] = {kDefaultMaxGradientNodes, nullptr};
  info.min_opt_level = 1;
  info.factory = [](const PassOptions& options) -> absl::StatusOr<std::unique_ptr<Pass>> {
    absl::StatusOr<Options> o = ParseOptions(options);
    if (!o.ok()) return o.status();
    return std::unique_ptr<Pass>(std::make_unique<GradientPass>(std::move(*o)));
  };
  return info;
}

}  // namespace graphopt
