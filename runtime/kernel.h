#ifndef GRAPHOPT_RUNTIME_KERNEL_H_
#define GRAPHOPT_RUNTIME_KERNEL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/graph.h"
#include "proto/graph.pb.h"
#include "runtime/memory_budget.h"
#include "runtime/tensor.h"
#include "util/stop_token.h"

namespace graphopt::runtime {

class Executor;
class KernelRegistry;
struct ExecutorOptions;

// What a kernel learns about its node when it is created, once per plan: op, attributes, the
// opset of the node's domain, the statically known input types, and how to build executors
// for subgraph attributes (If/Loop/Scan bodies).
class KernelInfo {
 public:
  KernelInfo(const Node& node, std::string label, int64_t opset,
             std::vector<TensorType> input_types, const KernelRegistry& registry,
             const ExecutorOptions& options, DeviceKind device);

  const std::string& op_type() const { return node_.op_type; }
  const std::string& domain() const { return node_.domain; }
  // "node 'conv1' (Conv)": prefix of every error.
  const std::string& label() const { return label_; }
  // Opset version of the node's domain (0 when the graph imports none: newest semantics).
  int64_t opset() const { return opset_; }
  DeviceKind device() const { return device_; }
  const ExecutorOptions& options() const { return options_; }

  int num_inputs() const { return static_cast<int>(node_.inputs.size()); }
  int num_outputs() const { return static_cast<int>(node_.outputs.size()); }
  // False for an omitted optional input (or an index past the node's inputs).
  bool has_input(int i) const { return i < num_inputs() && node_.inputs[i].valid(); }
  bool has_output(int i) const { return i < num_outputs() && node_.outputs[i].valid(); }
  // The statically known type of input i (dtype DT_UNDEFINED and no shape when unknown).
  const TensorType& input_type(int i) const;
  // The value of input i when it is a constant of the plan (an initializer that is not also a
  // graph input the caller may override), else nullptr: lets a kernel prepare weights (reorder,
  // pack) once at plan time. The tensor lives as long as the plan.
  const Tensor* constant_input(int i) const {
    return i >= 0 && i < static_cast<int>(constant_inputs_.size()) ? constant_inputs_[i] : nullptr;
  }
  void set_constant_inputs(std::vector<const Tensor*> constants) {
    constant_inputs_ = std::move(constants);
  }

  // --- Attributes ---------------------------------------------------------------------------
  const AttributeMap& attributes() const { return node_.attributes; }
  const v1::Attribute* attr(absl::string_view name) const;
  bool has_attr(absl::string_view name) const { return attr(name) != nullptr; }
  int64_t GetInt(absl::string_view name, int64_t default_value) const;
  float GetFloat(absl::string_view name, float default_value) const;
  std::string GetString(absl::string_view name, absl::string_view default_value) const;
  std::vector<int64_t> GetInts(absl::string_view name, std::vector<int64_t> default_value = {}) const;
  std::vector<float> GetFloats(absl::string_view name, std::vector<float> default_value = {}) const;
  std::vector<std::string> GetStrings(absl::string_view name) const;
  // INVALID_ARGUMENT naming the node and attribute when absent or of another kind.
  absl::StatusOr<int64_t> RequireInt(absl::string_view name) const;
  absl::StatusOr<std::vector<int64_t>> RequireInts(absl::string_view name) const;
  // Tensor-valued attribute decoded; NOT_FOUND when absent.
  absl::StatusOr<Tensor> GetTensor(absl::string_view name) const;

  // An executor for the subgraph attribute `name` (which may read values of the enclosing
  // graphs by name: they are its captures, see Executor::captures()).
  absl::StatusOr<std::unique_ptr<Executor>> CreateSubgraphExecutor(absl::string_view name) const;

  // INVALID_ARGUMENT / UNIMPLEMENTED with the node label in front.
  absl::Status Invalid(absl::string_view message) const;
  absl::Status Unimplemented(absl::string_view message) const;

 private:
  const Node& node_;
  std::string label_;
  int64_t opset_;
  std::vector<TensorType> input_types_;
  std::vector<const Tensor*> constant_inputs_;
  const KernelRegistry& registry_;
  const ExecutorOptions& options_;
  DeviceKind device_;
};

// Whether `token` (may be null) has fired: cancelled, or past its deadline by the coarse
// real-time clock (StopToken::ShouldStop: a deadline is seen at most a clock tick, a few
// milliseconds, late). What the executor and kernels poll: one atomic load without a
// deadline, two atomic loads and the coarse clock with one.
bool StopRequested(const StopToken* token);

// Where an executor's memory plan puts one output of a node.
struct PlannedOutput {
  int32_t arena = -1;  // index into the run's arenas; -1: not planned
  int64_t offset = 0;  // bytes into the arena
  int64_t size = 0;    // bytes reserved there
  // The node input whose storage (dying at this node) the output takes over, or -1: then the
  // output is only placed there when that input has exactly the output's byte size.
  int32_t inplace_input = -1;
};

// One node's inputs and outputs for one execution.
class KernelContext {
 public:
  KernelContext(const KernelInfo& info, absl::Span<const Tensor* const> inputs,
                absl::Span<Tensor> outputs,
                std::function<const Tensor*(absl::string_view)> outer_lookup, int num_threads);

