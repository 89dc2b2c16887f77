#ifndef GRAPHOPT_PASSES_FUSE_MATMUL_ADD_PASS_H_
#define GRAPHOPT_PASSES_FUSE_MATMUL_ADD_PASS_H_

#include "passes/pass.h"

namespace graphopt {

// Registry entry of the fuse_matmul_add pass (see its description in the .cc file).
PassInfo FuseMatMulAddPassInfo();

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_FUSE_MATMUL_ADD_PASS_H_
