#ifndef GRAPHOPT_PASSES_INLINE_FUNCTIONS_PASS_H_
#define GRAPHOPT_PASSES_INLINE_FUNCTIONS_PASS_H_

#include <cstdint>

#include "passes/pass.h"

namespace graphopt {

// Bounds of inline_functions: how deep bodies may nest (a body using an op with a body is one
// level) and, by default, how many nodes one run may add (the `max_new_nodes` option).
inline constexpr int kMaxInlineNestingDepth = 64;
inline constexpr int64_t kDefaultMaxInlinedNodes = 1000000;

// Registry entry of the inline_functions pass (see its description in the .cc file).
PassInfo InlineFunctionsPassInfo();

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_INLINE_FUNCTIONS_PASS_H_
