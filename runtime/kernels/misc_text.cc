#include "runtime/kernels/cpu_kernels.h"
#include "runtime/kernels/kernel_util.h"

namespace graphopt::runtime {

absl::Status RegisterMiscTextKernels(KernelRegistry& registry) { return absl::OkStatus(); }

}  // namespace graphopt::runtime
