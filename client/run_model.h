#ifndef GRAPHOPT_CLIENT_RUN_MODEL_H_
#define GRAPHOPT_CLIENT_RUN_MODEL_H_

// What `graphopt run` does in-process: feeds a model (.npy files or seeded random inputs),
// runs it on the runtime, summarises the outputs and the per-op profile.

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "runtime/executor.h"
#include "runtime/tensor.h"

namespace graphopt {

struct InputSpec {
  std::string name;
  std::string npy_path;
};

// Parses --input values NAME=FILE.npy. INVALID_ARGUMENT for a malformed entry or a name
// given twice.
absl::StatusOr<std::vector<InputSpec>> ParseInputSpecs(const std::vector<std::string>& specs);

// The inputs for one run of `graph`: each required graph input from its .npy file when given
// (a file ending in .pb holds ONNX's TensorProto, or SequenceProto / OptionalProto for an input
// declared a sequence or optional, which have no random values),
// otherwise random values of its declared type (float: uniform in [-1, 1); integers: [0, 4);
// bool: fair coin) from `seed`, symbolic dims taken from `bindings` (1 when unbound). Unknown
// dims or an input without a dtype need a file. A bfloat16 input takes a float32 file
// (rounded to nearest even) or raw bfloat16 (runtime/npy.h); string inputs take '<U' and
// '|S' files. INVALID_ARGUMENT naming the input for a spec that names no input or a file of
// another dtype (the executor checks shapes).
absl::StatusOr<std::vector<std::pair<std::string, runtime::Tensor>>> PrepareInputs(
    const Graph& graph, const std::vector<InputSpec>& specs,
    const std::map<std::string, int64_t>& bindings, uint64_t seed);

// "logits  float32[1,1000]  min -3.21 max 4.08 mean 0.0123  [0.12, -0.5, 1.3, ...]".
std::string FormatTensorSummary(const std::string& name, const runtime::Tensor& tensor);

// The per-op table of a profiled run: op type, nodes, total ms, share, then the slowest nodes.
std::string FormatProfile(const std::vector<runtime::NodeTiming>& timings, int top_nodes = 10);

// Node times of repeated runs of one plan, each node's median over them (the last kMaxRuns
// runs: memory stays bounded however many are given). A single run is noise at the scale of
// small nodes; the median of many is what a profile should compare.
class ProfileMedian {
 public:
  static constexpr int kMaxRuns = 1001;
  // One run's timings; a run whose nodes differ from the runs before (another plan) starts over.
  void Add(std::vector<runtime::NodeTiming> run);
  // Each node's median over the runs kept, in the order of the first run; empty when none.
  std::vector<runtime::NodeTiming> Median() const;
  // How many runs the medians are over.
  int runs() const { return static_cast<int>(std::min<int64_t>(added_, kMaxRuns)); }

 private:
  std::vector<runtime::NodeTiming> nodes_;
  std::vector<std::vector<double>> micros_;  // per node, the last kMaxRuns runs (a ring)
  int64_t added_ = 0;
};

// A file name for a value name ("a/b:0" -> "a_b_0.npy").
std::string NpyFileName(const std::string& value_name);
// File names for the outputs `value_names`, in order: NpyFileName's, except that a value whose
// name maps to a file an earlier, different value took gets "<stem>_<k>.npy" (the smallest
// k >= 2 not taken), so no output overwrites another. A value listed twice gets one file.
std::vector<std::string> NpyFileNames(const std::vector<std::string>& value_names);

}  // namespace graphopt

#endif  // GRAPHOPT_CLIENT_RUN_MODEL_H_
