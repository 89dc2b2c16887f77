#ifndef GRAPHOPT_FUZZ_FUZZ_PASSES_H_
#define GRAPHOPT_FUZZ_FUZZ_PASSES_H_

#include "passes/pass.h"

namespace graphopt {
namespace fuzz {

// The builtin passes, registered once per process and never changed afterwards (libFuzzer's
// entry point has no context to carry them). Aborts when registration fails: a programmer bug.
const PassRegistry& BuiltinPasses();

}  // namespace fuzz
}  // namespace graphopt

#endif  // GRAPHOPT_FUZZ_FUZZ_PASSES_H_
