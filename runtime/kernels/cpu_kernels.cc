#include "runtime/kernels/cpu_kernels.h"

namespace graphopt::runtime {

absl::Status RegisterCpuKernels(KernelRegistry& registry) {
  for (auto fn : {RegisterElementwiseKernels, RegisterTensorKernels, RegisterReductionKernels,
                  RegisterNnKernels, RegisterControlFlowKernels, RegisterMiscKernels,
                  RegisterSequenceKernels, RegisterFusedKernels}) {
    absl::Status status = fn(registry);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace graphopt::runtime
