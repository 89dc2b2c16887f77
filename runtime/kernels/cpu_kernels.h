#ifndef GRAPHOPT_RUNTIME_KERNELS_CPU_KERNELS_H_
#define GRAPHOPT_RUNTIME_KERNELS_CPU_KERNELS_H_

#include "absl/status/status.h"
#include "runtime/kernel.h"

namespace graphopt::runtime {

// Every CPU kernel, registered explicitly into `registry` (called by each main).
absl::Status RegisterCpuKernels(KernelRegistry& registry);

// The families, one file each under runtime/kernels/.
absl::Status RegisterElementwiseKernels(KernelRegistry& registry);   // elementwise.cc
absl::Status RegisterTensorKernels(KernelRegistry& registry);        // tensor.cc
absl::Status RegisterReductionKernels(KernelRegistry& registry);     // reduction.cc
absl::Status RegisterNnKernels(KernelRegistry& registry);            // nn.cc (oneDNN)
absl::Status RegisterControlFlowKernels(KernelRegistry& registry);   // control_flow.cc
absl::Status RegisterMiscKernels(KernelRegistry& registry);          // misc.cc
absl::Status RegisterSequenceKernels(KernelRegistry& registry);       // sequence.cc
absl::Status RegisterFusedKernels(KernelRegistry& registry);         // fused.cc (FusedGroup)

}  // namespace graphopt::runtime

#endif  // GRAPHOPT_RUNTIME_KERNELS_CPU_KERNELS_H_
