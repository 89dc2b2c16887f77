#ifndef GRAPHOPT_PASSES_GRADIENT_CHECK_H_
#define GRAPHOPT_PASSES_GRADIENT_CHECK_H_

// Tests of gradient definitions: the gradient pass's result on a small graph against central
// finite differences, run on the CPU kernels.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "passes/pass_test_util.h"
#include "runtime/tensor.h"

namespace graphopt {
namespace testing {

struct GradientCheckOptions {
  // Values to differentiate with respect to; empty: every floating-point graph input.
  std::vector<std::string> wrt;
  // Step of the central difference, relative to max(1, |x|).
  double eps = 1e-3;
  // |analytic - numeric| <= atol + rtol * |numeric| for every checked element.
  double rtol = 2e-2;
  double atol = 2e-3;
  // Elements checked per wrt value (spread evenly); all when the value has fewer.
  int max_elements = 48;
  uint32_t seed = 7;
  // Extra pass options for the gradient pass (stop_gradient, ...).
  std::vector<std::pair<std::string, std::string>> gradient_options;
};

// Differentiates the text-format graph `text` with the gradient pass (after infer_type and
// infer_shape) and compares its gradients with central finite differences of
// L = sum_k sum(output_k * r_k), where r_k are seeded random tensors fed as the output
// gradients. `inputs` must give every graph input (float32 or float64 tensors for the wrt
// values). OK, or an error naming the value and element that differ.
absl::Status CheckGradients(const PassTestEnv& env, const std::string& text,
                            const std::vector<std::pair<std::string, runtime::Tensor>>& inputs,
                            const GradientCheckOptions& options = {});

// Seeded random tensors for gradient tests: float32 or float64 values in [lo, hi).
runtime::Tensor RandomTensor(v1::DataType dtype, const std::vector<int64_t>& dims, uint32_t seed,
                             double lo = -1.0, double hi = 1.0);

}  // namespace testing
}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_GRADIENT_CHECK_H_
