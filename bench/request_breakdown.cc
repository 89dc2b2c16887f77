// Where the time of one Optimize request goes, stage by stage, on a synthetic graph of N nodes:
// parsing the request bytes (what the server does before Optimize), converting the proto to the
// IR, the pipeline, converting back, serializing the response, and freeing it all. Median CPU
// time of R runs per stage, in ns per input node, so that sizes compare at a glance:
//   request_breakdown N [--reps R]
// The stages are timed inside one process in the order the server runs them.
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
#include "proto/optimizer.pb.h"
#include "util/malloc_tuning.h"
#include "util/mutex_mode.h"

namespace {

double CpuNs() { return graphopt::bench::ProcessCpuSeconds() * 1e9; }

}  // namespace

int main(int argc, char** argv) {
  const long long n = argc >= 2 ? std::atoll(argv[1]) : 0;
  int reps = 7;
  if (argc == 4 && std::strcmp(argv[2], "--reps") == 0) reps = std::atoi(argv[3]);
  if (n < 1 || reps < 1 || (argc != 2 && argc != 4) ||
      (argc == 4 && std::strcmp(argv[2], "--reps") != 0)) {
    std::fprintf(stderr, "usage: %s NUM_NODES [--reps R]   (NUM_NODES, R >= 1)\n", argv[0]);
    return 2;
  }
  using namespace graphopt;
  TuneMallocForGraphs();  // as the server does
  DisableMutexDeadlockDetection();
  OpRegistry ops;
  PassRegistry passes;
  if (!RegisterBuiltinOps(&ops).ok() || !RegisterBuiltinPasses(&passes).ok()) return 1;
  const std::vector<PassSpec> specs = *PipelineForLevel(passes, kDefaultOptLevel);
  std::string bytes;
  {
    v1::OptimizeRequest request;
    *request.mutable_graph() = MakeSyntheticGraph(n);
    request.SerializeToString(&bytes);
  }
  const char* names[] = {"parse", "from_proto", "pipeline", "to_proto", "serialize", "free"};
  std::vector<std::vector<double>> t(6);
  for (int r = 0; r < reps; ++r) {
    double t0 = CpuNs();
    auto request = std::make_unique<v1::OptimizeRequest>();
    if (!request->ParseFromString(bytes)) return 1;
    double t1 = CpuNs();
    absl::StatusOr<Graph> g = GraphFromProto(std::move(*request->mutable_graph()));
    if (!g.ok()) return 1;
    double t2 = CpuNs();
    absl::StatusOr<PipelineResult> result = RunPipeline(*g, specs, passes, ops);
    if (!result.ok()) return 1;
    double t3 = CpuNs();
    auto response = std::make_unique<v1::OptimizeResponse>();
    *response->mutable_graph() = GraphToProto(*std::move(g), ToProtoOptions());
    double t4 = CpuNs();
    std::string out;
    response->SerializeToString(&out);
    double t5 = CpuNs();
    request.reset();
    response.reset();
    g = absl::StatusOr<Graph>();
    std::string().swap(out);
    double t6 = CpuNs();
    double ts[] = {t0, t1, t2, t3, t4, t5, t6};
    for (int i = 0; i < 6; ++i) t[i].push_back(ts[i + 1] - ts[i]);
  }
  double total = 0;
  std::printf("%lld nodes, median of %d runs, ns per input node\n", n, reps);
  for (int i = 0; i < 6; ++i) {
    double m = graphopt::bench::Median(t[i]) / static_cast<double>(n);
    total += m;
    std::printf("  %-10s %8.1f\n", names[i], m);
  }
  std::printf("  %-10s %8.1f\n", "sum", total);
  return 0;
}
