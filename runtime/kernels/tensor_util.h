#ifndef GRAPHOPT_RUNTIME_KERNELS_TENSOR_UTIL_H_
#define GRAPHOPT_RUNTIME_KERNELS_TENSOR_UTIL_H_

#include "absl/status/status.h"
#include "runtime/kernel.h"

namespace graphopt::runtime {

// The parts of the tensor family, one file each; RegisterTensorKernels calls them all.
absl::Status RegisterTensorShapeKernels(KernelRegistry& registry);   // tensor_shape.cc
absl::Status RegisterTensorLayoutKernels(KernelRegistry& registry);  // tensor_layout.cc
absl::Status RegisterTensorIndexKernels(KernelRegistry& registry);   // tensor_index.cc

}  // namespace graphopt::runtime

#endif  // GRAPHOPT_RUNTIME_KERNELS_TENSOR_UTIL_H_
