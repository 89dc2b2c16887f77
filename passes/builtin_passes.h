#ifndef GRAPHOPT_PASSES_BUILTIN_PASSES_H_
#define GRAPHOPT_PASSES_BUILTIN_PASSES_H_

#include "absl/status/status.h"
#include "passes/pass.h"

namespace graphopt {

// Registers every builtin pass, in the order the optimization levels run them (see
// PipelineForLevel):
//   -O1  inline_functions, infer_type, infer_shape, eliminate_identity,
//        common_subexpression_elimination, dead_code_elimination;
//   -O2  -O1 with fold_batchnorm, simplify, fold_shapes, constant_fold and fuse_matmul_add
//        after eliminate_identity, and eliminate_identity to dead_code_elimination repeated
//        until nothing changes (at most PipelineOptions::max_fixpoint_rounds rounds);
//   -O3  -O2 then channels_last, fuse_ops, schedule and plan_memory.
// Called explicitly by main; constant_fold gets a registry of the CPU kernels built here.
absl::Status RegisterBuiltinPasses(PassRegistry* registry);

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_BUILTIN_PASSES_H_
