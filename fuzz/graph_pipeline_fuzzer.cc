// libFuzzer target: the path of an Optimize request that carries a graph. The input is one
// flags byte (fuzz_util.h: -O2 or -O3, verify after each pass, a dim binding) and a serialized
// graphopt.v1.Graph, which goes through GraphFromProto, VerifyGraph and RunPipeline over the
// builtin ops and passes, as the server runs them, with a small constant-folding budget so that
// one input cannot take the machine's memory.
//
// Besides the sanitizers' findings it checks what must hold for every graph the pipeline
// accepts: the optimized graph verifies, and writing it out and reading it back succeeds.
//
// Two mutations in three are structural (graph_mutator.h: ops, attributes, edges, dims) on
// inputs that parse; the rest are libFuzzer's byte mutations.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fuzz/fuzz_passes.h"
#include "fuzz/fuzz_util.h"
#include "fuzz/graph_mutator.h"
#include "graph/proto_convert.h"
#include "graph/verifier.h"
#include "passes/pipeline.h"
#include "proto/graph.pb.h"

namespace graphopt {
namespace fuzz {
namespace {

// Per fold and in all: bytes constant_fold may compute for one input.
constexpr char kFoldBudget[] = "262144";

void Fail(const char* what, const absl::Status& s) {
  std::fprintf(stderr, "graph_pipeline_fuzzer: %s: %s\n", what, s.ToString().c_str());
  std::abort();
}

void RunOne(const uint8_t* data, size_t size) {
  if (size < kGraphHeaderBytes) return;
  const uint8_t flags = data[0];
  v1::Graph proto;
  if (!proto.ParseFromArray(data + kGraphHeaderBytes,
                            static_cast<int>(size - kGraphHeaderBytes))) {
    return;
  }
  absl::StatusOr<Graph> graph = GraphFromProto(std::move(proto));
  if (!graph.ok()) return;
  const OpRegistry& ops = BuiltinOps();
  if (!VerifyGraph(*graph, ops).ok()) return;

  absl::StatusOr<std::vector<PassSpec>> specs =
      PipelineForLevel(BuiltinPasses(), (flags & kGraphO3) ? 3 : 2);
  if (!specs.ok()) Fail("PipelineForLevel", specs.status());
  for (PassSpec& spec : *specs) {
    if (spec.name == "constant_fold") {
      spec.options["max_folded_bytes"] = kFoldBudget;
      spec.options["max_growth_bytes"] = kFoldBudget;
    }
  }
  PipelineOptions options;
  options.verify_each_pass = (flags & kGraphVerifyEach) != 0;
  if (flags & kGraphBindBatch) options.dim_bindings["batch"] = 2;
  absl::StatusOr<PipelineResult> result =
      RunPipeline(*graph, *specs, BuiltinPasses(), ops, options);
  if (!result.ok()) return;

  if (absl::Status s = VerifyGraph(*graph, ops); !s.ok()) {
    Fail("the optimized graph does not verify", s);
  }
  v1::Graph written = GraphToProto(*graph);
  absl::StatusOr<Graph> again = GraphFromProto(std::move(written));
  if (!again.ok()) Fail("the optimized graph does not read back", again.status());
}

}  // namespace
}  // namespace fuzz
}  // namespace graphopt

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  graphopt::fuzz::RunOne(data, size);
  return 0;
}

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  using graphopt::fuzz::kGraphHeaderBytes;
  std::minstd_rand rng(seed);
  if (size > kGraphHeaderBytes && rng() % 3 != 0) {
    graphopt::v1::Graph graph;
    if (graph.ParseFromArray(data + kGraphHeaderBytes, static_cast<int>(size - kGraphHeaderBytes))) {
      const int steps = 1 + static_cast<int>(rng() % 3);
      for (int i = 0; i < steps; ++i) {
        graphopt::fuzz::MutateGraph(graphopt::fuzz::BuiltinOps(), rng, &graph);
      }
      if (rng() % 8 == 0) data[0] ^= static_cast<uint8_t>(1u << (rng() % 3));
      std::string out;
      if (graph.SerializeToString(&out) && out.size() + kGraphHeaderBytes <= max_size) {
        std::memcpy(data + kGraphHeaderBytes, out.data(), out.size());
        return out.size() + kGraphHeaderBytes;
      }
    }
  }
  return LLVMFuzzerMutate(data, size, max_size);
}
