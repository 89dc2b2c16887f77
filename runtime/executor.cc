#include "runtime/executor.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "graph/opset.h"
#include "runtime/exception_status.h"

namespace graphopt::runtime {
namespace {

std::string TimingName(const Graph& graph, NodeId id) {
  const Node& n = graph.node(id);
  return n.name.empty() ? absl::StrCat("#", id.value()) : n.name.str();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Executor>> Executor::Create(Graph graph,
                                                           const KernelRegistry& registry,
                                                           const ExecutorOptions& options) {
  std::unique_ptr<Executor> executor;
  try {
    executor.reset(new Executor(std::move(graph), options));
    if (executor->options_.num_threads < 1) executor->options_.num_threads = 1;
    absl::Status status = executor->Plan(registry);
    if (!status.ok()) return status;
  } catch (...) {
    return CurrentExceptionToStatus(absl::StrCat(
        "building the plan of graph '", executor != nullptr ? executor->graph_.name : "", "'"));
  }
  return executor;
}

absl::Status Executor::Plan(const KernelRegistry& registry) {
  absl::StatusOr<std::vector<NodeId>> order = graph_.TopologicalOrder();
  if (!order.ok()) return order.status();
  const int num_values = graph_.num_value_slots();
  // Inputs and values the nodes' subgraphs read from this graph: the same live ranges the
  // memory planner used.
  const Liveness live = ComputeLiveness(graph_, *order);

  // Constants and inputs.
  for (ValueId v : graph_.inputs()) {
    const Value& value = graph_.value(v);
    input_slot_by_name_[value.name] = v.value();
    if (value.initializer < 0) required_inputs_.push_back(v);
  }
  // The decoded constants are all the plan needs of the initializers: each wire copy is dropped
  // as soon as it is decoded, so that the process never holds the weights twice over (for a
  // large CNN the weights are most of its RSS).
  // Each initializer belongs to one value (Graph::SetInitializer), so it is read once here.
  std::vector<v1::Tensor> wire = graph_.TakeInitializers();
  for (int i = 0; i < num_values; ++i) {
    const Value& value = graph_.value(ValueId(i));
    if (!value.alive || value.initializer < 0) continue;
    v1::Tensor& proto = wire[value.initializer];
    absl::StatusOr<Tensor> t = Tensor::FromProto(proto, absl::StrCat("initializer '", value.name, "'"));
    if (!t.ok()) return t.status();
    constants_.emplace_back(i, *std::move(t));
    v1::Tensor().Swap(&proto);  // frees its bytes
  }
  wire.clear();
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
    }
    for (ValueId v : node.outputs) step.outputs.push_back(v.valid() ? v.value() : -1);
    // Names the node's subgraphs read from further out: this graph captures them too (no slot
    // of its own). Those of this graph stay alive until the node has run (live.last_use).
    if (!node.attributes.empty()) {
      for (const std::string& free : SubgraphFreeNames(node)) {
        if (!graph_.FindValue(free).valid() && captured.insert(free).second) {
          captures_.push_back(free);
        }
      }
    }
    // A sequence or optional first input selects the op's any-dtype kernel: the dtype-specific
    // ones read tensor elements.
    const v1::DataType dtype = input_types.empty() || !input_types[0].is_tensor()
                                   ? v1::DT_UNDEFINED
                                   : input_types[0].dtype;
    const KernelFactory* factory =
        registry.Find(node.domain, node.op_type, options_.device, dtype);
    if (factory == nullptr) {
      return absl::UnimplementedError(absl::StrCat(
          graph_.NodeLabel(id), ": no ", DeviceKindName(options_.device), " kernel for op '",
          node.op_type.str(), "'",
          node.domain.empty() ? "" : absl::StrCat(" of domain '", node.domain.str(), "'")));
    }
    step.info = std::make_unique<KernelInfo>(
        node, graph_.NodeLabel(id), OpsetVersion(graph_, node.domain.str()),
        std::move(input_types), registry, options_, options_.device);
    std::vector<const Tensor*> constants(node.inputs.size(), nullptr);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const ValueId v = node.inputs[i];
      if (v.valid() && !graph_.value(v).is_graph_input) {
        auto c = constant_by_slot.find(v.value());
        if (c != constant_by_slot.end()) constants[i] = c->second;
      }
    }
    // An Identity of a constant views it (IdentityKernel), so its output is that constant too:
    // kernels reading it take the same constant-input paths (weights prepacked once) as they
    // do once eliminate_identity or constant_fold has removed the Identity. Otherwise those
    // passes would change rounding: oneDNN's prepacked Gemm with a transposed B sums 2 to 15
    // rows in another order than sgemm.
    if (node.op_type.str() == "Identity" && node.domain.empty() && !constants.empty() &&
        constants[0] != nullptr && node.outputs.size() == 1 && node.outputs[0].valid()) {
      constant_by_slot[node.outputs[0].value()] = constants[0];
    }
    step.info->set_constant_inputs(std::move(constants));
    absl::StatusOr<std::unique_ptr<OpKernel>> kernel = absl::InternalError("");
    try {
      kernel = (*factory)(*step.info);
    } catch (...) {
      return CurrentExceptionToStatus(step.info->label());
    }
    if (!kernel.ok()) return kernel.status();
    step.kernel = *std::move(kernel);
    steps_.push_back(std::move(step));
  }

