#include "passes/builtin_passes.h"

#include <memory>

#include "passes/channels_last_pass.h"
#include "passes/common_subexpression_elimination_pass.h"
#include "passes/constant_fold_pass.h"
#include "passes/dead_code_elimination_pass.h"
#include "passes/eliminate_identity_pass.h"
#include "passes/fold_batchnorm_pass.h"
#include "passes/fuse_ops_pass.h"
#include "passes/infer_shape_pass.h"
#include "passes/infer_type_pass.h"
#include "passes/inline_functions_pass.h"
#include "passes/plan_memory_pass.h"
#include "passes/schedule_pass.h"
#include "passes/simplify_pass.h"
#include "runtime/kernels/cpu_kernels.h"

namespace graphopt {

absl::Status RegisterBuiltinPasses(PassRegistry* registry) {
  // The CPU kernels constant folding evaluates with, owned by the constant_fold entry.
  auto kernels = std::make_shared<runtime::KernelRegistry>();
  if (absl::Status s = runtime::RegisterCpuKernels(*kernels); !s.ok()) return s;
  for (PassInfo info : {InferTypePassInfo(), InferShapePassInfo(), DeadCodeEliminationPassInfo(),
                        CommonSubexpressionEliminationPassInfo(), EliminateIdentityPassInfo(),
                        InlineFunctionsPassInfo(), ConstantFoldPassInfo(std::move(kernels)),
                        SimplifyPassInfo(), FoldBatchNormPassInfo()}) {
    if (absl::Status s = registry->Register(std::move(info)); !s.ok()) return s;
  }
  // Layout and fusion.
  for (PassInfo info : {ChannelsLastPassInfo(), FuseOpsPassInfo()}) {
    if (absl::Status s = registry->Register(std::move(info)); !s.ok()) return s;
  }
  // Memory planning.
  for (PassInfo info : {SchedulePassInfo(), PlanMemoryPassInfo()}) {
    if (absl::Status s = registry->Register(std::move(info)); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace graphopt
