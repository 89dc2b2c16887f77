// Tensor-family kernels, part "layout" (see RegisterTensorKernels in tensor.cc).
#include "runtime/kernels/cpu_kernels.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/tensor_util.h"

namespace graphopt::runtime {

absl::Status RegisterTensorLayoutKernels(KernelRegistry& registry) {
  absl::Status s;
  return s;
}

}  // namespace graphopt::runtime
