#include "rules/op_compiler.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/inference.h"

namespace graphopt {
namespace {

absl::StatusOr<std::shared_ptr<const CompiledRule>> CompileCost(const v1::Rule& rule,
                                                                const v1::OpDescriptor& d,
                                                                const char* name,
                                                                const RuleLimits& limits) {
  switch (rule.kind_case()) {
    case v1::Rule::KIND_NOT_SET:
      return std::shared_ptr<const CompiledRule>();
    case v1::Rule::kBuiltin:
      return absl::InvalidArgumentError(
          absl::StrCat("op '", OpLabel(d.domain(), d.name()), "' ", name, ": builtin cost rule '",
                       rule.builtin(), "' is unknown (there are no builtin cost rules; write "
                       "the cost in the rule language)"));
    case v1::Rule::kExpr:
      return CompileRule(rule.expr(), RuleKind::kCost, d, name, limits);
  }
  return std::shared_ptr<const CompiledRule>();
}

}  // namespace

absl::StatusOr<CompiledOp> CompileOp(v1::OpDescriptor descriptor, const OpRegistry& builtins,
                                     const RuleLimits& limits) {
  CompiledOp out;
  const std::string label = OpLabel(descriptor.domain(), descriptor.name());
  const v1::Rule& shape = descriptor.shape_rule();
  switch (shape.kind_case()) {
    case v1::Rule::kExpr: {
      absl::StatusOr<std::shared_ptr<const CompiledRule>> rule =
          CompileRule(shape.expr(), RuleKind::kShape, descriptor, "shape_rule", limits);
      if (!rule.ok()) return rule.status();
      out.def.shape_fn = [rule = *std::move(rule)](InferenceContext& ctx) {
        return ApplyShapeRule(*rule, ctx);
      };
      break;
    }
    case v1::Rule::kBuiltin: {
      const OpDef* builtin = builtins.Find("", shape.builtin());
      if (builtin == nullptr || !builtin->shape_fn) {
        return absl::InvalidArgumentError(absl::StrCat(
            "op '", label, "' shape_rule: there is no builtin shape rule '", shape.builtin(),
            "' (a builtin rule names a builtin op of the default domain)"));
      }
      out.def.shape_fn = builtin->shape_fn;
      break;
    }
    case v1::Rule::KIND_NOT_SET:
      if (!descriptor.has_body() || descriptor.body().nodes_size() == 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "op '", label, "': shape_rule is required (or a body to decompose the op into)"));
      }
      // Until a pass inlines the body, nothing is known about the outputs.
      out.def.shape_fn = [](InferenceContext& ctx) {
        for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output_shape(i, std::nullopt);
        return absl::OkStatus();
      };
      break;
  }
  const v1::Rule& type = descriptor.type_rule();
  switch (type.kind_case()) {
    case v1::Rule::kExpr: {
      absl::StatusOr<std::shared_ptr<const CompiledRule>> rule =
          CompileRule(type.expr(), RuleKind::kType, descriptor, "type_rule", limits);
      if (!rule.ok()) return rule.status();
      out.def.type_fn = [rule = *std::move(rule)](InferenceContext& ctx) {
        return ApplyTypeRule(*rule, ctx);
      };
      break;
    }
    case v1::Rule::kBuiltin: {
      const OpDef* builtin = builtins.Find("", type.builtin());
      if (builtin == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            "op '", label, "' type_rule: there is no builtin type rule '", type.builtin(), "'"));
      }
      out.def.type_fn = builtin->type_fn;  // may be empty: the constraints decide
      break;
    }
    case v1::Rule::KIND_NOT_SET:
      break;
  }
  absl::StatusOr<std::shared_ptr<const CompiledRule>> flops =
      CompileCost(descriptor.cost().flops(), descriptor, "cost.flops", limits);
  if (!flops.ok()) return flops.status();
  absl::StatusOr<std::shared_ptr<const CompiledRule>> bytes =
      CompileCost(descriptor.cost().bytes_moved(), descriptor, "cost.bytes_moved", limits);
  if (!bytes.ok()) return bytes.status();
  out.cost.flops = *std::move(flops);
  out.cost.bytes_moved = *std::move(bytes);
  for (auto [rule, fn] : {std::make_pair(out.cost.flops, &out.def.flops_fn),
                          std::make_pair(out.cost.bytes_moved, &out.def.bytes_fn)}) {
    if (rule == nullptr) continue;
    *fn = [rule = std::move(rule)](const InferenceContext& ctx) {
      return EvaluateCostRule(*rule, ctx);
    };
  }
  out.def.descriptor = std::move(descriptor);
  if (absl::Status s = ValidateOpDef(out.def); !s.ok()) return s;
  return out;
}

absl::StatusOr<OpDef> CompileOpDescriptor(v1::OpDescriptor descriptor,
                                          const OpRegistry& builtins) {
  absl::StatusOr<CompiledOp> op = CompileOp(std::move(descriptor), builtins);
  if (!op.ok()) return op.status();
  return std::move(op->def);
}

}  // namespace graphopt
