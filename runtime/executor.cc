#include "runtime/executor.h"

#include <omp.h>

#include <chrono>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace graphopt::runtime {
namespace {

int64_t OpsetOf(const Graph& graph, const std::string& domain) {
  for (const v1::OpsetImport& o : graph.opset_imports) {
    const bool same = o.domain() == domain || (domain.empty() && o.domain() == "ai.onnx") ||
                      (domain == "ai.onnx" && o.domain().empty());
    if (same) return o.version();
  }
  return 0;
}

std::string TimingName(const Graph& graph, NodeId id) {
  const Node& n = graph.node(id);
  return n.name.empty() ? absl::StrCat("#", id.value()) : n.name;
}

}  // namespace

std::vector<std::string> FreeNames(const v1::Graph& root) {
  // Frames of nested graphs, walked without recursion: each keeps the names it defines.
  struct Frame {
    const v1::Graph* graph;
    absl::flat_hash_set<std::string> defined;
    int parent;
  };
  std::vector<Frame> frames;
  std::vector<std::string> free;
  absl::flat_hash_set<std::string> seen;
  frames.push_back({&root, {}, -1});
  for (size_t f = 0; f < frames.size(); ++f) {
    const v1::Graph& g = *frames[f].graph;
    auto& defined = frames[f].defined;
    for (const auto& v : g.inputs()) defined.insert(v.name());
    for (const auto& t : g.initializers()) defined.insert(t.name());
    for (const auto& n : g.nodes()) {
      for (const auto& o : n.outputs()) defined.insert(o);
    }
    for (const auto& n : g.nodes()) {
      for (const auto& a : n.attributes()) {
        if (a.value_case() == v1::Attribute::kG) frames.push_back({&a.g(), {}, static_cast<int>(f)});
        if (a.value_case() == v1::Attribute::kGraphs) {
          for (const auto& sub : a.graphs().values()) frames.push_back({&sub, {}, static_cast<int>(f)});
        }
      }
    }
  }
  // A name read in frame f is free when no frame on the path from f to the root defines it.
  for (size_t f = 0; f < frames.size(); ++f) {
    auto visit = [&](const std::string& name) {
      if (name.empty()) return;
      for (int p = static_cast<int>(f); p >= 0; p = frames[p].parent) {
        if (frames[p].defined.contains(name)) return;
      }
      if (seen.insert(name).second) free.push_back(name);
    };
    for (const auto& n : frames[f].graph->nodes()) {
      for (const auto& i : n.inputs()) visit(i);
    }
    for (const auto& o : frames[f].graph->outputs()) visit(o.name());
  }
  return free;
}

absl::StatusOr<std::unique_ptr<Executor>> Executor::Create(Graph graph,
                                                           const KernelRegistry& registry,
                                                           const ExecutorOptions& options) {
  std::unique_ptr<Executor> executor(new Executor(std::move(graph), options));
  if (executor->options_.num_threads < 1) executor->options_.num_threads = 1;
  absl::Status status = executor->Plan(registry);
  if (!status.ok()) return status;
  return executor;
}

