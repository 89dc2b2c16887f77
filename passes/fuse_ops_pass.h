#ifndef GRAPHOPT_PASSES_FUSE_OPS_PASS_H_
#define GRAPHOPT_PASSES_FUSE_OPS_PASS_H_

#include "passes/pass.h"

namespace graphopt {

// Registry entry of the fuse_ops pass (see its description in the .cc file).
PassInfo FuseOpsPassInfo();

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_FUSE_OPS_PASS_H_
