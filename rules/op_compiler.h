#ifndef GRAPHOPT_RULES_OP_COMPILER_H_
#define GRAPHOPT_RULES_OP_COMPILER_H_

// Turns an op descriptor that arrived over the wire into an OpDef whose shape and type
// functions evaluate its compiled rules.

#include <memory>

#include "absl/status/statusor.h"
#include "graph/op_registry.h"
#include "proto/op.pb.h"
#include "rules/limits.h"
#include "rules/rule.h"

namespace graphopt {

// The compiled cost rules of an op (each null when the descriptor has none); OpDef::flops_fn
// and bytes_fn evaluate them.
struct CompiledCost {
  std::shared_ptr<const CompiledRule> flops;
  std::shared_ptr<const CompiledRule> bytes_moved;
};

struct CompiledOp {
  OpDef def;
  CompiledCost cost;
};

// Compiles every rule of `descriptor`:
//  - shape_rule {expr}: compiled; OpDef::shape_fn evaluates it (ApplyShapeRule).
//  - shape_rule {builtin: "Relu"}: reuses that builtin op's C++ shape function (found in
//    `builtins`, default domain); the descriptor must lay out its inputs, outputs and the
//    attributes the function reads as the builtin does. INVALID_ARGUMENT when there is none.
//  - no shape_rule but a body: allowed (a later pass inlines the body); the shape function
//    gives every output an unknown rank so that the op still registers and infers.
//  - type_rule {expr}: compiled; OpDef::type_fn evaluates it after InferNodeTypes has applied
//    the type constraints. {builtin}: the builtin op's type_fn. Absent: the type constraints
//    and dtype_from_attribute alone decide, as for builtins.
//  - cost.flops / cost.bytes_moved {expr}: compiled as cost rules (errors now, at
//    registration) into CompiledOp::cost; OpDef::flops_fn / bytes_fn evaluate them
//    (EvaluateCostRule). {builtin}: INVALID_ARGUMENT (there are none).
// Finally the OpDef must pass ValidateOpDef. Errors are INVALID_ARGUMENT naming the op, the
// rule and the position.
absl::StatusOr<CompiledOp> CompileOp(v1::OpDescriptor descriptor, const OpRegistry& builtins,
                                     const RuleLimits& limits = RuleLimits());

// CompileOp(...).def: the OpDef to register (its flops_fn / bytes_fn hold the cost rules).
absl::StatusOr<OpDef> CompileOpDescriptor(v1::OpDescriptor descriptor,
                                          const OpRegistry& builtins);

}  // namespace graphopt

#endif  // GRAPHOPT_RULES_OP_COMPILER_H_