absl::Status Executor::Plan(const KernelRegistry& registry) {
  absl::StatusOr<std::vector<NodeId>> order = graph_.TopologicalOrder();
  if (!order.ok()) return order.status();
  const int num_values = graph_.num_value_slots();
  std::vector<int32_t> last_use(num_values, -1);

  // Constants and inputs.
  for (ValueId v : graph_.inputs()) {
    const Value& value = graph_.value(v);
    input_slot_by_name_[value.name] = v.value();
    if (value.initializer < 0) required_inputs_.push_back(v);
  }
  for (int i = 0; i < num_values; ++i) {
    const Value& value = graph_.value(ValueId(i));
    if (!value.alive || value.initializer < 0) continue;
    const v1::Tensor& proto = graph_.initializers()[value.initializer];
    absl::StatusOr<Tensor> t = Tensor::FromProto(proto, absl::StrCat("initializer '", value.name, "'"));
    if (!t.ok()) return t.status();
    constants_.emplace_back(i, *std::move(t));
  }
  // The decoded constants are all the plan needs of the initializers: drop the wire copies.
  graph_.TakeInitializers();
  absl::flat_hash_map<int32_t, const Tensor*> constant_by_slot;
  for (const auto& [slot, t] : constants_) constant_by_slot[slot] = &t;

  // Values read but defined nowhere are captures from an enclosing graph.
  absl::flat_hash_set<std::string> captured;
  for (NodeId id : *order) {
    for (ValueId v : graph_.node(id).inputs) {
      if (v.valid() && !graph_.IsDefined(v) && captured.insert(graph_.value(v).name).second) {
        captures_.push_back(graph_.value(v).name);
        capture_slots_.emplace_back(graph_.value(v).name, v.value());
      }
    }
  }
  for (ValueId v : graph_.outputs()) {
    if (!graph_.IsDefined(v) && captured.insert(graph_.value(v).name).second) {
      captures_.push_back(graph_.value(v).name);
      capture_slots_.emplace_back(graph_.value(v).name, v.value());
    }
  }

  steps_.reserve(order->size());
  for (NodeId id : *order) {
    const Node& node = graph_.node(id);
    Step step;
    step.node = id;
    std::vector<TensorType> input_types;
    for (ValueId v : node.inputs) {
      step.inputs.push_back(v.valid() ? v.value() : -1);
      input_types.push_back(v.valid() ? graph_.value(v).type : TensorType());
      if (v.valid()) last_use[v.value()] = static_cast<int32_t>(steps_.size());
    }
    for (ValueId v : node.outputs) step.outputs.push_back(v.valid() ? v.value() : -1);
    // Values the node's subgraphs read from this graph stay alive until the node has run.
    for (const auto& [name, attribute] : node.attributes) {
      std::vector<const v1::Graph*> bodies;
      if (attribute.value_case() == v1::Attribute::kG) bodies.push_back(&attribute.g());
      if (attribute.value_case() == v1::Attribute::kGraphs) {
        for (const auto& g : attribute.graphs().values()) bodies.push_back(&g);
      }
      for (const v1::Graph* body : bodies) {
        for (const std::string& free : FreeNames(*body)) {
          ValueId v = graph_.FindValue(free);
          if (v.valid()) {
            last_use[v.value()] = static_cast<int32_t>(steps_.size());
          } else if (captured.insert(free).second) {
            // Read from further out: this graph captures it too (no slot of its own).
            captures_.push_back(free);
          }
        }
      }
    }
    const v1::DataType dtype = input_types.empty() ? v1::DT_UNDEFINED : input_types[0].dtype;
    const KernelFactory* factory =
        registry.Find(node.domain, node.op_type, options_.device, dtype);
    if (factory == nullptr) {
      return absl::UnimplementedError(absl::StrCat(
          graph_.NodeLabel(id), ": no ", DeviceKindName(options_.device), " kernel for op '",
          node.op_type, "'", node.domain.empty() ? "" : absl::StrCat(" of domain '", node.domain, "'")));
    }
    step.info = std::make_unique<KernelInfo>(node, graph_.NodeLabel(id),
                                             OpsetOf(graph_, node.domain), std::move(input_types),
                                             registry, options_, options_.device);
    std::vector<const Tensor*> constants(node.inputs.size(), nullptr);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const ValueId v = node.inputs[i];
      if (v.valid() && !graph_.value(v).is_graph_input) {
        auto c = constant_by_slot.find(v.value());
        if (c != constant_by_slot.end()) constants[i] = c->second;
      }
    }
    step.info->set_constant_inputs(std::move(constants));
    absl::StatusOr<std::unique_ptr<OpKernel>> kernel = (*factory)(*step.info);
    if (!kernel.ok()) return kernel.status();
    step.kernel = *std::move(kernel);
    steps_.push_back(std::move(step));
  }

  // Release each value after its last reader, unless it is a graph output or a constant.
  std::vector<bool> keep(num_values, false);
  for (ValueId v : graph_.outputs()) keep[v.value()] = true;
  for (const auto& [slot, t] : constants_) keep[slot] = true;
  for (int v = 0; v < num_values; ++v) {
    if (!keep[v] && last_use[v] >= 0) steps_[last_use[v]].release.push_back(v);
  }
  return absl::OkStatus();
}

absl::StatusOr<RunResult> Executor::Run(
    const std::vector<std::pair<std::string, Tensor>>& inputs, const RunOptions& run,
    const std::function<const Tensor*(absl::string_view)>& outer) const {
  std::vector<Tensor> slots(graph_.num_value_slots());
  for (const auto& [slot, t] : constants_) slots[slot] = t;
  for (const auto& [name, tensor] : inputs) {
    auto it = input_slot_by_name_.find(name);
    if (it == input_slot_by_name_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", name, "' is not an input of graph '", graph_.name, "'"));
    }
    slots[it->second] = tensor;
  }
  return RunSlots(std::move(slots), run, outer);
}

