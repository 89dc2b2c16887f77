// Times one model on graphopt's runtime (the graphopt side of bench/runtime_vs_ort.py), in its
// own process: plans it, feeds test_data_set_0's inputs, warms up, then prints one JSON line
// {"median_ms", "min_ms", "runs", "plan_ms"}. Peak RSS is read by the caller (wait4).
//
//   run_model_bench MODEL_DIR --threads N --runs R --warmup W

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/corpus_model.h"
#include "graph/proto_convert.h"
#include "runtime/executor.h"
#include "runtime/kernels/cpu_kernels.h"

ABSL_FLAG(int, threads, 1, "kernel threads");
ABSL_FLAG(int, runs, 20, "timed runs");
ABSL_FLAG(int, warmup, 3, "untimed runs first");

namespace graphopt {
namespace {

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
  return 1;
}

int Main(const std::string& dir) {
  absl::StatusOr<CorpusModel> model = LoadCorpusModel(dir);
  if (!model.ok()) return Fail(model.status());
  absl::StatusOr<Graph> graph = GraphFromProto(std::move(model->graph));
  if (!graph.ok()) return Fail(graph.status());
  std::vector<runtime::Tensor> inputs;
  for (auto& [name, tensor] : model->inputs) inputs.push_back(std::move(tensor));
  runtime::KernelRegistry registry;
  absl::Status s = runtime::RegisterCpuKernels(registry);
  if (!s.ok()) return Fail(s);
  runtime::ExecutorOptions options;
  options.num_threads = absl::GetFlag(FLAGS_threads);
  const auto plan_start = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<runtime::Executor>> ex =
      runtime::Executor::Create(*std::move(graph), registry, options);
  if (!ex.ok()) return Fail(ex.status());
  const double plan_ms = std::chrono::duration<double, std::milli>(
                             std::chrono::steady_clock::now() - plan_start).count();
  for (int i = 0; i < absl::GetFlag(FLAGS_warmup); ++i) {
    absl::StatusOr<runtime::RunResult> r = (*ex)->RunPositional(inputs);
    if (!r.ok()) return Fail(r.status());
  }
  std::vector<double> times;
  for (int i = 0; i < absl::GetFlag(FLAGS_runs); ++i) {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<runtime::RunResult> r = (*ex)->RunPositional(inputs);
    if (!r.ok()) return Fail(r.status());
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  std::printf("{\"median_ms\": %.4f, \"min_ms\": %.4f, \"runs\": %zu, \"plan_ms\": %.3f}\n",
              times[times.size() / 2], times.front(), times.size(), plan_ms);
  return 0;
}

}  // namespace
}  // namespace graphopt

int main(int argc, char** argv) {
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() != 2) {
    std::fprintf(stderr, "usage: run_model_bench MODEL_DIR [--threads N] [--runs R]\n");
    return 2;
  }
  return graphopt::Main(rest[1]);
}
