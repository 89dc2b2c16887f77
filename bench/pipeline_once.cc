// Runs the default pipeline (kDefaultOptLevel) once over a synthetic graph of N nodes, with
// callgrind's instrumentation switched on only around the pipeline, so that
//   valgrind --tool=callgrind --instr-atstart=no pipeline_once N
// counts the instructions of the passes alone: a noise-free complement to the timed benchmark
// (bench/instructions.sh). Without valgrind the macros do nothing.
//
// Per-pass figures, for finding which pass makes the scaling of bench/scaling.sh worse:
//   pipeline_once N --passes       wall time of each pass of that one run (and of the rest:
//                                  the input's verification), and the minor page faults the
//                                  pipeline took (fresh pages the kernel zeroed)
//   pipeline_once N --warmup K ... first K runs as the benchmark loop does them (convert,
//                                  optimize, free), for the heap state of a long-running process
//   pipeline_once N --steady R     afterwards, each pass again R times on the optimized graph
//                                  (a fixpoint: nothing changes), median CPU ns per input node
//   pipeline_once N --steady R --only PASS   the same for one pass (for perf record)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/synthetic_graph.h"
#include "graph/proto_convert.h"
#include "ops/builtin_ops.h"
#include "passes/builtin_passes.h"
#include "passes/pipeline.h"
#include "util/malloc_tuning.h"
#include "util/mutex_mode.h"
#include "valgrind/callgrind.h"

namespace {

int Usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s NUM_NODES [--warmup K] [--passes] [--steady REPS [--only PASS]]\n", argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage(argv[0]);
  const long long n = std::atoll(argv[1]);
  if (n < 8) {
    std::fprintf(stderr, "NUM_NODES must be at least 8\n");
    return 2;
  }
  bool print_passes = false;
  int steady_reps = 0;
  int warmup = 0;
  std::string only;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--passes") == 0) {
      print_passes = true;
    } else if (std::strcmp(argv[i], "--steady") == 0 && i + 1 < argc) {
      steady_reps = std::atoi(argv[++i]);
      if (steady_reps < 1) return Usage(argv[0]);
    } else if (std::strcmp(argv[i], "--warmup") == 0 && i + 1 < argc) {
      warmup = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else {
      return Usage(argv[0]);
    }
  }
  graphopt::TuneMallocForGraphs();  // as the server does
  graphopt::DisableMutexDeadlockDetection();
  graphopt::OpRegistry ops;
  graphopt::PassRegistry passes;
  if (!graphopt::RegisterBuiltinOps(&ops).ok() || !graphopt::RegisterBuiltinPasses(&passes).ok()) {
    return 1;
  }
  const graphopt::v1::Graph proto = graphopt::MakeSyntheticGraph(n);
  // Like the benchmark's loop: convert, optimize, free, `warmup` times before the measured run.
  for (int i = 0; i < warmup; ++i) {
    absl::StatusOr<graphopt::Graph> g = graphopt::GraphFromProto(proto);
    if (!g.ok() || !graphopt::RunPipeline(*g, *graphopt::PipelineForLevel(
                                                  passes, graphopt::kDefaultOptLevel),
                                          passes, ops)
                        .ok()) {
      return 1;
    }
  }
  absl::StatusOr<graphopt::Graph> graph = graphopt::GraphFromProto(proto);
  if (!graph.ok()) return 1;
  const int nodes = graph->num_live_nodes();
  const long faults_before = graphopt::bench::MinorPageFaults();
  CALLGRIND_START_INSTRUMENTATION;
  absl::StatusOr<graphopt::PipelineResult> result =
      graphopt::RunPipeline(
          *graph, *graphopt::PipelineForLevel(passes, graphopt::kDefaultOptLevel), passes, ops);
  CALLGRIND_STOP_INSTRUMENTATION;
  const long faults = graphopt::bench::MinorPageFaults() - faults_before;
  if (!result.ok()) {
    std::fprintf(stderr, "%s\n", result.status().ToString().c_str());
    return 1;
  }
  std::printf("%d nodes -> %d\n", nodes, graph->num_live_nodes());
  if (print_passes) {
    int64_t in_passes = 0;
    for (const graphopt::PassRun& run : result->runs) {
      std::printf("  %-36s %10lld us\n", run.name.c_str(),
                  static_cast<long long>(run.wall_time_us));
      in_passes += run.wall_time_us;
    }
    std::printf("  %-36s %10lld us\n", "(input checks and the rest)",
                static_cast<long long>(result->total_time_us - in_passes));
    std::printf("  (minor page faults in the pipeline: %ld)\n", faults);
  }
  if (steady_reps > 0) {
    std::printf("again on the optimized graph, median of %d (CPU ns per input node):\n",
                steady_reps);
    for (const graphopt::PassRun& run : result->runs) {
      if (!only.empty() && run.name != only) continue;
      absl::StatusOr<std::unique_ptr<graphopt::Pass>> pass =
          passes.Find(run.name)->factory({});
      if (!pass.ok()) return 1;
      std::vector<double> ns;
      for (int r = 0; r < steady_reps; ++r) {
        const graphopt::PassContext context{&ops, nullptr};
        const double start = graphopt::bench::ProcessCpuSeconds();
        absl::StatusOr<bool> changed = (*pass)->Run(*graph, context);
        ns.push_back((graphopt::bench::ProcessCpuSeconds() - start) * 1e9 / nodes);
        if (!changed.ok()) {
          std::fprintf(stderr, "%s\n", changed.status().ToString().c_str());
          return 1;
        }
      }
      std::printf("  %-36s %8.1f ns/node\n", run.name.c_str(), graphopt::bench::Median(ns));
    }
  }
  return 0;
}