absl::StatusOr<RunResult> Executor::RunPositional(
    const std::vector<Tensor>& inputs, const RunOptions& run,
    const std::function<const Tensor*(absl::string_view)>& outer) const {
  if (inputs.size() > graph_.inputs().size()) {
    return absl::InvalidArgumentError(absl::StrCat(inputs.size(), " inputs given, graph '",
                                                   graph_.name, "' has ",
                                                   graph_.inputs().size()));
  }
  std::vector<Tensor> slots(graph_.num_value_slots());
  for (const auto& [slot, t] : constants_) slots[slot] = t;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined()) slots[graph_.inputs()[i].value()] = inputs[i];
  }
  return RunSlots(std::move(slots), run, outer);
}

absl::StatusOr<RunResult> Executor::RunSlots(
    std::vector<Tensor> slots, const RunOptions& run,
    const std::function<const Tensor*(absl::string_view)>& outer) const {
  // Check the fed inputs against the declared types.
  for (ValueId v : graph_.inputs()) {
    const Value& value = graph_.value(v);
    const Tensor& t = slots[v.value()];
    if (!t.defined()) {
      return absl::InvalidArgumentError(absl::StrCat("input '", value.name, "' is not given"));
    }
    if (value.type.dtype != v1::DT_UNDEFINED && t.dtype() != value.type.dtype) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", value.name, "': ", t.DebugString(), " given, ",
                       TensorTypeToString(value.type), " expected"));
    }
    if (value.type.shape.has_value()) {
      const Dims& dims = *value.type.shape;
      bool ok = static_cast<int>(dims.size()) == t.rank();
      for (int i = 0; ok && i < t.rank(); ++i) {
        ok = !dims[i].is_known() || dims[i].size() == t.dim(i);
      }
      if (!ok) {
        return absl::InvalidArgumentError(
            absl::StrCat("input '", value.name, "': ", t.DebugString(), " given, ",
                         TensorTypeToString(value.type), " expected"));
      }
    }
  }
  for (const auto& [name, slot] : capture_slots_) {
    const Tensor* t = outer ? outer(name) : nullptr;
    if (t == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("value '", name, "' is read but defined nowhere"));
    }
    slots[slot] = *t;
  }

  // Subgraphs look names up here first, then further out.
  std::function<const Tensor*(absl::string_view)> lookup =
      [this, &slots, &outer](absl::string_view name) -> const Tensor* {
    ValueId v = graph_.FindValue(name);
    if (v.valid() && slots[v.value()].defined()) return &slots[v.value()];
    return outer ? outer(name) : nullptr;
  };

  omp_set_num_threads(options_.num_threads);
  RunResult result;
  if (run.profile) result.timings.reserve(steps_.size());
  std::vector<const Tensor*> in;
  std::vector<Tensor> out;
  for (const Step& step : steps_) {
    in.assign(step.inputs.size(), nullptr);
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      if (step.inputs[i] < 0) continue;
      const Tensor& t = slots[step.inputs[i]];
      if (!t.defined()) {
        return absl::InvalidArgumentError(
            absl::StrCat(step.info->label(), ": input ", i, " ('",
                         graph_.value(ValueId(step.inputs[i])).name, "') has no value"));
      }
      in[i] = &t;
    }
    out.assign(step.outputs.size(), Tensor());
    KernelContext ctx(*step.info, in, absl::MakeSpan(out), lookup, options_.num_threads);
    const auto start = std::chrono::steady_clock::now();
    absl::Status status = step.kernel->Compute(ctx);
    if (!status.ok()) {
      if (!absl::StrContains(status.message(), step.info->label())) {
        status = absl::Status(status.code(), absl::StrCat(step.info->label(), ": ", status.message()));
      }
      return status;
    }
    if (run.profile) {
      const double us = std::chrono::duration<double, std::micro>(
                            std::chrono::steady_clock::now() - start)
                            .count();
      result.timings.push_back({TimingName(graph_, step.node), step.info->op_type(), us});
    }
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      if (step.outputs[i] < 0) continue;
      if (!out[i].defined()) {
        return absl::InternalError(absl::StrCat(step.info->label(), ": kernel produced no output ", i));
      }
      slots[step.outputs[i]] = std::move(out[i]);
    }
    for (int32_t r : step.release) slots[r] = Tensor();
  }
  result.outputs.reserve(graph_.outputs().size());
  for (ValueId v : graph_.outputs()) {
    if (!slots[v.value()].defined()) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph output '", graph_.value(v).name, "' has no value"));
    }
    result.outputs.push_back(slots[v.value()]);
  }
  return result;
}

}  // namespace graphopt::runtime
