#ifndef GRAPHOPT_PASSES_CONSTANT_FOLD_PASS_H_
#define GRAPHOPT_PASSES_CONSTANT_FOLD_PASS_H_

#include <cstdint>
#include <memory>

#include "passes/pass.h"
#include "runtime/kernel.h"

namespace graphopt {

// Defaults of constant_fold's size budget (the `max_folded_bytes` and `max_growth_bytes`
// options): the largest tensor one fold may compute, and how many bytes all folds together may
// add to the model (bytes of new initializers minus the constants they make unused).
inline constexpr int64_t kDefaultMaxFoldedBytes = int64_t{64} << 20;
inline constexpr int64_t kDefaultMaxFoldGrowthBytes = int64_t{1} << 20;

// Registry entry of the constant_fold pass (see its description in the .cc file). Folding runs
// the CPU kernels of `kernels`, which the entry shares with every pass it creates.
PassInfo ConstantFoldPassInfo(std::shared_ptr<const runtime::KernelRegistry> kernels);

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_CONSTANT_FOLD_PASS_H_
