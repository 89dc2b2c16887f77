#include "passes/pass_test_util.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "google/protobuf/text_format.h"
#include "ops/builtin_ops.h"
#include "graph/proto_convert.h"
#include "graph/test_ops.h"
#include "graph/types.h"
#include "passes/builtin_passes.h"

namespace graphopt {
namespace testing {

void AddEffectOps(PassTestEnv& env) {
  OpDef print = MakeTestOp("Print", {"x"}, {"y"});
  print.descriptor.set_domain("my.ops");
  print.descriptor.set_has_side_effects(true);
  OpDef accumulate = MakeTestOp("Accumulate", {"acc", "x"}, {"y"});
  accumulate.descriptor.set_domain("my.ops");
  accumulate.descriptor.add_mutated_inputs(0);
  OpDef sample = MakeTestOp("Sample", {"x"}, {"y"});
  sample.descriptor.set_domain("my.ops");
  (*sample.descriptor.mutable_extensions())[kNondeterministicExtension].set_i(1);
  for (OpDef* def : {&print, &accumulate, &sample}) {
    if (!env.AddOp(std::move(*def)).ok()) std::abort();
  }
}


std::string InputText(const std::string& name, const std::vector<int>& dims,
                      const std::string& dtype) {
  std::string shape;
  for (int d : dims) absl::StrAppend(&shape, " dims { size: ", d, " }");
  return absl::StrCat("inputs { name: \"", name, "\" type { dtype: ", dtype, " shape {", shape,
                      " } } }\n");
}

std::string OutputText(const std::string& name) {
  return absl::StrCat("outputs { name: \"", name, "\" }\n");
}

std::string NodeText(const std::string& op, const std::vector<std::string>& in,
                     const std::string& out, const std::string& extra) {
  std::string s = absl::StrCat("nodes { op_type: \"", op, "\" name: \"", out, "_node\"");
  for (const std::string& i : in) absl::StrAppend(&s, " inputs: \"", i, "\"");
  absl::StrAppend(&s, " outputs: \"", out, "\" ", extra, " }\n");
  return s;
}

std::string IntsText(const std::string& name, const std::vector<int>& values) {
  return absl::StrCat("attributes { name: \"", name, "\" ints { values: [",
                      absl::StrJoin(values, ", "), "] } }");
}

PassTestEnv::PassTestEnv() {
  // Test setup: a failure here is a bug in the builtin tables.
  if (!RegisterBuiltinOps(&ops_).ok() || !RegisterBuiltinPasses(&passes_).ok()) std::abort();
}

absl::StatusOr<Graph> PassTestEnv::Parse(const std::string& text) const {
  v1::Graph proto;
  if (!google::protobuf::TextFormat::ParseFromString(text, &proto)) {
    return absl::InvalidArgumentError("test graph is not valid text format");
  }
  return GraphFromProto(std::move(proto));
}

absl::StatusOr<v1::Graph> PassTestEnv::Run(const std::string& text,
                                           const std::vector<std::string>& passes,
                                           PipelineResult* result) const {
  std::vector<PassSpec> specs;
  for (const std::string& p : passes) specs.push_back({p, {}});
  return RunSpecs(text, specs, result);
}

absl::StatusOr<v1::Graph> PassTestEnv::RunSpecs(const std::string& text,
                                                const std::vector<PassSpec>& specs,
                                                PipelineResult* result) const {
  absl::StatusOr<Graph> graph = Parse(text);
  if (!graph.ok()) return graph.status();
  PipelineOptions options;
  options.verify_each_pass = true;
  absl::StatusOr<PipelineResult> r = RunPipeline(*graph, specs, passes_, ops_, options);
  if (!r.ok()) return r.status();
  if (result != nullptr) *result = std::move(*r);
  return GraphToProto(*graph);
}

std::vector<std::string> OpTypes(const v1::Graph& graph) {
  std::vector<std::string> out;
  for (const v1::Node& n : graph.nodes()) out.push_back(n.op_type());
  return out;
}

const v1::ValueInfo* FindValueInfo(const v1::Graph& graph, const std::string& name) {
  for (const auto* list : {&graph.inputs(), &graph.outputs(), &graph.value_info()}) {
    for (const v1::ValueInfo& vi : *list) {
      if (vi.name() == name) return &vi;
    }
  }
  return nullptr;
}

std::string TypeOf(const v1::Graph& graph, const std::string& name) {
  const v1::ValueInfo* vi = FindValueInfo(graph, name);
  if (vi == nullptr || !vi->has_type()) return "<none>";
  return TensorTypeToString(TensorTypeFromProto(vi->type()));
}

}  // namespace testing
}  // namespace graphopt
