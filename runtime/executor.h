#ifndef GRAPHOPT_RUNTIME_EXECUTOR_H_
#define GRAPHOPT_RUNTIME_EXECUTOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "graph/graph.h"
#include "graph/liveness.h"
#include "runtime/kernel.h"
#include "runtime/memory_budget.h"
#include "runtime/tensor.h"
#include "util/stop_token.h"

namespace graphopt::runtime {

struct ExecutorOptions {
  // Threads for kernels (OpenMP and oneDNN) while this executor runs; at least 1.
  int num_threads = 1;
  // Below this many input elements a step's OpenMP code runs on one thread (executor.cc).
  static constexpr int64_t kMinOpenMpStepElements = int64_t{1} << 15;
  DeviceKind device = DeviceKind::kCpu;
  // Place intermediate values as the graph's memory plan says (Graph::memory_plan), when it
  // has one that fits the graph; false allocates every value on its own.
  bool use_memory_plan = true;
  // How deep this executor's graph is nested in bodies (0 for a plan's graph); set by
  // KernelInfo::CreateSubgraphExecutor, which refuses bodies past kMaxSubgraphDepth.
  int subgraph_depth = 0;
};

struct RunOptions {
  // Record the wall time of every node (RunResult::timings).
  bool profile = false;
  // Cancellation and deadline (null: the run never stops early). Polled before the first step
  // and after every step (StopRequested: an atomic load, and a coarse clock read when the
  // token has a deadline), every Loop/Scan iteration, between ParallelFor pieces of a kernel
  // and in kernels' long serial loops; once it fires, Run returns its status (CANCELLED or
  // DEADLINE_EXCEEDED) naming the node it stopped in. Must outlive the run.
  const StopToken* stop = nullptr;
  // The run's memory budget (null: unlimited). Every allocation the run makes is charged
  // before it is made: outputs kernels allocate (strings by an estimate, settled once written),
  // the memory plan's arenas, kernels' scratch, copies the executor makes, and If/Loop/Scan
  // bodies' runs (they share it). Going over gives RESOURCE_EXHAUSTED naming the node and the
  // bytes. Tensors the run returns stay charged until they are destroyed. Not charged: the
  // caller's inputs and the plan's constants (they exist before the run).
  std::shared_ptr<MemoryBudget> memory;
};

struct NodeTiming {
  std::string node;  // node name, or "#<id>" when unnamed
  std::string op_type;
  double micros = 0;
};

struct RunResult {
  // The graph outputs, in the graph's order.
  std::vector<Tensor> outputs;
  // One entry per executed node, in execution order (empty unless RunOptions::profile).
  std::vector<NodeTiming> timings;
};

// A graph bound to kernels: built once (the plan), executed many times, from several threads
// at once. Nodes run in the graph's deterministic topological order (Graph::TopologicalOrder:
// the recorded schedule, or the node order of a graph read from the wire); each intermediate
// value is released after its last reader.
//
// Memory plan: when the graph carries one (Graph::memory_plan, from the plan_memory pass) and
// ExecutorOptions::use_memory_plan, Create checks it against the graph (fingerprint of the node
// order, every buffer inside its arena, in-place reuse only over an input that dies there, no
// two buffers live at one step overlapping) and otherwise ignores it (memory_plan_status()
// says why). Each Run then takes one set of arenas (from a pool; concurrent runs never share
// one) and planned outputs are views of the arena at their offsets. A value that does not fit
// its range (dynamic dims beyond the planned bounds) is allocated on its own; a kernel output
// that views arena memory other than its value's range (a view of an input) is copied into its
// range or, when that is not possible, out of the arena. Graph outputs are never in an arena.
//
// Errors: Create gives UNIMPLEMENTED naming the node and op when no kernel exists for it and
// whatever a kernel's construction reports (INVALID_ARGUMENT naming the node for bad
// attributes). Run gives INVALID_ARGUMENT naming the input for a missing, unknown or
// mistyped input and the kernel's error, prefixed by the node, when one fails; the stop
// token's status and RESOURCE_EXHAUSTED from the memory budget (RunOptions). No C++ exception
// leaves Create or Run: one thrown while a node is built or run becomes RESOURCE_EXHAUSTED
// (std::bad_alloc, std::length_error) or INTERNAL naming the node (CurrentExceptionToStatus).
class Executor {
 public:
  // Takes the graph over (kernels keep pointers into its nodes). `outer_names`, for subgraphs:
  // values of enclosing graphs this graph may read (names read but defined nowhere inside are
  // looked up there at run time; anything else undefined is INVALID_ARGUMENT).
  static absl::StatusOr<std::unique_ptr<Executor>> Create(Graph graph,
                                                          const KernelRegistry& registry,
                                                          const ExecutorOptions& options);

