// Times one model on graphopt's runtime (the graphopt side of bench/runtime_vs_ort.py), in its
// own process: plans it, feeds test_data_set_0's inputs, warms up, then prints one JSON line
// {"median_ms", "min_ms", "runs", "plan_ms", "optimize_ms"} (plan_ms: Executor::Create;
// optimize_ms: --opt_level's passes; with --warmup 0 --runs 1, median_ms is the first run's
// time, bench/first_run_vs_ort.py). Peak RSS is read by the caller (wait4).
// With --opt_level the graph is optimized first; with --plan_memory it is also scheduled and
// memory-planned (unless the level does it), and the line adds "arena_bytes", "lower_bound",
// "naive_bytes" and "planned" (whether the executor ran from the plan: --use_memory_plan).
//
// With --bursts it stays up after the warm-up for a driver that interleaves it with other
// contenders (bench/runtime_vs_ort.py): it prints {"ready": true, "plan_ms"}, then for each line
// "N" read from stdin makes --warmup untimed runs (the other contenders have had the caches) and N
// timed ones, and prints that burst's {"median_ms", "min_ms", "runs"}; at the end of stdin it
// prints the usual line over all the bursts' timed runs.
//
//   run_model_bench MODEL_DIR --threads N --runs R --warmup W [--opt_level L] [--plan_memory]
//                   [--use_memory_plan=false] [--bursts]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "bench/corpus_model.h"
#include "graph/proto_convert.h"
#include "ops/builtin_ops.h"
#include "passes/builtin_passes.h"
#include "passes/pipeline.h"
#include "runtime/executor.h"
#include "runtime/kernels/cpu_kernels.h"
#include "util/mutex_mode.h"
#include "util/openmp_wait.h"

ABSL_FLAG(int, threads, 1, "kernel threads");
ABSL_FLAG(int, runs, 20, "timed runs");
ABSL_FLAG(int, warmup, 3, "untimed runs first");
ABSL_FLAG(int, opt_level, 0, "optimize at this level first (0: run the model as imported)");
ABSL_FLAG(bool, plan_memory, false, "run schedule and plan_memory after the level's passes");
ABSL_FLAG(bool, use_memory_plan, true, "let the executor run from the graph's memory plan");
ABSL_FLAG(bool, bursts, false,
          "after the warm-up, run the number of times each stdin line says (see the file's "
          "comment); --runs is ignored");
ABSL_FLAG(std::string, dim_bounds, "auto",
          "schedule/plan_memory's dim_bounds (auto: the sizes of the test inputs)");

namespace graphopt {
namespace {

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
  return 1;
}

// This process's own peak resident set (VmHWM), in MiB; -1 when unknown. The parent's
// wait4 figure would not do: Linux carries the peak of the forking process's memory into the
// child across exec, so a child smaller than its parent reports the parent's size.
double PeakRssMib() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  double kib = -1;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::sscanf(line, "VmHWM: %lf kB", &kib) == 1) break;
  }
  std::fclose(f);
  return kib < 0 ? -1 : kib / 1024.0;
}

