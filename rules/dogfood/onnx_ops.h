#ifndef GRAPHOPT_RULES_DOGFOOD_ONNX_OPS_H_
#define GRAPHOPT_RULES_DOGFOOD_ONNX_OPS_H_

// Dogfooding the rule language: onnx_ops.pbtxt describes ten builtin ONNX ops (Add, MatMul,
// Gemm, Conv, Transpose, Concat, Reshape, ReduceMean, Softmax, Gather) with the builtins' own
// descriptors, their C++ shape functions replaced by shape rules. rule_agreement checks that the
// two give the same results on real models; bench/rule_infer_shape_benchmark times them.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/op_registry.h"
#include "proto/optimizer.pb.h"

namespace graphopt {
namespace dogfood {

// The ops onnx_ops.pbtxt must describe, in the file's order.
const std::vector<std::string>& DogfoodOps();

// Parses protobuf text format. INVALID_ARGUMENT with the parser's line and column.
absl::StatusOr<v1::OpDescriptorList> ParseOpDescriptorList(absl::string_view text);
// Reads and parses a file; NOT_FOUND when it cannot be read.
absl::StatusOr<v1::OpDescriptorList> ReadOpDescriptorList(const std::string& path);

// The ops of `ops`, each with its descriptor taken from `builtins` (the default-domain op of
// the same name) except for its shape_rule, which is kept. NOT_FOUND naming an op that is not a
// builtin; INVALID_ARGUMENT for one without a shape_rule expression or listed twice.
absl::StatusOr<v1::OpDescriptorList> SyncWithBuiltins(const v1::OpDescriptorList& ops,
                                                      const OpRegistry& builtins);

// The canonical text of onnx_ops.pbtxt for `ops` (what sync_onnx_ops writes): a header
// comment, then each descriptor in protobuf text format with its shape rule written one source
// line per string literal, so that the rules read as code.
std::string FormatOpDescriptorList(const v1::OpDescriptorList& ops);

// Fills `out` (which must be empty) with a copy of every op of `builtins`, except that the ops
// of `ops` are compiled from their descriptors (CompileOpDescriptor against `builtins`) and
// replace the builtins of the same (domain, name). The result is a flat registry: a lookup
// costs the same as in `builtins`. INVALID_ARGUMENT for a rule that does not compile; NOT_FOUND
// for an op that is not a builtin.
absl::Status RegisterWithRuleOps(const OpRegistry& builtins, const v1::OpDescriptorList& ops,
                                 OpRegistry* out);

}  // namespace dogfood
}  // namespace graphopt

#endif  // GRAPHOPT_RULES_DOGFOOD_ONNX_OPS_H_