  // Release each value after its last reader, unless it is a graph output or a constant.
  std::vector<bool> keep(num_values, false);
  for (ValueId v : graph_.outputs()) keep[v.value()] = true;
  for (const auto& [slot, t] : constants_) keep[slot] = true;
  for (int v = 0; v < num_values; ++v) {
    if (!keep[v] && live.last_use[v] >= 0) steps_[live.last_use[v]].release.push_back(v);
  }
  if (options_.use_memory_plan && graph_.memory_plan) {
    memory_plan_status_ = UseMemoryPlan(*order, live);
  }
  return absl::OkStatus();
}

absl::Status Executor::UseMemoryPlan(const std::vector<NodeId>& order, const Liveness& live) {
  const v1::MemoryPlan& plan = *graph_.memory_plan;
  if (plan.fingerprint() != PlanFingerprint(graph_, order)) {
    return absl::FailedPreconditionError(
        "the memory plan was made for another graph or node order (fingerprint differs)");
  }
  const int num_values = graph_.num_value_slots();
  std::vector<Region> regions(num_values);
  std::vector<int32_t> inplace_input(num_values, -1);
  std::vector<ValueId> shares(num_values);
  std::vector<int64_t> arena_bytes(plan.arenas_size(), 0);
  std::vector<ValueId> planned;
  for (const v1::PlannedBuffer& b : plan.buffers()) {
    const ValueId v = graph_.FindValue(b.value());
    auto bad = [&](absl::string_view what) {
      return absl::InvalidArgumentError(
          absl::StrCat("memory plan: value '", b.value(), "' ", what));
    };
    if (!v.valid() || live.def_step[v.value()] < 0) return bad("is not produced by a node");
    if (graph_.value(v).graph_output_count > 0) return bad("is a graph output");
    if (regions[v.value()].arena >= 0) return bad("is planned twice");
    if (b.arena() < 0 || b.arena() >= plan.arenas_size()) return bad("names no arena");
    const int64_t arena_size = plan.arenas(b.arena()).size_bytes();
    if (b.offset() < 0 || b.size() <= 0 || b.offset() % kTensorAlignment != 0 ||
        b.offset() > arena_size || b.size() > arena_size - b.offset()) {
      return bad(absl::StrCat("has bytes ", b.offset(), "..", b.offset() + b.size(),
                              " outside its arena of ", arena_size, " bytes or unaligned"));
    }
    regions[v.value()] = {b.arena(), b.offset(), b.size()};
    arena_bytes[b.arena()] = std::max(arena_bytes[b.arena()], b.offset() + b.size());
    planned.push_back(v);
    if (b.shares_with().empty()) continue;
    const ValueId w = graph_.FindValue(b.shares_with());
    const Node& producer = graph_.node(graph_.value(v).producer);
    for (size_t i = 0; i < producer.inputs.size() && w.valid(); ++i) {
      if (producer.inputs[i] == w) {
        inplace_input[v.value()] = static_cast<int32_t>(i);
        break;
      }
    }
    if (inplace_input[v.value()] < 0) {
      return bad(absl::StrCat("shares the storage of '", b.shares_with(),
                              "', which its node does not read"));
    }
    shares[v.value()] = w;
  }
  // Storages: chains of in-place values, each starting at a value with a range of its own. A
  // value taking over its input's storage needs every earlier value of it dead by then.
  std::stable_sort(planned.begin(), planned.end(), [&](ValueId a, ValueId b) {
    return live.def_step[a.value()] < live.def_step[b.value()];
  });
  std::vector<int32_t> root(num_values, -1);
  std::vector<int32_t> last_step(num_values, -1);  // by root: the storage's last step
  for (ValueId v : planned) {
    const int32_t def = live.def_step[v.value()];
    const int32_t last = std::max(def, live.last_use[v.value()]);
    const ValueId w = shares[v.value()];
    if (!w.valid()) {
      root[v.value()] = v.value();
      last_step[v.value()] = last;
      continue;
    }
    const Region& a = regions[v.value()];
    const Region& b = regions[w.value()];
    if (root[w.value()] < 0 || a.arena != b.arena || a.offset != b.offset || a.size != b.size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "memory plan: value '", graph_.value(v).name, "' shares the storage of '",
          graph_.value(w).name, "', which is not planned at the same bytes"));
    }
    const int32_t r = root[w.value()];
    if (last_step[r] > def) {
      return absl::InvalidArgumentError(absl::StrCat(
          "memory plan: value '", graph_.value(v).name, "' is written over the storage of '",
          graph_.value(w).name, "' while a value of it is still read (until step ",
          last_step[r], ")"));
    }
    root[v.value()] = r;
    last_step[r] = std::max(last_step[r], last);
  }
  std::vector<std::vector<Placement>> placements(plan.arenas_size());
  for (ValueId v : planned) {
    if (root[v.value()] != v.value()) continue;
    const Region& r = regions[v.value()];
    placements[r.arena].push_back({live.def_step[v.value()], last_step[v.value()], r.offset,
                                   r.size, v.value()});
  }
  for (std::vector<Placement>& p : placements) {
    if (absl::Status s = CheckPlacements(std::move(p)); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("memory plan: ", s.message()));
    }
  }
  for (Step& step : steps_) {
    step.planned.assign(step.outputs.size(), PlannedOutput());
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      const int32_t o = step.outputs[i];
      if (o < 0 || regions[o].arena < 0) continue;
      step.planned[i] = {regions[o].arena, regions[o].offset, regions[o].size, inplace_input[o]};
    }
  }
  regions_ = std::move(regions);
  arena_bytes_ = std::move(arena_bytes);
  return absl::OkStatus();
}

