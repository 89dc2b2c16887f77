#ifndef GRAPHOPT_SERVICE_VERIFY_H_
#define GRAPHOPT_SERVICE_VERIFY_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/graph.pb.h"
#include "proto/optimizer.pb.h"
#include "util/stop_token.h"

namespace graphopt {

// Verification on request (OptimizeOptions.verify): the original and the optimized graph run
// on the CPU runtime (the kernels `graphopt run` uses) on the same inputs and every output is
// compared.

// Defaults for VerifyOptions.rtol/atol left at 0.
inline constexpr double kDefaultVerifyRtol = 1e-4;
inline constexpr double kDefaultVerifyAtol = 1e-6;

struct VerifyLimits {
  // Bytes one verification may hold at once: the weights of the graph being run, the inputs,
  // the original's outputs and everything the runs allocate (runtime::MemoryBudget).
  int64_t max_memory_bytes = int64_t{2} << 30;
  // Kernel threads of each run.
  int num_threads = 1;
};

// Checks the options alone (before any work): INVALID_ARGUMENT naming the field for a negative
// or non-finite tolerance, an input without a name or one named twice.
absl::Status CheckVerifyOptions(const v1::VerifyOptions& options);

// Runs `original` and then `optimized` (graphs whose weights are inline: no blob references) on
// options.inputs, the graph inputs not given there filled from options.seed (floats normal(0,
// 1), integers in [0, 4), bools a fair coin; symbolic dims from `dim_bindings`). Graph inputs
// backed by an initializer keep it unless given. The optimized graph is fed the inputs it
// still has. Outputs are matched by name; one passes when its dtype and shape agree and
// max |optimized - original| <= atol + rtol * max |original| (NaN where the other side is not
// NaN counts as an infinite error).
// The report says per output whether it passed; `passed` is false when any failed (the caller
// turns that into an error, VerifyFailure). Errors: INVALID_ARGUMENT naming the input (and
// dim) for an input that cannot be generated (unbound symbolic or unknown dim, no dtype, a
// dtype without random values) or a given one the model does not have; the runtime's errors
// prefixed with "verify: original graph: " or "verify: optimized graph: " (UNIMPLEMENTED for
// an op without a kernel, RESOURCE_EXHAUSTED past limits.max_memory_bytes); the stop token's
// status.
absl::StatusOr<v1::VerifyReport> VerifyOptimization(
    v1::Graph original, v1::Graph optimized, const v1::VerifyOptions& options,
    const std::map<std::string, int64_t>& dim_bindings, const VerifyLimits& limits,
    const StopToken* stop);

// FAILED_PRECONDITION naming every output of `report` over tolerance with its errors and
// bound; OK for a report that passed.
absl::Status VerifyFailure(const v1::VerifyReport& report);

}  // namespace graphopt

#endif  // GRAPHOPT_SERVICE_VERIFY_H_
