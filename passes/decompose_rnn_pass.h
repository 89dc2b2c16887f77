#ifndef GRAPHOPT_PASSES_DECOMPOSE_RNN_PASS_H_
#define GRAPHOPT_PASSES_DECOMPOSE_RNN_PASS_H_

#include <cstdint>

#include "passes/pass.h"

namespace graphopt {

// Longest sequence decompose_rnn unrolls when the request does not say (option max_steps).
inline constexpr int64_t kDefaultMaxRnnSteps = 1024;

// Registry entry of the decompose_rnn pass (see its description in the .cc file).
PassInfo DecomposeRnnPassInfo();

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_DECOMPOSE_RNN_PASS_H_