absl::StatusOr<Executor::Arenas> Executor::AcquireArenas() const {
  {
    absl::MutexLock lock(&pool_mu_);
    if (!idle_arenas_.empty()) {
      Arenas arenas = std::move(idle_arenas_.back());
      idle_arenas_.pop_back();
      return arenas;
    }
  }
  Arenas arenas;
  for (int64_t bytes : arena_bytes_) {
    absl::StatusOr<std::shared_ptr<Buffer>> buffer = Buffer::AllocateCpu(static_cast<size_t>(bytes), Buffer::Pages::kHugeWhenLarge);
    if (!buffer.ok()) return buffer.status();
    arenas.push_back(*std::move(buffer));
  }
  return arenas;
}

void Executor::ReleaseArenas(Arenas arenas) const {
  // Idle sets kept for later runs; more concurrent runs than this allocate their own.
  constexpr size_t kMaxIdle = 4;
  // Only a set no tensor views any more may be handed to another run.
  for (const std::shared_ptr<Buffer>& a : arenas) {
    if (a.use_count() != 1) return;
  }
  absl::MutexLock lock(&pool_mu_);
  if (idle_arenas_.size() < kMaxIdle) idle_arenas_.push_back(std::move(arenas));
}

absl::Status Executor::PlaceOutputs(const Step& step, absl::Span<const Tensor* const> inputs,
                                    absl::Span<Tensor> outputs, const Arenas& arenas,
                                    const std::shared_ptr<MemoryBudget>& memory) const {
  auto arena_of = [&](const Tensor& t) -> int {
    for (size_t a = 0; a < arenas.size(); ++a) {
      if (t.buffer() == arenas[a].get()) return static_cast<int>(a);
    }
    return -1;
  };
  // Whether bytes [offset, offset + size) of arena `a` hold any other tensor of this step.
  auto touched = [&](int a, int64_t offset, int64_t size, const Tensor* self) {
    auto overlaps = [&](const Tensor* t) {
      if (t == nullptr || t == self || !t->defined() || arena_of(*t) != a) return false;
      const int64_t begin = static_cast<int64_t>(t->byte_offset());
      return begin < offset + size && offset < begin + static_cast<int64_t>(t->byte_size());
    };
    for (const Tensor* t : inputs) {
      if (overlaps(t)) return true;
    }
    for (const Tensor& t : outputs) {
      if (overlaps(&t)) return true;
    }
    return false;
  };
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& t = outputs[i];
    if (!t.defined() || t.dtype() == v1::DT_STRING || t.byte_size() == 0) continue;
    const int a = arena_of(t);
    if (a < 0) continue;  // its own allocation, an input's or a constant's: not the arena
    const int32_t slot = step.outputs[i];
    const Region& r = slot >= 0 ? regions_[slot] : Region();
    const int64_t begin = static_cast<int64_t>(t.byte_offset());
    const int64_t size = static_cast<int64_t>(t.byte_size());
    if (r.arena == a && begin >= r.offset && begin + size <= r.offset + r.size) continue;
    // A view of other arena bytes (an input's): they may be reused while this value lives.
    if (r.arena >= 0 && size <= r.size && !touched(r.arena, r.offset, r.size, &t)) {
      absl::StatusOr<Tensor> moved = Tensor::InBuffer(arenas[r.arena], static_cast<size_t>(r.offset),
                                                      t.dtype(), t.shape());
      if (moved.ok()) {
        std::memcpy(moved->raw_data(), t.raw_data(), t.byte_size());
        t = *std::move(moved);
        continue;
      }
    }
    absl::StatusOr<Tensor> copy =
        t.Clone(memory, [&] { return absl::StrCat("output ", i, " (moved out of the arena)"); });
    if (!copy.ok()) return copy.status();
    t = *std::move(copy);
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
  return RunSlotsGuarded(std::move(slots), run, outer);
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
  return RunSlotsGuarded(std::move(slots), run, outer);
}

