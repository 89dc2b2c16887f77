#include "rules/rule.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/op_registry.h"
#include "rules/checker.h"
#include "rules/evaluator.h"
#include "rules/lexer.h"
#include "rules/parser.h"

namespace graphopt {
namespace {

const char* KindName(RuleKind kind) {
  switch (kind) {
    case RuleKind::kShape:
      return "shape";
    case RuleKind::kType:
      return "type";
    case RuleKind::kCost:
      return "cost";
  }
  return "?";
}

absl::Status WrongKind(const CompiledRule& rule, RuleKind want) {
  return absl::FailedPreconditionError(absl::StrCat("rule '", rule.name(), "' is a ",
                                                    KindName(rule.kind()), " rule, not a ",
                                                    KindName(want), " rule"));
}

}  // namespace

absl::StatusOr<std::shared_ptr<const CompiledRule>> CompileRule(absl::string_view text,
                                                                RuleKind kind,
                                                                const v1::OpDescriptor& op,
                                                                absl::string_view rule_name,
                                                                const RuleLimits& limits) {
  auto rule = std::shared_ptr<CompiledRule>(new CompiledRule());
  rules::Program& p = rule->program_;
  rule->limits_ = limits;
  p.kind = kind;
  p.rule_name = std::string(rule_name);
  p.op_label = OpLabel(op.domain(), op.name());
  const rules::Diag diag(absl::StrCat("op '", p.op_label, "' ", rule_name), text);
  absl::StatusOr<std::vector<rules::Token>> tokens = rules::Lex(text, diag, limits);
  if (!tokens.ok()) return tokens.status();
  p.source = std::string(text);
  // The diagnostics read the program's own copy of the text from here on.
  const rules::Diag diag2(absl::StrCat("op '", p.op_label, "' ", rule_name), p.source);
  if (absl::Status s = rules::Parse(*tokens, diag2, limits, &p); !s.ok()) return s;
  if (absl::Status s = rules::Check(op, diag2, &p); !s.ok()) return s;
  if (absl::Status s = rules::PrepareProgram(&p); !s.ok()) return s;
  return std::shared_ptr<const CompiledRule>(std::move(rule));
}

absl::Status ApplyShapeRule(const CompiledRule& rule, InferenceContext& ctx) {
  if (rule.kind() != RuleKind::kShape) return WrongKind(rule, RuleKind::kShape);
  return rules::EvaluateShape(rule.program(), rule.limits(), ctx);
}

absl::Status ApplyTypeRule(const CompiledRule& rule, InferenceContext& ctx) {
  if (rule.kind() != RuleKind::kType) return WrongKind(rule, RuleKind::kType);
  return rules::EvaluateType(rule.program(), rule.limits(), ctx);
}

absl::StatusOr<std::optional<int64_t>> EvaluateCostRule(const CompiledRule& rule,
                                                        const InferenceContext& ctx) {
  if (rule.kind() != RuleKind::kCost) return WrongKind(rule, RuleKind::kCost);
  return rules::EvaluateCost(rule.program(), rule.limits(), ctx);
}

}  // namespace graphopt
