#ifndef GRAPHOPT_RUNTIME_KERNELS_REDUCTION_UTIL_H_
#define GRAPHOPT_RUNTIME_KERNELS_REDUCTION_UTIL_H_

// Internal to the reduction family (reduction*.cc): the parts of RegisterReductionKernels that
// live in the other files of the family, and the (outer, axis, inner) view of one axis.

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace graphopt::runtime {

// Softmax, LogSoftmax, Hardmax, NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
// (reduction_softmax.cc).
absl::Status RegisterSoftmaxKernels(KernelRegistry& registry);
// Einsum (reduction_einsum.cc).
absl::Status RegisterEinsumKernels(KernelRegistry& registry);

// A tensor seen as [outer, axis, inner] around one axis (or, for a flattening op, around the
// dims [begin, end) taken together).
struct AxisLayout {
  int64_t outer = 1;
  int64_t axis = 1;
  int64_t inner = 1;
};

// The layout of `shape` around dims [begin, end) (0 <= begin <= end <= rank).
inline AxisLayout LayoutAround(const Shape& shape, int begin, int end) {
  AxisLayout l;
  for (int i = 0; i < static_cast<int>(shape.size()); ++i) {
    if (i < begin) {
      l.outer *= shape[i];
    } else if (i < end) {
      l.axis *= shape[i];
    } else {
      l.inner *= shape[i];
    }
  }
  return l;
}

}  // namespace graphopt::runtime

#endif  // GRAPHOPT_RUNTIME_KERNELS_REDUCTION_UTIL_H_
