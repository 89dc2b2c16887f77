// Times graphopt's optimization of one model in its own process (the graphopt side of
// bench/optimize_vs_ort.py): the model file is read into memory once, then, --runs times, the
// ONNX bytes are imported, converted to the IR and optimized at --opt_level ("optimize"), and
// the result is planned for execution (runtime::Executor::Create: kernels built, weights
// prepared: "plan"). Prints one JSON line with the medians:
// {"import_ms", "optimize_ms", "plan_ms", "total_ms", "runs", "nodes_in", "nodes_out"}.
//
//   optimize_time MODEL.onnx --opt_level 3 --runs 10
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/bench_util.h"
#include "graph/proto_convert.h"
#include "onnx_io/onnx_import.h"
#include "ops/builtin_ops.h"
#include "passes/builtin_passes.h"
#include "passes/pipeline.h"
#include "runtime/executor.h"
#include "runtime/kernels/cpu_kernels.h"

ABSL_FLAG(int, opt_level, 3, "optimization level");
ABSL_FLAG(int, runs, 10, "timed repetitions (after one untimed)");
ABSL_FLAG(std::string, dim_bounds, "",
          "schedule/plan_memory dim_bounds option (e.g. batch:1); empty: none");

namespace graphopt {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
  return 1;
}

int Main(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Fail(absl::NotFoundError("cannot read " + path));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();

  OpRegistry ops;
  PassRegistry passes;
  runtime::KernelRegistry kernels;
  if (absl::Status s = RegisterBuiltinOps(&ops); !s.ok()) return Fail(s);
  if (absl::Status s = RegisterBuiltinPasses(&passes); !s.ok()) return Fail(s);
  if (absl::Status s = runtime::RegisterCpuKernels(kernels); !s.ok()) return Fail(s);
  absl::StatusOr<std::vector<PassSpec>> specs =
      PipelineForLevel(passes, absl::GetFlag(FLAGS_opt_level));
  if (!specs.ok()) return Fail(specs.status());
  const std::string bounds = absl::GetFlag(FLAGS_dim_bounds);
  for (PassSpec& p : *specs) {
    if (!bounds.empty() && (p.name == "schedule" || p.name == "plan_memory")) {
      p.options["dim_bounds"] = bounds;
    }
  }

  std::vector<double> import_ms, optimize_ms, plan_ms, total_ms;
  int nodes_in = 0, nodes_out = 0;
  const int runs = std::max(1, absl::GetFlag(FLAGS_runs));
  for (int i = 0; i <= runs; ++i) {  // run 0 warms up
    const Clock::time_point t0 = Clock::now();
    absl::StatusOr<v1::Graph> proto = GraphFromOnnxBytes(bytes);
    if (!proto.ok()) return Fail(proto.status());
    nodes_in = proto->nodes_size();
    absl::StatusOr<Graph> graph = GraphFromProto(*std::move(proto));
    if (!graph.ok()) return Fail(graph.status());
    const Clock::time_point t1 = Clock::now();
    absl::StatusOr<PipelineResult> result = RunPipeline(*graph, *specs, passes, ops);
    if (!result.ok()) return Fail(result.status());
    nodes_out = graph->num_live_nodes();
    const Clock::time_point t2 = Clock::now();
    absl::StatusOr<std::unique_ptr<runtime::Executor>> executor =
        runtime::Executor::Create(*std::move(graph), kernels, runtime::ExecutorOptions{});
    if (!executor.ok()) return Fail(executor.status());
    const Clock::time_point t3 = Clock::now();
    if (i == 0) continue;
    import_ms.push_back(Ms(t0, t1));
    optimize_ms.push_back(Ms(t1, t2));
    plan_ms.push_back(Ms(t2, t3));
    total_ms.push_back(Ms(t0, t3));
  }
  std::printf("{\"import_ms\": %.3f, \"optimize_ms\": %.3f, \"plan_ms\": %.3f, "
              "\"total_ms\": %.3f, \"runs\": %d, \"nodes_in\": %d, \"nodes_out\": %d}\n",
              bench::Median(import_ms), bench::Median(optimize_ms), bench::Median(plan_ms),
              bench::Median(total_ms), runs, nodes_in, nodes_out);
  return 0;
}

}  // namespace
}  // namespace graphopt

int main(int argc, char** argv) {
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() != 2) {
    std::fprintf(stderr, "usage: optimize_time MODEL.onnx [--opt_level L] [--runs R]\n");
    return 2;
  }
  return graphopt::Main(args[1]);
}
