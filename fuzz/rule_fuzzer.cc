// libFuzzer target: the rule language (docs/rule-language.md). The input is four header bytes
// (fuzz_util.h: which builtin op's descriptor, which rule kind, which scenarios, which opset)
// and the rule text. The text is compiled against that descriptor as a client's shape rule,
// type rule or cost rule (CompileOp: lexer, parser, checker, ValidateOpDef); a shape or type
// rule that compiles is then evaluated on one-node graphs of the op in three scenarios
// (static, symbolic, scalar and unknown-rank inputs, shape tensors, attributes), through
// InferNodeTypes and InferNodeShapes as the inference passes run it.

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "fuzz/fuzz_util.h"
#include "graph/inference.h"
#include "graph/op_registry.h"
#include "graph/proto_convert.h"
#include "proto/op.pb.h"
#include "rules/op_compiler.h"

namespace graphopt {
namespace fuzz {
namespace {

constexpr int kScenariosPerInput = 3;

void RunOne(const uint8_t* data, size_t size) {
  if (size < kRuleHeaderBytes) return;
  size_t num_ops = 0;
  const char* const* ops = RuleFuzzOps(&num_ops);
  const char* op_name = ops[data[0] % num_ops];
  const int kind = data[1] % 3;
  const int scenario = data[2];
  const int64_t opset = data[3] % 24;
  const OpDef* builtin = BuiltinOps().Find("", op_name);
  if (builtin == nullptr) return;

  v1::OpDescriptor descriptor = builtin->descriptor;
  std::string text(reinterpret_cast<const char*>(data) + kRuleHeaderBytes,
                   size - kRuleHeaderBytes);
  switch (kind) {
    case 0:
      descriptor.mutable_shape_rule()->set_expr(std::move(text));
      break;
    case 1:
      descriptor.mutable_type_rule()->set_expr(std::move(text));
      break;
    default:
      descriptor.mutable_cost()->mutable_flops()->set_expr(std::move(text));
      break;
  }
  absl::StatusOr<CompiledOp> compiled = CompileOp(descriptor, BuiltinOps());
  if (!compiled.ok() || kind == 2) return;

  // The compiled op shadows the builtin in a layer of its own, as a request's ops do.
  OpRegistry layer(&BuiltinOps());
  if (!layer.Register(std::move(compiled->def)).ok()) return;
  const OpDef* def = layer.FindLocal("", op_name);
  for (int k = 0; k < kScenariosPerInput; ++k) {
    absl::StatusOr<Graph> graph = GraphFromProto(OneNodeGraph(descriptor, scenario + k, opset));
    if (!graph.ok() || graph->num_node_slots() != 1) continue;
    const NodeId node(0);
    if (!InferNodeTypes(*graph, node, *def).ok()) continue;
    DimsValueTable dims = InitialDimsValues(*graph);
    (void)InferNodeShapes(*graph, node, *def, &dims);
  }
}

}  // namespace
}  // namespace fuzz
}  // namespace graphopt

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  graphopt::fuzz::RunOne(data, size);
  return 0;
}
