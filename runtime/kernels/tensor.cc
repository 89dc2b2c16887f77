// Data-movement and shape kernels.
#include "runtime/kernels/cpu_kernels.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/tensor_util.h"

namespace graphopt::runtime {
namespace {

// Identity: output 0 views input 0.
absl::Status IdentityKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> x = RequireInput(ctx, 0);
  if (!x.ok()) return x.status();
  ctx.SetOutput(0, **x);
  return absl::OkStatus();
}

}  // namespace

absl::Status RegisterTensorKernels(KernelRegistry& registry) {
  absl::Status s;
  s.Update(registry.Register("Identity", IdentityKernel));
  s.Update(RegisterTensorShapeKernels(registry));
  s.Update(RegisterTensorLayoutKernels(registry));
  s.Update(RegisterTensorIndexKernels(registry));
  return s;
}

}  // namespace graphopt::runtime
