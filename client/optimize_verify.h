#ifndef GRAPHOPT_CLIENT_OPTIMIZE_VERIFY_H_
#define GRAPHOPT_CLIENT_OPTIMIZE_VERIFY_H_

// `graphopt optimize`'s verification and result-cache options (--verify, --tolerance, --atol,
// --verify-input, --verify-seed, --no-cache) and how their answers are shown.

#include <cstdint>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "proto/optimizer.pb.h"

namespace graphopt {

struct OptimizeVerifyArgs {
  bool verify = false;
  // 0: the service's default (rtol 1e-4, atol 1e-6).
  double rtol = 0;
  double atol = 0;
  // NAME=FILE.npy
  std::vector<std::string> inputs;
  uint64_t seed = 0;
  bool no_cache = false;
};

// Adds the options to the optimize command.
void AddOptimizeVerifyOptions(CLI::App* optimize, OptimizeVerifyArgs* args);

// Writes the options into `request` (verify.inputs read from their .npy files). INVALID_ARGUMENT
// for --tolerance/--atol/--verify-input without --verify, a malformed NAME=FILE or an input
// named twice; the file's error for an unreadable or malformed .npy.
absl::Status ApplyOptimizeVerifyArgs(const OptimizeVerifyArgs& args, v1::OptimizeRequest* request);

// "cache: hit" / "cache: miss" and a newline; "" when the cache was not used.
std::string FormatCacheLine(v1::CacheResult cache);

// The verification table: one row per output with its errors and verdict, then the tolerance,
// the generated inputs with the seed, and both run times.
std::string FormatVerifyReport(const v1::VerifyReport& report);

}  // namespace graphopt

#endif  // GRAPHOPT_CLIENT_OPTIMIZE_VERIFY_H_