int Main(const std::string& dir) {
  absl::StatusOr<CorpusModel> model = LoadCorpusModel(dir);
  if (!model.ok()) return Fail(model.status());
  const std::string test_bounds = TestInputDimBounds(*model);
  absl::StatusOr<Graph> graph = GraphFromProto(std::move(model->graph));
  if (!graph.ok()) return Fail(graph.status());
  const int level = absl::GetFlag(FLAGS_opt_level);
  const auto optimize_start = std::chrono::steady_clock::now();
  if (level > 0 || absl::GetFlag(FLAGS_plan_memory)) {
    OpRegistry ops;
    PassRegistry pass_registry;
    if (absl::Status s = RegisterBuiltinOps(&ops); !s.ok()) return Fail(s);
    if (absl::Status s = RegisterBuiltinPasses(&pass_registry); !s.ok()) return Fail(s);
    absl::StatusOr<std::vector<PassSpec>> passes = PipelineForLevel(pass_registry, level);
    if (!passes.ok()) return Fail(passes.status());
    bool planned = false;
    for (const PassSpec& p : *passes) planned |= p.name == "plan_memory";
    if (absl::GetFlag(FLAGS_plan_memory) && !planned) {
      passes->push_back({"schedule", {}});
      passes->push_back({"plan_memory", {}});
    }
    std::string bounds = absl::GetFlag(FLAGS_dim_bounds);
    if (bounds == "auto") bounds = test_bounds;
    for (PassSpec& p : *passes) {
      if (!bounds.empty() && (p.name == "schedule" || p.name == "plan_memory")) {
        p.options["dim_bounds"] = bounds;
      }
    }
    absl::StatusOr<PipelineResult> r = RunPipeline(*graph, *passes, pass_registry, ops);
    if (!r.ok()) return Fail(r.status());
  }
  const double optimize_ms = std::chrono::duration<double, std::milli>(
                                 std::chrono::steady_clock::now() - optimize_start).count();
  int64_t arena_bytes = 0, lower_bound = 0, naive_bytes = 0;
  if (graph->memory_plan) {
    for (const v1::MemoryArena& a : graph->memory_plan->arenas()) {
      arena_bytes += a.size_bytes();
      lower_bound += a.liveness_lower_bound();
      naive_bytes += a.naive_bytes();
    }
  }
  std::vector<runtime::Tensor> inputs;
  for (auto& [name, tensor] : model->inputs) inputs.push_back(std::move(tensor));
  runtime::KernelRegistry registry;
  absl::Status s = runtime::RegisterCpuKernels(registry);
  if (!s.ok()) return Fail(s);
  runtime::ExecutorOptions options;
  options.num_threads = absl::GetFlag(FLAGS_threads);
  options.use_memory_plan = absl::GetFlag(FLAGS_use_memory_plan);
  const bool graph_planned = graph->memory_plan.has_value();
  const auto plan_start = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<runtime::Executor>> ex =
      runtime::Executor::Create(*std::move(graph), registry, options);
  if (!ex.ok()) return Fail(ex.status());
  const double plan_ms = std::chrono::duration<double, std::milli>(
                             std::chrono::steady_clock::now() - plan_start).count();
  auto warm_up = [&]() -> absl::Status {
    for (int i = 0; i < absl::GetFlag(FLAGS_warmup); ++i) {
      absl::StatusOr<runtime::RunResult> r = (*ex)->RunPositional(inputs);
      if (!r.ok()) return r.status();
    }
    return absl::OkStatus();
  };
  if (absl::Status s = warm_up(); !s.ok()) return Fail(s);
  std::vector<double> times;
  // Appends n timed runs to times.
  auto timed_runs = [&](int64_t n) -> absl::Status {
    for (int64_t i = 0; i < n; ++i) {
      const auto start = std::chrono::steady_clock::now();
      absl::StatusOr<runtime::RunResult> r = (*ex)->RunPositional(inputs);
      if (!r.ok()) return r.status();
      times.push_back(std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start).count());
    }
    return absl::OkStatus();
  };
  if (absl::GetFlag(FLAGS_bursts)) {
    std::printf("{\"ready\": true, \"plan_ms\": %.3f}\n", plan_ms);
    std::fflush(stdout);
    char line[64];
    while (std::fgets(line, sizeof(line), stdin) != nullptr) {
      int64_t n = 0;
      if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &n) || n < 1) {
        return Fail(absl::InvalidArgumentError(
            absl::StrCat("--bursts: expected a run count per line, got '",
                         absl::StripAsciiWhitespace(line), "'")));
      }
      const size_t first = times.size();
      if (absl::Status s = warm_up(); !s.ok()) return Fail(s);
      if (absl::Status s = timed_runs(n); !s.ok()) return Fail(s);
      std::vector<double> burst(times.begin() + first, times.end());
      std::sort(burst.begin(), burst.end());
      std::printf("{\"median_ms\": %.4f, \"min_ms\": %.4f, \"runs\": %zu}\n",
                  burst[burst.size() / 2], burst.front(), burst.size());
      std::fflush(stdout);
    }
  } else if (absl::Status s = timed_runs(absl::GetFlag(FLAGS_runs)); !s.ok()) {
    return Fail(s);
  }
  if (times.empty()) return Fail(absl::InvalidArgumentError("no timed runs"));
  std::sort(times.begin(), times.end());
  std::string memory;
  if (graph_planned) {
    memory = absl::StrCat(", \"arena_bytes\": ", arena_bytes, ", \"lower_bound\": ", lower_bound,
                          ", \"naive_bytes\": ", naive_bytes, ", \"planned\": ",
                          (*ex)->uses_memory_plan() ? "true" : "false");
  }
  std::printf("{\"median_ms\": %.4f, \"min_ms\": %.4f, \"runs\": %zu, \"plan_ms\": %.3f, "
              "\"optimize_ms\": %.3f, \"peak_rss_mib\": %.1f%s}\n",
              times[times.size() / 2], times.front(), times.size(), plan_ms, optimize_ms,
              PeakRssMib(), memory.c_str());
  return 0;
}

}  // namespace
}  // namespace graphopt

int main(int argc, char** argv) {
  graphopt::ReexecWithShortOpenMpSpin(argv);  // as the CLI and workers do
  graphopt::DisableMutexDeadlockDetection();  // as the server and workers do
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() != 2) {
    std::fprintf(stderr, "usage: run_model_bench MODEL_DIR [--threads N] [--runs R]\n");
    return 2;
  }
  return graphopt::Main(rest[1]);
}