  const KernelInfo& info() const { return info_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  // nullptr when input i is omitted (or i is past the node's inputs).
  const Tensor* input(int i) const {
    return i < static_cast<int>(inputs_.size()) ? inputs_[i] : nullptr;
  }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  // False when output i is omitted by the node (a kernel may skip computing it).
  bool output_wanted(int i) const { return info_.has_output(i); }
  // Allocates output i; an omitted output still gets a tensor (discarded). With a memory plan
  // (SetMemoryPlan) a planned output whose bytes fit its reserved range is a view of the arena
  // there (uninitialised, like any allocation); anything else is allocated on its own, charged
  // to the run's memory budget first (RESOURCE_EXHAUSTED naming the node, the output and the
  // bytes when it does not fit). A DT_STRING output is charged its string objects plus, per
  // element, the longest string among the node's string inputs (what a copying kernel such as
  // Tile, Expand, Gather or Concat writes at most); the executor settles the charge to the
  // strings' real size once the kernel has written them.
  absl::StatusOr<Tensor*> AllocateOutput(int i, v1::DataType dtype, Shape shape);
  // A tensor the kernel needs while it computes (not an output), charged to the run's memory
  // budget; RESOURCE_EXHAUSTED naming the node and `what` when it does not fit.
  absl::StatusOr<Tensor> AllocateTemp(v1::DataType dtype, Shape shape, absl::string_view what) const;
  // Scratch memory the kernel sizes from the data (std::vector buffers, index tables), charged
  // to the run's memory budget until the reservation is destroyed: call it before allocating.
  // RESOURCE_EXHAUSTED naming the node and `what` when it does not fit; without a budget it
  // always succeeds.
  absl::StatusOr<MemoryReservation> ReserveScratch(int64_t bytes, absl::string_view what) const;
  // Where AllocateOutput places outputs: `planned` by output index (may be shorter than the
  // outputs), `arenas` those of the current run. Both must outlive the context.
  void SetMemoryPlan(absl::Span<const PlannedOutput> planned,
                     absl::Span<const std::shared_ptr<Buffer>> arenas) {
    planned_ = planned;
    arenas_ = arenas;
  }
  // The executor's pool for memory a kernel needs only while it computes (ScratchPool): one
  // buffer serves every kernel of a sequential run in turn. Null when the caller gives none
  // (the kernel then keeps its own). Must outlive the context.
  void SetScratchPool(ScratchPool* pool) { scratch_pool_ = pool; }
  ScratchPool* scratch_pool() const { return scratch_pool_; }
  // Sets output i to an existing tensor (a view of an input, a cached constant).
  void SetOutput(int i, Tensor tensor) { outputs_[i] = std::move(tensor); }
  Tensor& output(int i) { return outputs_[i]; }

  // A value of an enclosing graph, for subgraph captures; nullptr when there is none.
  const Tensor* LookupOuter(absl::string_view name) const {
    return outer_lookup_ ? outer_lookup_(name) : nullptr;
  }
  const std::function<const Tensor*(absl::string_view)>& outer_lookup() const {
    return outer_lookup_;
  }
  int num_threads() const { return num_threads_; }

  // The run's guards (RunOptions::stop and RunOptions::memory), set by the executor before
  // Compute; both may be null. `memory` must outlive the context.
  void SetRunGuards(const StopToken* stop, const std::shared_ptr<MemoryBudget>* memory) {
    stop_ = stop;
    memory_ = memory;
  }
  const StopToken* stop() const { return stop_; }
  // The run's memory budget; null when the run is unlimited.
  const std::shared_ptr<MemoryBudget>& memory() const;
  // Whether the run was cancelled or passed its deadline (StopRequested). Kernels with long
  // serial loops poll it every few milliseconds and return early when it is true, with any
  // status: once a kernel has seen it (stop_seen), the executor returns the token's status
  // after the step and discards the outputs.
  bool ShouldStop() const {
    if (!StopRequested(stop_)) return false;
    stop_seen_.store(true, std::memory_order_relaxed);
    return true;
  }
  // Whether ShouldStop (or ParallelFor) saw the token fire during this context's Compute.
  bool stop_seen() const { return stop_seen_.load(std::memory_order_relaxed); }
  // The status to return once ShouldStop was true: the token's, naming `where` (also marks
  // stop_seen).
  absl::Status StopStatus(absl::string_view where) const;

  // Runs fn(begin, end) over [0, n) split into chunks of at least `grain` items (up to
  // kChunksPerThread per thread), on up to num_threads() threads: this one and the workers of
  // its ThreadPool, which claim chunks as they come, so a worker the OS has not scheduled
  // leaves its chunks to the others instead of stalling the call (thread_pool.h). Serial when
  // n is small, and inside another ParallelFor. OpenMP code that fn calls (oneDNN) runs on one
  // thread. With a stop token, each chunk is run in pieces of at most kStopCheckGrains grains
  // (at least one grain), the token polled (ShouldStop) before each piece: once it fires the
  // remaining pieces are skipped (the kernel's outputs are then unfinished, and the executor
  // returns the token's status after the step), so fn must not leave state that later code of
  // the kernel relies on for memory safety. A C++ exception thrown by fn is caught on its
  // thread and rethrown here, for the executor to turn into a status.
  void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) const;
  // More chunks than threads, so that the work of a thread that starts late is taken by the
  // others in pieces.
  static constexpr int64_t kChunksPerThread = 4;
  static constexpr int64_t kStopCheckGrains = 16;

