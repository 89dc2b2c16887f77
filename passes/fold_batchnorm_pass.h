#ifndef GRAPHOPT_PASSES_FOLD_BATCHNORM_PASS_H_
#define GRAPHOPT_PASSES_FOLD_BATCHNORM_PASS_H_

#include "passes/pass.h"

namespace graphopt {

// Registry entry of the fold_batchnorm pass (see its description in the .cc file).
PassInfo FoldBatchNormPassInfo();

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_FOLD_BATCHNORM_PASS_H_
