// libFuzzer target: registering a client's op descriptors. The input is a serialized
// graphopt.v1.OpDescriptorList, checked as one RegisterOps call of a tenant without ops
// (CheckOps: names, versions, the rule-language compiler, OpRegistry validation, bodies,
// recursion). Each accepted op is then used: a one-node graph of it runs through the -O1
// pipeline (inlining of bodies, type and shape inference with its compiled rules, the cleanup
// passes) over the call's layer, as a request carrying these ops would.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "fuzz/fuzz_passes.h"
#include "fuzz/fuzz_util.h"
#include "graph/proto_convert.h"
#include "passes/pipeline.h"
#include "proto/optimizer.pb.h"
#include "service/op_compiler.h"
#include "service/op_validation.h"

namespace graphopt {
namespace fuzz {
namespace {

// Smaller than the server's defaults, so that one input stays small; the checks are the same.
OpStoreLimits FuzzLimits() {
  OpStoreLimits limits;
  limits.max_ops_per_call = 64;
  limits.max_descriptor_bytes = 64 << 10;
  return limits;
}

void RunOne(const uint8_t* data, size_t size) {
  v1::OpDescriptorList list;
  if (!list.ParseFromArray(data, static_cast<int>(size))) return;
  static const OpCompiler* const kCompiler = new OpCompiler(RuleLanguageCompiler(&BuiltinOps()));
  static const OpStoreLimits kLimits = FuzzLimits();
  const OpSources existing;
  OpCheckContext context;
  context.builtins = &BuiltinOps();
  context.visible = &BuiltinOps();
  context.existing = &existing;
  context.compiler = kCompiler;
  context.limits = kLimits;
  std::vector<const v1::OpDescriptor*> call;
  for (const v1::OpDescriptor& d : list.ops()) call.push_back(&d);
  OpCheckResult checked = CheckOps(call, context);
  (void)checked.FirstError();
  if (!checked.ok() || checked.layer == nullptr) return;

  absl::StatusOr<std::vector<PassSpec>> specs = PipelineForLevel(BuiltinPasses(), 1);
  if (!specs.ok()) return;
  for (PassSpec& spec : *specs) {
    if (spec.name == "inline_functions") spec.options["max_new_nodes"] = "10000";
  }
  for (const CheckedOp& op : checked.ops) {
    const v1::OpDescriptor& d = *call[op.index];
    for (int scenario = 0; scenario < 2; ++scenario) {
      absl::StatusOr<Graph> graph = GraphFromProto(OneNodeGraph(d, scenario, 0));
      if (!graph.ok()) continue;
      (void)RunPipeline(*graph, *specs, BuiltinPasses(), *checked.layer);
    }
  }
}

}  // namespace
}  // namespace fuzz
}  // namespace graphopt

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  graphopt::fuzz::RunOne(data, size);
  return 0;
}
