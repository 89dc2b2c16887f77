#ifndef GRAPHOPT_SERVICE_OP_COMPILER_H_
#define GRAPHOPT_SERVICE_OP_COMPILER_H_

#include <functional>

#include "absl/status/statusor.h"
#include "graph/op_registry.h"
#include "proto/op.pb.h"

namespace graphopt {

// Turns a client's op descriptor into an OpDef with its shape/type functions: the hook where
// the rule language (rules/op_compiler.h, CompileOpDescriptor) plugs into the op store. It
// must be thread-safe and deterministic. It may leave OpDef::shape_fn empty only for a
// descriptor without a shape_rule (the op store then requires a body). Errors: INVALID_ARGUMENT
// saying which rule is wrong and where in its text ("shape_rule:1:7: ..."); UNIMPLEMENTED for
// a rule this compiler cannot handle. The op store prefixes every message with the descriptor.
using OpCompiler = std::function<absl::StatusOr<OpDef>(v1::OpDescriptor)>;

// A compiler without the rule language. It accepts
//  - shape_rule {builtin: NAME} and type_rule {builtin: NAME} naming a default-domain op of
//    `builtins`: the op reuses that builtin's C++ shape (type) function (a builtin without a
//    type function leaves the types to the type constraints);
//  - no shape_rule (for ops with a body; the op store checks that);
// and refuses rule-language text (Rule.expr) in any rule with UNIMPLEMENTED, and a cost rule
// with INVALID_ARGUMENT (no builtin cost rules exist). `builtins` must outlive the compiler.
OpCompiler BuiltinRuleCompiler(const OpRegistry* builtins);

// The op store's default: rules/op_compiler.h's CompileOpDescriptor — rule-language text in
// shape, type and cost rules (docs/rule-language.md), builtin rules, body-only ops.
// `builtins` must outlive the compiler.
OpCompiler RuleLanguageCompiler(const OpRegistry* builtins);

}  // namespace graphopt

#endif  // GRAPHOPT_SERVICE_OP_COMPILER_H_
