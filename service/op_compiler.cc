#include "service/op_compiler.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "rules/op_compiler.h"

namespace graphopt {
namespace {

constexpr char kNoRuleLanguage[] =
    "rule-language text is not supported by this server yet (name a builtin rule instead, "
    "e.g. {builtin: \"Relu\"})";

// The builtin op a `builtin: NAME` rule refers to, or INVALID_ARGUMENT naming `field`.
absl::StatusOr<const OpDef*> BuiltinRuleOp(const OpRegistry& builtins, absl::string_view field,
                                           const v1::Rule& rule) {
  const OpDef* op = builtins.Find("", rule.builtin());
  if (op == nullptr || rule.builtin().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": unknown builtin rule '", rule.builtin(),
        "' (a builtin rule is named after a default-domain builtin op, e.g. \"Relu\")"));
  }
  return op;
}

}  // namespace

OpCompiler BuiltinRuleCompiler(const OpRegistry* builtins) {
  return [builtins](v1::OpDescriptor descriptor) -> absl::StatusOr<OpDef> {
    OpDef def;
    switch (descriptor.shape_rule().kind_case()) {
      case v1::Rule::kBuiltin: {
        absl::StatusOr<const OpDef*> op =
            BuiltinRuleOp(*builtins, "shape_rule", descriptor.shape_rule());
        if (!op.ok()) return op.status();
        def.shape_fn = (*op)->shape_fn;
        break;
      }
      case v1::Rule::kExpr:
        return absl::UnimplementedError(absl::StrCat("shape_rule: ", kNoRuleLanguage));
      case v1::Rule::KIND_NOT_SET:
        break;
    }
    switch (descriptor.type_rule().kind_case()) {
      case v1::Rule::kBuiltin: {
        absl::StatusOr<const OpDef*> op =
            BuiltinRuleOp(*builtins, "type_rule", descriptor.type_rule());
        if (!op.ok()) return op.status();
        def.type_fn = (*op)->type_fn;  // may be empty: the type constraints decide
        break;
      }
      case v1::Rule::kExpr:
        return absl::UnimplementedError(absl::StrCat("type_rule: ", kNoRuleLanguage));
      case v1::Rule::KIND_NOT_SET:
        break;
    }
    const v1::CostRule& cost = descriptor.cost();
    for (const auto& [field, rule] : {std::make_pair("cost.flops", &cost.flops()),
                                      std::make_pair("cost.bytes_moved", &cost.bytes_moved())}) {
      if (rule->kind_case() == v1::Rule::kExpr) {
        return absl::UnimplementedError(absl::StrCat(field, ": ", kNoRuleLanguage));
      }
      if (rule->kind_case() == v1::Rule::kBuiltin) {
        return absl::InvalidArgumentError(absl::StrCat(field, ": unknown builtin rule '",
                                                       rule->builtin(),
                                                       "' (there are no builtin cost rules)"));
      }
    }
    def.descriptor = std::move(descriptor);
    return def;
  };
}

OpCompiler RuleLanguageCompiler(const OpRegistry* builtins) {
  return [builtins](v1::OpDescriptor descriptor) -> absl::StatusOr<OpDef> {
    return CompileOpDescriptor(std::move(descriptor), *builtins);
  };
}

}  // namespace graphopt
