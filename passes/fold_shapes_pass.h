#ifndef GRAPHOPT_PASSES_FOLD_SHAPES_PASS_H_
#define GRAPHOPT_PASSES_FOLD_SHAPES_PASS_H_

#include "passes/pass.h"

namespace graphopt {

// Registry entry of the fold_shapes pass (see its description in the .cc file).
PassInfo FoldShapesPassInfo();

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_FOLD_SHAPES_PASS_H_