  // After Compute: settles the charge of the DT_STRING outputs AllocateOutput made against
  // what their strings hold (Buffer::SettleStrings).
  absl::Status SettleStringOutputs();

  // INVALID_ARGUMENT with the node label in front.
  absl::Status Invalid(absl::string_view message) const { return info_.Invalid(message); }

 private:
  const KernelInfo& info_;
  absl::Span<const Tensor* const> inputs_;
  absl::Span<Tensor> outputs_;
  std::function<const Tensor*(absl::string_view)> outer_lookup_;
  int num_threads_;
  absl::Span<const PlannedOutput> planned_;
  absl::Span<const std::shared_ptr<Buffer>> arenas_;
  const StopToken* stop_ = nullptr;
  const std::shared_ptr<MemoryBudget>* memory_ = nullptr;
  ScratchPool* scratch_pool_ = nullptr;
  mutable std::atomic<bool> stop_seen_{false};
  // String outputs AllocateOutput made with a budget: output index and buffer, to settle.
  absl::InlinedVector<std::pair<int, const Buffer*>, 2> unsettled_strings_;
};

// A kernel bound to one node of a plan. Compute must be thread-safe: one plan may execute
// several requests at once, so per-call state lives in the context, not in the kernel.
class OpKernel {
 public:
  virtual ~OpKernel() = default;
  virtual absl::Status Compute(KernelContext& ctx) const = 0;
};

using KernelFactory =
    std::function<absl::StatusOr<std::unique_ptr<OpKernel>>(const KernelInfo& info)>;
// A kernel without per-node state: the function is called for every execution.
using KernelFunction = absl::Status (*)(KernelContext& ctx);

// Kernels keyed by (domain, op, device, dtype). dtype is that of the node's first input (or
// DT_UNDEFINED: any dtype, the kernel checks itself); lookup prefers the exact dtype.
// Built explicitly (RegisterCpuKernels) and read-only while plans are being built.
class KernelRegistry {
 public:
  struct Key {
    std::string domain;
    std::string op_type;
    DeviceKind device = DeviceKind::kCpu;
    v1::DataType dtype = v1::DT_UNDEFINED;
  };

  // ALREADY_EXISTS when the same key is registered twice.
  absl::Status Register(Key key, KernelFactory factory);
  absl::Status Register(absl::string_view op_type, KernelFactory factory) {
    return Register(Key{"", std::string(op_type)}, std::move(factory));
  }
  // A stateless kernel for `key`, or for op_type on the CPU, any dtype.
  absl::Status Register(Key key, KernelFunction fn);
  absl::Status Register(absl::string_view op_type, KernelFunction fn) {
    return Register(Key{"", std::string(op_type)}, fn);
  }

  // The best factory for the node's key, or nullptr.
  const KernelFactory* Find(absl::string_view domain, absl::string_view op_type,
                            DeviceKind device, v1::DataType dtype) const;
  bool Supports(absl::string_view domain, absl::string_view op_type, DeviceKind device) const;
  // Every registered key, sorted.
  std::vector<Key> Keys() const;

 private:
  using MapKey = std::tuple<std::string, std::string, int, int>;
  absl::btree_map<MapKey, KernelFactory> kernels_;
};

}  // namespace graphopt::runtime

#endif  // GRAPHOPT_RUNTIME_KERNEL_H_
