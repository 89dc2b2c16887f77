#include "passes/builtin_passes.h"

#include <memory>

#include "passes/channels_last_pass.h"
#include "passes/common_subexpression_elimination_pass.h"
#include "passes/constant_fold_pass.h"
#include "passes/dead_code_elimination_pass.h"
#include "passes/decompose_rnn_pass.h"
#include "passes/eliminate_identity_pass.h"
#include "passes/fold_batchnorm_pass.h"
#include "passes/fold_shapes_pass.h"
#include "passes/fuse_ops_pass.h"
#include "passes/gradient_pass.h"
#include "passes/training_step_pass.h"
#include "passes/infer_shape_pass.h"
#include "passes/infer_type_pass.h"
#include "passes/inline_functions_pass.h"
#include "passes/plan_memory_pass.h"
#include "passes/rematerialize_pass.h"
#include "passes/schedule_pass.h"
#include "passes/simplify_pass.h"
#include "runtime/kernels/cpu_kernels.h"

namespace graphopt {

absl::Status RegisterBuiltinPasses(PassRegistry* registry) {
  // The CPU kernels constant folding evaluates with, owned by the constant_fold entry.
  auto kernels = std::make_shared<runtime::KernelRegistry>();
  if (absl::Status s = runtime::RegisterCpuKernels(*kernels); !s.ok()) return s;
  // Registration order is the pipeline order of every level (PipelineForLevel), each pass in
  // the levels from its min_opt_level up:
  //   -O1: inlining first, so that inference and the rest see only primitives; then the
  //        analyses and eliminate_identity;
  //   -O2: fold_batchnorm, simplify and constant_fold after eliminate_identity, in that order
  //        (simplify turns Shape of static shapes into constants that constant_fold then carries
  //        through the shape arithmetic); CSE and DCE after all of them, to clean up after them;
  //   -O3: channels_last before fuse_ops, so that fusion sees the channels-last ops; then schedule
  //        and plan_memory (the node order with the lowest peak of live bytes, and the memory
  //        plan the executor runs from), which must see the final nodes.
  // decompose_rnn, gradient, training_step and rematerialize run only when asked for
  // (min_opt_level 0);
  // decompose_rnn comes first because the gradient pass differentiates recurrent ops through
  // their unrolling; rematerialize after gradient and before schedule and plan_memory (it
  // records the order its clones need; schedule keeps it unless another has a lower peak).
  // An analysis is provided by the first pass registered for it (PassRegistry::Provider).
  for (PassInfo info :
       {InlineFunctionsPassInfo(), InferTypePassInfo(), InferShapePassInfo(),
        DecomposeRnnPassInfo(), GradientPassInfo(), TrainingStepPassInfo(),
        EliminateIdentityPassInfo(), FoldBatchNormPassInfo(), SimplifyPassInfo(), FoldShapesPassInfo(),
        ConstantFoldPassInfo(std::move(kernels)), CommonSubexpressionEliminationPassInfo(),
        DeadCodeEliminationPassInfo(), ChannelsLastPassInfo(), FuseOpsPassInfo(),
        RematerializePassInfo(), SchedulePassInfo(), PlanMemoryPassInfo()}) {
    if (absl::Status s = registry->Register(std::move(info)); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace graphopt
