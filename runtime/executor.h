#ifndef GRAPHOPT_RUNTIME_EXECUTOR_H_
#define GRAPHOPT_RUNTIME_EXECUTOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/graph.h"
#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace graphopt::runtime {

struct ExecutorOptions {
  // Threads for kernels (OpenMP and oneDNN) while this executor runs; at least 1.
  int num_threads = 1;
  DeviceKind device = DeviceKind::kCpu;
};

struct RunOptions {
  // Record the wall time of every node (RunResult::timings).
  bool profile = false;
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
// at once. Nodes run in the graph's deterministic topological order; each intermediate value
// is released after its last reader.
//
// Errors: Create gives UNIMPLEMENTED naming the node and op when no kernel exists for it and
// whatever a kernel's construction reports (INVALID_ARGUMENT naming the node for bad
// attributes). Run gives INVALID_ARGUMENT naming the input for a missing, unknown or
// mistyped input and the kernel's error, prefixed by the node, when one fails.
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

 private:
  struct Step {
    NodeId node;
    std::unique_ptr<KernelInfo> info;
    std::unique_ptr<OpKernel> kernel;
    std::vector<int32_t> inputs;   // value slots, -1 for omitted
    std::vector<int32_t> outputs;  // value slots, -1 for omitted
    std::vector<int32_t> release;  // slots dead after this step
  };

  Executor(Graph graph, const ExecutorOptions& options)
      : graph_(std::move(graph)), options_(options) {}
  absl::Status Plan(const KernelRegistry& registry);
  absl::StatusOr<RunResult> RunSlots(std::vector<Tensor> slots, const RunOptions& run,
                                     const std::function<const Tensor*(absl::string_view)>& outer) const;

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
};

// Names read by `graph` (and by graphs nested in its attributes) that `graph` itself does not
// define, in first-read order: what a subgraph captures from its enclosing graphs.
std::vector<std::string> FreeNames(const v1::Graph& graph);

}  // namespace graphopt::runtime

#endif  // GRAPHOPT_RUNTIME_EXECUTOR_H_
