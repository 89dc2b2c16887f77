#ifndef GRAPHOPT_PASSES_INFER_SHAPE_PASS_H_
#define GRAPHOPT_PASSES_INFER_SHAPE_PASS_H_

#include "passes/pass.h"

namespace graphopt {

// Registry entry of the infer_shape pass (see its description in the .cc file).
PassInfo InferShapePassInfo();

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_INFER_SHAPE_PASS_H_