absl::StatusOr<RunResult> Executor::RunSlotsGuarded(
    std::vector<Tensor> slots, const RunOptions& run,
    const std::function<const Tensor*(absl::string_view)>& outer) const {
  // Steps catch what their kernels throw; this is for the rest of the run's bookkeeping.
  try {
    return RunSlots(std::move(slots), run, outer);
  } catch (...) {
    return CurrentExceptionToStatus(absl::StrCat("running graph '", graph_.name, "'"));
  }
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
    // A value declared a sequence or optional must be fed one, and a declared tensor a
    // tensor: kernels rely on it. A value without a declared type takes either. An optional
    // also takes its element's kind (a value that is present), as ONNX lets a Loop's carried
    // optional become its element after the first iteration.
    const bool declared = value.type.dtype != v1::DT_UNDEFINED || value.type.shape.has_value() ||
                          !value.type.is_tensor();
    const bool present_optional = IsOptionalKind(value.type.kind) &&
                                  t.kind() == OptionalElementKind(value.type.kind);
    if (declared && t.kind() != value.type.kind && !present_optional) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", value.name, "': ", t.DebugString(), " given, ",
                       TensorTypeToString(value.type), " expected"));
    }
    if (!t.is_tensor() || !value.type.is_tensor()) {
      if (value.type.dtype != v1::DT_UNDEFINED && t.element_dtype() != v1::DT_UNDEFINED &&
          t.element_dtype() != value.type.dtype) {
        return absl::InvalidArgumentError(
            absl::StrCat("input '", value.name, "': ", t.DebugString(), " given, ",
                         TensorTypeToString(value.type), " expected"));
      }
      continue;
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

  // The arenas are the executor's (pooled between runs), but this run holds them: charged to
  // its budget until it ends.
  MemoryReservation arena_charge(run.memory);
  Arenas arenas;
  if (uses_memory_plan()) {
    int64_t bytes = 0;
    for (int64_t b : arena_bytes_) bytes += b + kBufferOverheadBytes;
    if (absl::Status s = arena_charge.Add(
            bytes, absl::StrCat("the memory plan's arenas of graph '", graph_.name, "'"));
        !s.ok()) {
      return s;
    }
    absl::StatusOr<Arenas> acquired = AcquireArenas();
    if (!acquired.ok()) return acquired.status();
    arenas = *std::move(acquired);
  }
  const StopToken* const stop = run.stop;

  omp_set_num_threads(options_.num_threads);
  // The token is polled before the first step and after every step (so before every next one).
  if (StopRequested(stop) && !steps_.empty()) {
    absl::Status s = stop->Check(steps_.front().info->label());
    if (!s.ok()) return s;
  }
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
    // OpenMP code inside a kernel (oneDNN primitives, small sgemm) gets one thread for a step
    // whose inputs are small: waking an OpenMP worker that sleeps (util/openmp_wait.h) and
    // joining it costs more than such a step's whole work. ParallelFor sizes its own chunks.
    if (options_.num_threads > 1) {
      int64_t elements = 0;
      for (const Tensor* t : in) elements += t != nullptr ? t->num_elements() : 0;
      const int omp_threads = elements >= ExecutorOptions::kMinOpenMpStepElements ? options_.num_threads : 1;
      if (omp_get_max_threads() != omp_threads) omp_set_num_threads(omp_threads);
    }
    out.assign(step.outputs.size(), Tensor());
    KernelContext ctx(*step.info, in, absl::MakeSpan(out), lookup, options_.num_threads);
    if (!arenas.empty()) ctx.SetMemoryPlan(step.planned, arenas);
    ctx.SetRunGuards(stop, &run.memory);
    ctx.SetScratchPool(&scratch_pool_);
    std::chrono::steady_clock::time_point start;
    if (run.profile) start = std::chrono::steady_clock::now();
    absl::Status status;
    try {
      status = step.kernel->Compute(ctx);
    } catch (...) {
      status = CurrentExceptionToStatus(step.info->label());
    }
    // A kernel that saw the token fire may have stopped anywhere, with any status: the
    // token's status wins and the outputs are dropped. One atomic load per step without a
    // deadline, plus a coarse clock read with one (StopRequested).
    if (ctx.stop_seen() || StopRequested(stop)) return ctx.StopStatus(step.info->label());
    if (status.ok() && run.memory != nullptr) status = ctx.SettleStringOutputs();
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
    if (!arenas.empty()) {
      if (absl::Status s = PlaceOutputs(step, in, absl::MakeSpan(out), arenas, run.memory);
          !s.ok()) {
        return absl::Status(s.code(), absl::StrCat(step.info->label(), ": ", s.message()));
      }
    }
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      if (step.outputs[i] < 0) continue;
      if (!out[i].defined()) {
        // The kernels set every output their op has; a graph from the wire may name more
        // outputs than the op produces (the worker holds kernels, not op descriptors).
        return absl::InvalidArgumentError(absl::StrCat(
            step.info->label(), ": output ", i, " is not produced: the node names ",
            step.outputs.size(), " outputs, more than the op's kernel produces"));
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
  if (!arenas.empty()) {
    // Graph outputs are never planned, so PlaceOutputs moved any arena view out; the caller
    // must never see arena bytes change under a result.
    for (Tensor& t : result.outputs) {
      for (const std::shared_ptr<Buffer>& a : arenas) {
        if (t.buffer() != a.get()) continue;
        absl::StatusOr<Tensor> copy =
            t.Clone(run.memory, [&] { return absl::StrCat("graph '", graph_.name, "' output"); });
        if (!copy.ok()) return copy.status();
        t = *std::move(copy);
        break;
      }
    }
    // Drop this run's views so the arenas can go back to the pool.
    slots.clear();
    out.clear();
    in.clear();
    ReleaseArenas(std::move(arenas));
  }
  return result;
}

}  // namespace graphopt::runtime
