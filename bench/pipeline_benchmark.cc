// The default pipeline (kDefaultOptLevel, -O2) on synthetic graphs of 10^3 to 10^6 nodes.
// Reports time per node; bench/scaling.sh turns the results into the 10x-nodes time ratios.
#include <cstdlib>

#include "bench/synthetic_graph.h"
#include "benchmark/benchmark.h"
#include "graph/proto_convert.h"
#include "ops/builtin_ops.h"
#include "passes/builtin_passes.h"
#include "passes/pipeline.h"
#include "service/optimizer.h"
#include "util/malloc_tuning.h"
#include "util/mutex_mode.h"

namespace graphopt {
namespace {

struct Registries {
  OpRegistry ops;
  PassRegistry passes;
  Registries() {
    if (!RegisterBuiltinOps(&ops).ok() || !RegisterBuiltinPasses(&passes).ok()) std::abort();
  }
};

// The pipeline alone, on the IR (graph conversion excluded).
void BM_PipelineDefault(benchmark::State& state) {
  Registries r;
  const v1::Graph proto = MakeSyntheticGraph(state.range(0));
  const std::vector<PassSpec> specs = *PipelineForLevel(r.passes, kDefaultOptLevel);
  int64_t nodes = proto.nodes_size();
  for (auto _ : state) {
    state.PauseTiming();
    absl::StatusOr<Graph> g = GraphFromProto(proto);
    if (!g.ok()) std::abort();
    state.ResumeTiming();
    absl::StatusOr<PipelineResult> result = RunPipeline(*g, specs, r.passes, r.ops);
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(g->num_live_nodes());
    state.PauseTiming();
    g = absl::StatusOr<Graph>();  // Free outside the timed region.
    state.ResumeTiming();
  }
  state.counters["nodes"] = static_cast<double>(nodes);
  state.counters["per_node"] =
      benchmark::Counter(static_cast<double>(nodes),
                         benchmark::Counter::kIsIterationInvariantRate |
                             benchmark::Counter::kInvert);
}

// A whole Optimize request as the server runs it: proto in, pipeline, proto out.
void BM_OptimizeRequestDefault(benchmark::State& state) {
  Registries r;
  Optimizer optimizer(&r.ops, &r.passes);
  v1::OptimizeRequest request;
  *request.mutable_graph() = MakeSyntheticGraph(state.range(0));
  int64_t nodes = request.graph().nodes_size();
  for (auto _ : state) {
    absl::StatusOr<v1::OptimizeResponse> response = optimizer.Optimize(request);
    if (!response.ok()) {
      state.SkipWithError(std::string(response.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(response->graph().nodes_size());
  }
  state.counters["nodes"] = static_cast<double>(nodes);
  state.counters["per_node"] =
      benchmark::Counter(static_cast<double>(nodes),
                         benchmark::Counter::kIsIterationInvariantRate |
                             benchmark::Counter::kInvert);
}

BENCHMARK(BM_PipelineDefault)
    ->RangeMultiplier(10)
    ->Range(1000, 1000000)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(1.0)
    ->UseRealTime();
BENCHMARK(BM_OptimizeRequestDefault)
    ->RangeMultiplier(10)
    ->Range(1000, 1000000)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(1.0)
    ->UseRealTime();

}  // namespace
}  // namespace graphopt

// The allocator as the server sets it up (util/malloc_tuning.h), then Google Benchmark's main.
int main(int argc, char** argv) {
  graphopt::TuneMallocForGraphs();
  graphopt::DisableMutexDeadlockDetection();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
