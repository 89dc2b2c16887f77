#ifndef GRAPHOPT_RUNTIME_KERNELS_KERNEL_TEST_UTIL_H_
#define GRAPHOPT_RUNTIME_KERNELS_KERNEL_TEST_UTIL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace graphopt::runtime {

// The CPU kernels, registered once for the tests of this binary.
const KernelRegistry& TestRegistry();

// Runs one node `op_type` with `attributes` (text-format v1::Attribute entries, e.g.
// `name: "axis" i: 1`) on `inputs` (an undefined Tensor omits that input) and returns its
// `num_outputs` outputs. `opset` is the default domain's opset (0: newest).
absl::StatusOr<std::vector<Tensor>> RunNode(const std::string& op_type,
                                            const std::vector<std::string>& attributes,
                                            const std::vector<Tensor>& inputs, int num_outputs = 1,
                                            int64_t opset = 0, int num_threads = 1);
// The same for an op of `domain`.
absl::StatusOr<std::vector<Tensor>> RunDomainNode(const std::string& domain,
                                                  const std::string& op_type,
                                                  const std::vector<std::string>& attributes,
                                                  const std::vector<Tensor>& inputs,
                                                  int num_outputs = 1, int64_t opset = 0,
                                                  int num_threads = 1);

// Tensor helpers for tests.
Tensor F32(std::vector<float> values, Shape shape);
Tensor I64(std::vector<int64_t> values, Shape shape);
std::vector<float> ToFloats(const Tensor& t);
std::vector<int64_t> ToInts(const Tensor& t);
// `n` floats drawn uniformly from [-1, 1) by a generator seeded with `seed` (the same for the
// same seed).
std::vector<float> Random(int64_t n, int seed);

}  // namespace graphopt::runtime

#endif  // GRAPHOPT_RUNTIME_KERNELS_KERNEL_TEST_UTIL_H_
