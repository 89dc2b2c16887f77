#include "client/optimize_verify.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/run_model.h"
#include "runtime/npy.h"
#include "util/file_util.h"

namespace graphopt {

void AddOptimizeVerifyOptions(CLI::App* optimize, OptimizeVerifyArgs* args) {
  optimize->add_flag("--verify", args->verify,
                     "Have the service run the original and the optimized model on the same "
                     "inputs (seeded random ones unless given with --verify-input; symbolic "
                     "dims need --bind) and compare every output; the request fails when one "
                     "is over tolerance");
  optimize
      ->add_option("--tolerance", args->rtol,
                   "With --verify: relative tolerance RTOL, an output passes when max |optimized - "
                   "original| <= ATOL + RTOL * max |original| (default 1e-4)")
      ->check(CLI::NonNegativeNumber);
  optimize
      ->add_option("--atol", args->atol, "With --verify: absolute tolerance ATOL (default 1e-6)")
      ->check(CLI::NonNegativeNumber);
  optimize->add_option("--verify-input", args->inputs,
                       "With --verify: NAME=FILE.npy, an input to verify on (repeatable)");
  optimize->add_option("--verify-seed", args->seed,
                       "With --verify: the seed of the generated inputs (default 0)");
  optimize->add_flag("--no-cache", args->no_cache,
                     "Neither use nor fill the server's result cache for this request");
}

absl::Status ApplyOptimizeVerifyArgs(const OptimizeVerifyArgs& args,
                                     v1::OptimizeRequest* request) {
  request->mutable_options()->set_no_cache(args.no_cache);
  if (!args.verify) {
    if (args.rtol != 0 || args.atol != 0 || !args.inputs.empty() || args.seed != 0) {
      return absl::InvalidArgumentError(
          "--tolerance, --atol, --verify-input and --verify-seed need --verify");
    }
    return absl::OkStatus();
  }
  v1::VerifyOptions* verify = request->mutable_options()->mutable_verify();
  verify->set_enabled(true);
  verify->set_rtol(args.rtol);
  verify->set_atol(args.atol);
  verify->set_seed(args.seed);
  absl::StatusOr<std::vector<InputSpec>> specs = ParseInputSpecs(args.inputs);
  if (!specs.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--verify-input: ", specs.status().message()));
  }
  for (const InputSpec& spec : *specs) {
    absl::StatusOr<std::string> bytes = ReadFileBytes(spec.npy_path);
    if (!bytes.ok()) return bytes.status();
    absl::StatusOr<runtime::Tensor> tensor = runtime::ParseNpy(*bytes, spec.npy_path);
    if (!tensor.ok()) return tensor.status();
    v1::Tensor* proto = verify->add_inputs();
    tensor->ToProto(proto);
    proto->set_name(spec.name);
  }
  return absl::OkStatus();
}

std::string FormatCacheLine(v1::CacheResult cache) {
  switch (cache) {
    case v1::CACHE_RESULT_HIT:
      return "cache: hit\n";
    case v1::CACHE_RESULT_MISS:
      return "cache: miss\n";
    default:
      return "";
  }
}

std::string FormatVerifyReport(const v1::VerifyReport& report) {
  size_t width = 6;
  for (const v1::OutputComparison& c : report.outputs()) width = std::max(width, c.name().size());
  std::string out = absl::StrFormat("verification: %s\n%-*s %13s %13s  %s\n",
                                    report.passed() ? "passed" : "FAILED", width, "output",
                                    "max abs err", "max rel err", "result");
  for (const v1::OutputComparison& c : report.outputs()) {
    absl::StrAppendFormat(&out, "%-*s %13.3g %13.3g  %s\n", width, c.name(), c.max_abs_error(),
                          c.max_rel_error(),
                          c.passed() ? "ok" : (c.problem().empty() ? "OVER" : c.problem()));
  }
  absl::StrAppendFormat(&out, "tolerance: atol %.3g + rtol %.3g * max |original|\n",
                        report.atol(), report.rtol());
  if (report.generated_inputs_size() > 0) {
    absl::StrAppendFormat(&out, "generated inputs (seed %u): %s\n", report.seed(),
                          absl::StrJoin(report.generated_inputs(), ", "));
  }
  absl::StrAppendFormat(&out, "runs: original %.2f ms, optimized %.2f ms\n",
                        report.original_run_us() / 1e3, report.optimized_run_us() / 1e3);
  return out;
}

}  // namespace graphopt