  // Runs with the named inputs. Graph inputs that are also initializers may be left out (the
  // initializer is used). `outer` resolves captured values of enclosing graphs.
  absl::StatusOr<RunResult> Run(
      const std::vector<std::pair<std::string, Tensor>>& inputs, const RunOptions& run = {},
      const std::function<const Tensor*(absl::string_view)>& outer = nullptr) const;
  // The same with inputs by position (graph inputs that are not initializers, in order).
  absl::StatusOr<RunResult> RunPositional(
      const std::vector<Tensor>& inputs, const RunOptions& run = {},
      const std::function<const Tensor*(absl::string_view)>& outer = nullptr) const;

  const Graph& graph() const { return graph_; }
  // Graph inputs a caller must feed (those without an initializer), in order.
  const std::vector<ValueId>& required_inputs() const { return required_inputs_; }
  // Names this graph reads from enclosing graphs.
  const std::vector<std::string>& captures() const { return captures_; }
  const ExecutorOptions& options() const { return options_; }

  // Whether runs place values as the graph's memory plan says.
  bool uses_memory_plan() const { return !arena_bytes_.empty(); }
  // Why the graph's memory plan is not used (OK when it is, or when there is none).
  const absl::Status& memory_plan_status() const { return memory_plan_status_; }
  // Bytes of the arenas one run takes (empty without a plan).
  const std::vector<int64_t>& arena_bytes() const { return arena_bytes_; }
  // Bytes of scratch the kernels' shared pool keeps (ScratchPool::kept_bytes): after a
  // sequential run, the largest scratch one kernel asked for, not the sum over the kernels.
  int64_t scratch_kept_bytes() const { return scratch_pool_.kept_bytes(); }

 private:
  // A value's range in the plan.
  struct Region {
    int32_t arena = -1;  // -1: not planned
    int64_t offset = 0;
    int64_t size = 0;
  };
  using Arenas = std::vector<std::shared_ptr<Buffer>>;

  struct Step {
    NodeId node;
    std::unique_ptr<KernelInfo> info;
    std::unique_ptr<OpKernel> kernel;
    std::vector<int32_t> inputs;   // value slots, -1 for omitted
    std::vector<int32_t> outputs;  // value slots, -1 for omitted
    std::vector<int32_t> release;  // slots dead after this step
    std::vector<PlannedOutput> planned;  // by output index; empty without a plan
  };

  Executor(Graph graph, const ExecutorOptions& options)
      : graph_(std::move(graph)), options_(options) {}
  absl::Status Plan(const KernelRegistry& registry);
  // Checks graph_.memory_plan against the steps and fills regions_, Step::planned and
  // arena_bytes_; on an error nothing is set.
  absl::Status UseMemoryPlan(const std::vector<NodeId>& order, const Liveness& live);
  absl::StatusOr<RunResult> RunSlots(std::vector<Tensor> slots, const RunOptions& run,
                                     const std::function<const Tensor*(absl::string_view)>& outer) const;
  // RunSlots with any C++ exception it lets out as a status naming the graph.
  absl::StatusOr<RunResult> RunSlotsGuarded(
      std::vector<Tensor> slots, const RunOptions& run,
      const std::function<const Tensor*(absl::string_view)>& outer) const;
  // After a step: outputs viewing arena memory outside their value's range are moved into it
  // (or out of the arena).
  absl::Status PlaceOutputs(const Step& step, absl::Span<const Tensor* const> inputs,
                            absl::Span<Tensor> outputs, const Arenas& arenas,
                            const std::shared_ptr<MemoryBudget>& memory) const;
  absl::StatusOr<Arenas> AcquireArenas() const;
  void ReleaseArenas(Arenas arenas) const;

  Graph graph_;
  ExecutorOptions options_;
  std::vector<Step> steps_;
  // Initializer tensors decoded once, by value slot.
  std::vector<std::pair<int32_t, Tensor>> constants_;
  std::vector<ValueId> required_inputs_;
  std::vector<std::string> captures_;
  // Captured name -> value slot, filled from `outer` before the steps run.
  std::vector<std::pair<std::string, int32_t>> capture_slots_;
  absl::flat_hash_map<std::string, int32_t> input_slot_by_name_;
  // The memory plan in use: ranges by value slot, arena sizes, and idle arena sets of finished
  // runs.
  std::vector<Region> regions_;
  std::vector<int64_t> arena_bytes_;
  absl::Status memory_plan_status_;
  // Memory kernels use only while they compute, shared by all of them (KernelContext::
  // scratch_pool): the largest request per concurrent run instead of one buffer per kernel.
  mutable ScratchPool scratch_pool_;
  mutable absl::Mutex pool_mu_;
  mutable std::vector<Arenas> idle_arenas_ ABSL_GUARDED_BY(pool_mu_);
};

// See graph/liveness.h.
using ::graphopt::FreeNames;

}  // namespace graphopt::runtime

#endif  // GRAPHOPT_RUNTIME_EXECUTOR_H_
