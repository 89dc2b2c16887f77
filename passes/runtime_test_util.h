#ifndef GRAPHOPT_PASSES_RUNTIME_TEST_UTIL_H_
#define GRAPHOPT_PASSES_RUNTIME_TEST_UTIL_H_

// Test helpers for passes checked against the runtime: tensors for test graphs, running a graph
// on the CPU kernels, and comparing outputs bit for bit or within a tolerance.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "passes/pass_test_util.h"
#include "passes/pipeline.h"
#include "proto/graph.pb.h"
#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace graphopt {
namespace testing {

// Wire tensors of the given dims; `name` may be empty.
v1::Tensor FloatTensorProto(const std::string& name, const std::vector<int64_t>& dims,
                            const std::vector<float>& values);
v1::Tensor Int64TensorProto(const std::string& name, const std::vector<int64_t>& dims,
                            const std::vector<int64_t>& values);

// A text-format graph with `initializers` appended, again as text.
std::string WithInitializers(const std::string& text, const std::vector<v1::Tensor>& initializers);

// Deterministic float32 values in [-1, 1) from `seed`.
std::vector<float> SeededFloats(int64_t count, uint32_t seed);

// A runtime::Tensor of float32 elements.
runtime::Tensor FloatTensor(const std::vector<int64_t>& dims, const std::vector<float>& values);

// The CPU kernels, registered once per instance.
class TestRuntime {
 public:
  TestRuntime();
  const runtime::KernelRegistry& kernels() const { return kernels_; }

  // Runs `graph` (wire form) with the named inputs on one thread and returns its outputs.
  absl::StatusOr<std::vector<runtime::Tensor>> Run(
      const v1::Graph& graph,
      const std::vector<std::pair<std::string, runtime::Tensor>>& inputs) const;

 private:
  runtime::KernelRegistry kernels_;
};

// "" when `got` equals `want` (same count, dtypes and shapes; elements bit for bit when
// `bit_exact`, else |got - want| <= 1e-5 + rtol * |want| for floating point and exactly for
// the rest), otherwise what differs first.
std::string CompareOutputs(const std::vector<runtime::Tensor>& got,
                           const std::vector<runtime::Tensor>& want, bool bit_exact,
                           double rtol = 1e-4);

// Runs `passes` over the text-format graph `text` in `env` (verifying after each pass that
// changed it) and checks that the result computes what the original does on `inputs`
// (CompareOutputs with `bit_exact` and `rtol`). Returns the optimized graph, or an error saying
// what failed or differs; `result` receives the pipeline's report.
absl::StatusOr<v1::Graph> OptimizeAndCompare(
    const PassTestEnv& env, const std::string& text, const std::vector<PassSpec>& passes,
    const std::vector<std::pair<std::string, runtime::Tensor>>& inputs, bool bit_exact,
    double rtol = 1e-4, PipelineResult* result = nullptr);

}  // namespace testing
}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_RUNTIME_TEST_UTIL_H_
