#ifndef GRAPHOPT_PASSES_GRADIENT_PASS_H_
#define GRAPHOPT_PASSES_GRADIENT_PASS_H_

#include <cstdint>

#include "passes/pass.h"

namespace graphopt {

// Nodes one gradient pass run may add unless the request says otherwise (option
// max_new_nodes); the server's ceiling is in DefaultOptionCeilings.
inline constexpr int64_t kDefaultMaxGradientNodes = 1000000;

// The domain and op of ONNX's training Gradient node, which the pass expands.
inline constexpr char kOnnxTrainingDomain[] = "ai.onnx.preview.training";

// Registry entry of the gradient pass (see its description in the .cc file).
PassInfo GradientPassInfo();

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_GRADIENT_PASS_H_
