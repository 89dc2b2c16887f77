#ifndef GRAPHOPT_PASSES_BUILTIN_PASSES_H_
#define GRAPHOPT_PASSES_BUILTIN_PASSES_H_

#include "absl/status/status.h"
#include "passes/pass.h"

namespace graphopt {

// Registers every builtin pass (infer_type, infer_shape, dead_code_elimination,
// common_subexpression_elimination, eliminate_identity, inline_functions, constant_fold,
// simplify, fold_batchnorm). Called explicitly by main; constant_fold gets a registry of the
// CPU kernels built here.
absl::Status RegisterBuiltinPasses(PassRegistry* registry);

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_BUILTIN_PASSES_H_
