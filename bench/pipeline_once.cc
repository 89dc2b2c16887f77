// Runs the default pipeline (kDefaultOptLevel) once over a synthetic graph of N nodes, with
// callgrind's instrumentation switched on only around the pipeline, so that
//   valgrind --tool=callgrind --instr-atstart=no pipeline_once N
// counts the instructions of the passes alone: a noise-free complement to the timed benchmark
// (bench/instructions.sh). Without valgrind the macros do nothing.
#include <cstdio>
#include <cstdlib>

#include "bench/synthetic_graph.h"
#include "graph/builtin_ops.h"
#include "graph/proto_convert.h"
#include "passes/builtin_passes.h"
#include "passes/pipeline.h"
#include "valgrind/callgrind.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s NUM_NODES\n", argv[0]);
    return 2;
  }
  const long long n = std::atoll(argv[1]);
  if (n < 8) {
    std::fprintf(stderr, "NUM_NODES must be at least 8\n");
    return 2;
  }
  graphopt::OpRegistry ops;
  graphopt::PassRegistry passes;
  if (!graphopt::RegisterBuiltinOps(&ops).ok() || !graphopt::RegisterBuiltinPasses(&passes).ok()) {
    return 1;
  }
  absl::StatusOr<graphopt::Graph> graph =
      graphopt::GraphFromProto(graphopt::MakeSyntheticGraph(n));
  if (!graph.ok()) return 1;
  const int nodes = graph->num_live_nodes();
  CALLGRIND_START_INSTRUMENTATION;
  absl::StatusOr<graphopt::PipelineResult> result =
      graphopt::RunPipeline(*graph, *graphopt::PipelineForLevel(graphopt::kDefaultOptLevel),
                            passes, ops);
  CALLGRIND_STOP_INSTRUMENTATION;
  if (!result.ok()) {
    std::fprintf(stderr, "%s\n", result.status().ToString().c_str());
    return 1;
  }
  std::printf("%d nodes -> %d\n", nodes, graph->num_live_nodes());
  return 0;
}
