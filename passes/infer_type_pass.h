#ifndef GRAPHOPT_PASSES_INFER_TYPE_PASS_H_
#define GRAPHOPT_PASSES_INFER_TYPE_PASS_H_

#include "passes/pass.h"

namespace graphopt {

// Registry entry of the infer_type pass (see its description in the .cc file).
PassInfo InferTypePassInfo();

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_INFER_TYPE_PASS_H_
